import Testing
import IAPConformance
import IAPLink
import IAPTransport
import IAPWire

/// Silence means a peer is gone only when that peer keeps the link alive:
/// many phones and accessories send nothing at all on an idle link.
@Suite struct SilenceTests {
    static let configuration = LinkConfiguration(role: .device, keepAliveInterval: .seconds(2), silenceLimit: .seconds(10), initialSequence: 0x80)

    static func downs(_ events: [LinkEvent]) -> [LinkDownReason] {
        events.compactMap { if case .down(let reason) = $0 { reason } else { nil } }
    }

    /// Two ends on the default configuration, idle for minutes over a
    /// perfect wire: each one's keep-alives reach the other well within its
    /// silence limit, so neither takes the other for gone.
    @Test func twoIdleEndsOnTheDefaultsKeepTheLinkUp() {
        var simulator = LinkSimulator(accessory: LinkConfiguration(role: .accessory), device: LinkConfiguration(role: .device))
        simulator.start()
        simulator.run(for: .seconds(300))
        #expect(simulator.accessory.isUp && simulator.device.isUp)
        #expect(simulator.events(.accessory).allSatisfy { if case .down = $0 { false } else { true } }, "\(simulator.events(.accessory))")
        #expect(simulator.events(.device).allSatisfy { if case .down = $0 { false } else { true } }, "\(simulator.events(.device))")
    }

    @Test func anIdlePeerThatSendsNoKeepAlivesStaysConnected() throws {
        var device = try ScriptedLink.connectedDevice(Self.configuration)
        #expect(device.link.isUp)
        // Some traffic, acknowledged the way such a peer does, then nothing.
        try device.receive(ScriptedLink.data(0x11, [1, 2, 3]))
        try device.send([4, 5, 6])
        try device.receive(LinkPacket(control: .ack, sequence: 0x11, acknowledgement: 0x81))
        device.advance(.seconds(120))
        #expect(device.link.isUp, "\(device.events)")
        #expect(Self.downs(device.events).isEmpty)
        // This end still sends its own keep-alives.
        #expect(device.packets.filter { $0.control == .ack && $0.payload.isEmpty }.count >= 50)
    }

    @Test func aPeerThatKeptTheLinkAliveAndFallsSilentIsGone() throws {
        var device = try ScriptedLink.connectedDevice(Self.configuration)
        device.advance(.seconds(3))
        // The peer's keep-alive: a bare ACK nothing of ours prompted.
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x80))
        let heard = device.now
        device.advance(.seconds(30))
        #expect(!device.link.isUp)
        let downs = Self.downs(device.events)
        #expect(downs.count == 1, "\(device.events)")
        if case .peerSilent(let silence) = downs.first {
            #expect(silence >= .seconds(10) && silence < .seconds(11), "gone after \(silence), heard at \(heard)")
        } else {
            Issue.record("expected peerSilent, got \(downs)")
        }
    }

    /// An ACK answering a packet this end resent is no keep-alive, even when
    /// it arrives after the first ACK emptied the window.
    @Test func anAckForAResentPacketDoesNotCountAsAKeepAlive() throws {
        var device = try ScriptedLink.connectedDevice(Self.configuration)
        try device.send([1, 2, 3])
        device.advance(.milliseconds(1100))  // resent once after 1000 ms
        #expect(device.link.statistics.retransmissions == 1)
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x81))
        // The peer acknowledges the resent copy too.
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x81))
        device.advance(.seconds(60))
        #expect(device.link.isUp, "\(device.events)")
    }

    /// Between two ends of this stack, which both keep alive, a peer that
    /// vanishes is still found within the limit.
    @Test func twoEndsThatKeepAliveFindAVanishedPeer() {
        var simulation = LinkSimulator(accessory: LinkConfiguration(role: .accessory, skipDetect: true), device: Self.configuration)
        simulation.start()
        #expect(simulation.run(until: .milliseconds(100)) { $0.accessory.isUp && $0.device.isUp })
        simulation.run(until: .milliseconds(30_000)) { _ in false }
        #expect(simulation.device.isUp && simulation.accessory.isUp, "an idle link with keep-alives went down")
        var gone = WireFaults.none
        gone.loss = 1
        simulation.setFaults(gone, towards: .device)
        let start = simulation.now
        simulation.run(until: start + .seconds(30)) { !$0.device.isUp }
        #expect(!simulation.device.isUp)
        #expect(simulation.now - start <= .seconds(11), "took \(simulation.now - start)")
    }
}
