import Testing
import IAPConformance
import IAPLink
import IAPWire

/// Link rules seen from outside one end: what it writes in answer to what
/// its peer sends (recovery from an EAK, a lost connection, a refused
/// answer) and what carries over a renegotiation.
@Suite struct LinkBehaviourTests {
    /// A packet carrying session data (not a SYN's parameters or an EAK's list).
    static func isData(_ packet: LinkPacket) -> Bool {
        !packet.payload.isEmpty && !packet.control.contains(.syn) && !packet.control.contains(.eak)
    }

    /// An EAK lists the packets the peer holds out of order; every packet
    /// older than the newest listed one that is not listed is missing and
    /// goes again at once, not only those older than the oldest listed.
    @Test func anEAKResendsEveryUnlistedPacketOlderThanTheNewestListed() throws {
        // 20-byte payloads: 120 bytes go out as six packets, 0x81 to 0x86.
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumPacketLength: 30))
        try device.send([UInt8](repeating: 0x5A, count: 120))
        let sent = device.packets.filter(Self.isData).map(\.sequence)
        #expect(sent == [0x81, 0x82, 0x83, 0x84, 0x85, 0x86])
        let before = device.written.count
        // The accessory holds 0x83 and 0x85: 0x81, 0x82 and 0x84 were lost.
        try device.receive(LinkPacket(control: [.eak, .ack], sequence: 0x10, acknowledgement: 0x80, payload: [0x83, 0x85]))
        let resent = device.written[before...].compactMap { try? LinkPacket(decoding: $0) }.filter(Self.isData).map(\.sequence)
        #expect(resent == [0x81, 0x82, 0x84])
        #expect(violations(device.events).isEmpty)
    }

    /// A device that lost its connection (it restarted) and gets a bare ACK,
    /// a keep-alive say, answers RST at once, so that the accessory starts
    /// over now instead of after its silence limit.
    @Test func aListeningDeviceAnswersABareACKWithRST() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, initialSequence: 0x80))
        device.start()
        try device.receive(LinkPacket(control: .ack, sequence: 0x22, acknowledgement: 0x91))
        #expect(device.packets.map(\.control) == [.rst])
        #expect(!device.link.isUp)
        // Data gets the same answer.
        try device.receive(ScriptedLink.data(0x23, [1, 2, 3]))
        #expect(device.packets.map(\.control) == [.rst, .rst])
        #expect(device.delivered.isEmpty)
    }

    /// A renegotiation keeps sequence numbers going both ways: the device's
    /// SYN+ACK names the last packet it sent and its data after the new SYN
    /// carries on from there and reaches the accessory.
    @Test func deviceDataAfterARenegotiationKeepsItsSequenceAndArrives() throws {
        var simulation = LinkSimulator(accessory: accessoryConfiguration(), device: deviceConfiguration(initialSequence: 0x80))
        simulation.start()
        let up = simulation.run(until: .milliseconds(100)) { $0.accessory.isUp && $0.device.isUp }
        #expect(up)
        let before = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        try simulation.send(before, session: 1, from: .device)
        try simulation.send([1, 2, 3], session: 1, from: .accessory)
        simulation.run(until: simulation.now + .seconds(1)) {
            $0.deliveredBytes(to: .accessory, session: 1).count == before.count && $0.accessory.unacknowledgedCount == 0
                && $0.device.unacknowledgedCount == 0
        }
        let dataBefore = (simulation.sent[.device] ?? []).compactMap { try? LinkPacket(decoding: $0) }.filter(Self.isData)
        let lastSequence = try #require(dataBefore.last?.sequence)
        #expect(lastSequence == 0x81, "300 bytes fit in one packet on the default link")

        simulation.renegotiate()
        let renegotiated = simulation.run(until: simulation.now + .seconds(2)) { state in
            state.events(.accessory).contains { if case .renegotiated = $0 { true } else { false } }
                && state.events(.device).contains { if case .renegotiated = $0 { true } else { false } }
        }
        #expect(renegotiated)
        let synAck = (simulation.sent[.device] ?? []).compactMap { try? LinkPacket(decoding: $0) }.filter { $0.control == [.syn, .ack] }
        #expect(synAck.map(\.sequence) == [0x80, lastSequence], "the second SYN+ACK names the last packet sent")

        let after = (0..<500).map { UInt8(truncatingIfNeeded: $0 * 7) }
        try simulation.send(after, session: 1, from: .device)
        let arrived = simulation.run(until: simulation.now + .seconds(5)) {
            $0.deliveredBytes(to: .accessory, session: 1).count == before.count + after.count
        }
        #expect(arrived)
        #expect(simulation.deliveredBytes(to: .accessory, session: 1) == before + after)
        let dataAfter = (simulation.sent[.device] ?? []).compactMap { try? LinkPacket(decoding: $0) }.filter(Self.isData)
        #expect(dataAfter.dropFirst(dataBefore.count).first?.sequence == lastSequence &+ 1)
        #expect(!simulation.events(.device).contains(where: isDown) && !simulation.events(.accessory).contains(where: isDown))
    }
}
