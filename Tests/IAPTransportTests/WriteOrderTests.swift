#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import IAPTransport

/// A descriptor transport tries each write on the caller's thread only while
/// nothing waits in its queue. Here the test is the peer, on the other end
/// of a socket pair: it lets a large write fill the socket, then makes room
/// a little at a time and writes a small chunk right after each time, which
/// is when a write that did not wait its turn would slip in ahead of the
/// queued rest. Everything must arrive in the order written.
@Suite struct WriteOrderTests {
    /// Reads what is there within `milliseconds` (nothing: empty).
    static func read(_ fd: Int32, upTo count: Int, milliseconds: Int32) -> [UInt8] {
        var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&ready, 1, milliseconds) > 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        let got = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, count) }
        return got > 0 ? Array(buffer[0..<got]) : []
    }

    @Test func writesNeverOvertakeWhatWaitsInTheQueue() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            Issue.record("socketpair failed: errno \(errno)")
            return
        }
        let (ours, peer) = (fds[0], fds[1])
        defer { close(peer) }
        let transport = DescriptorTransport(name: "socket pair", opener: { _ in ours })
        try transport.start { _ in }
        // Once the first byte is through, the descriptor is open and the queue empty.
        var expected: [UInt8] = [0xAA]
        transport.write(expected)
        var received = Self.read(peer, upTo: 1, milliseconds: 5_000)
        #expect(received == expected, "the transport never opened")
        // Far more than the socket holds: most of it waits in the queue.
        let large = (0..<2_000_000).map { UInt8(truncatingIfNeeded: $0 % 251) }
        transport.write(large)
        expected += large
        for n in 0..<300 {
            received += Self.read(peer, upTo: 16 * 1024, milliseconds: 1_000)
            let chunk: [UInt8] = [0xFE, UInt8(n >> 8), UInt8(n & 0xFF)]
            transport.write(chunk)
            expected += chunk
        }
        while received.count < expected.count {
            let more = Self.read(peer, upTo: 256 * 1024, milliseconds: 5_000)
            if more.isEmpty { break }
            received += more
        }
        #expect(received.count == expected.count)
        // Compared here, not by #expect: a failure would print megabytes.
        let firstDifference = zip(received, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(firstDifference == nil, "bytes out of order from offset \(firstDifference ?? 0) of \(expected.count)")
        transport.close()
    }
}
