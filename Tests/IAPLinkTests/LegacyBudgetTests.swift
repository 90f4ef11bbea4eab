import Testing
import IAPLink
import IAPWire

/// A legacy head unit's frames count against the reader's receive budget,
/// as iAP2 data does: a flood the reader does not keep up with is dropped
/// and counted, not queued without end.
@Suite struct LegacyBudgetTests {
    @Test func framesPastTheBudgetAreDroppedUntilTheReaderHandsThemBack() throws {
        var configuration = LinkConfiguration(role: .device, answersIAP1: true)
        configuration.receiveBufferLimit = 1024
        var device = ScriptedLink(configuration)
        device.start()
        device.receive(try LegacyFrameTests.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)))
        // Ten thousand GetPlayStatus requests (3-byte payloads), none handed back.
        let request = try LegacyFrameTests.frame(4, 0x001C)
        for _ in 0..<10_000 { device.receive(request) }
        let reported = LegacyFrameTests.legacyFrames(device.events)
        let bytes = reported.reduce(0) { $0 + $1.count }
        #expect(bytes <= 1024, "\(bytes) bytes of frames reported to a reader that handed none back")
        #expect(reported.count == 1 + (1024 - 14) / 3)
        #expect(device.link.statistics.legacyFramesDropped == 10_001 - reported.count)
        #expect(device.link.statistics.legacyFramesReceived == 10_001)
        // Handed back: frames are reported again.
        device.apply(device.link.consumed(bytes, now: device.now))
        device.receive(request)
        #expect(LegacyFrameTests.legacyFrames(device.events).count == reported.count + 1)
    }

    /// What the head unit has not taken of earlier answers bounds the next,
    /// as a session's send queue: past the limit a frame is refused and
    /// counted, never written.
    @Test func answersPastTheSendQueueLimitAreRefusedAndCounted() throws {
        var configuration = LinkConfiguration(role: .device, answersIAP1: true)
        configuration.sendQueueLimit = 1000
        var device = ScriptedLink(configuration)
        device.start()
        device.receive(try LegacyFrameTests.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)))
        let answer = try LegacyFrameTests.frame(0, 0x02, [0x00, 0x13])
        device.apply(try device.link.sendLegacy(answer, queued: 1000 - answer.count, now: device.now))
        #expect(device.written.last == answer)
        let written = device.written.count
        #expect {
            try device.link.sendLegacy(answer, queued: 1001 - answer.count, now: device.now)
        } throws: { error in
            guard let error = error as? LinkSendError, case .legacyQueueFull(let queued, let limit) = error.kind else { return false }
            return queued == 1001 - answer.count && limit == 1000
        }
        #expect(device.written.count == written)
        #expect(device.link.statistics.legacyFramesRefused == 1)
        // Nothing queued: a frame goes whatever its size.
        let large = try LegacyFrameTests.frame(0, 0x08, [UInt8](repeating: 0x41, count: 2000))
        device.apply(try device.link.sendLegacy(large, queued: 0, now: device.now))
        #expect(device.written.last == large)
    }
}
