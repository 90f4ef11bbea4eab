import Synchronization
import Testing
import IAPTransport

final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}

@Suite(.serialized) struct TransportTests {
    @Test func transportNamesParse() throws {
        #expect(try TransportSpec(parsing: "loopback") == .loopback)
        #expect(try TransportSpec(parsing: "tcp:127.0.0.1:5000") == .tcp(host: "127.0.0.1", port: 5000))
        #expect(try TransportSpec(parsing: "tcp-listen:[::1]:7000") == .tcpListen(host: "::1", port: 7000))
        #expect(try TransportSpec(parsing: "serial:/dev/ttyUSB0@115200") == .serial(path: "/dev/ttyUSB0", baud: 115_200))
        #expect(try TransportSpec(parsing: "serial:/dev/ttyS1") == .serial(path: "/dev/ttyS1", baud: 115_200))
        for bad in ["usb", "tcp:host", "tcp::80", "tcp:h:0", "tcp:h:99999", "serial:ttyUSB0", "serial:/dev/x@12345"] {
            #expect("\(bad)") { try TransportSpec(parsing: bad) } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
        }
        #expect(try TransportSpec(parsing: "tcp-listen:[::1]:7000").description == "tcp-listen:[::1]:7000")
    }

    /// Writes are tried on the caller's thread while nothing is queued; one
    /// the socket takes only in part queues the rest, and every write after
    /// it queues behind: the peer gets the bytes whole and in order.
    @Test func writesTriedAtOnceOrQueuedKeepTheirOrder() async throws {
        let port = Locked<UInt16>(0)
        let received = Locked<[UInt8]>([])
        let listening = TCPTransport.listen(host: "127.0.0.1", port: 0) { bound in port.withLock { $0 = bound } }
        try listening.start { event in
            if case .received(let bytes) = event { received.withLock { $0 += bytes } }
        }
        var waited = 0
        while port.withLock({ $0 }) == 0 && waited < 200 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        let connecting = TCPTransport.connect(host: "127.0.0.1", port: port.withLock { $0 })
        try connecting.start { _ in }
        // A first byte, queued until the connection is made; once it has
        // arrived, nothing is queued and writes are tried at once.
        var expected: [UInt8] = [0xAA]
        connecting.write(expected)
        waited = 0
        while received.withLock({ $0.isEmpty }) && waited < 500 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        // More than a socket buffer at once, then small writes behind it.
        let large = (0..<4_000_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        connecting.write(large)
        expected += large
        for n in 0..<2_000 {
            let chunk = [UInt8(n >> 8), UInt8(n & 0xFF), 0xC3]
            connecting.write(chunk)
            expected += chunk
        }
        waited = 0
        while received.withLock({ $0.count }) < expected.count && waited < 1_000 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        let got = received.withLock { $0 }
        #expect(got.count == expected.count)
        // Compared here, not by #expect: a failure would print 4 MB twice.
        let firstDifference = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstDifference == nil, "the bytes arrived out of order from offset \(firstDifference ?? 0) of \(expected.count)")
        connecting.close()
        listening.close()
    }

    /// glibc rejects a name with spaces without asking any name server.
    @Test func aHostThatDoesNotResolveIsNotFound() async throws {
        let closed = try await closedReason(of: TCPTransport.connect(host: "no such host", port: 7000))
        #expect(closed?.kind == .notFound, "\(String(describing: closed))")
        #expect(closed?.description == "tcp:no such host:7000: cannot resolve no such host: Name or service not known", "\(String(describing: closed))")
    }

    @Test func aPortInUseIsBusy() throws {
        let first = try TCPTransport.listener(host: "127.0.0.1", port: 0)
        #expect { try TCPTransport.listener(host: "127.0.0.1", port: first.port) } throws: { ($0 as? TransportError)?.kind == .busy }
    }
}

#if canImport(Glibc)
import Glibc
#endif

@Suite struct SerialTransportTests {
    /// A pseudo-terminal stands in for a UART: the transport opens the
    /// terminal side in raw mode, the test plays the peer on the master side.
    @Test func rawModeBytesBothWaysOverAPseudoTerminal() async throws {
        let master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        try #require(master >= 0)
        defer { close(master) }
        // TIOCSPTLCK and TIOCGPTN (Linux, asm-generic ioctls), which Glibc's module does not export.
        let setLock: UInt = 0x4004_5431
        let getNumber: UInt = 0x8004_5430
        var unlock: Int32 = 0
        var number: UInt32 = 0
        guard ioctl(master, setLock, &unlock) == 0, ioctl(master, getNumber, &number) == 0 else {
            Issue.record("cannot set up a pseudo-terminal: errno \(errno)")
            return
        }
        let path = "/dev/pts/\(number)"
        let transport = SerialTransport.open(path: path, baud: 115_200)
        let received = Locked<[UInt8]>([])
        let closed = Locked<TransportError?>(nil)
        try transport.start { event in
            switch event {
            case .received(let bytes): received.withLock { $0 += bytes }
            case .closed(let reason): closed.withLock { $0 = reason }
            }
        }
        // Every byte value, including the ones a cooked terminal would eat (^C, ^D, CR, XON/XOFF).
        let all = (0...255).map { UInt8($0) }
        try await Task.sleep(for: .milliseconds(50))
        _ = all.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        let deadline = ContinuousClock.now + .seconds(5)
        while received.withLock({ $0.count }) < all.count && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(received.withLock { $0 } == all)
        transport.write(Array(all.reversed()))
        var back: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        while back.count < all.count && ContinuousClock.now < deadline {
            var fds = [pollfd(fd: master, events: Int16(POLLIN), revents: 0)]
            guard poll(&fds, 1, 100) > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(master, $0.baseAddress, $0.count) }
            if count > 0 { back += buffer[0..<count] }
        }
        #expect(back == Array(all.reversed()))
        transport.close()
        while closed.withLock({ $0 }) == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(closed.withLock { $0 } == TransportError(.closed, "closed by this end"))
    }

    @Test func aMissingPortIsNotFound() async throws {
        let closed = try await closedReason(of: SerialTransport.open(path: "/dev/does-not-exist-iap", baud: 9600))
        #expect(closed?.kind == .notFound, "\(String(describing: closed))")
        #expect(closed?.description.contains("cannot open /dev/does-not-exist-iap: No such file or directory") == true, "\(String(describing: closed))")
    }
}

/// Starts `transport` and waits (5 s at most) for it to close; why it did.
func closedReason(of transport: Transport) async throws -> TransportError? {
    let closed = Locked<TransportError?>(nil)
    try transport.start { event in if case .closed(let reason) = event { closed.withLock { $0 = reason } } }
    let deadline = ContinuousClock.now + .seconds(5)
    while closed.withLock({ $0 }) == nil && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
    return closed.withLock { $0 }
}
