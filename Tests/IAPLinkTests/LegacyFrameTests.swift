import Testing
import IAPLink
import IAPWire

/// A device end that answers iAP1 head units (`answersIAP1`): only an
/// identification makes the peer a legacy head unit; its later frames are
/// reported and answers written; noise and an iAP2 link are left alone.
@Suite struct LegacyFrameTests {
    static func frame(_ lingo: UInt8, _ command: UInt16, _ data: [UInt8] = []) throws -> [UInt8] {
        try IAP1Packet(lingo: lingo, command: command, data: data).encoded(sync: true)
    }

    static func legacyFrames(_ events: [LinkEvent]) -> [[UInt8]] {
        events.compactMap { if case .legacyFrame(let payload) = $0 { payload } else { nil } }
    }

    @Test func onlyAnIdentificationStartsALegacySession() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, answersIAP1: true))
        device.start()
        // A frame on a lingo not served, and a lingo-4 request without the sync byte: noise.
        device.receive(try Self.frame(0x0A, 0x29, [1, 2]) + (try IAP1Packet(lingo: 4, command: 0x001C).encoded(sync: false)))
        #expect(Self.legacyFrames(device.events).isEmpty)
        #expect(throws: LinkSendError.self) { try device.link.sendLegacy([0xFF, 0x55, 0x02, 0x00, 0x02, 0xFC], now: device.now) }

        let identify = try Self.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8))
        device.receive(identify + (try Self.frame(4, 0x001C)))
        #expect(Self.legacyFrames(device.events) == [Array(identify[3..<(identify.count - 1)]), [0x04, 0x00, 0x1C]])
        let answer = try Self.frame(0, 0x02, [0x00, 0x13])
        device.apply(try device.link.sendLegacy(answer, now: device.now))
        #expect(device.written.last == answer)
        // A frame with a bad checksum is not reported.
        var corrupt = try Self.frame(4, 0x001E)
        corrupt[corrupt.count - 1] ^= 0xFF
        device.receive(corrupt)
        #expect(Self.legacyFrames(device.events).count == 2)
    }

    /// Older head units ask on the Extended Interface lingo before they
    /// identify, to see whether anything answers: a synced request on a
    /// served lingo is reported, and answered.
    @Test func aSyncedRequestBeforeIdentificationIsReported() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, answersIAP1: true))
        device.start()
        device.receive(try Self.frame(4, 0x0009))
        #expect(Self.legacyFrames(device.events) == [[0x04, 0x00, 0x09]])
        let answer = try Self.frame(4, 0x0001, [0x04, 0x00, 0x09])
        device.apply(try device.link.sendLegacy(answer, now: device.now))
        #expect(device.written.last == answer)
    }

    /// FuzzLinkEnd: iAP1 frames buffered behind an iAP2 handshake's SYN were
    /// reported, and could be answered, in the middle of that handshake.
    /// Legacy answers are for a device that listens; an iAP2 SYN or detect
    /// ends them.
    @Test func noLegacyFramesOnceAnIAP2HandshakeHasBegun() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, initialSequence: 0x80, answersIAP1: true))
        device.start()
        device.receive(try Self.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)))
        #expect(Self.legacyFrames(device.events).count == 1)
        try device.receive(LinkPacket(control: .syn, sequence: 0x10, payload: LinkParameters().synchronization.encoded()))
        device.receive(try Self.frame(4, 0x001C))
        #expect(Self.legacyFrames(device.events).count == 1, "a frame reported while the handshake runs")
        #expect(throws: LinkSendError.self) { try device.link.sendLegacy(try Self.frame(0, 0x02, [0, 0x13]), now: device.now) }

        var detected = ScriptedLink(LinkConfiguration(role: .device, answersIAP1: true))
        detected.start()
        detected.receive(try Self.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)))
        detected.receive(DetectSequence.bytes)
        detected.receive(try IAP1Packet(lingo: 4, command: 0x001C).encoded(sync: false))
        #expect(Self.legacyFrames(detected.events).count == 1, "the detect did not end the legacy session")
    }

    @Test func aDeviceThatDoesNotAnswerIAP1ReportsNone() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device))
        device.start()
        device.receive(try Self.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)))
        #expect(Self.legacyFrames(device.events).isEmpty)
    }

    @Test func anIAP2LinkStillComesUpAndEndsTheLegacyAnswers() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, initialSequence: 0x80, answersIAP1: true))
        device.start()
        device.receive(try Self.frame(0, 0x13, [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)))
        device.receive(DetectSequence.bytes)
        try device.receive(LinkPacket(control: .syn, sequence: 0x10, payload: LinkParameters().synchronization.encoded()))
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x80))
        #expect(device.link.isUp)
        #expect(throws: LinkSendError.self) { try device.link.sendLegacy(try Self.frame(0, 0x02, [0, 0x13]), now: device.now) }
    }
}
