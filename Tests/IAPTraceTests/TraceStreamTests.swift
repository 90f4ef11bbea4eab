import Testing
@testable import IAPTrace
import IAPWire

/// What the trace decoder makes of a link's data stream and how its text
/// reaches JSON.
@Suite struct TraceStreamTests {
    static func dataPacket(sequence: UInt8, _ message: ControlMessage) throws -> [UInt8] {
        try LinkPacket(control: .ack, sequence: sequence, acknowledgement: 0, session: 1, payload: message.encoded()).encoded()
    }

    /// A sender that retransmits every unacknowledged packet after a timeout
    /// repeats older sequence numbers, not only the last one: each repeat is
    /// flagged as a retransmission and its message is not decoded twice.
    @Test func olderSequenceNumbersRepeatedAreRetransmissions() throws {
        let first = ControlMessage(id: 0x1D00)
        let second = ControlMessage(id: 0x1D01, parameters: [.string(0, "Head unit")])
        let third = ControlMessage(id: 0x1D02)
        // 7, 8, then 7 and 8 again (a go-back retransmission), then 9.
        let stream = try Self.dataPacket(sequence: 7, first) + Self.dataPacket(sequence: 8, second)
            + Self.dataPacket(sequence: 7, first) + Self.dataPacket(sequence: 8, second) + Self.dataPacket(sequence: 9, third)
        let (events, _) = try decodeTrace(stream, options: .init(format: .raw))
        let links = events.compactMap { event -> (UInt8, Bool)? in
            if case .link(let info) = event.body { return (info.header.sequence, info.retransmission) } else { return nil }
        }
        #expect(links.map(\.0) == [7, 8, 7, 8, 9])
        #expect(links.map(\.1) == [false, false, true, true, false])
        let messages = events.compactMap { event -> UInt16? in
            if case .message(let info) = event.body { return info.id } else { return nil }
        }
        #expect(messages == [0x1D00, 0x1D01, 0x1D02])
        var statistics = TraceStatistics()
        events.forEach { statistics.record($0) }
        #expect(statistics.retransmissions == 2)
        // Across the sequence-number wrap: 254, 255, 0, then 255 again.
        let wrapped = try Self.dataPacket(sequence: 254, first) + Self.dataPacket(sequence: 255, second)
            + Self.dataPacket(sequence: 0, third) + Self.dataPacket(sequence: 255, second)
        let flags = try decodeTrace(wrapped, options: .init(format: .raw)).events.compactMap { event -> Bool? in
            if case .link(let info) = event.body { return info.retransmission } else { return nil }
        }
        #expect(flags == [false, false, false, true])
    }

    /// Double quotes in decoded text (a song title, the token a bad hex line
    /// quotes back) come out escaped: every JSON line parses and holds the
    /// text as it was.
    @Test func doubleQuotesAreEscapedInJSON() throws {
        let title = #"Song "Live" at the \ Hall"#
        let update = ControlMessage(id: 0x5001, parameters: [try .group(0, [.string(1, title)])])
        let (events, _) = try decodeTrace(try Self.dataPacket(sequence: 1, update), options: .init(format: .raw))
        let line = try #require(jsonLines(events).first { $0.contains("\"kind\":\"message\"") })
        let object = try parseJSON(line)
        let params = try #require(object["params"] as? [[String: Any]])
        let media = try #require(params.first { $0["id"] as? Int == 0 }?["params"] as? [[String: Any]])
        #expect(media.first { $0["id"] as? Int == 1 }?["value"] as? String == title)
        #expect(line.contains(#"Song \"Live\" at the \\ Hall"#))

        let (bad, _) = try decodeTrace(Array("zz\n".utf8), options: .init(format: .hex))
        let skipped = try parseJSON(try #require(jsonLines(bad).first))
        #expect(skipped["reason"] as? String == "invalid_hex")
        #expect(skipped["detail"] as? String == #"line 1: "zz" is not hex"#)
    }
}
