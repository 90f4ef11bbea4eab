#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing
import IAPTransport

/// A TCP listener that lets one peer connect and never reads a byte.
final class DeafListener {
    let descriptor: Int32
    let port: UInt16

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(descriptor, 1) == 0 else {
            close(descriptor)
            throw TransportError("cannot listen", errno: errno)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { close(descriptor) }

}

@Suite struct StalledPeerTests {
    /// A peer that stops reading cannot hold a writer forever: the transport
    /// ends, saying why, and closing it does not hang.
    @Test func aPeerThatStopsReadingEndsTheTransport() async throws {
        let listener = try DeafListener()
        let transport = TCPTransport.connect(host: "127.0.0.1", port: listener.port, writeStallLimit: .milliseconds(500))
        let events = Mutex<[TransportEvent]>([])
        try transport.start { event in events.withLock { $0.append(event) } }
        // Far more than the socket buffers on both ends hold.
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
        for _ in 0..<512 { transport.write(chunk) }
        let clock = ContinuousClock()
        let start = clock.now
        while clock.now - start < .seconds(20), !events.withLock({ $0.contains { if case .closed = $0 { true } else { false } } }) {
            try await Task.sleep(for: .milliseconds(20))
        }
        let reasons = events.withLock { $0.compactMap { if case .closed(let reason) = $0 { reason } else { nil } } }
        #expect(reasons.count == 1)
        #expect(reasons.first?.kind == .timedOut, "\(reasons)")
        #expect(reasons.first?.description.contains("stopped reading") == true, "\(reasons)")
        let closing = clock.now
        transport.close()
        #expect(clock.now - closing < .seconds(3))
    }

    @Test func closingWhileThePeerDoesNotReadWaitsOnlyBriefly() async throws {
        let listener = try DeafListener()
        let transport = TCPTransport.connect(host: "127.0.0.1", port: listener.port)
        try transport.start { _ in }
        let chunk = [UInt8](repeating: 0x5A, count: 64 * 1024)
        for _ in 0..<512 { transport.write(chunk) }
        try await Task.sleep(for: .milliseconds(300))
        let clock = ContinuousClock()
        let closing = clock.now
        transport.close()
        #expect(clock.now - closing < .seconds(5), "close waited for a peer that does not read")
    }
}
