/// A control-session message:
///
/// ```
/// 40 40 | length (2, includes this 6-byte header) | message id (2) | parameters
/// ```
///
/// The parameters are kept as their wire bytes (`ParameterList`): a decoded
/// message holds one buffer, and each parameter read from it is a view into
/// that buffer, not an array of its own.
public struct ControlMessage: Hashable, Sendable {
    public static let startOfMessage: (UInt8, UInt8) = (0x40, 0x40)
    public static let headerLength = 6
    public static let maximumLength = 0xFFFF

    public var id: UInt16
    public var parameters: ParameterList

    public init(id: UInt16, parameters: ParameterList = ParameterList()) {
        self.id = id
        self.parameters = parameters
    }

    public init(id: UInt16, parameters: [Parameter]) {
        self.init(id: id, parameters: ParameterList(parameters))
    }

    /// A message whose parameters `write` appends in place (with the typed
    /// appends of `ParameterList`) to a list with room for `capacity` bytes:
    /// one buffer for the whole message when `capacity` is enough.
    public init(id: UInt16, capacity: Int, _ write: (inout ParameterList) -> Void) {
        var parameters = ParameterList()
        parameters.reserveCapacity(bytes: capacity)
        write(&parameters)
        self.init(id: id, parameters: parameters)
    }

    public var encodedLength: Int { Self.headerLength + parameters.encodedLength }

    public func encode(into buffer: inout [UInt8]) throws(WireError) {
        let length = encodedLength
        guard length <= Self.maximumLength else {
            throw WireError(.tooLarge, "message 0x\(String(id, radix: 16)) would be \(length) bytes, over the \(Self.maximumLength)-byte maximum")
        }
        buffer.append(0x40)
        buffer.append(0x40)
        buffer.appendBigEndian(UInt16(length))
        buffer.appendBigEndian(id)
        // Within the maximum, the list's bytes are exactly its wire form.
        buffer.append(contentsOf: parameters.bytes)
    }

    public func encoded() throws(WireError) -> [UInt8] {
        var bytes: [UInt8] = []
        // A fresh array of the exact size: one allocation, no regrowth.
        bytes.reserveCapacity(encodedLength)
        try encode(into: &bytes)
        return bytes
    }

    /// Decodes one message that fills `bytes` exactly. Groups are kept as raw
    /// parameter data; read them with `Parameter.group()`. The parameters are
    /// views into `bytes` (an array is not copied).
    public init(decoding bytes: some Collection<UInt8>) throws(WireError) {
        let bytes = (bytes as? [UInt8]) ?? Array(bytes)
        guard bytes.count >= Self.headerLength else {
            throw WireError(.truncated, "a control message needs \(Self.headerLength) header bytes, got \(bytes.count)")
        }
        guard bytes[0] == 0x40, bytes[1] == 0x40 else {
            throw WireError(.badStartOfPacket, "expected 40 40, found \(hex(bytes[0])) \(hex(bytes[1]))")
        }
        let length = Int(bytes[2]) << 8 | Int(bytes[3])
        guard length >= Self.headerLength else {
            throw WireError(.badLength, "message length \(length) is shorter than its header")
        }
        guard length == bytes.count else {
            throw WireError(length > bytes.count ? .truncated : .badLength, "message length field says \(length) bytes, have \(bytes.count)")
        }
        let id = UInt16(bytes[4]) << 8 | UInt16(bytes[5])
        self.init(id: id, parameters: try ParameterList(validating: bytes, in: Self.headerLength..<bytes.count))
    }

    /// The first parameter with this id.
    public func parameter(_ id: UInt16) -> Parameter? { parameters.first { $0.id == id } }
    /// Every parameter with this id (repeated ids form lists).
    public func parameters(_ id: UInt16) -> [Parameter] { parameters.filter { $0.id == id } }
}

/// One parameter: `length (2, includes this 4-byte header) | id (2) | data`.
/// The data is kept as bytes; typed accessors read it.
public struct Parameter: Hashable, Sendable {
    public static let headerLength = 4
    /// Nesting limit used when groups are interpreted recursively.
    public static let defaultMaximumDepth = 8

    public var id: UInt16
    /// The buffer the data is in (a decoded message's, or its own) and where.
    @usableFromInline var storage: [UInt8]
    @usableFromInline var range: Range<Int>

    public init(id: UInt16, data: [UInt8] = []) {
        self.init(id: id, storage: data, range: data.indices)
    }

    public init(id: UInt16, bytes: ArraySlice<UInt8>) {
        self.init(id: id, data: Array(bytes))
    }

    @usableFromInline
    init(id: UInt16, storage: [UInt8], range: Range<Int>) {
        self.id = id
        self.storage = storage
        self.range = range
    }

    /// The data as a view into the bytes it was read from: no copy.
    public var bytes: ArraySlice<UInt8> {
        @inlinable get { storage[range] }
        set { data = Array(newValue) }
    }

    /// The data as an array indexed from 0 (a copy, unless the parameter
    /// has its data in an array of its own).
    public var data: [UInt8] {
        get { range == storage.indices ? storage : Array(storage[range]) }
        set {
            storage = newValue
            range = newValue.indices
        }
    }

    public static func == (lhs: Parameter, rhs: Parameter) -> Bool { lhs.id == rhs.id && lhs.bytes == rhs.bytes }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(bytes)
    }

    public var encodedLength: Int { Self.headerLength + bytes.count }

    public func encode(into buffer: inout [UInt8]) throws(WireError) {
        guard encodedLength <= 0xFFFF else { throw tooLarge }
        buffer.appendBigEndian(UInt16(encodedLength))
        buffer.appendBigEndian(id)
        buffer.append(contentsOf: bytes)
    }

    var tooLarge: WireError {
        WireError(.tooLarge, "parameter \(id) would be \(encodedLength) bytes, over the 65535-byte maximum")
    }

    /// Parses a parameter list that must fill `bytes` exactly.
    public static func list(decoding bytes: some Collection<UInt8>) throws(WireError) -> [Parameter] {
        Array(try ParameterList(validating: bytes))
    }

    /// True when `bytes` is exactly a well-formed parameter list (used to
    /// recognise groups that the catalog does not describe).
    public static func isParameterList(_ bytes: some Collection<UInt8>) -> Bool {
        (try? ParameterList(validating: bytes)) != nil
    }
}

// MARK: - Typed values

extension Parameter {
    public static func none(_ id: UInt16) -> Parameter { Parameter(id: id) }
    public static func bool(_ id: UInt16, _ value: Bool) -> Parameter { Parameter(id: id, data: [value ? 1 : 0]) }
    public static func uint8(_ id: UInt16, _ value: UInt8) -> Parameter { integer(id, value) }
    public static func uint16(_ id: UInt16, _ value: UInt16) -> Parameter { integer(id, value) }
    public static func uint32(_ id: UInt16, _ value: UInt32) -> Parameter { integer(id, value) }
    public static func uint64(_ id: UInt16, _ value: UInt64) -> Parameter { integer(id, value) }
    public static func integer<T: FixedWidthInteger>(_ id: UInt16, _ value: T) -> Parameter {
        var data: [UInt8] = []
        data.appendBigEndian(value)
        return Parameter(id: id, data: data)
    }
    /// UTF-8 with the terminating NUL the format requires.
    public static func string(_ id: UInt16, _ value: String) -> Parameter {
        Parameter(id: id, data: Array(value.utf8) + [0])
    }
    public static func blob(_ id: UInt16, _ value: [UInt8]) -> Parameter { Parameter(id: id, data: value) }
    public static func group(_ id: UInt16, _ parameters: [Parameter]) throws(WireError) -> Parameter {
        var data: [UInt8] = []
        data.reserveCapacity(parameters.reduce(0) { $0 + $1.encodedLength })
        for parameter in parameters { try parameter.encode(into: &data) }
        return Parameter(id: id, data: data)
    }
    /// A group of `members`, which share their bytes with it.
    public static func group(_ id: UInt16, _ members: ParameterList) throws(WireError) -> Parameter {
        if let oversized = members.first(where: { $0.encodedLength > 0xFFFF }) { throw oversized.tooLarge }
        return members.group(id)
    }

    /// The data as a big-endian unsigned integer of exactly `T`'s width.
    /// Inlinable, so that it is specialised for each width where it is called.
    @inlinable
    public func integer<T: FixedWidthInteger>(as type: T.Type = T.self) throws(WireError) -> T {
        guard bytes.count == T.bitWidth / 8 else {
            throw WireError(.badLength, "parameter \(id) has \(bytes.count) bytes, a \(T.self) needs \(T.bitWidth / 8)")
        }
        var value: T = 0
        for byte in bytes { value = value << 8 | T(truncatingIfNeeded: byte) }
        return value
    }

    public func bool() throws(WireError) -> Bool {
        guard bytes.count == 1, let value = bytes.first else { throw WireError(.badLength, "parameter \(id) has \(bytes.count) bytes, a bool needs 1") }
        guard value <= 1 else { throw WireError(.badValue, "parameter \(id) holds \(value), a bool is 0 or 1") }
        return value == 1
    }

    /// A NUL-terminated UTF-8 string. The NUL is required; bytes after it and
    /// invalid UTF-8 are errors.
    public func string() throws(WireError) -> String {
        guard let nul = bytes.firstIndex(of: 0) else {
            throw WireError(.badValue, "parameter \(id) is not NUL-terminated")
        }
        guard nul == bytes.endIndex - 1 else {
            throw WireError(.badValue, "parameter \(id) has \(bytes.endIndex - 1 - nul) bytes after its NUL terminator")
        }
        guard let string = Self.utf8String(bytes[..<nul]) else {
            throw WireError(.badValue, "parameter \(id) is not valid UTF-8")
        }
        return string
    }

    /// Titles and identifiers are mostly ASCII, which needs no validation
    /// beyond the high bit: that check and `String(decoding:)` on the
    /// contiguous bytes, instead of the standard library's generic
    /// validating initialiser (11 % of a browse round trip's instructions).
    private static func utf8String(_ text: ArraySlice<UInt8>) -> String? {
        let ascii = text.withContiguousStorageIfAvailable { buffer -> String? in
            var high: UInt8 = 0
            for byte in buffer { high |= byte }
            return high < 0x80 ? String(decoding: buffer, as: UTF8.self) : nil
        }
        if let ascii, let string = ascii { return string }
        return String(validating: text, as: UTF8.self)
    }

    /// The data as a nested parameter list: views into the same bytes.
    public func group() throws(WireError) -> ParameterList { try ParameterList(validating: storage, in: range) }
}
