import Testing
@testable import IAPTrace
import IAPWire

/// The text rendering's columns: time and bus.device for captures, the
/// stream each offset counts, and counts written with the right plural.
@Suite struct TraceTextTests {
    static func text(_ events: [TraceEvent]) -> [String] { events.flatMap(TraceText.lines(for:)) }

    @Test func captureLinesStartWithTimeSinceTheFirstRecordAndBusDevice() throws {
        let (capture, _, _) = try CaptureTests.session()
        let (events, _) = try decodeTrace(capture)
        let lines = Self.text(events)
        // Transfers are 250 µs apart, each a submission and a completion; the
        // first record is the out detect's submission, which carries its data.
        #expect(lines.first?.hasPrefix("  0.000000 out #1 1.5 ep01 @out+0 ") == true, "\(lines.first ?? "no line")")
        #expect(lines.contains { $0.hasPrefix("  0.000250 in  #4 1.5 ep81 @in+0 ") && $0.hasSuffix("detect FF 55 02 00 EE 10") })
        // The message completes with the eighth transfer's submission.
        let message = try #require(lines.first { $0.contains("message session=1 IdentificationInformation") })
        #expect(message.hasPrefix("  0.001750 out #15 1.5 ep01 @out.s1+0 "), "\(message)")
        // JSON: `t` in seconds, added after every other key; bus and device as before.
        let first = try parseJSON(TraceJSON.line(for: events[0]))
        #expect(first["t"] as? Double == 0)
        #expect(first["bus"] as? Int == 1 && first["device"] as? Int == 5)
        let json = TraceJSON.line(for: try #require(events.first { $0.kind == "message" }))
        #expect(json.hasSuffix(",\"t\":0.001750}"), "\(json)")
    }

    @Test func captureTimesCountFromTheFirstRecordWhateverItHolds() throws {
        var writer = UsbmonPcapngWriter()
        // A record of another device first: it sets time zero though it is never shown.
        writer.bulkTransfer(device: 9, endpoint: 0x02, data: [1, 2, 3], timestampMicroseconds: 5_000_000)
        writer.bulkTransfer(bus: 3, device: 12, endpoint: 0x81, data: DetectSequence.bytes, timestampMicroseconds: 6_234_567)
        let (events, _) = try decodeTrace(writer.bytes)
        let detect = try #require(events.first)
        #expect(detect.time == 1_234_567_000)
        #expect(Self.text([detect]) == ["  1.234567 in  #4 3.12 ep81 @in+0".padding(to: 40) + " detect FF 55 02 00 EE 10"])
    }

    @Test func secondsAreWrittenWithSixDecimals() {
        #expect(TraceText.seconds(nanoseconds: 0) == "0.000000")
        #expect(TraceText.seconds(nanoseconds: 123_456) == "0.000123")
        #expect(TraceText.seconds(nanoseconds: 123_500) == "0.000124")
        #expect(TraceText.seconds(nanoseconds: 61_000_000_000) == "61.000000")
        #expect(TraceText.seconds(nanoseconds: -1_500_000_000) == "-1.500000")
        #expect(TraceText.seconds(nanoseconds: -400) == "0.000000")
        #expect(TraceText.seconds(nanoseconds: .min) == "-9223372036.854776")
    }

    @Test func hexLinesHaveNoTimeAndNameTheirStreams() throws {
        let (events, _) = try decodeTrace(Array(SampleTrace.text.utf8))
        let lines = Self.text(events)
        #expect(lines.first == "out L6 @out+0".padding(to: 24) + " detect FF 55 02 00 EE 10")
        #expect(lines.contains("in  L16 @in+35".padding(to: 24) + " link ACK seq=65 ack=43 session=1 len=16 payload=6"))
        #expect(lines.contains("in  L16 @in.s1+0".padding(to: 24) + " message session=1 StartIdentification (0x1D00) 6 bytes"))
        #expect(!jsonLines(events).contains { $0.contains("\"t\":") })
        // Bytes without a direction marker form a stream of their own.
        let unmarked = try decodeTrace(Array("ff 55 02 00 ee 10\n".utf8)).events
        #expect(Self.text(unmarked) == ["-   L1 @stream+0".padding(to: 24) + " detect FF 55 02 00 EE 10"])
    }

    @Test func offsetsOfSessionStreamsAndOfTheFileAreLabelled() throws {
        // A message whose parameter is cut short: malformed, counted in session 1's stream.
        var message = try ControlMessage(id: 0x1D00).encoded()
        message += [0x00, 0x09, 0x00, 0x00]
        message[3] = UInt8(message.count)
        let packet = try LinkPacket(control: .ack, sequence: 1, session: 1, payload: message).encoded()
        let (events, _) = try decodeTrace(packet, options: .init(format: .raw))
        let malformed = try #require(events.first { $0.kind == "skipped" })
        #expect(malformed.offsetBase == .session(1))
        #expect(Self.text([malformed]).first?.hasPrefix("-   @stream.s1+0 ") == true, "\(Self.text([malformed]))")
        // An unreadable hex line has no offset at all.
        let invalid = try decodeTrace(Array("zz\n".utf8), options: .init(format: .hex)).events
        #expect(Self.text(invalid).first?.hasPrefix("-   L1 ".padding(to: 25) + "skipped 0 bytes: invalid_hex") == true, "\(Self.text(invalid))")
        // A malformed pcapng block counts in the file.
        let (capture, _, _) = try CaptureTests.session()
        var parts = MalformedBlockTests.blocks(capture)
        parts.insert(MalformedBlockTests.block(type: 3, body: []), at: 2)
        let blockEvents = try decodeTrace(parts.flatMap { $0 }).events
        let block = try #require(blockEvents.first { $0.kind == "skipped" })
        #expect(Self.text([block]).first?.contains("@file+\(parts[0].count + parts[1].count) ") == true, "\(Self.text([block]))")
    }

    @Test func linesUnderAnEventAreIndentedFromItsText() throws {
        let (capture, _, _) = try CaptureTests.session()
        let lines = Self.text(try decodeTrace(capture).events)
        let index = try #require(lines.firstIndex { $0.contains("message session=1 IdentificationInformation") })
        let column = try #require(lines[index].range(of: "message")).lowerBound.utf16Offset(in: lines[index])
        let parameter = lines[index + 1]
        #expect(parameter.prefix { $0 == " " }.count == column + 5, "\(parameter)")
        #expect(parameter.hasSuffix("0 Name = \"" + String(repeating: "n", count: 200) + "\""))
        let syn = try #require(lines.firstIndex { $0.contains("link SYN seq=10") })
        #expect(lines[syn + 1].prefix { $0 == " " }.count == column + 3)
        #expect(lines[syn + 1].hasSuffix("sync v1 max_outstanding=4 max_packet_length=4096 retransmit=1000ms cumulative_ack=100ms max_retransmissions=5 max_cumulative_acks=2"))
    }

    @Test func countsTakeTheirPlural() throws {
        #expect(TraceText.counted(0, "byte") == "0 bytes")
        #expect(TraceText.counted(1, "byte") == "1 byte")
        #expect(TraceText.counted(2, "packet") == "2 packets")
        // One stray byte, then two, before a detect sequence.
        let one = try decodeTrace([0x00] + DetectSequence.bytes, options: .init(format: .raw)).events
        #expect(Self.text(one).first?.hasSuffix("skipped 1 byte: garbage") == true, "\(Self.text(one))")
        let two = try decodeTrace([0x00, 0x00] + DetectSequence.bytes, options: .init(format: .raw)).events
        #expect(Self.text(two).first?.hasSuffix("skipped 2 bytes: garbage") == true)
        // A one-byte blob and a one-byte file-transfer datagram.
        let blob = try ControlMessage(id: 0xAA01, parameters: [.blob(0, [0x30])]).encoded()
        let blobPacket = try LinkPacket(control: .ack, sequence: 1, session: 1, payload: blob).encoded()
        let blobLines = Self.text(try decodeTrace(blobPacket, options: .init(format: .raw)).events)
        #expect(blobLines.contains { $0.hasSuffix("0 AuthenticationCertificate = <30> (1 byte)") }, "\(blobLines)")
        let sync = LinkSynchronization(maximumOutstandingPackets: 4, maximumPacketLength: 4096, retransmitTimeoutMilliseconds: 1000,
                                       cumulativeAckTimeoutMilliseconds: 100, maximumRetransmissions: 5, maximumCumulativeAcks: 2,
                                       sessions: [.init(id: 2, type: .externalAccessory)])
        let trace = try LinkPacket(control: .syn, sequence: 1, payload: sync.encoded()).encoded()
            + LinkPacket(control: .ack, sequence: 2, session: 2, payload: [0x00]).encoded()
        let datagram = Self.text(try decodeTrace(trace, options: .init(format: .raw)).events)
        let error = try #require(datagramError([0x00]))
        #expect(datagram.contains { $0.hasSuffix("external_accessory datagram, 1 byte (\(error))") }, "\(datagram)")
    }

    private func datagramError(_ payload: [UInt8]) -> String? {
        do {
            _ = try ExternalAccessoryDatagram(decoding: payload)
            return nil
        } catch {
            return error.detail
        }
    }
}

@Suite struct UnreadableInputTests {
    @Test func anEmptyInputIsAnErrorThatSaysSo() {
        for format in TraceInputDecoder.Format.allCases {
            #expect(throws: TraceInputError("the input is empty; there is nothing to decode"), "\(format)") {
                try decodeTrace([], options: .init(format: format))
            }
        }
    }

    @Test func hidReportsAreCountedSoThatNoneCanBeSaid() throws {
        let (capture, _, _) = try CaptureTests.session()
        let bulkOnly = try decodeTrace(capture, options: .init(hid: true))
        #expect(bulkOnly.input.decoder.hidReports == 0)
        #expect(bulkOnly.events.isEmpty)
        var writer = UsbmonPcapngWriter()
        writer.interruptTransfer(device: 7, endpoint: 0x81, data: [0, 0, 4, 0, 0, 0, 0, 0], timestampMicroseconds: 1)
        writer.interruptTransfer(device: 7, endpoint: 0x81, data: [0, 0, 0, 0, 0, 0, 0, 0], timestampMicroseconds: 2)
        let keyboard = try decodeTrace(writer.bytes, options: .init(hid: true))
        #expect(keyboard.input.decoder.hidReports == 2)
        // Without `hid` nothing counts as a report.
        #expect(try decodeTrace(writer.bytes).input.decoder.hidReports == 0)
    }
}
