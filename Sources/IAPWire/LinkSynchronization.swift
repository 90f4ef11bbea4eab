/// The kind of traffic a link session carries.
public struct SessionType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Control-session messages (`40 40 ...`).
    public static let control = SessionType(rawValue: 0)
    /// File-transfer datagrams (artwork and other files).
    public static let fileTransfer = SessionType(rawValue: 1)
    /// External-accessory datagrams (app protocol data).
    public static let externalAccessory = SessionType(rawValue: 2)

    public var name: String {
        switch self {
        case .control: "control"
        case .fileTransfer: "file_transfer"
        case .externalAccessory: "external_accessory"
        default: "unknown_\(rawValue)"
        }
    }
    public var description: String { name }
}

/// One session offered in a link synchronisation payload.
public struct LinkSessionDescriptor: Hashable, Sendable {
    public var id: UInt8
    public var type: SessionType
    public var version: UInt8

    public init(id: UInt8, type: SessionType, version: UInt8 = 1) {
        self.id = id
        self.type = type
        self.version = version
    }
}

/// The payload of a SYN packet: the sender's link parameters and its sessions.
///
/// ```
/// version | max outstanding | max packet length (2) | retransmit timeout ms (2)
/// | cumulative ACK timeout ms (2) | max retransmissions | max cumulative ACKs
/// | sessions: (id, type, version) * n
/// ```
/// A zero-ACK link (iAP2 tunnelled over a transport that is already reliable)
/// sets the four timing and count fields to zero.
public struct LinkSynchronization: Hashable, Sendable {
    public static let fixedLength = 10
    public static let sessionLength = 3
    /// Protocol bounds a receiver checks a proposal against (IAP-FACTS.md, as
    /// enforced by public validators).
    public static let supportedVersion: UInt8 = 1
    public static let maximumOutstandingRange: ClosedRange<Int> = 1...127
    public static let minimumPacketLength = LinkPacket.minimumNegotiableLength
    public static let minimumRetransmitTimeout = 20
    public static let minimumCumulativeAckTimeout = 10
    public static let maximumRetransmissionsRange: ClosedRange<Int> = 1...30
    public static let maximumCumulativeAcksLimit = 127

    public var version: UInt8
    public var maximumOutstandingPackets: UInt8
    public var maximumPacketLength: UInt16
    public var retransmitTimeoutMilliseconds: UInt16
    public var cumulativeAckTimeoutMilliseconds: UInt16
    public var maximumRetransmissions: UInt8
    public var maximumCumulativeAcks: UInt8
    public var sessions: [LinkSessionDescriptor]

    public init(
        version: UInt8 = 1, maximumOutstandingPackets: UInt8, maximumPacketLength: UInt16,
        retransmitTimeoutMilliseconds: UInt16, cumulativeAckTimeoutMilliseconds: UInt16,
        maximumRetransmissions: UInt8, maximumCumulativeAcks: UInt8, sessions: [LinkSessionDescriptor]
    ) {
        self.version = version
        self.maximumOutstandingPackets = maximumOutstandingPackets
        self.maximumPacketLength = maximumPacketLength
        self.retransmitTimeoutMilliseconds = retransmitTimeoutMilliseconds
        self.cumulativeAckTimeoutMilliseconds = cumulativeAckTimeoutMilliseconds
        self.maximumRetransmissions = maximumRetransmissions
        self.maximumCumulativeAcks = maximumCumulativeAcks
        self.sessions = sessions
    }

    /// True for the zero-ACK form: no retransmission and no acknowledgement timers.
    public var isZeroAck: Bool {
        retransmitTimeoutMilliseconds == 0 && cumulativeAckTimeoutMilliseconds == 0
            && maximumRetransmissions == 0 && maximumCumulativeAcks == 0
    }

    public var encodedLength: Int { Self.fixedLength + Self.sessionLength * sessions.count }

    public func encode(into buffer: inout [UInt8]) {
        buffer.append(version)
        buffer.append(maximumOutstandingPackets)
        buffer.appendBigEndian(maximumPacketLength)
        buffer.appendBigEndian(retransmitTimeoutMilliseconds)
        buffer.appendBigEndian(cumulativeAckTimeoutMilliseconds)
        buffer.append(maximumRetransmissions)
        buffer.append(maximumCumulativeAcks)
        for session in sessions {
            buffer.append(session.id)
            buffer.append(session.type.rawValue)
            buffer.append(session.version)
        }
    }

    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedLength)
        encode(into: &bytes)
        return bytes
    }

    /// Decodes a SYN payload. Trailing bytes that do not make a whole session
    /// entry are an error: nothing is silently dropped.
    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        let bytes = Array(bytes)
        guard bytes.count >= Self.fixedLength else {
            throw WireError(.truncated, "link synchronisation payload needs \(Self.fixedLength) bytes, got \(bytes.count)")
        }
        let sessionBytes = bytes.count - Self.fixedLength
        guard sessionBytes % Self.sessionLength == 0 else {
            throw WireError(.badLength, "link synchronisation payload has \(sessionBytes) session bytes, not a multiple of 3")
        }
        var sessions: [LinkSessionDescriptor] = []
        sessions.reserveCapacity(sessionBytes / Self.sessionLength)
        var index = Self.fixedLength
        while index < bytes.count {
            sessions.append(LinkSessionDescriptor(id: bytes[index], type: SessionType(rawValue: bytes[index + 1]), version: bytes[index + 2]))
            index += Self.sessionLength
        }
        self.init(
            version: bytes[0], maximumOutstandingPackets: bytes[1],
            maximumPacketLength: UInt16(bytes[2]) << 8 | UInt16(bytes[3]),
            retransmitTimeoutMilliseconds: UInt16(bytes[4]) << 8 | UInt16(bytes[5]),
            cumulativeAckTimeoutMilliseconds: UInt16(bytes[6]) << 8 | UInt16(bytes[7]),
            maximumRetransmissions: bytes[8], maximumCumulativeAcks: bytes[9], sessions: sessions)
    }

    /// Every way in which these parameters break the protocol's bounds, in
    /// words; empty when the proposal is acceptable.
    public var violations: [String] {
        var problems: [String] = []
        if version != Self.supportedVersion {
            problems.append("link version \(version) is not supported (only \(Self.supportedVersion))")
        }
        if !Self.maximumOutstandingRange.contains(Int(maximumOutstandingPackets)) {
            problems.append("max outstanding packets \(maximumOutstandingPackets) is outside \(Self.maximumOutstandingRange.lowerBound)...\(Self.maximumOutstandingRange.upperBound)")
        }
        if Int(maximumPacketLength) < Self.minimumPacketLength {
            problems.append("max packet length \(maximumPacketLength) is below \(Self.minimumPacketLength)")
        }
        if !isZeroAck {
            if Int(retransmitTimeoutMilliseconds) < Self.minimumRetransmitTimeout {
                problems.append("retransmission timeout \(retransmitTimeoutMilliseconds) ms is below \(Self.minimumRetransmitTimeout) ms")
            }
            if Int(cumulativeAckTimeoutMilliseconds) < Self.minimumCumulativeAckTimeout {
                problems.append("cumulative ACK timeout \(cumulativeAckTimeoutMilliseconds) ms is below \(Self.minimumCumulativeAckTimeout) ms")
            }
            if Int(cumulativeAckTimeoutMilliseconds) > Int(retransmitTimeoutMilliseconds) / 2 {
                problems.append("cumulative ACK timeout \(cumulativeAckTimeoutMilliseconds) ms exceeds half the retransmission timeout (\(retransmitTimeoutMilliseconds) ms)")
            }
            if !Self.maximumRetransmissionsRange.contains(Int(maximumRetransmissions)) {
                problems.append("max retransmissions \(maximumRetransmissions) is outside \(Self.maximumRetransmissionsRange.lowerBound)...\(Self.maximumRetransmissionsRange.upperBound)")
            }
            let ackLimit = min(Self.maximumCumulativeAcksLimit, Int(maximumOutstandingPackets))
            if Int(maximumCumulativeAcks) > ackLimit {
                problems.append("max cumulative ACKs \(maximumCumulativeAcks) exceeds \(ackLimit) (the smaller of 127 and max outstanding)")
            }
        }
        var seen = Set<UInt8>()
        for session in sessions where !seen.insert(session.id).inserted {
            problems.append("session id \(session.id) is listed twice")
        }
        return problems
    }
}

/// Extended acknowledgement payload: a list of sequence numbers.
///
/// Public sources disagree on which numbers are listed: the reference link
/// code lists the out-of-order packets the receiver holds, wiomoc/iap2 lists
/// the missing ones. This type names them neutrally; the link layer sends the
/// former.
public struct ExtendedAcknowledgement: Hashable, Sendable {
    public var sequenceNumbers: [UInt8]
    public init(sequenceNumbers: [UInt8]) { self.sequenceNumbers = sequenceNumbers }
    public init(decoding bytes: some Collection<UInt8>) { self.sequenceNumbers = Array(bytes) }
    public func encoded() -> [UInt8] { sequenceNumbers }
}

/// The six bytes an iAP2 accessory sends until the device echoes them. They
/// are also a valid iAP1 packet (length 2, lingo 0, command 0xEE).
public enum DetectSequence {
    public static let bytes: [UInt8] = [0xFF, 0x55, 0x02, 0x00, 0xEE, 0x10]
}

extension Array where Element == UInt8 {
    @inlinable
    public mutating func appendBigEndian<T: FixedWidthInteger>(_ value: T) {
        var shift = T.bitWidth - 8
        while shift >= 0 {
            append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }
}
