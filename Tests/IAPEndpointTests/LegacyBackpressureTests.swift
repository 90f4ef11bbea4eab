#if canImport(Glibc)
import Glibc
#endif
import IAPDemo
import IAPEndpoint
@testable import IAPTransport
import Testing

/// An iAP1 head unit that keeps asking and never reads: iAP1 has no
/// acknowledgement to hold the phone back, so the endpoint tells its core
/// how many written bytes the transport still holds, and the phone's
/// answers stop at the link's send queue limit, each one refused counted,
/// instead of queueing without end.
@Suite struct LegacyBackpressureTests {
    @Test func answersToAHeadUnitThatStopsReadingStopAtTheQueueLimit() async throws {
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else {
            Issue.record("socketpair failed: errno \(errno)")
            return
        }
        let (ours, headUnit) = (fds[0], fds[1])
        defer { close(headUnit) }
        // Small socket buffers: what the peer does not read piles up in the transport soon.
        var small: Int32 = 4096
        _ = setsockopt(ours, SOL_SOCKET, SO_SNDBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        _ = setsockopt(headUnit, SOL_SOCKET, SO_RCVBUF, &small, socklen_t(MemoryLayout<Int32>.size))
        let transport = DescriptorTransport(name: "socket pair", opener: { _ in ours })
        let phone = MediaEndpoint(kind: .phone, transport: transport, app: SampleApp(), logger: .discarding("endpoint"))
        try phone.start()

        // IdentifyDeviceLingoes (General and Extended Interface), answered with an ACK each time.
        let identify = try LegacyHeadUnitTests.frame(0, 0x13, [0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0])
        let burst = Array([[UInt8]](repeating: identify, count: 200).joined())
        var written = 0
        // At most 2 MB of questions: a phone that never refuses answers them all into its queue.
        while phone.statistics.legacyFramesRefused == 0 && written < 2_000_000 {
            let result = burst.withUnsafeBytes { write(headUnit, $0.baseAddress, $0.count) }
            guard result > 0 else {
                Issue.record("writing to the phone failed: errno \(errno)")
                break
            }
            written += result
            try await Task.sleep(for: .milliseconds(1))
        }
        #expect(phone.statistics.legacyFramesRefused > 0, "no answer refused after \(written) bytes of questions")
        // What waits for the head unit stays near the limit (64 KiB) plus one turn's answers.
        #expect(transport.queuedWriteBytes < 256 * 1024, "\(transport.queuedWriteBytes) bytes queued for a head unit that reads nothing")
        await phone.close()
    }
}
