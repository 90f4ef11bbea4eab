import IAPWire

/// Which end of the link this is. The accessory (the head unit, whichever
/// side of the USB cable it sits on) initiates: detect, then SYN. The device
/// (the phone) echoes the detect sequence and answers the SYN.
public enum LinkRole: String, Hashable, Sendable {
    case accessory
    case device
}

public struct LinkConfiguration: Sendable {
    public var role: LinkRole
    /// The accessory's proposal, or the device's limits.
    public var parameters: LinkParameters
    /// How often the accessory repeats the detect sequence until it is echoed.
    public var detectInterval: Duration
    /// Detect sequences sent before giving up; nil waits forever.
    public var detectAttempts: Int?
    /// The accessory skips detect and starts with SYN (tunnels).
    public var skipDetect: Bool
    /// When nothing was sent for this long, a bare ACK is sent so that the
    /// peer keeps hearing from this end; nil disables.
    public var keepAliveInterval: Duration?
    /// A connected peer silent for this long is gone; nil disables. Only a
    /// peer that keeps the link alive (has sent, on this connection, a bare
    /// ACK that no packet of this end prompted) is held to it: many phones
    /// and accessories send nothing on an idle link, and theirs stays up
    /// (their loss shows as a closed transport, or as retransmissions
    /// exhausted once there is something to send).
    public var silenceLimit: Duration?
    /// Bytes each session may have queued but not yet sent.
    public var sendQueueLimit: Int
    /// Sequence number of this end's SYN (or SYN+ACK).
    public var initialSequence: UInt8
    /// How long an incomplete packet may wait for the rest of its bytes
    /// before it is taken for stale bytes and scanned past.
    public var partialPacketTimeout: Duration
    /// Bytes delivered but not yet handed back with `consumed`. Past it,
    /// in-order packets are held unacknowledged (at most a window of them),
    /// so a peer can never make this end queue more than the limit plus a
    /// window of packets for a reader that does not keep up.
    public var receiveBufferLimit: Int
    /// The accessory starts over (detect, SYN) after its link failed or went
    /// down while the transport stays open, waiting longer after each
    /// failure; nil stops for good instead.
    public var restart: LinkRestartPolicy?
    /// Device only: report the frames of a head unit that identifies in the
    /// legacy iAP1 (`LinkEvent.legacyFrame`) and take `sendLegacy`'s answers
    /// to it. Off: iAP1 frames are skipped as noise.
    public var answersIAP1: Bool

    public init(
        role: LinkRole, parameters: LinkParameters = LinkParameters(), detectInterval: Duration = .seconds(1),
        detectAttempts: Int? = nil, skipDetect: Bool = false, keepAliveInterval: Duration? = .seconds(2),
        silenceLimit: Duration? = .seconds(10), sendQueueLimit: Int = 64 * 1024, initialSequence: UInt8 = 0,
        partialPacketTimeout: Duration = .milliseconds(500), receiveBufferLimit: Int = 256 * 1024,
        restart: LinkRestartPolicy? = LinkRestartPolicy(), answersIAP1: Bool = false
    ) {
        self.role = role
        self.parameters = parameters
        self.detectInterval = detectInterval
        self.detectAttempts = detectAttempts
        self.skipDetect = skipDetect
        self.keepAliveInterval = keepAliveInterval
        self.silenceLimit = silenceLimit
        self.sendQueueLimit = sendQueueLimit
        self.initialSequence = initialSequence
        self.partialPacketTimeout = partialPacketTimeout
        self.receiveBufferLimit = receiveBufferLimit
        self.restart = restart
        self.answersIAP1 = answersIAP1
    }
}

/// How an accessory end starts over after a failure: the first attempt after
/// `initialDelay`, each further one after twice the previous delay, never
/// more than `maximumDelay`; back to `initialDelay` once a link comes up.
public struct LinkRestartPolicy: Hashable, Sendable {
    public var initialDelay: Duration
    public var maximumDelay: Duration

    public init(initialDelay: Duration = .seconds(1), maximumDelay: Duration = .seconds(30)) {
        self.initialDelay = initialDelay
        self.maximumDelay = max(initialDelay, maximumDelay)
    }
}

/// Why a link that was up went down. Reported exactly once per connection.
public enum LinkDownReason: Hashable, Sendable, CustomStringConvertible {
    /// A packet went unacknowledged through every allowed retransmission.
    case retransmissionsExhausted(sequence: UInt8, attempts: Int)
    /// The peer sent RST.
    case peerReset
    /// Nothing arrived from the peer for this long.
    case peerSilent(Duration)
    /// The peer started over: a detect sequence on a connected link, or a
    /// SYN that does not follow the last packet received.
    case peerRestarted
    /// This end reset the link.
    case localReset
    /// The transport underneath closed (cable pulled, socket closed, I/O error).
    case transportClosed(String)

    public var description: String {
        switch self {
        case .retransmissionsExhausted(let sequence, let attempts): "packet \(sequence) unacknowledged after \(attempts) retransmissions"
        case .peerReset: "the peer reset the link (RST)"
        case .peerSilent(let duration): "nothing heard from the peer for \(duration.wholeMilliseconds) ms"
        case .peerRestarted: "the peer restarted (a detect sequence, or a SYN not following the last packet received, on a connected link)"
        case .localReset: "reset by this end"
        case .transportClosed(let why): "the transport closed: \(why)"
        }
    }
}

/// Why a link never came up.
public enum LinkFailure: Hashable, Sendable, CustomStringConvertible {
    /// The peer answered detect in iAP1: it does not speak iAP2.
    case iap1OnlyPeer(lingo: UInt8, command: UInt16)
    case detectUnanswered(attempts: Int)
    case synchronizationUnanswered(attempts: Int)
    /// Device: the accessory never acknowledged this many SYN+ACKs.
    case handshakeUnacknowledged(attempts: Int)
    case negotiationRefused([String])
    case peerReset

    public var description: String {
        switch self {
        case .iap1OnlyPeer(let lingo, let command):
            "the peer answered in iAP1 (lingo 0x\(String(lingo, radix: 16)), command 0x\(String(command, radix: 16))): it does not speak iAP2"
        case .detectUnanswered(let attempts): "no answer to \(attempts) detect sequences"
        case .synchronizationUnanswered(let attempts): "no answer to \(attempts) SYN packets"
        case .handshakeUnacknowledged(let attempts): "no acknowledgement of \(attempts) SYN+ACK packets"
        case .negotiationRefused(let reasons): "link parameters refused: " + reasons.joined(separator: "; ")
        case .peerReset: "the peer reset the link during synchronisation"
        }
    }
}

public enum LinkEvent: Hashable, Sendable {
    case up(NegotiatedLink)
    case down(LinkDownReason)
    case failed(LinkFailure)
    /// A SYN on a connected link settled new parameters; the connection goes on.
    case renegotiated(NegotiatedLink)
    /// What negotiation used instead of what was proposed, each with the
    /// value used: the device's adjustments of out-of-range proposals, the
    /// accessory's reading of a SYN+ACK that differs from its SYN.
    case negotiationAdjusted([String])
    /// A proposal the device refused (the accessory may try again), or a
    /// renegotiation either end refused because the new limits cannot carry
    /// what it has in flight or queued (the link is reset).
    case proposalRefused([String])
    case peerSleeping
    /// A session whose queue was full has room again.
    case sessionWritable(UInt8)
    /// The peer broke a rule; what it sent was ignored and counted in the
    /// statistics. Reported once per kind per connection.
    case peerViolation(LinkViolation)
    /// The accessory starts over (detect, SYN) after this delay.
    case restartScheduled(after: Duration)
    /// The payload of a legacy iAP1 frame (lingo, command, [transaction id,]
    /// data) from a head unit that identified in iAP1 (device ends with
    /// `answersIAP1` only), checksum checked. Its bytes count against
    /// `receiveBufferLimit` until the reader hands them back with
    /// `consumed`; past the limit frames are dropped (`legacyFramesDropped`).
    case legacyFrame([UInt8])
}

/// Something the peer sent that this end ignored, and why.
public enum LinkViolation: Hashable, Sendable, CustomStringConvertible {
    /// A packet longer than this end advertised it can receive.
    case oversizedPacket(limit: Int)
    /// Data on a session id the link did not negotiate.
    case unknownSession(UInt8)
    /// An acknowledgement of a sequence number this end never sent.
    case acknowledgementNotSent(UInt8)
    /// An EAK whose list does not match the packets in flight.
    case invalidExtendedAcknowledgement(listed: Int, inFlight: Int)
    /// An incomplete packet that never completed was given up.
    case incompletePacketAbandoned(bytes: Int)

    /// The kind, without its values: what "once per kind" counts.
    public var kind: String {
        switch self {
        case .oversizedPacket: "oversized_packet"
        case .unknownSession: "unknown_session"
        case .acknowledgementNotSent: "acknowledgement_not_sent"
        case .invalidExtendedAcknowledgement: "invalid_eak"
        case .incompletePacketAbandoned: "incomplete_packet"
        }
    }

    public var description: String {
        switch self {
        case .oversizedPacket(let limit): "a packet longer than the \(limit) bytes this end can receive was dropped"
        case .unknownSession(let id): "data on session \(id), which the link did not negotiate, was dropped"
        case .acknowledgementNotSent(let sequence): "an acknowledgement of packet \(sequence), which was never sent, was ignored"
        case .invalidExtendedAcknowledgement(let listed, let inFlight):
            "an EAK listing \(listed) sequence numbers that do not match the \(inFlight) packets in flight was ignored"
        case .incompletePacketAbandoned(let bytes): "\(bytes) bytes of an incomplete packet that never completed were skipped"
        }
    }
}

/// What the driver must do after a call into a `LinkEnd`.
public enum LinkAction: Hashable, Sendable {
    /// Write these bytes to the transport.
    case send([UInt8])
    /// Bytes received in order on a session.
    case deliver(session: UInt8, [UInt8])
    case event(LinkEvent)
}

/// Why `send` refused bytes. Nothing is ever dropped silently: a refused
/// send queued nothing.
public struct LinkSendError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: Hashable, Sendable {
        case linkNotUp
        case unknownSession(UInt8)
        /// The session's queue is full: wait for `sessionWritable`.
        case queueFull(session: UInt8, queued: Int, limit: Int)
        /// The bytes could never fit in the queue.
        case tooLarge(size: Int, limit: Int)
        /// A datagram (file-transfer or EA session) must fit one packet and not be empty.
        case datagramSize(size: Int, limit: Int)
        /// `sendLegacy` with no head unit identified in iAP1, or once an iAP2 handshake has begun.
        case noLegacyPeer
        /// `sendLegacy` while the transport still holds `queued`
        /// bytes the head unit has not taken, and the frame would pass the
        /// send queue limit: nothing is queued.
        case legacyQueueFull(queued: Int, limit: Int)
    }
    public let kind: Kind

    public var description: String {
        switch kind {
        case .linkNotUp: "the link is not up"
        case .unknownSession(let id): "session \(id) was not negotiated on this link"
        case .queueFull(let session, let queued, let limit): "session \(session) send queue is full (\(queued) of \(limit) bytes queued); wait for it to drain"
        case .tooLarge(let size, let limit): "\(size) bytes can never fit in the \(limit)-byte send queue"
        case .datagramSize(let size, let limit): "a \(size)-byte datagram does not fit one packet (1 to \(limit) bytes on this link)"
        case .noLegacyPeer: "no head unit identified in iAP1 on this link end"
        case .legacyQueueFull(let queued, let limit): "the iAP1 head unit has not taken \(queued) bytes already sent (limit \(limit)); the frame was not sent"
        }
    }
}

public struct LinkStatistics: Hashable, Sendable {
    public var packetsSent = 0
    public var packetsReceived = 0
    public var retransmissions = 0
    public var duplicatesReceived = 0
    public var outOfOrderReceived = 0
    public var eaksSent = 0
    public var eaksReceived = 0
    public var corruptPacketsReceived = 0
    public var bytesSkipped = 0
    /// Packets longer than this end's receive limit (dropped).
    public var oversizedPacketsReceived = 0
    /// Data packets on sessions never negotiated (dropped after acknowledging).
    public var unknownSessionPackets = 0
    /// Acknowledgements of sequence numbers never sent (ignored).
    public var invalidAcknowledgements = 0
    /// EAKs whose list did not match the packets in flight (ignored).
    public var invalidEAKs = 0
    /// In-order packets held unacknowledged because the reader was behind.
    public var packetsHeldForReader = 0
    /// Zero-ACK links cannot hold a peer back: bytes dropped when the reader was behind.
    public var bytesDroppedForReader = 0
    /// Times the accessory started over after a failure.
    public var restarts = 0
    /// iAP1 frames of a legacy head unit reported (`LinkEvent.legacyFrame`):
    /// traffic on a connection with no iAP2 link.
    public var legacyFramesReceived = 0
    /// iAP1 frames dropped because the reader had not handed back enough of
    /// the frames before them (`consumed`) to take them within `receiveBufferLimit`.
    public var legacyFramesDropped = 0
    /// iAP1 frames `sendLegacy` refused because the head unit had not taken
    /// what was sent before (`LinkSendError.Kind.legacyQueueFull`).
    public var legacyFramesRefused = 0

    public init() {}
}
