import Foundation
import Testing
@testable import IAPTrace
import IAPWire

/// The counting path (`decodesParameters: false`, what `--stats` uses) and
/// the message framer it rests on: they must find what the full decoder and
/// IAPWire's `ControlMessageDecoder` find.
@Suite struct CountingPathTests {
    /// Deterministic bytes for reproducible streams.
    struct SplitMix {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
    }

    /// A session stream mixing whole messages, candidates whose parameters do
    /// not fit, headers with impossible lengths, garbage and a cut-off end.
    static func messageStream(seed: UInt64) -> [UInt8] {
        var random = SplitMix(state: seed)
        var stream: [UInt8] = []
        for _ in 0..<60 {
            switch random.below(6) {
            case 0, 1:
                let parameters = (0..<random.below(4)).map { _ in Parameter(id: UInt16(random.below(8)), data: random.bytes(random.below(12))) }
                stream += try! ControlMessage(id: UInt16(0x5000 + random.below(4)), parameters: parameters).encoded()
            case 2:
                // A header whose length does not match its parameters.
                let body = random.bytes(random.below(10))
                let length = 6 + body.count
                stream += [0x40, 0x40, UInt8(length >> 8), UInt8(length & 0xFF), 0x50, 0x01] + body
            case 3:
                stream += [0x40, 0x40, 0x00, UInt8(random.below(6)), 0xAE, 0x01]
            case 4:
                stream += random.bytes(random.below(20))
            default:
                stream += [0x40, 0x40, 0x00, 0x0A, 0x68, 0x02, 0x00, 0x04, 0x00, 0x01]
            }
        }
        stream += [0x40, 0x40, 0x00, 0x30, 0x50, 0x01, 0x00]
        return stream
    }

    static func describe(_ event: ControlMessageDecoder.Event) -> String {
        switch event {
        case .message(let message, let offset): "message \(message.id) @\(offset) \(message.encodedLength)"
        case .malformed(let id, let offset, let length, _): "malformed \(id) @\(offset) \(length)"
        case .oversized(let id, let offset, let length): "oversized \(id) @\(offset) \(length)"
        case .skipped(let skip): "skipped @\(skip.offset) \(skip.count) \(skip.reason.rawValue)"
        }
    }

    static func describe(_ event: ControlMessageFramer.Event) -> String {
        switch event {
        case .message(let id, let offset, let length, _): "message \(id) @\(offset) \(length)"
        case .malformed(let id, let offset, let length, _): "malformed \(id) @\(offset) \(length)"
        case .oversized(let id, let offset, let length): "oversized \(id) @\(offset) \(length)"
        case .skipped(let skip): "skipped @\(skip.offset) \(skip.count) \(skip.reason.rawValue)"
        }
    }

    @Test(arguments: 1...40) func framerFindsWhatTheMessageDecoderFinds(seed: UInt64) {
        let stream = Self.messageStream(seed: seed)
        var random = SplitMix(state: seed ^ 0xC0FFEE)
        var decoder = ControlMessageDecoder(maximumMessageLength: ControlMessage.maximumLength)
        var framer = ControlMessageFramer()
        var expected: [String] = []
        var found: [String] = []
        var index = 0
        while index < stream.count {
            let end = min(stream.count, index + 1 + random.below(24))
            decoder.append(stream[index..<end])
            framer.append(stream[index..<end])
            while let event = decoder.next() { expected.append(Self.describe(event)) }
            while let event = framer.next() { found.append(Self.describe(event)) }
            index = end
        }
        decoder.finish()
        framer.finish()
        while let event = decoder.next() { expected.append(Self.describe(event)) }
        while let event = framer.next() { found.append(Self.describe(event)) }
        #expect(found == expected)
        #expect(expected.contains { $0.hasPrefix("malformed") })
    }

    /// Everything `--stats` reports, and where each message was found.
    static func counts(_ bytes: [UInt8], decodesParameters: Bool, chunk: Int = 1 << 20) throws -> (statistics: String, messages: [String], parameters: Int) {
        let (events, _) = try decodeTrace(bytes, options: .init(decodesParameters: decodesParameters), chunk: chunk)
        var statistics = TraceStatistics()
        var messages: [String] = []
        var parameters = 0
        for event in events {
            statistics.record(event)
            if case .message(let info) = event.body {
                messages.append("\(info.session) \(info.id) \(info.name ?? "-") @\(event.offset) \(info.length) #\(event.frame ?? 0)")
                parameters += info.parameters.count
            }
        }
        return (statistics.json + "\n" + statistics.text.joined(separator: "\n"), messages, parameters)
    }

    @Test func countingFindsWhatDecodingFindsInTheFixtures() throws {
        var inputs = [Array(SampleTrace.text.utf8)]
        let directory = wireFixtures.appendingPathComponent("public")
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() where name.hasSuffix(".hex") {
            inputs.append(try fixtureBytes(directory.appendingPathComponent(name)))
        }
        #expect(inputs.count > 10)
        for input in inputs {
            let full = try Self.counts(input, decodesParameters: true)
            let counted = try Self.counts(input, decodesParameters: false)
            #expect(counted.statistics == full.statistics)
            #expect(counted.messages == full.messages)
            #expect(counted.parameters == 0)
        }
    }

    /// A capture whose control session carries malformed candidates and
    /// garbage between messages, split across transfers at random.
    @Test(arguments: [UInt64(3), 11, 29]) func countingFindsWhatDecodingFindsInACapture(seed: UInt64) throws {
        var random = SplitMix(state: seed)
        var writer = UsbmonPcapngWriter()
        var time: Int64 = 1_000
        let sync = LinkSynchronization(maximumOutstandingPackets: 5, maximumPacketLength: 0xFFFF, retransmitTimeoutMilliseconds: 1500,
                                       cumulativeAckTimeoutMilliseconds: 70, maximumRetransmissions: 3, maximumCumulativeAcks: 3,
                                       sessions: [LinkSessionDescriptor(id: 1, type: SessionType(rawValue: 0))])
        var sequence: UInt8 = 0
        func transfer(_ payload: [UInt8], control: LinkControl = .ack, session: UInt8 = 1) {
            sequence &+= 1
            time += 100
            let packet = try! LinkPacket(control: control, sequence: sequence, acknowledgement: 0, session: session, payload: payload).encoded()
            writer.bulkTransfer(device: 4, endpoint: 0x81, data: packet, timestampMicroseconds: time)
        }
        transfer(sync.encoded(), control: .syn, session: 0)
        let stream = Self.messageStream(seed: seed)
        var index = 0
        while index < stream.count {
            let end = min(stream.count, index + 1 + random.below(40))
            transfer(Array(stream[index..<end]))
            if random.below(3) == 0 { transfer([]) }
            index = end
        }
        let capture = writer.drain()
        let full = try Self.counts(capture, decodesParameters: true, chunk: 1 + random.below(500))
        let counted = try Self.counts(capture, decodesParameters: false, chunk: 1 + random.below(500))
        #expect(counted.statistics == full.statistics)
        #expect(counted.messages == full.messages)
        #expect(!full.messages.isEmpty && full.parameters > 0)
        #expect(full.statistics.contains("\"malformed_message\""))
    }
}

@Suite struct JSONWriterTests {
    @Test func escapesWhatJSONNeedsEscaped() {
        #expect(JSONObjectWriter.quoted("plain") == "\"plain\"")
        #expect(JSONObjectWriter.quoted("a\"b\\c") == "\"a\\\"b\\\\c\"")
        #expect(JSONObjectWriter.quoted("\n\r\t\u{01}\u{1F}\u{7F}") == "\"\\n\\r\\t\\u0001\\u001f\\u007f\"")
        #expect(JSONObjectWriter.quoted("Kind of Blue – é 🎵") == "\"Kind of Blue – é 🎵\"")
    }

    @Test func writesNumbersNestedValuesAndKeyOrder() {
        var bytes = OutputBytes()
        bytes.append(utf8: "prefix ")
        var json = JSONObjectWriter(appendingTo: &bytes)
        json.integer("zero", 0)
        json.integer("negative", -1234567)
        json.integer("largest", UInt64.max)
        json.integer("smallest", Int64.min)
        json.seconds("t", nanoseconds: -1_500_000_000)
        json.seconds("u", nanoseconds: 123_456)
        json.hex("hex", [0x00, 0xAB, 0x0F])
        json.array("list") { array in
            array.integer(7)
            array.string("x")
            array.object { $0.null("n") }
        }
        json.object("inner") { $0.bool("ok", true) }
        json.stringOrNull("absent", nil)
        json.finish(into: &bytes)
        #expect(bytes.string
                == "prefix {\"zero\":0,\"negative\":-1234567,\"largest\":18446744073709551615,\"smallest\":-9223372036854775808,"
                + "\"t\":-1.500000,\"u\":0.000123,\"hex\":\"00ab0f\",\"list\":[7,\"x\",{\"n\":null}],\"inner\":{\"ok\":true},\"absent\":null}")
        #expect(TraceText.seconds(nanoseconds: -1_500_000_000) == "-1.500000")
    }

    @Test func writtenLinesAreTheLinesAsStrings() throws {
        let (events, _) = try decodeTrace(Array(SampleTrace.text.utf8))
        var bytes = OutputBytes()
        for event in events {
            TraceJSON.write(event, into: &bytes)
            bytes.append(0x0A)
        }
        #expect(bytes.string == jsonLines(events).map { $0 + "\n" }.joined())
    }
}
