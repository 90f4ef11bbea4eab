import Testing
import IAPTrace
import IAPWire

/// Trace-level inputs that made a fuzz entry point in Fuzz/ fail, kept so the
/// fixes stay fixed. See Docs/Fuzzing.md.
@Suite struct TraceFuzzRegressionTests {
    /// Found by FuzzTraceInput (invalid JSON line): an EAK packet's sequence
    /// numbers were rendered with `eak.map(String.init)`, which picked the
    /// module's internal zero-padded hex initialiser, so the JSON held
    /// `"eak":[03,04,05]` (not JSON) and sequence numbers of 10 and over came
    /// out in hex (`0a`). This is the fuzzer's input: ACK+EAK, payload 03 04 05.
    @Test func eakSequenceNumbersAreDecimalJSON() throws {
        let input: [UInt8] = [0xFF, 0x5A, 0x00, 0x0D, 0x60, 0x2C, 0x10, 0x00, 0xFE, 0x03, 0x04, 0x05, 0xF4]
        let (events, _) = try decodeTrace(input, options: .init(format: .raw))
        let lines = jsonLines(events)
        #expect(lines.count == 1)
        let object = try parseJSON(try #require(lines.first))
        #expect(object["eak"] as? [Int] == [3, 4, 5])
    }

    /// The same packet with sequence numbers that differ between decimal and
    /// hex, in JSON and in the text rendering.
    @Test func eakSequenceNumbersOverNineAreNotHex() throws {
        let eak: [UInt8] = [0x0A, 0x10, 0xFF]
        let bytes = try LinkPacket(control: [.ack, .eak], sequence: 0x2C, acknowledgement: 0x10, payload: eak).encoded()
        let (events, _) = try decodeTrace(bytes, options: .init(format: .raw))
        let event = try #require(events.first)
        let object = try parseJSON(TraceJSON.line(for: event))
        #expect(object["eak"] as? [Int] == [10, 16, 255])
        #expect(TraceText.lines(for: event).contains { $0.hasSuffix("EAK sequence numbers: 10 16 255") })
    }

    /// Found by FuzzTraceInput (arithmetic overflow trap in
    /// CaptureReader.nextPcapngBlock): an enhanced packet block whose 64-bit
    /// timestamp, in the default microsecond units, does not fit in Int64
    /// nanoseconds. Minimised by hand from the fuzzer's 152-byte input to a
    /// section header, a usbmon (220) interface and one empty packet block
    /// with timestamp 2^56 µs.
    @Test func pcapngTimestampOverflowSaturates() throws {
        let input: [UInt8] = [
            0x0A, 0x0D, 0x0D, 0x0A, 0x1C, 0x00, 0x00, 0x00, 0x4D, 0x3C, 0x2B, 0x1A,
            0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
            0x1C, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
            0xDC, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00,
            0x06, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x20, 0x00, 0x00, 0x00,
        ]
        var reader = CaptureReader()
        input.withUnsafeBytes { reader.append($0) }
        let record = try #require(try reader.next())
        #expect(record.timestampNanoseconds == Int64.max)
        #expect(record.data.isEmpty)
        #expect(try reader.next() == nil)
        // The whole decoder reads the file without trapping or failing.
        let (events, decoder) = try decodeTrace(input)
        #expect(events.isEmpty)
        #expect(decoder.usbmonRecords == 1)
    }
}
