/// Control bits of an iAP2 link packet header (byte 4).
public struct LinkControl: OptionSet, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Synchronise: opens or renegotiates the link; the payload is a `LinkSynchronization`.
    public static let syn = LinkControl(rawValue: 0x80)
    /// The acknowledgement field is valid.
    public static let ack = LinkControl(rawValue: 0x40)
    /// Extended acknowledgement: the payload lists sequence numbers.
    public static let eak = LinkControl(rawValue: 0x20)
    /// Reset: the link is torn down.
    public static let rst = LinkControl(rawValue: 0x10)
    /// Sleep: the sender is about to sleep.
    public static let slp = LinkControl(rawValue: 0x08)

    /// Every defined bit with its name, highest bit first (the order traces print).
    public static let named: [(LinkControl, String)] = [
        (.syn, "SYN"), (.ack, "ACK"), (.eak, "EAK"), (.rst, "RST"), (.slp, "SLP"),
    ]

    /// Names of the bits that are set, e.g. `["SYN", "ACK"]`. Undefined bits are
    /// reported as a hex value so that nothing is hidden.
    public var names: [String] {
        var result = LinkControl.named.filter { contains($0.0) }.map(\.1)
        let undefined = rawValue & 0x07
        if undefined != 0 { result.append("0x" + String(undefined, radix: 16, uppercase: true)) }
        return result
    }

    public var description: String { names.isEmpty ? "-" : names.joined(separator: "+") }
}

/// The fixed 9-byte header of an iAP2 link packet.
///
/// ```
/// FF 5A | length (2) | control | seq | ack | session | header checksum
/// ```
/// `length` counts the whole packet: the header, the payload and, when there is
/// a payload, its one checksum byte. A packet with no payload is 9 bytes long.
public struct LinkPacketHeader: Hashable, Sendable {
    public var length: Int
    public var control: LinkControl
    public var sequence: UInt8
    public var acknowledgement: UInt8
    public var session: UInt8

    public init(length: Int, control: LinkControl, sequence: UInt8, acknowledgement: UInt8, session: UInt8) {
        self.length = length
        self.control = control
        self.sequence = sequence
        self.acknowledgement = acknowledgement
        self.session = session
    }

    /// Bytes of payload, excluding the payload checksum.
    public var payloadLength: Int { length > LinkPacket.headerLength ? length - LinkPacket.headerLength - 1 : 0 }
}

/// An iAP2 link packet: header fields and an owned payload.
public struct LinkPacket: Hashable, Sendable {
    /// `FF 5A`
    public static let startOfPacket: (UInt8, UInt8) = (0xFF, 0x5A)
    public static let headerLength = 9
    /// The largest length the 16-bit field can express.
    public static let maximumLength = 0xFFFF
    /// The largest payload a packet can carry.
    public static let maximumPayloadLength = maximumLength - headerLength - 1
    /// The smallest "maximum received packet length" a peer may advertise
    /// (link synchronisation bounds, IAP-FACTS.md).
    public static let minimumNegotiableLength = 24

    public var control: LinkControl
    public var sequence: UInt8
    public var acknowledgement: UInt8
    public var session: UInt8
    public var payload: [UInt8]

    public init(control: LinkControl, sequence: UInt8 = 0, acknowledgement: UInt8 = 0, session: UInt8 = 0, payload: [UInt8] = []) {
        self.control = control
        self.sequence = sequence
        self.acknowledgement = acknowledgement
        self.session = session
        self.payload = payload
    }

    public var header: LinkPacketHeader {
        LinkPacketHeader(
            length: payload.isEmpty ? Self.headerLength : Self.headerLength + payload.count + 1,
            control: control, sequence: sequence, acknowledgement: acknowledgement, session: session)
    }

    /// The encoded size of this packet.
    public var encodedLength: Int { header.length }

    /// Appends the packet's bytes to `buffer`.
    /// - Throws: `WireError.tooLarge` when the payload exceeds `maximumPayloadLength`.
    public func encode(into buffer: inout [UInt8]) throws(WireError) {
        guard payload.count <= Self.maximumPayloadLength else {
            throw WireError(.tooLarge, "link payload of \(payload.count) bytes exceeds the \(Self.maximumPayloadLength)-byte maximum")
        }
        let length = encodedLength
        let start = buffer.count
        buffer.append(0xFF)
        buffer.append(0x5A)
        buffer.append(UInt8(truncatingIfNeeded: length >> 8))
        buffer.append(UInt8(truncatingIfNeeded: length))
        buffer.append(control.rawValue)
        buffer.append(sequence)
        buffer.append(acknowledgement)
        buffer.append(session)
        buffer.append(Checksum.of(buffer[start..<start + 8]))
        if !payload.isEmpty {
            buffer.append(contentsOf: payload)
            buffer.append(Checksum.of(payload))
        }
    }

    /// The packet's bytes.
    public func encoded() throws(WireError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(encodedLength)
        try encode(into: &bytes)
        return bytes
    }

    /// Decodes exactly one packet that fills `bytes`, checking both checksums.
    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        let bytes = Array(bytes)
        guard bytes.count >= Self.headerLength else {
            throw WireError(.truncated, "a link packet needs \(Self.headerLength) header bytes, got \(bytes.count)")
        }
        guard bytes[0] == 0xFF, bytes[1] == 0x5A else {
            throw WireError(.badStartOfPacket, "expected FF 5A, found \(hex(bytes[0])) \(hex(bytes[1]))")
        }
        guard Checksum.of(bytes[0..<8]) == bytes[8] else {
            throw WireError(.badHeaderChecksum, "header checksum is \(hex(bytes[8])), expected \(hex(Checksum.of(bytes[0..<8])))")
        }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard LinkPacket.isValidLength(length) else {
            throw WireError(.badLength, "packet length \(length) is shorter than the 9-byte header")
        }
        guard bytes.count == length else {
            throw WireError(bytes.count < length ? .truncated : .badLength,
                            "packet length field says \(length) bytes, have \(bytes.count)")
        }
        self.init(control: LinkControl(rawValue: bytes[4]), sequence: bytes[5], acknowledgement: bytes[6], session: bytes[7])
        if length > Self.headerLength {
            let payload = length == Self.headerLength + 1 ? [] : Array(bytes[Self.headerLength..<length - 1])
            let expected = Checksum.of(payload)
            guard expected == bytes[length - 1] else {
                throw WireError(.badPayloadChecksum, "payload checksum is \(hex(bytes[length - 1])), expected \(hex(expected))")
            }
            self.payload = payload
        }
    }

    /// A length field is valid from a bare header (9) up to the 16-bit
    /// maximum. 10, a checksum byte covering nothing, is never sent but public
    /// decoders accept it when that byte is 00 (the checksum of nothing), and
    /// so does this one.
    @inlinable
    public static func isValidLength(_ length: Int) -> Bool {
        length >= headerLength && length <= maximumLength
    }
}

@usableFromInline
func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return byte < 0x10 ? "0" + digits : digits
}
