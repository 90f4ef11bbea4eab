#if canImport(Glibc)
import Glibc
#endif
import Testing
@testable import IAPTransport

/// A descriptor transport says how many written bytes it still holds for a
/// peer that does not read: what bounds a phone's iAP1 answers
/// (`LinkEnd.sendLegacy`'s `queued`, which the endpoint passes on).
@Suite struct QueuedWriteBytesTests {
    @Test func bytesThePeerHasNotTakenAreCountedUntilItReadsThem() throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            Issue.record("socketpair failed: errno \(errno)")
            return
        }
        let (ours, peer) = (fds[0], fds[1])
        defer { close(peer) }
        let transport = DescriptorTransport(name: "socket pair", opener: { _ in ours })
        try transport.start { _ in }
        transport.write([0xAA])
        #expect(WriteOrderTests.read(peer, upTo: 1, milliseconds: 5_000) == [0xAA], "the transport never opened")
        // Far more than the socket holds, and the peer reads nothing.
        let large = [UInt8](repeating: 0x55, count: 2_000_000)
        transport.write(large)
        let held = transport.queuedWriteBytes
        // The first byte may still be counted: the peer has it, but the
        // writer lowers the count only after its write returned.
        #expect(held > 1_000_000 && held <= large.count + 1, "\(held) bytes held of \(large.count) the peer has not read")
        // The peer reads everything: nothing is held once the writer is done.
        var received = 0
        while received < large.count {
            let more = WriteOrderTests.read(peer, upTo: 256 * 1024, milliseconds: 5_000)
            if more.isEmpty { break }
            received += more.count
        }
        #expect(received == large.count)
        for _ in 0..<500 where transport.queuedWriteBytes != 0 { usleep(10_000) }
        #expect(transport.queuedWriteBytes == 0)
        transport.close()
    }
}
