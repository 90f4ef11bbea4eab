/// A parameter list kept as its wire bytes: each parameter's header and data,
/// in order. Reading a parameter gives a view into these bytes, not a copy;
/// the typed appends write a parameter's header and data in place. A decoded
/// message's parameters and a group's members are lists over the bytes they
/// were read from, so reading a message allocates nothing per parameter.
///
/// Indices are positions in the bytes: a list's indices are invalidated by
/// any change to it, as with other collections.
///
/// A parameter too long for its 2-byte length field (over 65531 bytes of
/// data) can still be appended, so that the message holding it fails to
/// encode with `WireError.tooLarge`, as it always has, instead of trapping
/// here. It is kept with a length field of 0 (which no parameter on the wire
/// has) followed by its length in 4 bytes; a list holding one is longer than
/// any message, so those bytes never reach the wire.
public struct ParameterList: RangeReplaceableCollection, Hashable, Sendable, ExpressibleByArrayLiteral, CustomStringConvertible {
    public struct Index: Comparable, Hashable, Sendable {
        /// Where the parameter's header starts in `bytes`.
        fileprivate let offset: Int

        public static func < (lhs: Index, rhs: Index) -> Bool { lhs.offset < rhs.offset }
    }

    /// The header of a parameter too long for the wire: 0, id, 4-byte length.
    private static let longHeaderLength = Parameter.headerLength + 4

    /// The list's bytes: its wire form, unless it holds a parameter too long for the wire.
    public private(set) var bytes: ArraySlice<UInt8>

    public init() { bytes = [] }

    public init(arrayLiteral parameters: Parameter...) { self.init(parameters) }

    public init(_ parameters: [Parameter]) {
        bytes = []
        bytes.reserveCapacity(parameters.reduce(0) { $0 + $1.encodedLength })
        for parameter in parameters { append(parameter) }
    }

    /// A list over `bytes`, which must be exactly a well-formed parameter
    /// list. An array or a slice of one is used in place, not copied.
    public init(validating bytes: some Collection<UInt8>) throws(WireError) {
        let bytes = (bytes as? ArraySlice<UInt8>) ?? ((bytes as? [UInt8]).map { $0[...] } ?? ArraySlice(bytes))
        var index = bytes.startIndex
        let end = bytes.endIndex
        while index < end {
            let offset = index - bytes.startIndex
            guard end - index >= Parameter.headerLength else {
                throw WireError(.truncated, "\(end - index) stray bytes after the last parameter at offset \(offset)")
            }
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            let id = UInt16(bytes[index + 2]) << 8 | UInt16(bytes[index + 3])
            guard length >= Parameter.headerLength else {
                throw WireError(.badLength, "parameter \(id) at offset \(offset) has length \(length), shorter than its header")
            }
            guard length <= end - index else {
                throw WireError(.truncated, "parameter \(id) at offset \(offset) claims \(length) bytes, only \(end - index) remain")
            }
            index += length
        }
        self.bytes = bytes
    }

    /// A list over bytes already known to be a well-formed list.
    init(wellFormed bytes: ArraySlice<UInt8>) { self.bytes = bytes }

    /// The list's length on the wire.
    public var encodedLength: Int {
        // Only a list longer than any message can hold a long header.
        guard bytes.count > ControlMessage.maximumLength - ControlMessage.headerLength else { return bytes.count }
        return reduce(0) { $0 + $1.encodedLength }
    }

    public var description: String { Array(self).description }

    // MARK: Collection

    public var startIndex: Index { Index(offset: bytes.startIndex) }
    public var endIndex: Index { Index(offset: bytes.endIndex) }

    public func index(after position: Index) -> Index { Index(offset: extent(at: position.offset).data.upperBound) }

    public subscript(position: Index) -> Parameter {
        let (id, data) = extent(at: position.offset)
        return Parameter(id: id, bytes: bytes[data])
    }

    /// The id and the data's range of the parameter whose header starts at `offset`.
    private func extent(at offset: Int) -> (id: UInt16, data: Range<Int>) {
        let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        let id = UInt16(bytes[offset + 2]) << 8 | UInt16(bytes[offset + 3])
        if length != 0 { return (id, offset + Parameter.headerLength..<offset + length) }
        let dataLength = bytes[offset + Parameter.headerLength..<offset + Self.longHeaderLength].reduce(0) { $0 << 8 | Int($1) }
        return (id, offset + Self.longHeaderLength..<offset + Self.longHeaderLength + dataLength)
    }

    // MARK: Changes

    public mutating func replaceSubrange(_ subrange: Range<Index>, with parameters: some Collection<Parameter>) {
        var replacement = ParameterList()
        for parameter in parameters { replacement.append(parameter) }
        bytes.replaceSubrange(subrange.lowerBound.offset..<subrange.upperBound.offset, with: replacement.bytes)
    }

    public mutating func append(_ parameter: Parameter) {
        appendHeader(parameter.id, dataLength: parameter.bytes.count)
        bytes.append(contentsOf: parameter.bytes)
    }

    /// Room for `count` bytes in all, so that appending up to that many
    /// allocates once.
    public mutating func reserveCapacity(bytes count: Int) { bytes.reserveCapacity(count) }

    /// Appends a header-only parameter (`Parameter.none`).
    public mutating func appendEmpty(_ id: UInt16) { appendHeader(id, dataLength: 0) }

    public mutating func appendBool(_ id: UInt16, _ value: Bool) {
        appendHeader(id, dataLength: 1)
        bytes.append(value ? 1 : 0)
    }

    /// Appends `value` big-endian in exactly `T`'s width. Inlinable, so that
    /// it is specialised for each width where it is called.
    @inlinable
    public mutating func appendInteger<T: FixedWidthInteger>(_ id: UInt16, _ value: T) {
        appendHeader(id, dataLength: T.bitWidth / 8)
        // Eight bytes at a time, most significant first: one step for the usual widths.
        var remaining = T.bitWidth
        while remaining > 0 {
            let chunk = Swift.min(remaining, 64)
            remaining -= chunk
            appendBigEndian(UInt64(truncatingIfNeeded: value >> remaining), byteCount: chunk / 8)
        }
    }

    /// Appends UTF-8 with the terminating NUL the format requires.
    public mutating func appendString(_ id: UInt16, _ value: String) {
        appendHeader(id, dataLength: value.utf8.count + 1)
        bytes.append(contentsOf: value.utf8)
        bytes.append(0)
    }

    public mutating func appendBlob(_ id: UInt16, _ value: some Collection<UInt8>) {
        appendHeader(id, dataLength: value.count)
        bytes.append(contentsOf: value)
    }

    /// Appends a group whose members `members` appends to the list it is
    /// handed, which is this list: the group's header is written first and
    /// its length filled in afterwards, so the members are written once, in
    /// place.
    public mutating func appendGroup(_ id: UInt16, _ members: (inout ParameterList) -> Void) {
        let start = bytes.endIndex
        appendHeader(id, dataLength: 0)
        members(&self)
        let length = bytes.endIndex - start
        if length <= 0xFFFF {
            bytes[start] = UInt8(truncatingIfNeeded: length >> 8)
            bytes[start + 1] = UInt8(truncatingIfNeeded: length)
        } else {
            var header = ParameterList()
            header.appendHeader(id, dataLength: length - Parameter.headerLength)
            bytes.replaceSubrange(start..<start + Parameter.headerLength, with: header.bytes)
        }
    }

    @usableFromInline
    mutating func appendHeader(_ id: UInt16, dataLength: Int) {
        let length = Parameter.headerLength + dataLength
        if length <= 0xFFFF {
            appendBigEndian(UInt64(length) << 16 | UInt64(id), byteCount: 4)
        } else {
            appendBigEndian(UInt64(id) << 32 | UInt64(dataLength), byteCount: 8)
        }
    }

    /// Appends the low `byteCount` bytes of `value`, most significant first.
    @usableFromInline
    mutating func appendBigEndian(_ value: UInt64, byteCount: Int) {
        var shift = (byteCount - 1) * 8
        while shift >= 0 {
            bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
    }
}
