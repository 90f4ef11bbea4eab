/// A datagram of the file-transfer session (artwork and other files):
/// `[transfer id][control][arguments or data]`.
public struct FileTransferDatagram: Hashable, Sendable {
    public struct Control: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }

        public static let data = Control(rawValue: 0x00)
        /// The receiver accepts a setup and asks for the data.
        public static let start = Control(rawValue: 0x01)
        public static let cancel = Control(rawValue: 0x02)
        public static let pause = Control(rawValue: 0x03)
        /// Arguments: the file size as a big-endian u64, then optionally a
        /// reserved byte and a u16 file type (2 = artwork).
        public static let setup = Control(rawValue: 0x04)
        /// The receiver confirms it has the whole file.
        public static let success = Control(rawValue: 0x05)
        public static let lastData = Control(rawValue: 0x40)
        public static let firstData = Control(rawValue: 0x80)
        public static let firstAndOnlyData = Control(rawValue: 0xC0)

        public var name: String {
            switch self {
            case .data: "Data"
            case .start: "Start"
            case .cancel: "Cancel"
            case .pause: "Pause"
            case .setup: "Setup"
            case .success: "Success"
            case .lastData: "LastData"
            case .firstData: "FirstData"
            case .firstAndOnlyData: "FirstAndOnlyData"
            default: "Unknown(0x\(String(rawValue, radix: 16, uppercase: true)))"
            }
        }
        public var description: String { name }
        /// The datagram carries file bytes.
        public var carriesData: Bool { [.data, .lastData, .firstData, .firstAndOnlyData].contains(self) }
    }

    public var transferID: UInt8
    public var control: Control
    public var body: [UInt8]

    public init(transferID: UInt8, control: Control, body: [UInt8] = []) {
        self.transferID = transferID
        self.control = control
        self.body = body
    }

    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        let bytes = Array(bytes)
        guard bytes.count >= 2 else {
            throw WireError(.truncated, "a file-transfer datagram needs a transfer id and a control byte, got \(bytes.count) bytes")
        }
        self.init(transferID: bytes[0], control: Control(rawValue: bytes[1]), body: Array(bytes[2...]))
    }

    public func encoded() -> [UInt8] { [transferID, control.rawValue] + body }

    /// The announced file size of a `setup` datagram.
    public var fileSize: UInt64? {
        guard control == .setup, body.count >= 8 else { return nil }
        return body[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A datagram of an external-accessory session: a 2-byte EA protocol session
/// id, then the app's bytes.
public struct ExternalAccessoryDatagram: Hashable, Sendable {
    public var protocolSessionID: UInt16
    public var data: [UInt8]

    public init(protocolSessionID: UInt16, data: [UInt8]) {
        self.protocolSessionID = protocolSessionID
        self.data = data
    }

    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        let bytes = Array(bytes)
        guard bytes.count >= 2 else {
            throw WireError(.truncated, "an external-accessory datagram needs a 2-byte session id, got \(bytes.count) bytes")
        }
        self.init(protocolSessionID: UInt16(bytes[0]) << 8 | UInt16(bytes[1]), data: Array(bytes[2...]))
    }

    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.appendBigEndian(protocolSessionID)
        return bytes + data
    }
}
