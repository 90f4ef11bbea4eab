import Testing
import IAPLink
import IAPWire

/// The accessory takes the device's SYN+ACK as the device sent it: phones
/// and head units in the field answer with their own timers (IAP-FACTS.md
/// lists observed defaults such as 2000 ms for both timeouts), and an
/// accessory that resets on them never gets a link.
@Suite struct AccessoryNegotiationTests {
    static let proposal = LinkParameters(maximumOutstandingPackets: 8, maximumCumulativeAcks: 2)

    static func accessory() -> ScriptedLink {
        var configuration = LinkConfiguration(role: .accessory, parameters: proposal, skipDetect: true, initialSequence: 0x2B)
        configuration.restart = nil
        var accessory = ScriptedLink(configuration)
        accessory.start()
        return accessory
    }

    static func upLink(_ events: [LinkEvent]) -> NegotiatedLink? {
        events.lazy.compactMap { if case .up(let link) = $0 { link } else { nil } }.first
    }

    static func adjustments(_ events: [LinkEvent]) -> [String] {
        events.flatMap { event -> [String] in
            if case .negotiationAdjusted(let notes) = event { return notes }
            return []
        }
    }

    @Test func anAnswerWithRaisedTimersAndCountsIsTakenAndReported() throws {
        var accessory = Self.accessory()
        #expect(accessory.packets.map(\.control) == [.syn])
        // One of the observed defaults: (32, 4096, 2000, 2000, 30, 6).
        var answer = Self.proposal.synchronization
        answer.maximumOutstandingPackets = 32
        answer.retransmitTimeoutMilliseconds = 2000
        answer.cumulativeAckTimeoutMilliseconds = 2000
        answer.maximumRetransmissions = 30
        answer.maximumCumulativeAcks = 6
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: 0x2B, payload: answer.encoded()))

        #expect(accessory.packets.map(\.control) == [.syn, .ack], "the accessory must acknowledge, not reset")
        let link = try #require(Self.upLink(accessory.events), "no link: \(accessory.events)")
        #expect(link.retransmitTimeout == .milliseconds(2000))
        // Acknowledging later than half the retransmission timeout would make
        // the device resend what arrived: this end acknowledges within 1000 ms.
        #expect(link.cumulativeAckTimeout == .milliseconds(1000))
        #expect(link.maximumRetransmissions == 30)
        #expect(link.maximumCumulativeAcks == 6)
        #expect(link.sendWindow == 32)
        #expect(link.receiveWindow == 8)
        let notes = Self.adjustments(accessory.events)
        #expect(notes.contains { $0.contains("raised the retransmission timeout from 1000 to 2000 ms") }, "\(notes)")
        #expect(notes.contains { $0.contains("cumulative ACK timeout 2000 ms") && $0.contains("within 1000 ms") }, "\(notes)")
        #expect(notes.contains { $0.contains("raised max retransmissions from 10 to 30") }, "\(notes)")
        #expect(notes.contains { $0.contains("raised max cumulative ACKs from 2 to 6") }, "\(notes)")
    }

    @Test func valuesThisEndCannotRunOnAreClampedAndReported() throws {
        var accessory = Self.accessory()
        var answer = Self.proposal.synchronization
        answer.retransmitTimeoutMilliseconds = 5
        answer.cumulativeAckTimeoutMilliseconds = 1
        answer.maximumRetransmissions = 0
        answer.maximumCumulativeAcks = 200
        answer.maximumOutstandingPackets = 32
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: 0x2B, payload: answer.encoded()))
        let link = try #require(Self.upLink(accessory.events), "no link: \(accessory.events)")
        #expect(link.retransmitTimeout == .milliseconds(LinkSynchronization.minimumRetransmitTimeout))
        #expect(link.cumulativeAckTimeout == .milliseconds(LinkSynchronization.minimumCumulativeAckTimeout))
        #expect(link.maximumRetransmissions == 1)
        #expect(link.maximumCumulativeAcks == 8, "at most this end's window of 8")
        let notes = Self.adjustments(accessory.events)
        #expect(notes.count == 4, "\(notes)")
        #expect(notes.contains { $0.contains("retransmission timeout 5 ms is below 20 ms: using 20 ms") }, "\(notes)")
        #expect(notes.contains { $0.contains("max retransmissions 0") && $0.contains("using 1") }, "\(notes)")
        #expect(notes.contains { $0.contains("max cumulative ACKs 200") && $0.contains("using 8") }, "\(notes)")
    }

    @Test func anAnswerWithinTheProposalIsTakenWithoutNotes() throws {
        var accessory = Self.accessory()
        var answer = Self.proposal.synchronization
        answer.retransmitTimeoutMilliseconds = 500
        answer.maximumCumulativeAcks = 1
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: 0x2B, payload: answer.encoded()))
        let link = try #require(Self.upLink(accessory.events), "no link: \(accessory.events)")
        #expect(link.retransmitTimeout == .milliseconds(500))
        #expect(link.maximumCumulativeAcks == 1)
        #expect(Self.adjustments(accessory.events).isEmpty)
    }

    @Test func anAnswerLeavingOutASessionRunsOnTheRest() throws {
        var accessory = Self.accessory()
        var answer = Self.proposal.synchronization
        answer.sessions = [LinkSessionDescriptor(id: 3, type: .externalAccessory), LinkSessionDescriptor(id: 1, type: .control)]
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: 0x2B, payload: answer.encoded()))
        let link = try #require(Self.upLink(accessory.events), "no link: \(accessory.events)")
        #expect(Set(link.sessions.map(\.id)) == [1, 3])
        #expect(Self.adjustments(accessory.events).contains { $0.contains("left out session 2") })
        #expect(throws: LinkSendError.self) { try accessory.send([1], session: 2) }
    }

    /// A device that does not take zero-ACK links answers with timers; the
    /// accessory runs acknowledged rather than refusing.
    @Test func aZeroACKProposalAnsweredWithTimersRunsAcknowledged() throws {
        var configuration = LinkConfiguration(role: .accessory, parameters: LinkParameters(zeroAck: true), skipDetect: true, initialSequence: 0x2B)
        configuration.restart = nil
        var accessory = ScriptedLink(configuration)
        accessory.start()
        let answer = LinkParameters(retransmitTimeout: .milliseconds(1500)).synchronization
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: 0x2B, payload: answer.encoded()))
        let link = try #require(Self.upLink(accessory.events), "no link: \(accessory.events)")
        #expect(!link.zeroAck)
        #expect(link.retransmitTimeout == .milliseconds(1500))
        #expect(accessory.packets.map(\.control) == [.syn, .ack])
        let notes = Self.adjustments(accessory.events)
        #expect(notes == ["the device answered the zero-ACK proposal with an acknowledged link: acknowledging and retransmitting"], "\(notes)")
        // It retransmits what the device does not acknowledge.
        try accessory.send([1, 2, 3])
        accessory.advance(.milliseconds(1600))
        #expect(accessory.link.statistics.retransmissions == 1)
    }

    enum Unusable: String, CaseIterable, Sendable {
        case sessionNotOffered, noControlSession, zeroWindow, packetsTooShort, zeroAck

        func apply(to answer: inout LinkSynchronization) {
            switch self {
            case .sessionNotOffered: answer.sessions.append(LinkSessionDescriptor(id: 9, type: .externalAccessory))
            case .noControlSession: answer.sessions.removeAll { $0.type == .control }
            case .zeroWindow: answer.maximumOutstandingPackets = 0
            case .packetsTooShort: answer.maximumPacketLength = 12
            case .zeroAck:
                answer.retransmitTimeoutMilliseconds = 0
                answer.cumulativeAckTimeoutMilliseconds = 0
                answer.maximumRetransmissions = 0
                answer.maximumCumulativeAcks = 0
            }
        }

        var reason: String {
            switch self {
            case .sessionNotOffered: "session 9"
            case .noControlSession: "no control session"
            case .zeroWindow: "max outstanding packets 0"
            case .packetsTooShort: "max packet length 12"
            case .zeroAck: "zero-ACK"
            }
        }
    }

    /// What no link can run on is still refused, with RST and the reasons.
    @Test(arguments: Unusable.allCases)
    func anAnswerNoLinkCanRunOnIsRefused(_ unusable: Unusable) throws {
        var accessory = Self.accessory()
        var answer = Self.proposal.synchronization
        unusable.apply(to: &answer)
        try accessory.receive(LinkPacket(control: [.syn, .ack], sequence: 0x80, acknowledgement: 0x2B, payload: answer.encoded()))
        #expect(!accessory.link.isUp, "\(unusable)")
        #expect(accessory.packets.map(\.control) == [.syn, .rst], "\(unusable)")
        let reasons = accessory.events.lazy.compactMap { event -> [String]? in
            if case .failed(.negotiationRefused(let reasons)) = event { return reasons }
            return nil
        }.first
        #expect(reasons?.contains { $0.contains(unusable.reason) } == true, "\(unusable): \(accessory.events)")
    }
}
