import Testing
import IAPLink
import IAPWire

/// Findings of the FuzzLinkEnd fuzz target (Fuzz/, Docs/Fuzzing.md), each
/// with its minimised input. Replay one with
/// `Fuzz/.build-fuzz/release/FuzzLinkEnd <file with the bytes>`.
@Suite struct LinkFuzzRegressionTests {
    /// Pair mode (first byte odd): a device that advertised 25-byte packets,
    /// an accessory with the three standard sessions, a few packets across,
    /// then `renegotiate()`. The accessory's SYN is 29 bytes (10 + 3 per
    /// session + header and checksum), over the 25 the device can receive:
    /// the device dropped it as oversized and the link went down once the
    /// SYN retries ran out. Found as "accessory wrote a 29-byte packet (SYN)
    /// over the peer's 24-byte limit".
    static let renegotiationOverThePeersLimit: [UInt8] = [0x01, 0x03, 0x01, 0x00, 0x00, 0x00, 0x00, 0x08, 0x55, 0x73, 0xCE, 0x01, 0x08, 0x00, 0x08, 0xCE]

    /// An accessory brought up by a scripted device whose SYN+ACK advertises
    /// `devicePacketLength`.
    static func connectedAccessory(devicePacketLength: Int) throws -> ScriptedLink {
        var accessory = ScriptedLink(LinkConfiguration(role: .accessory, skipDetect: true, initialSequence: 0x10))
        accessory.start()
        let syn = try #require(accessory.packets.last)
        #expect(syn.control == .syn)
        let proposal = try LinkSynchronization(decoding: syn.payload)
        var limits = LinkParameters()
        limits.maximumPacketLength = devicePacketLength
        guard case .success(let negotiated) = LinkNegotiation.answer(to: proposal, limits: limits) else {
            Issue.record("the scripted device refused the accessory's proposal")
            return accessory
        }
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: syn.sequence, payload: negotiated.answer.encoded()))
        #expect(accessory.link.isUp)
        return accessory
    }

    @Test func renegotiationIsNotStartedWhenItsSYNCannotReachThePeer() throws {
        var accessory = try Self.connectedAccessory(devicePacketLength: 25)
        #expect(accessory.link.negotiated?.sendPacketLength == 25)
        let before = accessory.written.count
        accessory.apply(accessory.link.renegotiate(now: accessory.now))
        let after = Array(accessory.written[before...])
        #expect(after.allSatisfy { $0.count <= 25 }, "packets of \(after.map(\.count)) bytes written after renegotiate()")
        #expect(!after.contains { (try? LinkPacket(decoding: $0))?.control.contains(.syn) == true }, "a SYN was sent")
        // The link carries on: data still goes out within the limit.
        try accessory.send(Array(repeating: 7, count: 40))
        #expect(accessory.link.isUp)
        #expect(accessory.written[before...].allSatisfy { $0.count <= 25 })
        #expect(!accessory.events.contains { if case .down = $0 { true } else { false } })
    }

    @Test func renegotiationStillRunsWhenItsSYNFits() throws {
        var accessory = try Self.connectedAccessory(devicePacketLength: 29)
        let before = accessory.written.count
        accessory.apply(accessory.link.renegotiate(now: accessory.now))
        let syns = accessory.written[before...].compactMap { try? LinkPacket(decoding: $0) }.filter { $0.control == .syn }
        #expect(syns.count == 1)
        #expect(accessory.written[before...].allSatisfy { $0.count <= 29 })
    }

    /// Single mode (first byte even), device end on a zero-ACK
    /// configuration: the peer brings the link up, sends a second SYN (a
    /// renegotiation, answered with SYN+ACK), and the application calls
    /// `reset()` before the peer's ACK. The end sent RST and went back to
    /// listening without reporting `.down`: `reset` only counted a link as up
    /// in the connected state, not while renegotiating, so the connection
    /// ended unreported (and its next `up` was a second one without a down).
    /// Found as "device end reported up twice without down".
    static let resetWhileRenegotiating: [UInt8] = [
        0x00, 0xD6, 0x06, 0x01, 0x05, 0x10, 0x01, 0x02, 0x10, 0x80, 0x00, 0x00, 0x14, 0x04, 0x01, 0x05, 0x00, 0x00, 0x00, 0x02,
        0x10, 0x80, 0x00, 0x00, 0x00, 0x02, 0x01, 0xB0, 0x02, 0x10, 0x80, 0x00, 0x00, 0x44, 0x65, 0x00, 0x04,
    ]

    @Test func aDeviceResetWhileRenegotiatingReportsDown() throws {
        var device = try ScriptedLink.connectedDevice()
        #expect(device.link.isUp)
        try device.receive(LinkPacket(control: .syn, sequence: 0x11, payload: LinkParameters().synchronization.encoded()))
        #expect(device.packets.last?.control == [.syn, .ack])
        device.apply(device.link.reset(now: device.now))
        #expect(device.packets.last?.control == .rst)
        let downs = device.events.filter { if case .down = $0 { true } else { false } }
        #expect(downs == [.down(.localReset)])
    }

    @Test func anAccessoryResetWhileRenegotiatingReportsDown() throws {
        var accessory = try Self.connectedAccessory(devicePacketLength: 4096)
        accessory.apply(accessory.link.renegotiate(now: accessory.now))
        #expect(accessory.packets.last?.control == .syn)
        accessory.apply(accessory.link.reset(now: accessory.now))
        #expect(accessory.packets.last?.control == .rst)
        let downs = accessory.events.filter { if case .down = $0 { true } else { false } }
        #expect(downs == [.down(.localReset)])
    }

    /// Pair mode: a device with a receive window of 8 and an accessory that
    /// can receive only 24-byte packets (14 payload bytes); packets lost on
    /// the wire leave the device holding more out-of-order packets than an
    /// EAK of 14 numbers can list. Its EAK listed them all and came out 25
    /// bytes long, over the accessory's limit, so the accessory dropped it.
    /// Found as "device wrote a 25-byte packet (ACK+EAK) over the peer's
    /// 24-byte limit".
    static let eakOverThePeersLimit: [UInt8] = [
        0x05, 0x4D, 0x00, 0x10, 0x65, 0x00, 0x01, 0x00, 0x08, 0x00, 0x08, 0x0B, 0x01, 0x00, 0x08, 0xCB, 0xCB, 0x02, 0x10,
    ]

    @Test func anEAKListsOnlyAsManyPacketsAsFitThePeersLimit() throws {
        var configuration = LinkConfiguration(role: .device, initialSequence: 0x80)
        configuration.parameters.maximumOutstandingPackets = 32
        var device = try ScriptedLink.connectedDevice(configuration, proposal: LinkParameters(maximumPacketLength: 24))
        #expect(device.link.negotiated?.sendPacketLength == 24)
        // Data 0x11 is lost; 0x12 to 0x21 arrive and are held out of order.
        let before = device.written.count
        for sequence in UInt8(0x12)...0x21 { try device.receive(ScriptedLink.data(sequence, [sequence])) }
        #expect(device.written[before...].allSatisfy { $0.count <= 24 }, "\(device.written[before...].map(\.count))")
        let eak = try #require(device.packets.last { $0.control.contains(.eak) })
        #expect(eak.payload == Array(UInt8(0x12)...0x1F))
        #expect(device.delivered.isEmpty)
        // The lost packet arrives: everything held is delivered in order.
        try device.receive(ScriptedLink.data(0x11, [0x11]))
        #expect(device.delivered.map(\.bytes) == (UInt8(0x11)...0x21).map { [$0] })
    }

    /// Single mode, device end: data sent on an acknowledged link, then the
    /// peer renegotiates to zero-ACK. The packet in flight stayed in the
    /// retransmission queue for good: a zero-ACK link neither reads
    /// acknowledgements nor retransmits, so nothing ever removed it (and
    /// `unacknowledgedCount` stayed above 0 on a zero-ACK link). Found as
    /// "device end: zero-ACK link keeps packets for retransmission".
    static let renegotiationToZeroAck: [UInt8] = [
        0x00, 0x44, 0x69, 0x63, 0x74, 0x69, 0x01, 0x02, 0xED, 0x80, 0x01, 0x01, 0x01, 0x68, 0x65, 0x6C, 0x00, 0xAB, 0xD0, 0xD0,
        0x30, 0x43, 0x6C, 0x65, 0x64, 0x07, 0x00, 0x14, 0x68, 0x6C,
    ]

    @Test func renegotiatingToZeroAckDropsThePacketsInFlight() throws {
        var device = try ScriptedLink.connectedDevice()
        try device.send([1, 2, 3])
        #expect(device.link.unacknowledgedCount == 1)
        var zeroAck = LinkParameters()
        zeroAck.zeroAck = true
        try device.receive(LinkPacket(control: .syn, sequence: 0x11, payload: zeroAck.synchronization.encoded()))
        try device.receive(LinkPacket(control: .ack, sequence: 0x11, acknowledgement: 0x81))
        #expect(device.link.negotiated?.zeroAck == true)
        #expect(device.link.unacknowledgedCount == 0)
        // Nothing is retransmitted later either.
        let before = device.written.count
        device.advance(.seconds(5))
        #expect(!device.written[before...].contains { (try? LinkPacket(decoding: $0))?.payload == [1, 2, 3] })
    }

    /// Single mode, accessory end, 49 bytes (`00 EB 04 EB D5 CB CB 03 D5 …
    /// CB 10 CB CB 3C`): a zero-ACK link up, the accessory renegotiates, and
    /// the device's data packet sent before it saw the SYN arrives while the
    /// SYN is unanswered. The accessory dropped it; a zero-ACK device never
    /// resends, so it was lost for good. Found 239,665 executions into a
    /// run as "accessory end delivered data number 3 after 0, skipping 1".
    @Test func zeroAckDataArrivingWhileARenegotiationIsUnansweredIsDelivered() throws {
        var parameters = LinkParameters()
        parameters.zeroAck = true
        var accessory = ScriptedLink(LinkConfiguration(role: .accessory, parameters: parameters, skipDetect: true, initialSequence: 0x10))
        accessory.start()
        let syn = try #require(accessory.packets.last)
        let answer = try LinkNegotiation.answer(to: LinkSynchronization(decoding: syn.payload), limits: LinkParameters()).get().answer
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: syn.sequence, payload: answer.encoded()))
        #expect(accessory.link.negotiated?.zeroAck == true)

        accessory.apply(accessory.link.renegotiate(now: accessory.now))
        let renegotiation = try #require(accessory.packets.last)
        #expect(renegotiation.control == .syn)
        try accessory.receive(ScriptedLink.data(0x81, [9, 8, 7], acknowledging: syn.sequence))
        #expect(accessory.delivered.map(\.bytes) == [[9, 8, 7]])

        // The renegotiation completes and the link carries on.
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x82, acknowledgement: renegotiation.sequence, payload: answer.encoded()))
        #expect(accessory.events.contains { if case .renegotiated = $0 { true } else { false } })
        try accessory.receive(ScriptedLink.data(0x83, [6], acknowledging: renegotiation.sequence))
        #expect(accessory.delivered.map(\.bytes) == [[9, 8, 7], [6]])
    }

    /// An acknowledged link still leaves data sent across its renegotiation
    /// to the peer's retransmission: nothing is taken while the SYN is out.
    @Test func acknowledgedDataArrivingWhileARenegotiationIsUnansweredWaitsForItsResend() throws {
        var accessory = try Self.connectedAccessory(devicePacketLength: 128)
        accessory.apply(accessory.link.renegotiate(now: accessory.now))
        #expect(accessory.packets.last?.control == .syn)
        try accessory.receive(ScriptedLink.data(0x81, [9, 8, 7], acknowledging: 0x10))
        #expect(accessory.delivered.isEmpty)
    }

    /// Pair mode, `05 FF FF FF FF 0A FF 0D 0D 0B FF 03 75 22 0A 3B FF 40 40 0B`:
    /// the accessory's SYN duplicated on the wire, the copy delivered after
    /// the handshake's ACK and the first data packet. The device took the
    /// old SYN for a renegotiation, set its received sequence back to the
    /// SYN's number and delivered the data packet that followed it a second
    /// time. Found as "device delivered 2 bytes on session 1 at offset 2 that
    /// are not what the other end sent next".
    @Test func anOldSYNArrivingLateStartsANewLinkAndDeliversNothingTwice() throws {
        var device = try ScriptedLink.connectedDevice()
        try device.receive(ScriptedLink.data(0x11, [1, 2]))
        try device.receive(ScriptedLink.data(0x12, [3]))
        #expect(device.delivered.map(\.bytes) == [[1, 2], [3]])
        device.events.removeAll()
        let before = device.written.count
        try device.receive(LinkPacket(control: .syn, sequence: 0x10, payload: LinkParameters().synchronization.encoded()))
        #expect(device.events.first == .down(.peerRestarted), "\(device.events)")
        // Answered as a new link: the initial sequence, acknowledging the SYN.
        let answer = try #require(device.written[before...].compactMap { try? LinkPacket(decoding: $0) }.first)
        #expect(answer.control == [.syn, .ack] && answer.sequence == 0x80 && answer.acknowledgement == 0x10)
        // What follows belongs to the new link, which the layer above hears
        // of as a new connection (down, then up): nothing is a repeat.
        try device.receive(ScriptedLink.data(0x11, [9]))
        #expect(device.events.contains { if case .up = $0 { true } else { false } }, "\(device.events)")
        #expect(!device.events.contains { if case .renegotiated = $0 { true } else { false } })
        #expect(device.delivered.map(\.bytes) == [[1, 2], [3], [9]])
    }

    /// A renegotiation's SYN, numbered after the last packet received (or
    /// reusing that packet's number, as some peers may), keeps the link and
    /// its numbers.
    @Test(arguments: [UInt8(0x12), 0x11])
    func aSYNFollowingTheLastPacketIsARenegotiation(synSequence: UInt8) throws {
        var device = try ScriptedLink.connectedDevice()
        try device.receive(ScriptedLink.data(0x11, [1, 2]))
        device.events.removeAll()
        try device.receive(LinkPacket(control: .syn, sequence: synSequence, payload: LinkParameters().synchronization.encoded()))
        try device.receive(LinkPacket(control: .ack, sequence: synSequence, acknowledgement: 0x80))
        #expect(device.events.contains { if case .renegotiated = $0 { true } else { false } }, "\(device.events)")
        #expect(!device.events.contains { if case .down = $0 { true } else { false } })
        try device.receive(ScriptedLink.data(synSequence &+ 1, [4]))
        #expect(device.delivered.map(\.bytes) == [[1, 2], [4]])
    }

    /// Pair mode, `5D 00 43 EB EB 2B FF FF 2B 2B 2B 2B 08 00 CA 00 83 00 9A 9E 01 28 10`:
    /// the device's data packet lost, the accessory renegotiates, the ACK
    /// that completes the renegotiation lost too. The device waited for that
    /// ACK with no deadline at all (its data never went again) and the
    /// accessory, up, had nothing to say: the link was stuck for good. Found
    /// as "healed wire: not everything sent was delivered and the link did
    /// not go down". The device now answers the SYN again after the
    /// retransmission timeout, and the accessory acknowledges again.
    @Test func aLostHandshakeACKIsRecoveredBySendingTheSYNACKAgain() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, initialSequence: 0x80))
        device.start()
        device.receive(DetectSequence.bytes)
        try device.receive(LinkPacket(control: .syn, sequence: 0x10, payload: LinkParameters().synchronization.encoded()))
        let synAcks = { device.packets.filter { $0.control == [.syn, .ack] } }
        #expect(synAcks().count == 1)
        // The ACK is lost: after the retransmission timeout the same answer goes again.
        device.advance(.milliseconds(1_100))
        #expect(synAcks().count == 2)
        #expect(synAcks().last == synAcks().first)
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x80))
        #expect(device.link.isUp)
        // Up, it sends no more SYN+ACKs.
        device.advance(.seconds(5))
        #expect(synAcks().count == 2)
    }

    @Test func aDeviceWhoseSYNACKIsNeverAcknowledgedGivesUp() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, initialSequence: 0x80))
        device.start()
        device.receive(DetectSequence.bytes)
        var proposal = LinkParameters()
        proposal.maximumRetransmissions = 3
        try device.receive(LinkPacket(control: .syn, sequence: 0x10, payload: proposal.synchronization.encoded()))
        device.advance(.seconds(10))
        #expect(device.packets.filter { $0.control == [.syn, .ack] }.count == 4)
        #expect(device.events.contains(.failed(.handshakeUnacknowledged(attempts: 4))), "\(device.events)")
        #expect(!device.link.isUp)
        #expect(device.link.nextDeadline == nil)
    }

    @Test func aConnectedAccessoryAcknowledgesARepeatedSYNACK() throws {
        var accessory = try Self.connectedAccessory(devicePacketLength: 4096)
        let syn = try #require(accessory.packets.first { $0.control == .syn })
        let before = accessory.written.count
        var limits = LinkParameters()
        limits.maximumPacketLength = 4096
        guard case .success(let negotiated) = LinkNegotiation.answer(to: try LinkSynchronization(decoding: syn.payload), limits: limits) else {
            Issue.record("the scripted device refused the accessory's proposal")
            return
        }
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: syn.sequence, payload: negotiated.answer.encoded()))
        let again = accessory.written[before...].compactMap { try? LinkPacket(decoding: $0) }
        #expect(again.map(\.control) == [.ack], "\(again)")
        #expect(again.first?.acknowledgement == 0x80)
        #expect(accessory.link.isUp)
        #expect(!accessory.events.contains { if case .renegotiated = $0 { true } else { false } })
    }
}


/// Found by FuzzLinkEnd (single mode, 2026-11-26): a peer renegotiated to a
/// 24-byte packet limit while 1000-byte datagrams were queued and in
/// flight, and the device sent the next one whole, over the new limit.
@Suite struct RenegotiationLimitTests {
    static func connected(window: Int) throws -> ScriptedLink {
        try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumOutstandingPackets: window))
    }

    static func renegotiate(_ device: inout ScriptedLink, packetLength: Int, zeroAck: Bool = false) throws {
        let proposal = LinkParameters(maximumOutstandingPackets: 8, maximumPacketLength: packetLength, zeroAck: zeroAck).synchronization
        try device.receive(LinkPacket(control: .syn, sequence: 0x11, payload: proposal.encoded()))
    }

    @Test(arguments: [false, true])
    func aRenegotiationThatCannotCarryAQueuedDatagramIsRefused(zeroAck: Bool) throws {
        var device = try Self.connected(window: 1)
        try device.send(Array(repeating: 7, count: 1000), session: 3)
        try device.send(Array(repeating: 8, count: 1000), session: 3)
        let before = device.written.count
        try Self.renegotiate(&device, packetLength: 24, zeroAck: zeroAck)
        let after = device.written.dropFirst(before)
        #expect(after.allSatisfy { $0.count <= 24 }, "wrote \(after.map(\.count)) after the peer's limit became 24")
        #expect(device.packets.last?.control == .rst)
        let refused = device.events.flatMap { event -> [String] in
            if case .proposalRefused(let reasons) = event { return reasons }
            return []
        }
        #expect(refused.contains { $0.contains("cannot carry") }, "\(device.events)")
        #expect(device.events.contains(.down(.localReset)))
        #expect(!device.link.isUp)
    }

    @Test func aRenegotiationThatCannotCarryAPacketInFlightIsRefused() throws {
        var device = try Self.connected(window: 1)
        try device.send(Array(repeating: 7, count: 500), session: 1)
        try Self.renegotiate(&device, packetLength: 100)
        #expect(device.packets.last?.control == .rst)
        #expect(device.events.contains(.down(.localReset)))
    }

    /// Found by FuzzLinkEnd (single mode, 2026-11-26, 3.1 million executions
    /// into a run at `2651de7`): four packets in flight on a window of 8,
    /// then the peer renegotiated to a window of 1. The device took it and
    /// had four packets outstanding where the peer allows one, to be resent
    /// as they were. Such a renegotiation is refused, as one whose packet
    /// length cannot carry what is in flight.
    @Test func aRenegotiationToAWindowSmallerThanWhatIsInFlightIsRefused() throws {
        var device = try Self.connected(window: 8)
        for byte: UInt8 in 1...4 { try device.send([byte], session: 1) }
        let before = device.written.count
        let proposal = LinkParameters(maximumOutstandingPackets: 1).synchronization
        try device.receive(LinkPacket(control: .syn, sequence: 0x11, payload: proposal.encoded()))
        #expect(device.packets.last?.control == .rst, "\(device.packets.suffix(3))")
        #expect(device.written.count == before + 1, "only the RST is written")
        let refused = device.events.flatMap { event -> [String] in
            if case .proposalRefused(let reasons) = event { return reasons }
            return []
        }
        #expect(refused.contains { $0.contains("cannot cover the 4 packets in flight") }, "\(device.events)")
        #expect(device.events.contains(.down(.localReset)))
    }

    @Test func aSmallerWindowThatCoversWhatIsInFlightIsTaken() throws {
        var device = try Self.connected(window: 8)
        try device.send([1], session: 1)
        let proposal = LinkParameters(maximumOutstandingPackets: 1).synchronization
        try device.receive(LinkPacket(control: .syn, sequence: 0x11, payload: proposal.encoded()))
        #expect(device.packets.last?.control == [.syn, .ack], "\(device.events)")
    }

    /// What fits the new limit carries on: stream data is cut to the new size.
    @Test func aSmallerLimitThatFitsWhatIsCommittedIsTaken() throws {
        var device = try Self.connected(window: 1)
        try device.send(Array(repeating: 7, count: 10), session: 1)
        try device.send(Array(repeating: 8, count: 300), session: 1)
        try Self.renegotiate(&device, packetLength: 40)
        #expect(device.packets.last?.control == [.syn, .ack], "\(device.events)")
        try device.receive(LinkPacket(control: .ack, sequence: 0x11, acknowledgement: 0x81))
        #expect(device.events.contains { if case .renegotiated = $0 { true } else { false } })
        device.advance(.milliseconds(10))
        let data = device.packets.filter { !$0.payload.isEmpty && $0.control == .ack }
        #expect(data.count > 1)
        #expect(device.written.allSatisfy { $0.count <= 4096 })
        #expect(data.dropFirst().allSatisfy { $0.payload.count <= 40 - 10 }, "\(data.map(\.payload.count))")
    }
}

/// Found by FuzzLinkEnd (single mode, 2026-11-26): a device answered a SYN,
/// then refused a malformed second SYN with RST but kept the first
/// handshake open; the peer's next ACK completed it with the first SYN's
/// sequence number, and the peer's data, numbered after its second SYN,
/// was taken for old packets and skipped.
@Suite struct RefusedSYNTests {
    @Test func aSYNRefusedWithRSTEndsTheHandshakeInProgress() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device, initialSequence: 0x01))
        device.start()
        device.receive(DetectSequence.bytes)
        try device.receive(LinkPacket(control: .syn, sequence: 6, payload: LinkParameters().synchronization.encoded()))
        #expect(device.packets.last?.control == [.syn, .ack])
        // A SYN whose payload is not a link synchronisation payload.
        try device.receive(LinkPacket(control: .syn, sequence: 1, payload: []))
        #expect(device.packets.last?.control == .rst)
        // The ACK that would have completed the first handshake no longer does.
        try device.receive(LinkPacket(control: .ack, sequence: 1, acknowledgement: 1))
        #expect(!device.link.isUp, "\(device.events)")
        #expect(!device.events.contains { if case .up = $0 { true } else { false } })
    }

    @Test func aSYNRefusedOnAConnectedLinkTakesItDown() throws {
        var device = try ScriptedLink.connectedDevice()
        try device.receive(LinkPacket(control: .syn, sequence: 0x11, payload: [1, 2]))
        #expect(device.packets.last?.control == .rst)
        #expect(device.events.contains(.down(.localReset)))
        #expect(!device.link.isUp)
    }
}
