import IAPWire

/// What one link end proposes (the accessory) or accepts at most (the device).
///
/// `maximumOutstandingPackets` and `maximumPacketLength` are this end's own
/// receive limits and are taken by the peer as they are. The device settles
/// the timers and counts on the smaller of the two proposals (IAP-FACTS.md,
/// as the reference link code negotiates); the accessory takes the device's
/// answer (`LinkNegotiation.reading(answer:proposal:)`).
public struct LinkParameters: Hashable, Sendable {
    public var maximumOutstandingPackets: Int
    public var maximumPacketLength: Int
    public var retransmitTimeout: Duration
    public var cumulativeAckTimeout: Duration
    public var maximumRetransmissions: Int
    public var maximumCumulativeAcks: Int
    /// No acknowledgements or retransmissions: for transports that are
    /// already reliable (iAP2 tunnelled over TCP, say).
    public var zeroAck: Bool
    public var sessions: [LinkSessionDescriptor]

    public init(
        maximumOutstandingPackets: Int = 32, maximumPacketLength: Int = 4096,
        retransmitTimeout: Duration = .milliseconds(1000), cumulativeAckTimeout: Duration = .milliseconds(50),
        maximumRetransmissions: Int = 10, maximumCumulativeAcks: Int = 4, zeroAck: Bool = false,
        sessions: [LinkSessionDescriptor] = LinkParameters.standardSessions
    ) {
        self.maximumOutstandingPackets = maximumOutstandingPackets
        self.maximumPacketLength = maximumPacketLength
        self.retransmitTimeout = retransmitTimeout
        self.cumulativeAckTimeout = cumulativeAckTimeout
        self.maximumRetransmissions = maximumRetransmissions
        self.maximumCumulativeAcks = maximumCumulativeAcks
        self.zeroAck = zeroAck
        self.sessions = sessions
    }

    /// Control on session 1, file transfer on 2, external accessory on 3.
    public static let standardSessions: [LinkSessionDescriptor] = [
        .init(id: 1, type: .control), .init(id: 2, type: .fileTransfer), .init(id: 3, type: .externalAccessory),
    ]

    /// The SYN payload carrying these parameters (values beyond a field's
    /// width are clamped to it; `violations` then names them).
    public var synchronization: LinkSynchronization {
        func u8(_ value: Int) -> UInt8 { UInt8(clamping: value) }
        func u16(_ value: Int) -> UInt16 { UInt16(clamping: value) }
        return LinkSynchronization(
            maximumOutstandingPackets: u8(maximumOutstandingPackets), maximumPacketLength: u16(maximumPacketLength),
            retransmitTimeoutMilliseconds: zeroAck ? 0 : u16(retransmitTimeout.wholeMilliseconds),
            cumulativeAckTimeoutMilliseconds: zeroAck ? 0 : u16(cumulativeAckTimeout.wholeMilliseconds),
            maximumRetransmissions: zeroAck ? 0 : u8(maximumRetransmissions),
            maximumCumulativeAcks: zeroAck ? 0 : u8(maximumCumulativeAcks), sessions: sessions)
    }

    public init(_ sync: LinkSynchronization) {
        self.init(
            maximumOutstandingPackets: Int(sync.maximumOutstandingPackets), maximumPacketLength: Int(sync.maximumPacketLength),
            retransmitTimeout: .milliseconds(Int(sync.retransmitTimeoutMilliseconds)),
            cumulativeAckTimeout: .milliseconds(Int(sync.cumulativeAckTimeoutMilliseconds)),
            maximumRetransmissions: Int(sync.maximumRetransmissions), maximumCumulativeAcks: Int(sync.maximumCumulativeAcks),
            zeroAck: sync.isZeroAck, sessions: sync.sessions)
    }
}

/// The parameters both ends run with once the link is up, seen from one end.
public struct NegotiatedLink: Hashable, Sendable {
    /// Packets this end may have unacknowledged: the peer's receive limit.
    public var sendWindow: Int
    /// Largest packet this end may send: the peer's receive limit.
    public var sendPacketLength: Int
    /// Limits this end advertised for what it receives.
    public var receiveWindow: Int
    public var receivePacketLength: Int
    public var retransmitTimeout: Duration
    public var cumulativeAckTimeout: Duration
    public var maximumRetransmissions: Int
    public var maximumCumulativeAcks: Int
    public var zeroAck: Bool
    public var sessions: [LinkSessionDescriptor]

    /// Largest payload one packet can carry on this link.
    public var maximumPayload: Int { sendPacketLength - LinkPacket.headerLength - 1 }

    public func session(_ id: UInt8) -> LinkSessionDescriptor? { sessions.first { $0.id == id } }
}

/// Why a negotiation did not produce a link.
public struct NegotiationFailure: Error, Hashable, Sendable, CustomStringConvertible {
    public let reasons: [String]
    public var description: String { reasons.joined(separator: "; ") }
}

/// The rules of link synchronisation, shared by both ends.
public enum LinkNegotiation {
    /// The device's answer to a SYN: its own receive limits, the smaller of
    /// each timer and count, with out-of-range timers and counts adjusted
    /// into range. The accessory's receive limits are what this end sends
    /// with, so they cannot be adjusted upwards: a window of 0 or a packet
    /// length too short to carry data is refused, as are an unknown link
    /// version, no control session, duplicate session ids and the reserved
    /// session id 0. `peer` is the proposal as this end will honour it (a
    /// window over 127 taken as 127); each adjustment says what was used.
    public static func answer(to proposal: LinkSynchronization, limits: LinkParameters)
        -> Result<(answer: LinkSynchronization, peer: LinkSynchronization, adjustments: [String]), NegotiationFailure> {
        var refusals = unusableLimits(proposal)
        if !proposal.sessions.contains(where: { $0.type == .control }) {
            refusals.append("no control session offered")
        }
        if Set(proposal.sessions.map(\.id)).count != proposal.sessions.count {
            refusals.append("session ids are not unique")
        }
        if proposal.sessions.contains(where: { $0.id == 0 }) {
            refusals.append("session id 0 is reserved")
        }
        if !refusals.isEmpty { return .failure(NegotiationFailure(reasons: refusals)) }

        var adjustments: [String] = []
        let (peer, windowNote) = honouredWindow(proposal)
        if let windowNote { adjustments.append(windowNote) }
        let windowLimit = LinkSynchronization.maximumOutstandingRange.upperBound
        var answer = LinkSynchronization(
            maximumOutstandingPackets: UInt8(clamping: min(max(limits.maximumOutstandingPackets, 1), windowLimit)),
            maximumPacketLength: UInt16(clamping: max(limits.maximumPacketLength, LinkSynchronization.minimumPacketLength)),
            retransmitTimeoutMilliseconds: 0, cumulativeAckTimeoutMilliseconds: 0, maximumRetransmissions: 0, maximumCumulativeAcks: 0,
            sessions: proposal.sessions)
        if !proposal.isZeroAck {
            let ownRTO = limits.zeroAck ? Int.max : limits.retransmitTimeout.wholeMilliseconds
            var rto = max(LinkSynchronization.minimumRetransmitTimeout, min(Int(proposal.retransmitTimeoutMilliseconds), ownRTO))
            let ownCACK = limits.zeroAck ? Int.max : limits.cumulativeAckTimeout.wholeMilliseconds
            var cack = max(LinkSynchronization.minimumCumulativeAckTimeout, min(Int(proposal.cumulativeAckTimeoutMilliseconds), ownCACK))
            cack = max(LinkSynchronization.minimumCumulativeAckTimeout, min(cack, rto / 2))
            if cack > rto / 2 { rto = cack * 2 }
            let retries = min(max(Int(proposal.maximumRetransmissions), 1), LinkSynchronization.maximumRetransmissionsRange.upperBound,
                              limits.zeroAck ? LinkSynchronization.maximumRetransmissionsRange.upperBound : max(1, limits.maximumRetransmissions))
            let acks = max(0, min(Int(proposal.maximumCumulativeAcks), limits.zeroAck ? 127 : limits.maximumCumulativeAcks,
                                  Int(answer.maximumOutstandingPackets), Int(peer.maximumOutstandingPackets), LinkSynchronization.maximumCumulativeAcksLimit))
            answer.retransmitTimeoutMilliseconds = UInt16(clamping: rto)
            answer.cumulativeAckTimeoutMilliseconds = UInt16(clamping: cack)
            answer.maximumRetransmissions = UInt8(clamping: retries)
            answer.maximumCumulativeAcks = UInt8(clamping: acks)
            // Say what is used for every proposed value that broke a bound.
            if Int(proposal.retransmitTimeoutMilliseconds) < LinkSynchronization.minimumRetransmitTimeout {
                adjustments.append("retransmission timeout \(proposal.retransmitTimeoutMilliseconds) ms is below \(LinkSynchronization.minimumRetransmitTimeout) ms: using \(rto) ms")
            }
            if Int(proposal.cumulativeAckTimeoutMilliseconds) < LinkSynchronization.minimumCumulativeAckTimeout
                || Int(proposal.cumulativeAckTimeoutMilliseconds) > Int(proposal.retransmitTimeoutMilliseconds) / 2 {
                adjustments.append("cumulative ACK timeout \(proposal.cumulativeAckTimeoutMilliseconds) ms is outside \(LinkSynchronization.minimumCumulativeAckTimeout) ms to half the retransmission timeout: using \(cack) ms")
            }
            if !LinkSynchronization.maximumRetransmissionsRange.contains(Int(proposal.maximumRetransmissions)) {
                adjustments.append("max retransmissions \(proposal.maximumRetransmissions) is outside \(LinkSynchronization.maximumRetransmissionsRange.lowerBound)...\(LinkSynchronization.maximumRetransmissionsRange.upperBound): using \(retries)")
            }
            if Int(proposal.maximumCumulativeAcks) > min(LinkSynchronization.maximumCumulativeAcksLimit, Int(proposal.maximumOutstandingPackets)) {
                adjustments.append("max cumulative ACKs \(proposal.maximumCumulativeAcks) exceeds max outstanding packets \(proposal.maximumOutstandingPackets): using \(acks)")
            }
        }
        return .success((answer, peer, adjustments))
    }

    /// The accessory's reading of the device's answer, without the
    /// adjustments it reports; see `reading(answer:proposal:)`.
    public static func accept(answer: LinkSynchronization, proposal: LinkSynchronization) -> Result<NegotiatedLink, NegotiationFailure> {
        reading(answer: answer, proposal: proposal).map(\.link)
    }

    /// The accessory's reading of the device's answer. The device answers
    /// with its own, possibly adjusted, values and the accessory takes them
    /// (phones and head units in the field answer with timers raised over
    /// the proposal, or a cumulative-ACK timeout over half the
    /// retransmission timeout): each such value is used as the device sent
    /// it, clamped only where this end could not run on it (a timer under
    /// its minimum, no retransmission at all, acknowledging later than half
    /// the retransmission timeout or after more packets than fit a window),
    /// and every difference is reported; a zero-ACK proposal answered with
    /// timers runs acknowledged. Refused, since no link can run on it: a
    /// link version other than 1, a window of 0, packets too short to carry
    /// data, a zero-ACK answer to an acknowledged proposal, no control
    /// session, or a session the accessory did not offer.
    public static func reading(answer: LinkSynchronization, proposal: LinkSynchronization)
        -> Result<(link: NegotiatedLink, adjustments: [String]), NegotiationFailure> {
        var refusals = unusableLimits(answer)
        if answer.isZeroAck && !proposal.isZeroAck {
            refusals.append("the answer turns the proposed acknowledged link into a zero-ACK one")
        }
        if !answer.sessions.contains(where: { $0.type == .control }) {
            refusals.append("the answer has no control session")
        }
        for session in answer.sessions where !proposal.sessions.contains(session) {
            refusals.append("the answer has session \(session.id) (\(session.type), version \(session.version)), which was not offered")
        }
        if Set(answer.sessions.map(\.id)).count != answer.sessions.count {
            refusals.append("the answer's session ids are not unique")
        }
        if !refusals.isEmpty { return .failure(NegotiationFailure(reasons: refusals)) }

        var adjustments: [String] = []
        let (peer, windowNote) = honouredWindow(answer)
        if let windowNote { adjustments.append(windowNote) }
        if answer.sessions.count < proposal.sessions.count {
            let left = proposal.sessions.filter { !answer.sessions.contains($0) }.map { String($0.id) }.joined(separator: ", ")
            adjustments.append("the device left out session \(left): using the \(answer.sessions.count) it answered")
        }
        var timers = answer
        if proposal.isZeroAck && !answer.isZeroAck {
            // A device that does not take zero-ACK links (iOS before 9, in
            // public accessory code) answers with timers: run with them.
            adjustments.append("the device answered the zero-ACK proposal with an acknowledged link: acknowledging and retransmitting")
        }
        if !answer.isZeroAck {
            // Against a zero-ACK proposal nothing was "raised": only bounds are reported.
            let compared = proposal.isZeroAck ? answer : proposal
            let rto = max(Int(answer.retransmitTimeoutMilliseconds), LinkSynchronization.minimumRetransmitTimeout)
            if Int(answer.retransmitTimeoutMilliseconds) < LinkSynchronization.minimumRetransmitTimeout {
                adjustments.append("retransmission timeout \(answer.retransmitTimeoutMilliseconds) ms is below \(LinkSynchronization.minimumRetransmitTimeout) ms: using \(rto) ms")
            } else if answer.retransmitTimeoutMilliseconds > compared.retransmitTimeoutMilliseconds {
                adjustments.append("the device raised the retransmission timeout from \(proposal.retransmitTimeoutMilliseconds) to \(rto) ms: using \(rto) ms")
            }
            // Acknowledging sooner than asked is always allowed; later than
            // half the retransmission timeout would make the device resend
            // what arrived.
            let cack = max(LinkSynchronization.minimumCumulativeAckTimeout, min(Int(answer.cumulativeAckTimeoutMilliseconds), rto / 2))
            if cack != Int(answer.cumulativeAckTimeoutMilliseconds) {
                adjustments.append("cumulative ACK timeout \(answer.cumulativeAckTimeoutMilliseconds) ms is outside \(LinkSynchronization.minimumCumulativeAckTimeout) ms to half the retransmission timeout: acknowledging within \(cack) ms")
            } else if answer.cumulativeAckTimeoutMilliseconds > compared.cumulativeAckTimeoutMilliseconds {
                adjustments.append("the device raised the cumulative ACK timeout from \(proposal.cumulativeAckTimeoutMilliseconds) to \(cack) ms: using \(cack) ms")
            }
            let range = LinkSynchronization.maximumRetransmissionsRange
            let retries = min(max(Int(answer.maximumRetransmissions), range.lowerBound), range.upperBound)
            if retries != Int(answer.maximumRetransmissions) {
                adjustments.append("max retransmissions \(answer.maximumRetransmissions) is outside \(range.lowerBound)...\(range.upperBound): using \(retries)")
            } else if answer.maximumRetransmissions > compared.maximumRetransmissions {
                adjustments.append("the device raised max retransmissions from \(proposal.maximumRetransmissions) to \(retries): using \(retries)")
            }
            let ackLimit = min(LinkSynchronization.maximumCumulativeAcksLimit, Int(proposal.maximumOutstandingPackets), Int(peer.maximumOutstandingPackets))
            let acks = min(Int(answer.maximumCumulativeAcks), ackLimit)
            if acks != Int(answer.maximumCumulativeAcks) {
                adjustments.append("max cumulative ACKs \(answer.maximumCumulativeAcks) exceeds \(ackLimit) (the smaller of 127 and both windows): using \(acks)")
            } else if answer.maximumCumulativeAcks > compared.maximumCumulativeAcks {
                adjustments.append("the device raised max cumulative ACKs from \(proposal.maximumCumulativeAcks) to \(acks): using \(acks)")
            }
            timers.retransmitTimeoutMilliseconds = UInt16(clamping: rto)
            timers.cumulativeAckTimeoutMilliseconds = UInt16(clamping: cack)
            timers.maximumRetransmissions = UInt8(clamping: retries)
            timers.maximumCumulativeAcks = UInt8(clamping: acks)
        }
        return .success((negotiated(own: proposal, peer: peer, timers: timers), adjustments))
    }

    /// Why no link can run on a peer's SYN payload, whichever end sent it:
    /// this end receives with the peer's limits and cannot adjust them.
    static func unusableLimits(_ sync: LinkSynchronization) -> [String] {
        var refusals: [String] = []
        if sync.version != LinkSynchronization.supportedVersion {
            refusals.append("link version \(sync.version) is not supported (only \(LinkSynchronization.supportedVersion))")
        }
        if sync.maximumOutstandingPackets == 0 {
            refusals.append("max outstanding packets 0: this end could never send a packet")
        }
        if Int(sync.maximumPacketLength) < LinkSynchronization.minimumPacketLength {
            refusals.append("max packet length \(sync.maximumPacketLength) is below \(LinkSynchronization.minimumPacketLength): no packet could carry data")
        }
        return refusals
    }

    /// The peer's SYN payload as this end honours it: a window over 127 is
    /// taken as 127, with the note that says so.
    static func honouredWindow(_ sync: LinkSynchronization) -> (LinkSynchronization, String?) {
        let windowLimit = LinkSynchronization.maximumOutstandingRange.upperBound
        guard Int(sync.maximumOutstandingPackets) > windowLimit else { return (sync, nil) }
        var honoured = sync
        honoured.maximumOutstandingPackets = UInt8(windowLimit)
        return (honoured, "max outstanding packets \(sync.maximumOutstandingPackets) is over \(windowLimit): sending at most \(windowLimit) unacknowledged")
    }

    /// The link as one end runs it, from its own SYN payload, the peer's and
    /// the agreed timers.
    static func negotiated(own: LinkSynchronization, peer: LinkSynchronization, timers: LinkSynchronization) -> NegotiatedLink {
        NegotiatedLink(
            sendWindow: Int(peer.maximumOutstandingPackets), sendPacketLength: Int(peer.maximumPacketLength),
            receiveWindow: Int(own.maximumOutstandingPackets), receivePacketLength: Int(own.maximumPacketLength),
            retransmitTimeout: .milliseconds(Int(timers.retransmitTimeoutMilliseconds)),
            cumulativeAckTimeout: .milliseconds(Int(timers.cumulativeAckTimeoutMilliseconds)),
            maximumRetransmissions: Int(timers.maximumRetransmissions), maximumCumulativeAcks: Int(timers.maximumCumulativeAcks),
            zeroAck: timers.isZeroAck, sessions: timers.sessions)
    }
}
