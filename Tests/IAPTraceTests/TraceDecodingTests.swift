import Foundation
import Testing
@testable import IAPTrace
import IAPWire

@Suite struct SampleTraceTests {
    @Test func sampleDecodesAsItsCommentsSay() throws {
        let (events, input) = try decodeTrace(Array(SampleTrace.text.utf8))
        #expect(input.detectedFormat == .hex)
        var statistics = TraceStatistics()
        events.forEach { statistics.record($0) }
        #expect(statistics.detects == 2)
        #expect(statistics.linkPackets["out"] == 10)
        #expect(statistics.linkPackets["in"] == 10)
        #expect(statistics.retransmissions == 1)
        #expect(statistics.checksumErrors == 2)          // the stale FF 5A and the flipped bit
        #expect(statistics.messages[0x1D01] == 1)        // reassembled from two packets
        #expect(statistics.messages[0x5001] == 2)
        #expect(statistics.messages[0x6802] == 2)
        #expect(statistics.skippedByReason["garbage"] == 5)
        #expect(statistics.skippedByReason["bad_payload_checksum"] == 24)
        #expect(statistics.malformedMessages == 0)
        // The SYN lists three sessions; file transfer datagrams are recognised.
        let datagrams = events.compactMap { event -> DatagramInfo? in
            if case .link(let info) = event.body { return info.datagram } else { return nil }
        }
        #expect(datagrams.map { $0.fileTransfer?.control } == [.setup, .start, .firstAndOnlyData, .success])
    }

    @Test func everyJSONLineHasTheDocumentedKeys() throws {
        let (events, _) = try decodeTrace(Array(SampleTrace.text.utf8))
        var kinds = Set<String>()
        for line in jsonLines(events) {
            let object = try parseJSON(line)
            let kind = try #require(object["kind"] as? String)
            kinds.insert(kind)
            #expect(object.keys.contains("dir"))
            #expect(object["offset"] is Int)
            let required: [String]
            switch kind {
            case "link": required = ["seq", "ack", "session", "control", "length", "payload_length", "checksums_ok"]
            case "message": required = ["session", "id", "name", "params"]
            case "iap1": required = ["lingo", "command", "name", "transaction", "checksum_ok"]
            case "skipped": required = ["bytes", "reason"]
            case "detect": required = []
            default: Issue.record("unexpected kind \(kind)"); required = []
            }
            for key in required { #expect(object.keys.contains(key), "\(kind) lacks \(key): \(line)") }
            if kind == "link", (object["control"] as? [String])?.contains("SYN") == true {
                let sync = try #require(object["sync"] as? [String: Any])
                for key in ["version", "max_outstanding", "max_packet_length", "retransmit_timeout_ms", "cumulative_ack_timeout_ms",
                            "max_retransmissions", "max_cumulative_acks", "sessions"] {
                    #expect(sync.keys.contains(key), "sync lacks \(key)")
                }
                let sessions = try #require(sync["sessions"] as? [[String: Any]])
                #expect(sessions.count == 3)
                #expect(sessions.allSatisfy { $0["id"] is Int && $0["type"] is Int && $0["version"] is Int })
            }
        }
        #expect(kinds == ["detect", "link", "message", "skipped"])
    }

    @Test func nestedParametersAppearInJSON() throws {
        let (events, _) = try decodeTrace(Array(SampleTrace.text.utf8))
        let update = try #require(jsonLines(events).first { $0.contains("\"name\":\"NowPlayingUpdate\"") })
        let object = try parseJSON(update)
        #expect(object["id"] as? Int == 0x5001)
        let params = try #require(object["params"] as? [[String: Any]])
        let media = try #require(params.first { $0["id"] as? Int == 0 }?["params"] as? [[String: Any]])
        #expect(media.first { $0["id"] as? Int == 1 }?["value"] as? String == "Blue in Green")
        let playback = try #require(params.first { $0["id"] as? Int == 1 }?["params"] as? [[String: Any]])
        let status = try #require(playback.first { $0["id"] as? Int == 0 })
        #expect(status["value"] as? Int == 1)
        #expect(status["value_name"] as? String == "playing")
    }

    @Test func outputDoesNotDependOnReadSizes() throws {
        let bytes = Array(SampleTrace.text.utf8)
        let whole = jsonLines(try decodeTrace(bytes).events)
        for chunk in [1, 3, 64, 4097] {
            #expect(jsonLines(try decodeTrace(bytes, chunk: chunk).events) == whole, "chunk \(chunk)")
        }
    }

    @Test func statisticsJSONSchema() throws {
        let (events, _) = try decodeTrace(Array(SampleTrace.text.utf8))
        var statistics = TraceStatistics()
        events.forEach { statistics.record($0) }
        let object = try parseJSON(statistics.json)
        let packets = try #require(object["link_packets"] as? [String: Int])
        #expect(packets["out"] == 10 && packets["in"] == 10)
        let messages = try #require(object["messages"] as? [String: Int])
        #expect(messages["0x5001"] == 2 && messages["0x1D01"] == 1)
        #expect(object["iap1_packets"] as? Int == 0)
        #expect(object["skipped_bytes"] as? Int == statistics.skippedBytes)
        #expect(object["checksum_errors"] as? Int == 2)
    }
}

@Suite struct HexInputTests {
    @Test func markersCommentsAndTokenForms() throws {
        let text = """
        # a comment
        > ff5a 0009 40 01 02 00 # trailing comment
          0x63
        < FF,55,02,00,EE,10
        \t
        """
        // Lines with different markers are different streams: the unmarked byte does not
        // complete the out packet, which is therefore truncated.
        let (events, _) = try decodeTrace(Array(text.utf8))
        let detect = try #require(events.first { $0.kind == "detect" })
        #expect(detect.direction == .in)
        #expect(detect.line == 4)
        #expect(events.contains { $0.kind == "skipped" && $0.direction == .out })
    }

    @Test func markerConventionCanBeFlipped() throws {
        let packet = try LinkPacket(control: .ack, sequence: 1).encoded()
        let text = "> " + packet.map { hexByte($0) }.joined(separator: " ")
        let host = try decodeTrace(Array(text.utf8)).events
        let device = try decodeTrace(Array(text.utf8), options: .init(markers: .device)).events
        #expect(host.first?.direction == .out)
        #expect(device.first?.direction == .in)
    }

    @Test func invalidLinesAreReportedWithTheirNumber() throws {
        let (events, _) = try decodeTrace(Array("ff 5a\nzz 12\n> \n1 2 3\n".utf8), options: .init(format: .hex))
        let problems = events.compactMap { event -> String? in
            if case .skipped(let info) = event.body, info.reason == "invalid_hex" { return info.detail } else { return nil }
        }
        #expect(problems.count == 3)
        #expect(problems[0].hasPrefix("line 2"))
        #expect(problems[1].hasPrefix("line 3"))
        #expect(problems[2].hasPrefix("line 4"))
    }

    @Test func publicFixturesDecodeWithoutLosingBytes() throws {
        // The wiomoc handshake: detect both ways, SYN, a stray byte, SYN+ACK, ACK, data.
        let bytes = try fixtureBytes(wireFixtures.appendingPathComponent("public/wiomoc-smoketest-handshake.hex"))
        let (events, _) = try decodeTrace(bytes)
        var statistics = TraceStatistics()
        events.forEach { statistics.record($0) }
        #expect(statistics.detects == 2)
        #expect(statistics.linkPackets["out"] == 3 && statistics.linkPackets["in"] == 3)
        // The stray byte before SYN+ACK, and "hello world!" sent on session 10, which the
        // SYN declares a control session but which holds no control message.
        #expect(statistics.skippedByReason == ["garbage": 13])
        #expect(events.contains { event in
            if case .skipped(let info) = event.body { info.count == 12 && info.detail == "session 10 stream" } else { false }
        })
        #expect(statistics.checksumErrors == 0)
    }

    @Test func hidReportsFromAnIPodTrace() throws {
        let url = wireFixtures.appendingPathComponent("public/oandrew-hid-report-getipodoptionsforlingo.hex")
        let (events, _) = try decodeTrace(try fixtureBytes(url), options: .init(hid: true))
        let frames = events.compactMap { event -> IAP1Info? in
            if case .iap1(let info) = event.body { return info } else { return nil }
        }
        #expect(frames.count == 1)
        #expect(frames.first?.name == "GetiPodOptionsForLingo")
        #expect(frames.first?.transaction == 4)
        #expect(frames.first?.checksumOK == true)
        // Zero padding is not reported as garbage.
        #expect(!events.contains { $0.kind == "skipped" })
    }
}

@Suite struct HostileTextTests {
    @Test func controlCharactersInABadLineNeverReachTheOutput() throws {
        let line: [UInt8] = Array("zz\u{1B}[2J\u{07}".utf8) + [0x0A]
        let (events, _) = try decodeTrace(line, options: .init(format: .hex))
        let text = events.flatMap(TraceText.lines(for:)).joined()
        #expect(!text.unicodeScalars.contains { $0.value < 0x20 })
        #expect(text.contains("invalid_hex"))
    }
}
