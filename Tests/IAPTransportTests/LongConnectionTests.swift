import Dispatch
import Glibc
import Synchronization
import Testing
import IAPTransport

/// A connection that lasts: what a transport does per read and per write
/// costs the same after a hundred thousand of them as after one.
@Suite struct LongConnectionTests {
    /// A closure kept in a tuple (or a bare optional) inside a `Mutex` was
    /// wrapped in two more reabstraction thunks at every `withLock`: each
    /// write and each read made the transport's handler a few calls deeper,
    /// every event slower (a ping took 2 ms after 20,000), and in the end
    /// calling it overflowed the reader's stack. After 200,000 writes the
    /// handler must still be called.
    @Test func aTransportsHandlerIsStillCalledAfterManyWrites() async throws {
        let peer = try RawPeer()
        let transport = TCPTransport.connect(host: "127.0.0.1", port: peer.port)
        let received = Mutex(0)
        try transport.start { event in
            if case .received(let bytes) = event { received.withLock { $0 += bytes.count } }
        }
        defer { transport.close() }
        let writes = 200_000
        for _ in 0..<writes { transport.write([0x5A]) }
        let allArrived = await wait { peer.received == writes }
        #expect(allArrived, "the peer got \(peer.received) of \(writes) bytes")
        peer.send([1, 2, 3])
        let answered = await wait { received.withLock { $0 } == 3 }
        #expect(answered, "the handler was not called after \(writes) writes")
    }

    /// Polls `condition` for at most 30 seconds.
    private func wait(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<3000 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }
}

/// The other end written with plain sockets (no transport of ours): it
/// counts what it reads and writes when told.
private final class RawPeer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let connection = Mutex<Int32>(-1)
    private let count = Mutex(0)

    init() throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && Glibc.listen(listener, 1) == 0 && getsockname(listener, pointer, &length) == 0
            }
        }
        try #require(bound, "cannot listen on 127.0.0.1: errno \(errno)")
        port = UInt16(bigEndian: address.sin_port)
        DispatchQueue.global().async { [self] in
            let accepted = accept(listener, nil, nil)
            connection.withLock { $0 = accepted }
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let read = buffer.withUnsafeMutableBytes { Glibc.read(accepted, $0.baseAddress, $0.count) }
                guard read > 0 else { return }
                count.withLock { $0 += read }
            }
        }
    }

    deinit {
        Glibc.close(listener)
        let descriptor = connection.withLock { $0 }
        if descriptor >= 0 { shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    var received: Int { count.withLock { $0 } }

    func send(_ bytes: [UInt8]) {
        let descriptor = connection.withLock { $0 }
        _ = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
    }
}
