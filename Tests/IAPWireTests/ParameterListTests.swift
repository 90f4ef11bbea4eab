import Testing
@testable import IAPWire

/// Parameters as views into a message's bytes: the typed appends write what
/// the `Parameter` constructors and `encode(into:)` write, views read the
/// same values, and malformed lists are refused as before.
@Suite struct ParameterListTests {
    /// The same parameters written in place and built as `Parameter` values.
    @Test func typedAppendsWriteWhatTheConstructorsWrite() throws {
        var written = ParameterList()
        Self.appendEveryKind(to: &written)
        let built: [Parameter] = [
            .none(1), .bool(2, true), .uint8(3, 0xAB), .uint16(4, 0xBEEF), .uint32(5, 0xDEAD_BEEF), .uint64(6, 0x0102_0304_0506_0708),
            .integer(7, Int16(-2)), .string(8, "Kind of Blue ✓"), .string(9, ""), .blob(10, [0x00, 0xFF, 0x40, 0x40]),
            try .group(11, [.string(0, "nested"), try .group(1, [.bool(0, false)]), .none(2)]), try .group(12, []),
        ]
        var reference: [UInt8] = []
        for parameter in built { try parameter.encode(into: &reference) }
        #expect(Array(written.bytes) == reference)
        #expect(written == ParameterList(built))
        #expect(Array(written) == built)
        #expect(try ControlMessage(id: 0x5001, parameters: written).encoded() == ControlMessage(id: 0x5001, parameters: built).encoded())
    }

    /// Every kind of typed append, to any writer.
    static func appendEveryKind<Writer: ParameterWriter>(to writer: inout Writer) {
        writer.appendEmpty(1)
        writer.appendBool(2, true)
        writer.appendInteger(3, UInt8(0xAB))
        writer.appendInteger(4, UInt16(0xBEEF))
        writer.appendInteger(5, UInt32(0xDEAD_BEEF))
        writer.appendInteger(6, UInt64(0x0102_0304_0506_0708))
        writer.appendInteger(7, Int16(-2))
        writer.appendString(8, "Kind of Blue ✓")
        writer.appendString(9, "")
        writer.appendBlob(10, [0x00, 0xFF, 0x40, 0x40])
        writer.appendGroup(11) { members in
            members.appendString(0, "nested")
            members.appendGroup(1) { inner in inner.appendBool(0, false) }
            members.appendEmpty(2)
        }
        writer.appendGroup(12) { _ in }
    }

    /// The counter gives the length the list writes, for every kind of
    /// parameter (a string's NUL, an integer's width, a group's header).
    @Test func aLengthCounterCountsWhatTheListWrites() {
        var list = ParameterList()
        Self.appendEveryKind(to: &list)
        var counter = ParameterLengthCounter()
        Self.appendEveryKind(to: &counter)
        #expect(counter.length == list.bytes.count)
        #expect(counter.length == list.encodedLength)
        var empty = ParameterLengthCounter()
        empty.appendGroup(0) { _ in }
        #expect(empty.length == Parameter.headerLength)
    }

    /// A decoded message's parameters and a group's members are slices of
    /// the decoded bytes, and read the values that were written.
    @Test func viewsOfADecodedMessageReadTheSameValues() throws {
        let message = ControlMessage(id: 0x5001, capacity: 64) { parameters in
            parameters.appendInteger(0, UInt32(42))
            parameters.appendGroup(1) { members in
                members.appendString(0, "Blue in Green")
                members.appendInteger(1, UInt64(7))
                members.appendGroup(2) { inner in inner.appendBool(0, true) }
            }
            parameters.appendString(2, "")
        }
        let bytes = try message.encoded()
        let decoded = try ControlMessage(decoding: bytes)
        #expect(decoded == message)
        #expect(try decoded.parameter(0)?.integer(as: UInt32.self) == 42)
        #expect(try decoded.parameter(2)?.string() == "")
        let group = try #require(decoded.parameter(1))
        let members = try group.group()
        #expect(members.count == 3)
        #expect(try members.first { $0.id == 0 }?.string() == "Blue in Green")
        #expect(try members.first { $0.id == 1 }?.integer(as: UInt64.self) == 7)
        let inner = try #require(members.first { $0.id == 2 })
        #expect(try inner.group().first?.bool() == true)
        // Views, not copies: every parameter's bytes lie inside the decoded array.
        bytes.withUnsafeBufferPointer { whole in
            for parameter in [group] + Array(members) {
                parameter.bytes.withUnsafeBufferPointer { part in
                    #expect(part.baseAddress! >= whole.baseAddress! && part.baseAddress! + part.count <= whole.baseAddress! + whole.count)
                }
            }
        }
        // `data` is a copy indexed from 0, for code that reads it by position.
        #expect(members.first { $0.id == 0 }?.data.first == UInt8(ascii: "B"))
    }

    /// Lists change like other collections and stay well-formed.
    @Test func changesKeepTheListWellFormed() throws {
        var list: ParameterList = [.uint8(0, 1), .string(1, "two"), .none(2), .uint16(3, 4)]
        list.removeAll { $0.id == 1 }
        list.append(.bool(4, false))
        list.insert(.uint32(5, 6), at: list.startIndex)
        #expect(list.map(\.id) == [5, 0, 2, 3, 4])
        #expect(try ParameterList(validating: Array(list.bytes)) == list)
        #expect(try list.first { $0.id == 3 }?.integer(as: UInt16.self) == 4)
        list.removeAll()
        #expect(list.isEmpty && list.bytes.isEmpty)
    }

    /// The same errors, kinds and words as the array form gave.
    @Test func malformedListsAreRefusedAsBefore() {
        let cases: [([UInt8], WireError)] = [
            ([0x00, 0x06, 0x00, 0x01, 0xAA], WireError(.truncated, "parameter 1 at offset 0 claims 6 bytes, only 5 remain")),
            ([0x00, 0x02, 0x00, 0x01], WireError(.badLength, "parameter 1 at offset 0 has length 2, shorter than its header")),
            ([0x00, 0x00, 0x00, 0x01], WireError(.badLength, "parameter 1 at offset 0 has length 0, shorter than its header")),
            ([0x00, 0x04, 0x00, 0x01, 0x00, 0x04], WireError(.truncated, "2 stray bytes after the last parameter at offset 4")),
        ]
        for (bytes, expected) in cases {
            #expect(throws: expected) { try ParameterList(validating: bytes) }
            #expect(throws: expected) { try Parameter.list(decoding: bytes) }
            #expect(throws: expected) { try Parameter(id: 9, data: bytes).group() }
            var message: [UInt8] = [0x40, 0x40, 0x00, UInt8(6 + bytes.count), 0x50, 0x01]
            message += bytes
            #expect(throws: expected) { try ControlMessage(decoding: message) }
        }
    }

    /// A parameter too long for its length field is kept whole, and the
    /// message holding it refuses to encode, as it did before.
    @Test func aParameterTooLongForTheWireIsKeptAndRefused() throws {
        let blob = [UInt8](repeating: 0x5A, count: 70_000)
        var list = ParameterList()
        list.appendInteger(0, UInt8(1))
        list.appendBlob(1, blob)
        list.appendGroup(2) { members in members.appendBlob(0, blob) }
        list.append(.uint16(3, 9))
        #expect(list.map(\.id) == [0, 1, 2, 3])
        #expect(list.first { $0.id == 1 }?.bytes.count == blob.count)
        #expect(try list.first { $0.id == 3 }?.integer(as: UInt16.self) == 9)
        #expect(list.encodedLength > ControlMessage.maximumLength)
        let message = ControlMessage(id: 0x5001, parameters: list)
        #expect { try message.encoded() } throws: { ($0 as? WireError)?.kind == .tooLarge }
        #expect(throws: WireError.self) { try Parameter.group(4, list) }
    }

    @Test func lookupsByIDReadHeadersAndFindTheFirst() throws {
        var list = ParameterList()
        list.appendInteger(7, UInt8(1))
        // Too long for the wire: kept with the long header, skipped over by its real length.
        list.append(Parameter(id: 9, data: [UInt8](repeating: 0xAB, count: 70_000)))
        list.appendString(3, "first")
        list.appendString(3, "second")
        #expect(try list.first(withID: 3)?.string() == "first")
        #expect(list.first(withID: 9)?.bytes.count == 70_000)
        #expect(list.first(withID: 4) == nil)
        #expect(list.count(withID: 3) == 2)
        #expect(list.count(withID: 7) == 1)
        #expect(list.count(withID: 5) == 0)
        #expect(list.first(withID: 3) == list.first { $0.id == 3 })
    }
}
