import Testing
@testable import IAPTrace
import IAPWire

/// The fields of capture files read to the letter: timestamp units of
/// classic pcap and of pcapng interfaces, and the lengths that say where a
/// block's data ends.
@Suite struct CaptureFieldTests {
    static func le32(_ value: UInt32) -> [UInt8] { MalformedBlockTests.le32(value) }
    static func le16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
    static func be32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }
    static func be16(_ value: UInt16) -> [UInt8] { withUnsafeBytes(of: value.bigEndian, Array.init) }

    /// A little-endian pcapng section header.
    static let sectionHeader = MalformedBlockTests.block(type: 0x0A0D_0D0A, body: [0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0] + [UInt8](repeating: 0xFF, count: 8))

    /// A usbmon (220) interface description, with an `if_tsresol` option when given.
    static func interface(tsresol: UInt8?) -> [UInt8] {
        var body = le16(220) + le16(0) + le32(65535)
        if let tsresol { body += le16(9) + le16(1) + [tsresol, 0, 0, 0] + le16(0) + le16(0) }
        return MalformedBlockTests.block(type: 1, body: body)
    }

    /// An enhanced packet block on interface 0; `captured` defaults to the data's length.
    static func packet(timestamp: UInt64, data: [UInt8], captured: Int? = nil) -> [UInt8] {
        var body = le32(0) + le32(UInt32(timestamp >> 32)) + le32(UInt32(timestamp & 0xFFFF_FFFF))
        body += le32(UInt32(captured ?? data.count)) + le32(UInt32(data.count)) + data
        body += [UInt8](repeating: 0, count: (4 - data.count % 4) % 4)
        return MalformedBlockTests.block(type: 6, body: body)
    }

    static func items(_ file: [UInt8]) throws -> [CaptureReader.Item] {
        var reader = CaptureReader()
        file.withUnsafeBytes { reader.append($0) }
        var items: [CaptureReader.Item] = []
        while let item = try reader.nextItem() { items.append(item) }
        return items
    }

    static func timestamps(_ file: [UInt8]) throws -> [Int64] {
        try items(file).compactMap { item in
            if case .record(let record) = item { record.timestampNanoseconds } else { nil }
        }
    }

    /// Classic pcap: the magic says microseconds (A1B2C3D4) or nanoseconds
    /// (A1B23C4D); either way, and in either byte order, 2.25 s is 2.25 s.
    @Test(arguments: [false, true])
    func classicPcapTimestampsInBothResolutions(bigEndian: Bool) throws {
        let u32 = bigEndian ? Self.be32 : Self.le32
        let u16 = bigEndian ? Self.be16 : Self.le16
        for (magic, fraction) in [(UInt32(0xA1B2_C3D4), UInt32(250_000)), (0xA1B2_3C4D, 250_000_000)] {
            var file = u32(magic) + u16(2) + u16(4) + u32(0) + u32(0) + u32(65535) + u32(220)
            file += u32(2) + u32(fraction) + u32(4) + u32(4) + [1, 2, 3, 4]
            file += u32(3) + u32(0) + u32(0) + u32(0)
            #expect(try Self.timestamps(file) == [2_250_000_000, 3_000_000_000],
                    "magic \(String(magic, radix: 16)), big endian \(bigEndian)")
        }
    }

    /// pcapng `if_tsresol`: a decimal exponent (6: microseconds, 9:
    /// nanoseconds), a binary one (0x8A: 2^-10 s), or none (microseconds).
    @Test func pcapngTimestampResolutions() throws {
        let cases: [(tsresol: UInt8?, ticks: UInt64)] = [
            (nil, 1_500_000), (6, 1_500_000), (9, 1_500_000_000), (3, 1_500), (0x8A, 1_536), (0x81, 3),
        ]
        for (tsresol, ticks) in cases {
            let file = Self.sectionHeader + Self.interface(tsresol: tsresol) + Self.packet(timestamp: ticks, data: [1, 2, 3, 4])
            #expect(try Self.timestamps(file) == [1_500_000_000], "if_tsresol \(tsresol.map { String($0, radix: 16) } ?? "absent")")
        }
        // An absolute time in 2^-10 s units keeps its seconds: 1 700 000 000.5 s
        // (rounding each unit to 976 562 ns would lose 14 minutes here).
        let epoch = Self.sectionHeader + Self.interface(tsresol: 0x8A) + Self.packet(timestamp: 1_700_000_000 * 1024 + 512, data: [])
        #expect(try Self.timestamps(epoch) == [1_700_000_000_500_000_000])
        // 2^-10 s is 976 562.5 ns: a single unit comes out truncated, not rounded per unit times many.
        let one = Self.sectionHeader + Self.interface(tsresol: 0x8A) + Self.packet(timestamp: 1, data: [])
        #expect(try Self.timestamps(one) == [976_562])
    }

    /// An enhanced packet block's captured length must fit in its data area
    /// (the block less its 28 header and 4 trailer bytes): one that reaches
    /// into the trailing length field is malformed, not a record holding that
    /// field as data. The next block is still read.
    @Test func enhancedPacketBlockCapturedLengthStaysInsideItsData() throws {
        let exact = Self.packet(timestamp: 1, data: [1, 2, 3, 4])
        let overclaiming = Self.packet(timestamp: 2, data: [1, 2, 3, 4], captured: 8)
        #expect(overclaiming.count == 36)
        let after = Self.packet(timestamp: 3, data: [9])
        let items = try Self.items(Self.sectionHeader + Self.interface(tsresol: nil) + exact + overclaiming + after)
        guard items.count == 3, case .record(let first) = items[0], case .malformed(let bad) = items[1], case .record(let last) = items[2] else {
            Issue.record("expected a record, a malformed block and a record, got \(items)")
            return
        }
        #expect(Array(first.data) == [1, 2, 3, 4])
        #expect(bad.length == 36 && bad.blockType == 6)
        #expect(bad.detail.contains("8 captured bytes"), "\(bad.detail)")
        #expect(Array(last.data) == [9])
    }

    /// pcapng block lengths are multiples of 4. One that is not (here an
    /// enhanced packet block of 34 bytes whose trailing length agrees) says
    /// that the file is not pcapng as written: reading stops with an error
    /// instead of returning a record from it.
    @Test func pcapngBlockLengthNotAMultipleOfFourIsAnError() throws {
        let body = Self.le32(0) + Self.le32(0) + Self.le32(1) + Self.le32(2) + Self.le32(2) + [0xAB, 0xCD]
        let unaligned = MalformedBlockTests.block(type: 6, body: body)
        #expect(unaligned.count == 34)
        var reader = CaptureReader()
        (Self.sectionHeader + Self.interface(tsresol: nil) + unaligned).withUnsafeBytes { reader.append($0) }
        do {
            let item = try reader.nextItem()
            Issue.record("a 34-byte block was read as \(String(describing: item))")
        } catch {
            #expect(error.offset == Self.sectionHeader.count + Self.interface(tsresol: nil).count)
            #expect(error.detail.contains("impossible length 34"), "\(error)")
        }
    }
}
