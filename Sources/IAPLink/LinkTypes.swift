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
    /// A connected peer silent for this long is gone; nil disables.
    public var silenceLimit: Duration?
    /// Bytes each session may have queued but not yet sent.
    public var sendQueueLimit: Int
    /// Sequence number of this end's SYN (or SYN+ACK).
    public var initialSequence: UInt8
    /// How long an incomplete packet may wait for the rest of its bytes
    /// before it is taken for stale bytes and scanned past.
    public var partialPacketTimeout: Duration

    public init(
        role: LinkRole, parameters: LinkParameters = LinkParameters(), detectInterval: Duration = .seconds(1),
        detectAttempts: Int? = nil, skipDetect: Bool = false, keepAliveInterval: Duration? = .seconds(2),
        silenceLimit: Duration? = .seconds(10), sendQueueLimit: Int = 64 * 1024, initialSequence: UInt8 = 0,
        partialPacketTimeout: Duration = .milliseconds(500)
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
    /// The peer started over (a detect sequence on a connected link).
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
        case .peerRestarted: "the peer restarted (detect sequence on a connected link)"
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
    case negotiationRefused([String])
    case peerReset

    public var description: String {
        switch self {
        case .iap1OnlyPeer(let lingo, let command):
            "the peer answered in iAP1 (lingo 0x\(String(lingo, radix: 16)), command 0x\(String(command, radix: 16))): it does not speak iAP2"
        case .detectUnanswered(let attempts): "no answer to \(attempts) detect sequences"
        case .synchronizationUnanswered(let attempts): "no answer to \(attempts) SYN packets"
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
    /// The device adjusted out-of-range proposals into range.
    case negotiationAdjusted([String])
    /// A proposal this device refused (the accessory may try again).
    case proposalRefused([String])
    case peerSleeping
    /// A session whose queue was full has room again.
    case sessionWritable(UInt8)
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
    }
    public let kind: Kind

    public var description: String {
        switch kind {
        case .linkNotUp: "the link is not up"
        case .unknownSession(let id): "session \(id) was not negotiated on this link"
        case .queueFull(let session, let queued, let limit): "session \(session) send queue is full (\(queued) of \(limit) bytes queued); wait for it to drain"
        case .tooLarge(let size, let limit): "\(size) bytes can never fit in the \(limit)-byte send queue"
        case .datagramSize(let size, let limit): "a \(size)-byte datagram does not fit one packet (1 to \(limit) bytes on this link)"
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
}
