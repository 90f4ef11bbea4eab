import Testing
@testable import IAPWire

@Suite struct ControlMessageTests {
    @Test func externalAccessoryExampleDecodes() throws {
        // flirone-mac: StartExternalAccessoryProtocolSession as sent to a real accessory.
        let bytes = try Fixture("public/flirone-start-ea-session.hex").first
        let message = try ControlMessage(decoding: bytes)
        #expect(message.id == 0xEA00)
        #expect(MessageCatalog.name(of: message.id) == "StartExternalAccessoryProtocolSession")
        #expect(try message.parameter(0)?.integer(as: UInt8.self) == 2)
        #expect(try message.parameter(1)?.integer(as: UInt16.self) == 1)
        #expect(try message.encoded() == bytes)
    }

    @Test func wiomocIdentificationInterprets() throws {
        let bytes = try Fixture("public/wiomoc-identification-information.hex").first
        let message = try ControlMessage(decoding: bytes)
        let parameters = MessageCatalog.interpret(message)
        #expect(parameters.first { $0.id == 0 }?.value == .string("raspberrypi"))
        #expect(parameters.first { $0.id == 9 }?.value == .unsigned(20))
        let languages = parameters.filter { $0.id == 13 }.map(\.value)
        #expect(languages == [.string("de"), .string("en")])
        guard case .group(let ea)? = parameters.first(where: { $0.id == 10 })?.value else {
            Issue.record("EA protocol group not interpreted")
            return
        }
        #expect(ea.first { $0.id == 1 }?.value == .string("de.wiomoc.test"))
        #expect(try message.encoded() == bytes)
    }

    @Test func typedValuesRoundTrip() throws {
        let message = ControlMessage(id: 0x5001, parameters: [
            try .group(0, [.uint64(0, 0x0102_0304_0506_0708), .string(1, "Title ✓"), .uint32(4, 1234), .bool(23, true)]),
            try .group(1, [.uint8(0, 1), .uint32(1, 42_000), .uint8(5, 2), .uint8(6, 1)]),
        ])
        let decoded = try ControlMessage(decoding: try message.encoded())
        #expect(decoded == message)
        let media = Array(try decoded.parameter(0)!.group())
        #expect(try media[0].integer(as: UInt64.self) == 0x0102_0304_0506_0708)
        #expect(try media[1].string() == "Title ✓")
        #expect(try media[3].bool())
        let interpreted = MessageCatalog.interpret(decoded)
        guard case .group(let playback) = interpreted[1].value else {
            Issue.record("playback group")
            return
        }
        #expect(playback[0].value == .enumeration(1, name: "playing"))
        #expect(playback[2].value == .enumeration(2, name: "albums"))
        #expect(playback[3].value == .enumeration(1, name: "one"))
    }

    @Test func malformedParametersAreNamedErrors() {
        // A parameter claiming 10 bytes where 6 remain.
        let bytes: [UInt8] = [0x40, 0x40, 0x00, 0x0C, 0x50, 0x01, 0x00, 0x0A, 0x00, 0x01, 0xAA, 0xBB]
        #expect { try ControlMessage(decoding: bytes) } throws: { error in
            (error as? WireError)?.kind == .truncated && "\(error)".contains("claims 10 bytes")
        }
        // Parameter length shorter than its own header.
        #expect(throws: WireError.self) { try Parameter.list(decoding: [0x00, 0x02, 0x00, 0x01]) }
        // Message length disagreeing with the bytes.
        #expect(throws: WireError.self) { try ControlMessage(decoding: [0x40, 0x40, 0x00, 0x08, 0x50, 0x01]) }
    }

    @Test func stringsMustBeTerminatedAndValid() {
        #expect(throws: WireError.self) { try Parameter(id: 1, data: Array("abc".utf8)).string() }
        #expect(throws: WireError.self) { try Parameter(id: 1, data: [0x61, 0x00, 0x62, 0x00]).string() }
        #expect(throws: WireError.self) { try Parameter(id: 1, data: [0xC3, 0x28, 0x00]).string() }
        #expect(throws: WireError.self) { try Parameter(id: 1, data: [2]).bool() }
        #expect(throws: WireError.self) { try Parameter(id: 1, data: [0, 1, 2]).integer(as: UInt32.self) }
    }

    @Test func nestingDeeperThanTheLimitIsReportedNotFollowed() throws {
        var innermost = Parameter.uint8(0, 1)
        for _ in 0..<30 { innermost = try .group(0, [innermost]) }
        let message = ControlMessage(id: 0x0F00, parameters: [innermost])
        let decoded = try ControlMessage(decoding: try message.encoded())
        var depth = 0
        var level = MessageCatalog.interpret(decoded, maximumDepth: 8)
        while case .group(let members) = level.first?.value {
            depth += 1
            level = members
        }
        #expect(depth == 7)
        guard case .invalid(_, let reason)? = level.first?.value else {
            Issue.record("deep nesting not reported")
            return
        }
        #expect(reason.contains("deeper than 8"))
    }

    @Test func randomMessagesRoundTrip() throws {
        var generator = SeededGenerator(seed: 5)
        func randomParameters(depth: Int) throws -> [Parameter] {
            try (0..<Int.random(in: 0...5, using: &generator)).map { _ in
                let id = UInt16.random(in: 0...40, using: &generator)
                if depth < 3 && Bool.random(using: &generator) {
                    return try .group(id, randomParameters(depth: depth + 1))
                }
                return Parameter(id: id, data: .random(count: Int.random(in: 0...20, using: &generator), using: &generator))
            }
        }
        for _ in 0..<300 {
            let message = ControlMessage(id: .random(in: 0...0xFFFF, using: &generator), parameters: try randomParameters(depth: 0))
            #expect(try ControlMessage(decoding: try message.encoded()) == message)
        }
    }
}

@Suite struct ControlMessageDecoderTests {
    static func messages() throws -> [ControlMessage] {
        [
            ControlMessage(id: 0x1D00),
            ControlMessage(id: 0x5000, parameters: [try .group(0, [.none(0), .none(1)])]),
            ControlMessage(id: 0x5001, parameters: [try .group(0, [.string(1, String(repeating: "x", count: 300))])]),
            ControlMessage(id: 0x6802, parameters: [.uint16(0, 2), .blob(1, [1, 8])]),
        ]
    }

    static func decodeAll(_ bytes: [UInt8], chunk: Int) -> [ControlMessageDecoder.Event] {
        var decoder = ControlMessageDecoder()
        var events: [ControlMessageDecoder.Event] = []
        var index = 0
        while index < bytes.count {
            let end = min(bytes.count, index + chunk)
            decoder.append(bytes[index..<end])
            while let event = decoder.next() { events.append(event) }
            index = end
        }
        decoder.finish()
        while let event = decoder.next() { events.append(event) }
        return events
    }

    @Test func messagesSpanningPacketsAreReassembled() throws {
        let messages = try Self.messages()
        let stream = try messages.flatMap { try $0.encoded() }
        for chunk in [1, 2, 7, 100, stream.count] {
            let decoded = Self.decodeAll(stream, chunk: chunk).compactMap { event -> ControlMessage? in
                if case .message(let message, _) = event { return message } else { return nil }
            }
            #expect(decoded == messages, "chunk \(chunk)")
        }
    }

    /// Arrays as the link delivers them: a message that is a whole array
    /// is taken with the array as its buffer, the others copied out. Both
    /// kinds decode to the same messages at the same offsets, in any order
    /// and after each other, and a taken message changed afterwards
    /// changes only itself.
    @Test func messagesDeliveredAsWholeArraysDecodeAsThoseInPieces() throws {
        let messages = try Self.messages()
        let encoded = try messages.map { try $0.encoded() }
        var arrays: [[UInt8]] = encoded                                   // each message its own array: taken
        arrays.append(encoded[2] + encoded[3])                           // two in one array: copied out
        arrays.append(Array(encoded[1].prefix(5)))                       // one in pieces: copied out
        arrays.append(Array(encoded[1].dropFirst(5)))
        arrays.append(encoded[3])                                        // and whole again after them
        let expected = messages + [messages[2], messages[3], messages[1], messages[3]]
        var decoder = ControlMessageDecoder()
        var decoded: [(ControlMessage, Int)] = []
        for array in arrays {
            decoder.append(array)
            while let event = decoder.next() {
                guard case .message(let message, let offset) = event else {
                    Issue.record("unexpected \(event)")
                    continue
                }
                decoded.append((message, offset))
            }
        }
        #expect(decoded.map(\.0) == expected)
        var offsets: [Int] = []
        var total = 0
        for message in expected {
            offsets.append(total)
            total += try message.encoded().count
        }
        #expect(decoded.map(\.1) == offsets)
        #expect(decoder.bufferedByteCount == 0)
        var changed = decoded[3].0
        changed.parameters.append(.uint8(9, 1))
        #expect(changed.parameters.count == messages[3].parameters.count + 1)
        #expect(decoded[3].0 == messages[3], "changing a copy of a taken message changed the decoded one")
    }

    @Test func malformedMessageDoesNotHideTheNext() throws {
        let good = try ControlMessage(id: 0x1D02).encoded()
        // Claims 12 bytes; its parameter claims 9 where 6 remain.
        let bad: [UInt8] = [0x40, 0x40, 0x00, 0x0C, 0x50, 0x01, 0x00, 0x09, 0x00, 0x00, 0x00, 0x00]
        let events = Self.decodeAll(bad + good, chunk: 5)
        guard case .malformed(0x5001, 0, 12, _) = events.first else {
            Issue.record("expected malformed first, got \(events)")
            return
        }
        #expect(events.contains(.message(ControlMessage(id: 0x1D02), offset: 12)))
    }

    @Test func traceStartingMidMessageSkipsToTheNextStart() throws {
        let good = try ControlMessage(id: 0x1D02).encoded()
        let events = Self.decodeAll([0x00, 0x05, 0x00, 0x01, 0x02] + good + [0x40], chunk: 3)
        #expect(events == [
            .skipped(.init(offset: 0, count: 5, reason: .garbage)),
            .message(ControlMessage(id: 0x1D02), offset: 5),
            .skipped(.init(offset: 11, count: 1, reason: .truncated)),
        ])
    }
}

@Suite struct ControlMessageDecoderPendingTests {
    @Test func pendingMessageIsVisibleAndCanBeAbandoned() throws {
        var decoder = ControlMessageDecoder()
        let good = try ControlMessage(id: 0x1D02).encoded()
        decoder.append([0x40, 0x40, 0x00, 0x64, 0x50, 0x01, 0xAA] + good)
        #expect(decoder.next() == nil)
        #expect(decoder.pendingMessage == .init(offset: 0, id: 0x5001, held: 13, expected: 100))
        decoder.abandonPendingMessage()
        var events: [ControlMessageDecoder.Event] = []
        while let event = decoder.next() { events.append(event) }
        #expect(events == [
            .skipped(.init(offset: 0, count: 7, reason: .truncated)),
            .message(ControlMessage(id: 0x1D02), offset: 7),
        ])
        #expect(decoder.pendingMessage == nil)
    }

    @Test func oversizedHeaderIsReportedWithItsId() throws {
        var decoder = ControlMessageDecoder(maximumMessageLength: 32)
        let good = try ControlMessage(id: 0x1D02).encoded()
        decoder.append([0x01, 0x40, 0x40, 0x00, 0x40, 0x50, 0x01] + good)
        var events: [ControlMessageDecoder.Event] = []
        while let event = decoder.next() { events.append(event) }
        #expect(events == [
            .skipped(.init(offset: 0, count: 1, reason: .garbage)),
            .oversized(id: 0x5001, offset: 1, length: 64),
            .skipped(.init(offset: 1, count: 1, reason: .badLength)),
            .skipped(.init(offset: 2, count: 5, reason: .garbage)),
            .message(ControlMessage(id: 0x1D02), offset: 7),
        ])
    }
}
