/// What the typed parameter appends go to: a `ParameterList` writes the
/// bytes, a `ParameterLengthCounter` only adds up how many there would be.
/// A message's parameters written by one function generic over this can be
/// built, or measured without being built, from the same code (the phone
/// checks that a page fits one message before the page is written).
public protocol ParameterWriter {
    /// A header-only parameter (`Parameter.none`).
    mutating func appendEmpty(_ id: UInt16)
    mutating func appendBool(_ id: UInt16, _ value: Bool)
    /// `value` big-endian in exactly `T`'s width.
    mutating func appendInteger<T: FixedWidthInteger>(_ id: UInt16, _ value: T)
    /// UTF-8 with the terminating NUL the format requires.
    mutating func appendString(_ id: UInt16, _ value: String)
    mutating func appendBlob(_ id: UInt16, _ value: some Collection<UInt8>)
    /// A group whose members `members` appends to the writer it is handed.
    mutating func appendGroup(_ id: UInt16, _ members: (inout Self) -> Void)
}

extension ParameterList: ParameterWriter {}

/// Counts the wire length of what is appended to it and stores nothing.
public struct ParameterLengthCounter: ParameterWriter, Sendable {
    /// Each parameter's header and data so far: what `ParameterList.encodedLength`
    /// gives for a list holding the same parameters, whenever that fits a
    /// message (a group longer than a parameter can be is counted with a
    /// 4-byte header here, so the two differ only past any message's maximum).
    public private(set) var length = 0

    public init() {}

    public mutating func appendEmpty(_ id: UInt16) { length += Parameter.headerLength }

    public mutating func appendBool(_ id: UInt16, _ value: Bool) { length += Parameter.headerLength + 1 }

    public mutating func appendInteger<T: FixedWidthInteger>(_ id: UInt16, _ value: T) {
        length += Parameter.headerLength + T.bitWidth / 8
    }

    public mutating func appendString(_ id: UInt16, _ value: String) {
        length += Parameter.headerLength + value.utf8.count + 1
    }

    public mutating func appendBlob(_ id: UInt16, _ value: some Collection<UInt8>) {
        length += Parameter.headerLength + value.count
    }

    public mutating func appendGroup(_ id: UInt16, _ members: (inout ParameterLengthCounter) -> Void) {
        length += Parameter.headerLength
        members(&self)
    }
}
