import Testing
import IAPConformance
import IAPLink
import IAPWire

func accessoryConfiguration(_ parameters: LinkParameters = LinkParameters(), initialSequence: UInt8 = 0x2B) -> LinkConfiguration {
    LinkConfiguration(role: .accessory, parameters: parameters, initialSequence: initialSequence)
}

func deviceConfiguration(_ parameters: LinkParameters = LinkParameters(), initialSequence: UInt8 = 0x80) -> LinkConfiguration {
    LinkConfiguration(role: .device, parameters: parameters, initialSequence: initialSequence)
}

func isUp(_ event: LinkEvent) -> Bool { if case .up = event { true } else { false } }
func isDown(_ event: LinkEvent) -> Bool { if case .down = event { true } else { false } }

@Suite struct LinkEndTests {
    @Test func handshakeBringsBothEndsUp() {
        var simulation = LinkSimulator(accessory: accessoryConfiguration(), device: deviceConfiguration())
        simulation.start()
        let up = simulation.run(until: .milliseconds(100)) { $0.accessory.isUp && $0.device.isUp }
        #expect(up)
        // detect, echo, SYN, SYN+ACK, ACK: the accessory's first three writes.
        let accessoryWrites = simulation.sent[.accessory] ?? []
        #expect(accessoryWrites.first == DetectSequence.bytes)
        #expect(simulation.sent[.device]?.first == DetectSequence.bytes)
        let syn = try? LinkPacket(decoding: accessoryWrites[1])
        #expect(syn?.control == .syn && syn?.sequence == 0x2B)
        #expect(simulation.events(.accessory).filter(isUp).count == 1)
        #expect(simulation.events(.device).filter(isUp).count == 1)
    }

    @Test func dataFlowsBothWaysAcrossPackets() throws {
        var simulation = LinkSimulator(accessory: accessoryConfiguration(LinkParameters(maximumPacketLength: 128)),
                                       device: deviceConfiguration(LinkParameters(maximumPacketLength: 64)))
        simulation.start()
        simulation.run(until: .milliseconds(100)) { $0.accessory.isUp && $0.device.isUp }
        let big = (0..<5000).map { UInt8(truncatingIfNeeded: $0) }
        try simulation.send(big, session: 1, from: .accessory)
        try simulation.send(Array(big.reversed()), session: 1, from: .device)
        simulation.run(until: simulation.now + .seconds(5)) {
            $0.deliveredBytes(to: .device, session: 1).count == 5000 && $0.deliveredBytes(to: .accessory, session: 1).count == 5000
        }
        #expect(simulation.deliveredBytes(to: .device, session: 1) == big)
        #expect(simulation.deliveredBytes(to: .accessory, session: 1) == big.reversed())
        // The device advertised 64-byte packets: nothing longer was sent to it.
        #expect((simulation.sent[.accessory] ?? []).allSatisfy { $0.count <= 64 })
    }
}
