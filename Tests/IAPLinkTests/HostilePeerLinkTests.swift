import Testing
import IAPLink
import IAPTransport
import IAPWire

/// A link end driven packet by packet by the test, which plays the peer:
/// every rule a hostile or buggy peer can break, checked at the link end.
struct ScriptedLink {
    var link: LinkEnd
    var now = LinkInstant.zero
    var written: [[UInt8]] = []
    var delivered: [(session: UInt8, bytes: [UInt8])] = []
    var events: [LinkEvent] = []

    init(_ configuration: LinkConfiguration) {
        link = LinkEnd(configuration: configuration)
    }

    /// Packets this end wrote (the detect sequence left out).
    var packets: [LinkPacket] { written.compactMap { try? LinkPacket(decoding: $0) } }
    var deliveredBytes: Int { delivered.reduce(0) { $0 + $1.bytes.count } }
    var writtenBytes: Int { written.reduce(0) { $0 + $1.count } }

    mutating func apply(_ actions: [LinkAction]) {
        for action in actions {
            switch action {
            case .send(let bytes): written.append(bytes)
            case .deliver(let session, let bytes): delivered.append((session, bytes))
            case .event(let event): events.append(event)
            }
        }
    }

    mutating func start() { apply(link.start(now: now)) }
    mutating func receive(_ bytes: [UInt8]) { apply(link.receive(bytes, now: now)) }
    mutating func receive(_ packet: LinkPacket) throws { receive(try packet.encoded()) }
    mutating func consumed(_ count: Int) { apply(link.consumed(count, now: now)) }
    mutating func send(_ bytes: [UInt8], session: UInt8 = 1) throws { apply(try link.send(bytes, session: session, now: now)) }

    /// Moves time on, ticking at every deadline on the way.
    mutating func advance(_ duration: Duration) {
        let end = now + duration
        while let deadline = link.nextDeadline, deadline <= end {
            now = max(now, deadline)
            apply(link.tick(now: now))
        }
        now = end
    }

    /// A device end brought up by a scripted accessory that proposes `proposal`
    /// with SYN sequence 0x10; the device's SYN+ACK is 0x80.
    static func connectedDevice(_ configuration: LinkConfiguration = LinkConfiguration(role: .device, initialSequence: 0x80),
                                proposal: LinkParameters = LinkParameters()) throws -> ScriptedLink {
        var end = ScriptedLink(configuration)
        end.start()
        end.receive(DetectSequence.bytes)
        try end.receive(LinkPacket(control: .syn, sequence: 0x10, payload: proposal.synchronization.encoded()))
        try end.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x80))
        return end
    }

    static func data(_ sequence: UInt8, _ payload: [UInt8], session: UInt8 = 1, acknowledging: UInt8 = 0x80) -> LinkPacket {
        LinkPacket(control: .ack, sequence: sequence, acknowledgement: acknowledging, session: session, payload: payload)
    }
}

func violations(_ events: [LinkEvent]) -> [LinkViolation] {
    events.compactMap { if case .peerViolation(let violation) = $0 { violation } else { nil } }
}

@Suite struct HostilePeerLinkTests {
    // MARK: 1. Unusable SYN proposals

    @Test(arguments: [(0, 8), (4, 8), (10, 8), (23, 8), (4096, 0)])
    func aSYNWithUnusableLimitsIsRefusedWithRSTAndAReason(packetLength: Int, window: Int) throws {
        var device = ScriptedLink(LinkConfiguration(role: .device))
        device.start()
        var proposal = LinkParameters().synchronization
        proposal.maximumPacketLength = UInt16(packetLength)
        proposal.maximumOutstandingPackets = UInt8(window)
        try device.receive(LinkPacket(control: .syn, sequence: 1, payload: proposal.encoded()))
        #expect(!device.link.isUp)
        #expect(device.packets.map(\.control) == [.rst])
        let reasons = device.events.compactMap { event -> [String]? in if case .proposalRefused(let reasons) = event { reasons } else { nil } }.first ?? []
        let named = window == 0 ? "max outstanding packets 0" : "max packet length \(packetLength)"
        #expect(reasons.contains { $0.contains(named) }, "\(reasons)")
        // Data pushed at the refused link goes nowhere and sends nothing but RST.
        try device.receive(ScriptedLink.data(2, [1, 2, 3]))
        #expect(device.delivered.isEmpty)
    }

    @Test func aWindowOver127IsUsedAs127AndTheLogSaysSo() throws {
        let device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumOutstandingPackets: 127))
        #expect(device.link.negotiated?.sendWindow == 127)
        var wide = ScriptedLink(LinkConfiguration(role: .device))
        wide.start()
        var proposal = LinkParameters().synchronization
        proposal.maximumOutstandingPackets = 200
        try wide.receive(LinkPacket(control: .syn, sequence: 1, payload: proposal.encoded()))
        try wide.receive(LinkPacket(control: .ack, sequence: 1, acknowledgement: 0))
        #expect(wide.link.negotiated?.sendWindow == 127)
        let adjusted = wide.events.compactMap { event -> [String]? in if case .negotiationAdjusted(let reasons) = event { reasons } else { nil } }.first ?? []
        #expect(adjusted.contains { $0.contains("200") && $0.contains("at most 127") }, "\(adjusted)")
    }

    @Test func theReservedSessionIdZeroIsRefused() throws {
        var device = ScriptedLink(LinkConfiguration(role: .device))
        device.start()
        var proposal = LinkParameters().synchronization
        proposal.sessions.append(LinkSessionDescriptor(id: 0, type: .externalAccessory))
        try device.receive(LinkPacket(control: .syn, sequence: 1, payload: proposal.encoded()))
        #expect(device.packets.map(\.control) == [.rst])
        #expect(!device.link.isUp)
    }

    // MARK: 3. A reader that falls behind holds the peer back

    @Test func dataTheReaderHasNoRoomForIsHeldUnacknowledgedUntilConsumed() throws {
        var configuration = LinkConfiguration(role: .device, initialSequence: 0x80)
        configuration.receiveBufferLimit = 4000
        configuration.parameters.maximumOutstandingPackets = 8
        var device = try ScriptedLink.connectedDevice(configuration, proposal: LinkParameters(maximumOutstandingPackets: 8))
        let window = device.link.negotiated?.receiveWindow ?? 0
        #expect(window == 8)
        for sequence in 0x11...0x18 {
            try device.receive(ScriptedLink.data(UInt8(sequence), [UInt8](repeating: UInt8(sequence), count: 1000)))
        }
        // Four fit the reader's budget; the other four wait, unacknowledged.
        #expect(device.deliveredBytes == 4000)
        device.advance(.milliseconds(200))
        let acknowledged = device.packets.filter { $0.control.contains(.ack) }.map(\.acknowledgement).last
        #expect(acknowledged == 0x14)
        // A flood beyond the window and repeats of held packets change nothing.
        let before = device.deliveredBytes
        for round in 0..<1000 {
            try device.receive(ScriptedLink.data(UInt8(0x19 + round % 100), [UInt8](repeating: 0xEE, count: 1000)))
            try device.receive(ScriptedLink.data(0x16, [UInt8](repeating: 0x16, count: 1000)))
        }
        #expect(device.deliveredBytes == before)
        #expect(device.link.statistics.packetsHeldForReader >= 1)
        #expect(!device.packets.contains { $0.control.contains(.eak) }, "EAKs sent while the reader was behind")
        // The reader catches up: the held packets follow in order and are acknowledged.
        device.consumed(4000)
        #expect(device.delivered.map { $0.bytes[0] } == Array(0x11...0x18))
        #expect(device.packets.last?.acknowledgement == 0x18)
    }

    @Test func aFloodNobodyReadsIsNotQueuedBeyondTheReadersBudget() throws {
        var configuration = LinkConfiguration(role: .device, initialSequence: 0x80)
        configuration.receiveBufferLimit = 16 * 1024
        var device = try ScriptedLink.connectedDevice(configuration)
        // 20,000 packets of 1 KiB from a peer that ignores the window.
        var sequence: UInt8 = 0x10
        for _ in 0..<20_000 {
            sequence &+= 1
            try device.receive(ScriptedLink.data(sequence, [UInt8](repeating: 0x42, count: 1024)))
            device.written.removeAll(keepingCapacity: true)
        }
        #expect(device.deliveredBytes <= 16 * 1024)
        #expect(device.deliveredBytes >= 15 * 1024)
    }

    // MARK: 5. The accessory starts over with backoff

    @Test func theAccessoryStartsOverWithBackoffAfterRSTAndRefusals() throws {
        var accessory = ScriptedLink(LinkConfiguration(role: .accessory, initialSequence: 0x2B))
        accessory.start()
        for expectedDelay in [1, 2, 4, 8] {
            // Answer the detect, then refuse the SYN with RST.
            accessory.receive(DetectSequence.bytes)
            #expect(accessory.packets.last?.control == .syn)
            try accessory.receive(LinkPacket(control: .rst, sequence: 0, acknowledgement: 0x2B))
            #expect(accessory.events.last == .restartScheduled(after: .seconds(expectedDelay)))
            let restartedAt = accessory.now
            let count = accessory.written.count
            accessory.advance(.seconds(expectedDelay) - .milliseconds(1))
            #expect(accessory.written.count == count, "sent before its backoff of \(expectedDelay) s")
            accessory.advance(.milliseconds(1))
            #expect(accessory.written.last == DetectSequence.bytes, "no detect \(expectedDelay) s after \(restartedAt)")
        }
        // A link that comes up resets the backoff; a RST on it starts over after 1 s.
        accessory.receive(DetectSequence.bytes)
        var answer = LinkParameters().synchronization
        answer.sessions = LinkParameters.standardSessions
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x50, acknowledgement: 0x2B, payload: answer.encoded()))
        #expect(accessory.link.isUp)
        try accessory.receive(LinkPacket(control: .rst, sequence: 0x50))
        #expect(accessory.events.suffix(2) == [.down(.peerReset), .restartScheduled(after: .seconds(1))])
        #expect(accessory.link.statistics.restarts == 4)
    }

    @Test func anAccessoryWithoutARestartPolicyStopsForGood() throws {
        var configuration = LinkConfiguration(role: .accessory)
        configuration.restart = nil
        var accessory = ScriptedLink(configuration)
        accessory.start()
        accessory.receive(DetectSequence.bytes)
        try accessory.receive(LinkPacket(control: .rst))
        #expect(accessory.link.nextDeadline == nil)
    }

    // MARK: 6. iAP1 noise is not an iAP1-only peer

    @Test func iap1LookingNoiseBeforeTheEchoDoesNotEndTheLink() throws {
        var accessory = ScriptedLink(LinkConfiguration(role: .accessory))
        accessory.start()
        // Valid iAP1 frames that answer nothing: lingo 4, and lingo 0 command 0x13.
        accessory.receive([0x55, 0x02, 0x04, 0x01, 0xF9])
        accessory.receive([0x55, 0x03, 0x00, 0x13, 0x00, 0xEA])
        // iPodAck for another command than 0xEE.
        accessory.receive([0x55, 0x04, 0x00, 0x02, 0x04, 0x13, 0xE3])
        #expect(!accessory.events.contains { if case .failed = $0 { true } else { false } })
        accessory.receive(DetectSequence.bytes)
        #expect(accessory.packets.last?.control == .syn)
    }

    @Test(arguments: [[UInt8]([0x55, 0x04, 0x00, 0x02, 0x04, 0xEE, 0x08]), [0x55, 0x02, 0x00, 0x00, 0xFE]])
    func aRealIAP1AnswerToDetectIsReported(answer: [UInt8]) {
        var accessory = ScriptedLink(LinkConfiguration(role: .accessory))
        accessory.start()
        accessory.receive(answer)
        let failures = accessory.events.compactMap { if case .failed(let failure) = $0 { failure } else { nil } }
        if case .iap1OnlyPeer(lingo: 0, _)? = failures.first {} else { Issue.record("not reported as iAP1-only: \(accessory.events)") }
    }

    // MARK: 7. Stalled candidates are given up together

    func staleHeader(claiming length: Int) -> [UInt8] {
        var header: [UInt8] = [0xFF, 0x5A, UInt8(length >> 8), UInt8(length & 0xFF), 0x40, 0x01, 0x00, 0x01]
        header.append(0 &- header.reduce(0, &+))
        return header
    }

    @Test func stackedStaleHeadersDelayTheDetectEchoByOneTimeoutOnly() {
        var device = ScriptedLink(LinkConfiguration(role: .device))
        device.start()
        device.receive((0..<10).flatMap { _ in staleHeader(claiming: 0xFFFF) } + DetectSequence.bytes)
        #expect(device.written.isEmpty)
        device.advance(.milliseconds(500))
        #expect(device.written == [DetectSequence.bytes])
    }

    @Test func stackedHeadersAfterLinkUpDoNotEndTheLink() throws {
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumPacketLength: 4096))
        let limit = device.link.negotiated?.receivePacketLength ?? 0
        device.receive((0..<30).flatMap { _ in staleHeader(claiming: limit) })
        try device.receive(ScriptedLink.data(0x11, [7, 7, 7]))
        device.advance(.milliseconds(600))
        #expect(device.link.isUp)
        #expect(device.delivered.map(\.bytes) == [[7, 7, 7]])
        #expect(violations(device.events).contains { $0.kind == "incomplete_packet" })
    }

    // MARK: 8, 9. Acknowledgements are checked against what is in flight

    /// A connected device with `count` data packets of its own in flight (0x81...).
    func deviceWithPacketsInFlight(_ count: Int) throws -> ScriptedLink {
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumOutstandingPackets: 8, maximumPacketLength: 128))
        for index in 0..<count { try device.send([UInt8](repeating: UInt8(index), count: 100)) }
        #expect(device.link.unacknowledgedCount == count)
        return device
    }

    @Test func garbageEAKsAreIgnoredAndCounted() throws {
        var device = try deviceWithPacketsInFlight(3)
        let before = device.writtenBytes
        var random = SeededRandom(seed: 7)
        for _ in 0..<1000 {
            let list = (0..<Int(random.next() % 40)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            try device.receive(LinkPacket(control: [.eak, .ack], sequence: 0x10, acknowledgement: 0x80, payload: list))
        }
        #expect(device.writtenBytes - before < 2000, "answered 1000 garbage EAKs with \(device.writtenBytes - before) bytes")
        #expect(device.link.statistics.invalidEAKs >= 990)
        #expect(violations(device.events).filter { $0.kind == "invalid_eak" }.count == 1)
    }

    @Test func repeatedEAKsResendOncePerHalfTimeoutAndCountAgainstTheLimit() throws {
        var device = try deviceWithPacketsInFlight(3)
        // The peer holds 0x82 and 0x83: 0x81 is missing.
        for _ in 0..<1000 { try device.receive(LinkPacket(control: [.eak, .ack], sequence: 0x10, acknowledgement: 0x80, payload: [0x82, 0x83])) }
        #expect(device.link.statistics.retransmissions == 1)
        // One EAK per timeout: every resend counts, and the limit ends the link.
        let limit = device.link.negotiated?.maximumRetransmissions ?? 0
        for _ in 0..<limit + 2 {
            device.now = device.now + .milliseconds(600)
            try device.receive(LinkPacket(control: [.eak, .ack], sequence: 0x10, acknowledgement: 0x80, payload: [0x82, 0x83]))
            if !device.link.isUp { break }
        }
        #expect(!device.link.isUp)
        #expect(device.events.contains { if case .down(.retransmissionsExhausted(0x81, _)) = $0 { true } else { false } })
        #expect(device.link.statistics.retransmissions <= limit)
    }

    @Test func anAcknowledgementOfANumberNeverSentIsIgnored() throws {
        var device = try deviceWithPacketsInFlight(3)
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0xA0))
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x84))
        #expect(device.link.unacknowledgedCount == 3)
        #expect(device.link.statistics.invalidAcknowledgements == 2)
        #expect(violations(device.events) == [.acknowledgementNotSent(0xA0)])
        // A real acknowledgement still works, and an old one is harmless.
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x82))
        #expect(device.link.unacknowledgedCount == 1)
        try device.receive(LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0x80))
        #expect(device.link.unacknowledgedCount == 1)
        #expect(device.link.statistics.invalidAcknowledgements == 2)
    }

    // MARK: 11. Duplicates of held packets, and peers of either EAK reading

    @Test func aRepeatOfAHeldPacketIsReACKedNotEAKed() throws {
        var device = try ScriptedLink.connectedDevice()
        // 0x11 is lost; 0x12 and 0x13 are held.
        try device.receive(ScriptedLink.data(0x12, [2]))
        try device.receive(ScriptedLink.data(0x13, [3]))
        #expect(device.link.statistics.eaksSent == 2)
        // A peer that reads EAK lists as missing packets resends what we hold, twice.
        for _ in 0..<2 {
            try device.receive(ScriptedLink.data(0x12, [2]))
            try device.receive(ScriptedLink.data(0x13, [3]))
        }
        #expect(device.link.statistics.eaksSent == 2)
        #expect(device.packets.suffix(4).allSatisfy { $0.control == .ack && $0.acknowledgement == 0x10 })
        // Its timer resends the lost one: everything is delivered once, in order.
        try device.receive(ScriptedLink.data(0x11, [1]))
        #expect(device.delivered.map(\.bytes) == [[1], [2], [3]])
        device.advance(.milliseconds(100))
        #expect(device.packets.last?.acknowledgement == 0x13)
    }

    /// A peer that resends a packet already delivered missed our
    /// acknowledgement: it is acknowledged again at once, not after the
    /// cumulative-ACK timeout, and not delivered twice.
    @Test func aRepeatOfADeliveredPacketIsAcknowledgedAtOnce() throws {
        var device = try ScriptedLink.connectedDevice(proposal: LinkParameters(maximumCumulativeAcks: 4))
        try device.receive(ScriptedLink.data(0x11, [1]))
        let before = device.written.count
        #expect(before == 0 || device.packets.last?.acknowledgement != 0x11, "acknowledged before the cumulative count or timeout")
        try device.receive(ScriptedLink.data(0x11, [1]))
        #expect(device.written.count == before + 1)
        #expect(device.packets.last?.control == .ack && device.packets.last?.acknowledgement == 0x11)
        #expect(device.delivered.map(\.bytes) == [[1]])
        #expect(device.link.statistics.duplicatesReceived == 1)
    }

    // MARK: 12. Oversized packets and unknown sessions

    @Test func oversizedPacketsAndUnknownSessionsAreCountedAndReportedOnce() throws {
        var device = try ScriptedLink.connectedDevice(LinkConfiguration(role: .device, parameters: LinkParameters(maximumPacketLength: 128), initialSequence: 0x80))
        for sequence: UInt8 in [0x11, 0x12] {
            try device.receive(ScriptedLink.data(sequence, [UInt8](repeating: 1, count: 300)))
        }
        #expect(device.link.statistics.oversizedPacketsReceived == 2)
        #expect(device.delivered.isEmpty)
        try device.receive(ScriptedLink.data(0x11, [1], session: 9))
        try device.receive(ScriptedLink.data(0x12, [2], session: 9))
        try device.receive(ScriptedLink.data(0x13, [3], session: 1))
        #expect(device.delivered.map(\.session) == [1])
        #expect(device.link.statistics.unknownSessionPackets == 2)
        #expect(violations(device.events) == [.oversizedPacket(limit: 128), .unknownSession(9)])
    }
}
