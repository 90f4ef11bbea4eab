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
        /// Where the parameter's header starts in the list's buffer.
        @usableFromInline let offset: Int

        @usableFromInline init(offset: Int) { self.offset = offset }

        public static func < (lhs: Index, rhs: Index) -> Bool { lhs.offset < rhs.offset }
    }

    /// The header of a parameter too long for the wire: 0, id, 4-byte length.
    @usableFromInline static let longHeaderLength = Parameter.headerLength + 4

    /// The buffer the list is in (a decoded message's, or its own) and
    /// where. Appends go straight into the buffer when the list ends where
    /// the buffer does; otherwise the list is first copied into one of its own.
    @usableFromInline var storage: [UInt8]
    @usableFromInline var range: Range<Int>

    public init() {
        storage = []
        range = 0..<0
    }

    public init(arrayLiteral parameters: Parameter...) { self.init(parameters) }

    public init(_ parameters: [Parameter]) {
        self.init()
        storage.reserveCapacity(parameters.reduce(0) { $0 + $1.encodedLength })
        for parameter in parameters { append(parameter) }
    }

    /// A list over `bytes`, which must be exactly a well-formed parameter
    /// list. An array is used in place, not copied.
    public init(validating bytes: some Collection<UInt8>) throws(WireError) {
        let array = (bytes as? [UInt8]) ?? Array(bytes)
        try self.init(validating: array, in: array.indices)
    }

    /// A list over `storage[range]`, which must be exactly a well-formed
    /// parameter list.
    init(validating storage: [UInt8], in range: Range<Int>) throws(WireError) {
        var index = range.lowerBound
        let end = range.upperBound
        while index < end {
            let offset = index - range.lowerBound
            guard end - index >= Parameter.headerLength else {
                throw WireError(.truncated, "\(end - index) stray bytes after the last parameter at offset \(offset)")
            }
            let length = Int(storage[index]) << 8 | Int(storage[index + 1])
            let id = UInt16(storage[index + 2]) << 8 | UInt16(storage[index + 3])
            guard length >= Parameter.headerLength else {
                throw WireError(.badLength, "parameter \(id) at offset \(offset) has length \(length), shorter than its header")
            }
            guard length <= end - index else {
                throw WireError(.truncated, "parameter \(id) at offset \(offset) claims \(length) bytes, only \(end - index) remain")
            }
            index += length
        }
        self.storage = storage
        self.range = range
    }

    /// A list over bytes already known to be a well-formed list.
    init(wellFormed storage: [UInt8]) {
        self.storage = storage
        range = storage.indices
    }

    /// A list over `range` of bytes already known to be a well-formed list there.
    init(wellFormed storage: [UInt8], in range: Range<Int>) {
        self.storage = storage
        self.range = range
    }

    /// The list's bytes: its wire form, unless it holds a parameter too long for the wire.
    public var bytes: ArraySlice<UInt8> { storage[range] }

    /// A group parameter whose data is this list, sharing its buffer.
    func group(_ id: UInt16) -> Parameter { Parameter(id: id, storage: storage, range: range) }

    /// The list's length on the wire.
    public var encodedLength: Int {
        // Only a list longer than any message can hold a long header.
        guard range.count > ControlMessage.maximumLength - ControlMessage.headerLength else { return range.count }
        return reduce(0) { $0 + $1.encodedLength }
    }

    public static func == (lhs: ParameterList, rhs: ParameterList) -> Bool { lhs.bytes == rhs.bytes }

    public func hash(into hasher: inout Hasher) { hasher.combine(bytes) }

    public var description: String { Array(self).description }

    // MARK: Collection
    // Inlinable, so that a search through a list (the typed readers look
    // parameters up by id) compiles to a loop where it is written.

    @inlinable public var startIndex: Index { Index(offset: range.lowerBound) }
    @inlinable public var endIndex: Index { Index(offset: range.upperBound) }

    @inlinable
    public func index(after position: Index) -> Index { Index(offset: extent(at: position.offset).data.upperBound) }

    @inlinable
    public subscript(position: Index) -> Parameter {
        let (id, data) = extent(at: position.offset)
        return Parameter(id: id, storage: storage, range: data)
    }

    /// The id and the data's range of the parameter whose header starts at `offset`.
    @inlinable
    func extent(at offset: Int) -> (id: UInt16, data: Range<Int>) {
        let length = Int(storage[offset]) << 8 | Int(storage[offset + 1])
        let id = UInt16(storage[offset + 2]) << 8 | UInt16(storage[offset + 3])
        if length != 0 { return (id, offset + Parameter.headerLength..<offset + length) }
        return longExtent(at: offset, id: id)
    }

    /// `extent(at:)` for a parameter too long for the wire (rare: kept out
    /// of line so that the common case inlines into the loops that walk a list).
    @usableFromInline
    func longExtent(at offset: Int, id: UInt16) -> (id: UInt16, data: Range<Int>) {
        let dataLength = storage[offset + Parameter.headerLength..<offset + Self.longHeaderLength].reduce(0) { $0 << 8 | Int($1) }
        return (id, offset + Self.longHeaderLength..<offset + Self.longHeaderLength + dataLength)
    }

    /// The first parameter with `id`: only headers are read on the way.
    @inlinable
    public func first(withID id: UInt16) -> Parameter? {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let (found, data) = extent(at: offset)
            if found == id { return Parameter(id: id, storage: storage, range: data) }
            offset = data.upperBound
        }
        return nil
    }

    /// How many parameters have `id` (a repeated parameter is a list).
    @inlinable
    public func count(withID id: UInt16) -> Int {
        var offset = range.lowerBound
        var count = 0
        while offset < range.upperBound {
            let (found, data) = extent(at: offset)
            if found == id { count += 1 }
            offset = data.upperBound
        }
        return count
    }

    // MARK: Changes

    public mutating func replaceSubrange(_ subrange: Range<Index>, with parameters: some Collection<Parameter>) {
        var replaced = ParameterList(wellFormed: Array(storage[range.lowerBound..<subrange.lowerBound.offset]))
        for parameter in parameters { replaced.append(parameter) }
        replaced.appendBytes(storage[subrange.upperBound.offset..<range.upperBound])
        self = replaced
    }

    public mutating func append(_ parameter: Parameter) {
        appendHeader(parameter.id, dataLength: parameter.bytes.count)
        appendBytes(parameter.bytes)
    }

    /// Room for `count` bytes in all, so that appending up to that many
    /// allocates once.
    public mutating func reserveCapacity(bytes count: Int) {
        makeAppendable()
        storage.reserveCapacity(range.lowerBound + count)
    }

    /// Appends a header-only parameter (`Parameter.none`).
    public mutating func appendEmpty(_ id: UInt16) { appendHeader(id, dataLength: 0) }

    public mutating func appendBool(_ id: UInt16, _ value: Bool) {
        appendHeader(id, dataLength: 1)
        appendBigEndian(value ? 1 : 0, byteCount: 1)
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
        appendBytes(value.utf8)
        appendBigEndian(0, byteCount: 1)
    }

    public mutating func appendBlob(_ id: UInt16, _ value: some Collection<UInt8>) {
        appendHeader(id, dataLength: value.count)
        appendBytes(value)
    }

    /// Appends a group whose members `members` appends to the list it is
    /// handed, which is this list: the group's header is written first and
    /// its length filled in afterwards, so the members are written once, in
    /// place.
    public mutating func appendGroup(_ id: UInt16, _ members: (inout ParameterList) -> Void) {
        let headerOffset = range.count
        appendHeader(id, dataLength: 0)
        members(&self)
        let start = range.lowerBound + headerOffset
        let length = range.upperBound - start
        if length <= 0xFFFF {
            storage[start] = UInt8(truncatingIfNeeded: length >> 8)
            storage[start + 1] = UInt8(truncatingIfNeeded: length)
        } else {
            var header = ParameterList()
            header.appendHeader(id, dataLength: length - Parameter.headerLength)
            storage.replaceSubrange(start..<start + Parameter.headerLength, with: header.storage)
            range = range.lowerBound..<storage.count
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
        makeAppendable()
        var shift = (byteCount - 1) * 8
        while shift >= 0 {
            storage.append(UInt8(truncatingIfNeeded: value >> shift))
            shift -= 8
        }
        range = range.lowerBound..<storage.count
    }

    private mutating func appendBytes(_ bytes: some Sequence<UInt8>) {
        makeAppendable()
        storage.append(contentsOf: bytes)
        range = range.lowerBound..<storage.count
    }

    /// Makes the list end where its buffer does, so that appends go straight
    /// into the buffer (a view into the middle of a message's bytes is
    /// copied first).
    private mutating func makeAppendable() {
        guard range.upperBound != storage.count else { return }
        storage = Array(storage[range])
        range = storage.indices
    }
}
