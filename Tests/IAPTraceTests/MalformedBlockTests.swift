import Testing
import IAPTrace
import IAPWire

/// pcapng blocks whose length fields agree (so the next block can be found)
/// but whose contents cannot be right: each is reported as a skipped
/// `malformed_block` and the rest of the capture is still decoded. Before
/// the fix a simple packet block of 12 bytes trapped (a negative range) and
/// the others ended decoding with an error.
@Suite struct MalformedBlockTests {
    /// A little-endian pcapng block of `type` with `body`, lengths written as given.
    static func block(type: UInt32, body: [UInt8], length: UInt32? = nil) -> [UInt8] {
        let total = length ?? UInt32(12 + body.count)
        return le32(type) + le32(total) + body + le32(total)
    }

    static func le32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }

    /// Splits a little-endian pcapng file into its blocks.
    static func blocks(_ file: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var index = 0
        while index + 8 <= file.count {
            let length = Int(file[index + 4]) | Int(file[index + 5]) << 8 | Int(file[index + 6]) << 16 | Int(file[index + 7]) << 24
            result.append(Array(file[index..<index + length]))
            index += length
        }
        return result
    }

    static let malformed: [(name: String, block: [UInt8])] = [
        // The crash: type 3, total length 12 (no room for the original-length field).
        ("simple packet block of 12 bytes", block(type: 3, body: [])),
        // Enhanced packet block under its 32-byte minimum.
        ("enhanced packet block of 16 bytes", block(type: 6, body: [0, 0, 0, 0])),
        // Enhanced packet block claiming more captured bytes than it holds.
        ("enhanced packet block overclaiming", block(type: 6, body: [0, 0, 0, 0] + [UInt8](repeating: 0, count: 8) + le32(500) + le32(500) + [1, 2, 3, 4])),
        // Enhanced packet block on an interface never described.
        ("enhanced packet block on interface 7", block(type: 6, body: le32(7) + [UInt8](repeating: 0, count: 8) + le32(0) + le32(0))),
    ]

    @Test(arguments: 0..<malformed.count)
    func malformedBlockIsSkippedAndDecodingContinues(_ index: Int) throws {
        let (name, bad) = Self.malformed[index]
        let (capture, _, _) = try CaptureTests.session()
        let reference = try decodeTrace(capture).events.filter { $0.kind == "message" }.count
        #expect(reference == 3)
        // Section header and interface description first, then the bad block, then the packets.
        var parts = Self.blocks(capture)
        try #require(parts.count > 3)
        parts.insert(bad, at: 2)
        let file = parts.flatMap { $0 }
        for chunk in [1, 5, 1 << 20] {
            let (events, input) = try decodeTrace(file, chunk: chunk)
            let skipped = events.compactMap { event -> (SkippedInfo, Int)? in
                if case .skipped(let info) = event.body, info.reason == "malformed_block" { return (info, event.offset) } else { return nil }
            }
            #expect(skipped.count == 1, "\(name), chunk \(chunk)")
            #expect(skipped.first?.0.count == bad.count, "\(name)")
            #expect(skipped.first?.1 == parts[0].count + parts[1].count, "\(name): offset")
            #expect(events.filter { $0.kind == "message" }.count == reference, "\(name): decoding stopped at the bad block")
            #expect(input.usbmonRecords > 0)
        }
        var reader = CaptureReader()
        file.withUnsafeBytes { reader.append($0) }
        var records = 0
        while try reader.next() != nil { records += 1 }
        #expect(reader.malformedBlocks == 1, "\(name)")
        #expect(records == parts.count - 3, "\(name)")
    }

    /// A simple packet block before any interface description, and an
    /// interface description under its minimum (whose interface number is
    /// kept, so a later packet on it is a foreign record, not a misattributed one).
    @Test func blocksOutOfPlaceAreSkipped() throws {
        let header = Self.block(type: 0x0A0D_0D0A, body: [0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8))
        let early = Self.block(type: 3, body: Self.le32(4) + [1, 2, 3, 4])
        let shortInterface = Self.block(type: 1, body: [])
        let packet = Self.block(type: 6, body: Self.le32(0) + [UInt8](repeating: 0, count: 8) + Self.le32(4) + Self.le32(4) + [1, 2, 3, 4])
        var reader = CaptureReader()
        (header + early + shortInterface + packet).withUnsafeBytes { reader.append($0) }
        var items: [CaptureReader.Item] = []
        while let item = try reader.nextItem() { items.append(item) }
        #expect(items.count == 3)
        guard items.count == 3 else { Issue.record("expected three items, got \(items.count)"); return }
        guard case .malformed(let first) = items[0], case .malformed(let second) = items[1], case .record(let record) = items[2] else {
            Issue.record("unexpected items \(items)")
            return
        }
        #expect(first.offset == header.count)
        #expect(first.detail.contains("before any interface"))
        #expect(second.detail.contains("interface description"))
        #expect(record.linkType == CaptureReader.unknownLinkType)
        #expect(Array(record.data) == [1, 2, 3, 4])
    }
}
