import IAPWire

/// Direction of bytes on the wire, from the USB host's point of view: `out`
/// is host to device (in the usual placement, head unit / accessory to
/// phone), `in` is device to host.
public enum TraceDirection: String, Hashable, Sendable {
    case out
    case `in`
}

/// Where an event's bytes came from in a capture.
public struct CaptureEndpoint: Hashable, Sendable, CustomStringConvertible {
    public var bus: UInt16
    public var device: UInt8
    public var endpoint: UInt8
    public var description: String {
        "\(bus).\(device).\(hexByte(endpoint))"
    }
}

/// One thing the trace decoder found, in the order found.
public struct TraceEvent: Sendable {
    public enum Body: Sendable {
        case detect
        case link(LinkInfo)
        case message(MessageInfo)
        case iap1(IAP1Info)
        case skipped(SkippedInfo)
    }

    /// What an event's `offset` counts.
    public enum OffsetBase: Hashable, Sendable {
        /// Bytes of the event's stream: its direction's (in a capture, its
        /// endpoint's).
        case stream
        /// Bytes of this link session's reassembled message stream, in the
        /// event's direction.
        case session(UInt8)
        /// Bytes of the input file (capture blocks that could not be read).
        case file
        /// Nothing: the event holds no bytes of any stream (an unreadable hex line).
        case none
    }

    public var body: Body
    public var direction: TraceDirection?
    /// Byte offset in what `offsetBase` names: the direction's byte stream
    /// for link, detect, iAP1 and most skipped events; the session's
    /// reassembled byte stream for messages.
    public var offset: Int
    /// Capture record number (1-based) in which the event's last byte arrived.
    public var frame: Int?
    /// Line number (1-based) for hex text input.
    public var line: Int?
    public var endpoint: CaptureEndpoint?
    public var offsetBase: OffsetBase = .stream
    /// Captures: nanoseconds from the capture's first record to the record
    /// in which the event's last byte arrived; nil for inputs without time.
    public var time: Int64?

    public var kind: String {
        switch body {
        case .detect: "detect"
        case .link: "link"
        case .message: "message"
        case .iap1: "iap1"
        case .skipped: "skipped"
        }
    }
}

public struct LinkInfo: Sendable {
    public var header: LinkPacketHeader
    public var checksumsOK: Bool
    /// The SYN payload, for packets with SYN set.
    public var sync: LinkSynchronization?
    /// Why a SYN payload could not be read.
    public var syncError: String?
    /// EAK payload sequence numbers.
    public var eak: [UInt8]?
    /// A data packet whose sequence number was already seen: a retransmission
    /// or duplicate; its payload is not fed to the session again.
    public var retransmission: Bool
    public var datagram: DatagramInfo?
}

/// A file-transfer or external-accessory datagram carried by a link packet.
public struct DatagramInfo: Sendable {
    public var sessionType: SessionType
    public var length: Int
    public var fileTransfer: FileTransferDatagram?
    public var externalAccessorySession: UInt16?
    public var error: String?
}

public struct MessageInfo: Sendable {
    public var session: UInt8
    public var id: UInt16
    public var name: String?
    public var length: Int
    public var parameters: [InterpretedParameter]
    /// Notes on top-level parameters by id (`TraceDecoder.Options.annotate`).
    public var annotations: [UInt16: String] = [:]
}

public struct IAP1Info: Sendable {
    public var lingo: UInt8
    public var command: UInt16
    public var name: String?
    public var transaction: UInt16?
    public var checksumOK: Bool
    public var data: [UInt8]
    public var error: String?
}

public struct SkippedInfo: Sendable {
    public var count: Int
    /// A stable token: `garbage`, `bad_header_checksum`, `bad_length`,
    /// `bad_payload_checksum`, `truncated`, `malformed_message`, `invalid_hex`,
    /// `hid_report`, `not_captured`, `malformed_block`.
    public var reason: String
    public var detail: String?
}

/// Two lowercase hex digits. (A free function, not a `String` initialiser:
/// an unlabelled-looking overload of `String.init` once captured
/// `map(String.init)` and printed decimal numbers in hex.)
func hexByte(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16)
    return byte < 0x10 ? "0" + digits : digits
}
