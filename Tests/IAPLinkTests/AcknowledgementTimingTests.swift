import Testing
import IAPLink
import IAPWire

/// When a receiver acknowledges: by the cumulative count, and by half the
/// receive window at the latest, so that a sender streaming a long message
/// never sits with a full window waiting for the ACK of its last packet.
@Suite struct AcknowledgementTimingTests {
    /// The bare ACKs the device wrote after the handshake.
    private func acknowledgements(_ device: ScriptedLink, after handshake: Int) -> [UInt8] {
        device.packets.dropFirst(handshake).filter { $0.control == .ack && $0.payload.isEmpty }.map(\.acknowledgement)
    }

    /// Window 8, four packets per cumulative ACK: the fourth in-order
    /// packet is acknowledged at once, the three before it wait.
    @Test func theCumulativeCountIsKeptWhenTheWindowAllowsIt() throws {
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumCumulativeAcks: 4))
        let handshake = device.packets.count
        for (offset, sequence) in (UInt8(0x11)...0x13).enumerated() {
            try device.receive(ScriptedLink.data(sequence, [UInt8(offset)]))
        }
        #expect(acknowledgements(device, after: handshake).isEmpty, "acknowledged before the fourth packet")
        try device.receive(ScriptedLink.data(0x14, [3]))
        #expect(acknowledgements(device, after: handshake) == [0x14])
    }

    /// A receive window of 2 (the cumulative count is capped to it): waiting
    /// for two packets would leave the sender idle with a full window for a
    /// round trip each time. Half the window, one packet, is acknowledged at
    /// once instead.
    @Test func aSmallWindowIsAcknowledgedByHalfAWindow() throws {
        let configuration = LinkConfiguration(role: .device, parameters: LinkParameters(maximumOutstandingPackets: 2, maximumCumulativeAcks: 4),
                                              initialSequence: 0x80)
        var device = try ScriptedLink.connectedDevice(configuration, proposal: LinkParameters(maximumCumulativeAcks: 4))
        #expect(device.link.negotiated?.receiveWindow == 2)
        #expect(device.link.negotiated?.maximumCumulativeAcks == 2)
        let handshake = device.packets.count
        try device.receive(ScriptedLink.data(0x11, [1]))
        try device.receive(ScriptedLink.data(0x12, [2]))
        #expect(acknowledgements(device, after: handshake) == [0x11, 0x12], "the sender waited with a full window")
        #expect(device.delivered.map(\.bytes) == [[1], [2]])
    }

    /// The fourth packet makes an acknowledgement due. Received with the
    /// acknowledgement deferred, and answered before the turn ends, the
    /// answer's data packet carries it: no bare ACK goes out.
    @Test func anAnswerInTheSameTurnCarriesTheAcknowledgement() throws {
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumCumulativeAcks: 4))
        let handshake = device.packets.count
        for (offset, sequence) in (UInt8(0x11)...0x13).enumerated() {
            try device.receive(ScriptedLink.data(sequence, [UInt8(offset)]))
        }
        device.apply(device.link.receive(try ScriptedLink.data(0x14, [3]).encoded(), now: device.now, deferringAcknowledgement: true))
        #expect(acknowledgements(device, after: handshake).isEmpty, "a bare ACK went out before the answer")
        try device.send([0xA0])
        device.apply(device.link.flushAcknowledgement(now: device.now))
        let sent = device.packets.dropFirst(handshake)
        #expect(acknowledgements(device, after: handshake).isEmpty, "a bare ACK went out beside the answer")
        #expect(sent.map(\.payload) == [[0xA0]])
        #expect(sent.first?.acknowledgement == 0x14, "the answer did not acknowledge the fourth packet")
    }

    /// Nothing answered in the turn: the deferred acknowledgement goes out
    /// as a bare ACK when the turn ends, never later.
    @Test func aDeferredAcknowledgementWithoutAnAnswerGoesOutAtTheTurnsEnd() throws {
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumCumulativeAcks: 4))
        let handshake = device.packets.count
        for (offset, sequence) in (UInt8(0x11)...0x13).enumerated() {
            try device.receive(ScriptedLink.data(sequence, [UInt8(offset)]))
        }
        device.apply(device.link.receive(try ScriptedLink.data(0x14, [3]).encoded(), now: device.now, deferringAcknowledgement: true))
        #expect(acknowledgements(device, after: handshake).isEmpty)
        device.apply(device.link.flushAcknowledgement(now: device.now))
        #expect(acknowledgements(device, after: handshake) == [0x14])
    }
}
