import IAPWire

/// An error that makes a capture file unreadable from the point where it
/// occurs (bad magic, a block length that cannot be right).
public struct CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    public let offset: Int
    public let detail: String
    public init(offset: Int, _ detail: String) {
        self.offset = offset
        self.detail = detail
    }
    public var description: String { "at byte \(offset): \(detail)" }
}

/// One packet record of a pcap or pcapng file.
public struct CaptureRecord: Sendable {
    /// 1-based record number, as Wireshark numbers frames.
    public var frame: Int
    public var linkType: UInt32
    /// Multi-byte fields of link-layer headers follow this order (the byte
    /// order of the capturing host, as recorded by the file).
    public var bigEndian: Bool
    public var timestampNanoseconds: Int64
    /// Bytes captured (may be fewer than `originalLength`).
    public var data: ArraySlice<UInt8>
    public var originalLength: Int
}

/// A pcapng block whose own length checks out (so the next block can be
/// found) but whose contents cannot be right: it is skipped and reading
/// goes on after it.
public struct MalformedCaptureBlock: Hashable, Sendable, CustomStringConvertible {
    /// Offset of the block in the file.
    public let offset: Int
    /// The block's whole length, as its length fields say.
    public let length: Int
    public let blockType: UInt32
    public let detail: String
    public var description: String { "at byte \(offset): \(detail)" }
}

/// Reads pcap and pcapng files as a stream: append bytes in chunks of any
/// size and pull records; memory holds at most one record.
public struct CaptureReader: Sendable {
    public enum Format: String, Sendable { case pcap, pcapng }

    /// What `nextItem()` yields: a record, or a block skipped as malformed.
    public enum Item: Sendable {
        case record(CaptureRecord)
        case malformed(MalformedCaptureBlock)
    }

    /// Records larger than this are refused rather than buffered.
    public static let maximumRecordLength = 16 << 20

    public static let linkTypeUSBLinux: UInt32 = 189
    public static let linkTypeUSBLinuxMmapped: UInt32 = 220
    /// The link type given to an interface whose description block is malformed.
    public static let unknownLinkType: UInt32 = 0xFFFF_FFFF

    /// Recognises the first bytes of a capture file.
    public static func format(ofPrefix bytes: some Collection<UInt8>) -> Format? {
        let prefix = Array(bytes.prefix(4))
        guard prefix.count == 4 else { return nil }
        switch (prefix[0], prefix[1], prefix[2], prefix[3]) {
        case (0xA1, 0xB2, 0xC3, 0xD4), (0xD4, 0xC3, 0xB2, 0xA1), (0xA1, 0xB2, 0x3C, 0x4D), (0x4D, 0x3C, 0xB2, 0xA1): return .pcap
        case (0x0A, 0x0D, 0x0D, 0x0A): return .pcapng
        default: return nil
        }
    }

    private var buffer: [UInt8] = []
    private var start = 0
    private var consumed = 0
    private var format: Format?
    private var bigEndian = false
    private var nanosecondResolution = false
    private var pcapLinkType: UInt32 = 0
    /// pcapng interfaces of the current section: link type and timestamp units per second.
    private var interfaces: [(linkType: UInt32, unitsPerSecond: Int64)] = []
    private var frameCount = 0
    private var sawHeader = false

    public init() {}

    /// Bytes of the file read so far.
    public var offset: Int { consumed + start }
    public var recordsRead: Int { frameCount }
    /// pcapng blocks skipped as malformed so far.
    public private(set) var malformedBlocks = 0

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            consumed += start
            start = 0
        }
        buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    /// Bytes left over that did not make a whole record (after the last append).
    public var pendingByteCount: Int { buffer.count - start }

    /// The next record, nil when more bytes are needed. Malformed blocks are
    /// passed over (counted in `malformedBlocks`); `nextItem()` reports them.
    public mutating func next() throws(CaptureError) -> CaptureRecord? {
        while let item = try nextItem() {
            if case .record(let record) = item { return record }
        }
        return nil
    }

    /// The next record or malformed block, nil when more bytes are needed.
    /// Throws only when the file cannot be read on (bad magic, a block length
    /// that does not say where the next block starts).
    public mutating func nextItem() throws(CaptureError) -> Item? {
        while true {
            if format == nil {
                guard buffer.count - start >= 4 else { return nil }
                guard let detected = Self.format(ofPrefix: buffer[start..<start + 4]) else {
                    throw CaptureError(offset: offset, "not a pcap or pcapng file (first bytes \(hexBytes(buffer[start..<start + 4])))")
                }
                format = detected
            }
            switch format {
            case .pcap:
                if let record = try nextPcap() { return .record(record) }
                return nil
            case .pcapng:
                switch try nextPcapngBlock() {
                case .needMore: return nil
                case .record(let record): return .record(record)
                case .malformed(let block):
                    malformedBlocks += 1
                    return .malformed(block)
                case .other: continue
                }
            case nil:
                return nil
            }
        }
    }

    // MARK: pcap

    private mutating func nextPcap() throws(CaptureError) -> CaptureRecord? {
        if !sawHeader {
            guard buffer.count - start >= 24 else { return nil }
            let magic = (buffer[start], buffer[start + 1])
            bigEndian = magic.0 == 0xA1
            nanosecondResolution = (magic == (0xA1, 0xB2) && buffer[start + 2] == 0x3C) || (magic == (0x4D, 0x3C))
            pcapLinkType = read32(start + 20) & 0x0FFF_FFFF
            start += 24
            sawHeader = true
        }
        guard buffer.count - start >= 16 else { return nil }
        let seconds = Int64(read32(start))
        let fraction = Int64(read32(start + 4))
        let captured = Int(read32(start + 8))
        let original = Int(read32(start + 12))
        guard captured <= Self.maximumRecordLength else {
            throw CaptureError(offset: offset, "record \(frameCount + 1) claims \(captured) captured bytes, over the \(Self.maximumRecordLength)-byte limit")
        }
        guard buffer.count - start >= 16 + captured else { return nil }
        frameCount += 1
        let dataStart = start + 16
        start = dataStart + captured
        return CaptureRecord(
            frame: frameCount, linkType: pcapLinkType, bigEndian: bigEndian,
            timestampNanoseconds: seconds * 1_000_000_000 + fraction * (nanosecondResolution ? 1 : 1000),
            data: buffer[dataStart..<dataStart + captured], originalLength: original)
    }

    // MARK: pcapng

    private enum BlockResult { case needMore, record(CaptureRecord), malformed(MalformedCaptureBlock), other }

    private mutating func nextPcapngBlock() throws(CaptureError) -> BlockResult {
        guard buffer.count - start >= 12 else { return .needMore }
        var type = read32(start)
        if type == 0x0A0D_0D0A {
            // A section header sets the byte order for everything that follows.
            let magic = (buffer[start + 8], buffer[start + 9], buffer[start + 10], buffer[start + 11])
            switch magic {
            case (0x1A, 0x2B, 0x3C, 0x4D): bigEndian = true
            case (0x4D, 0x3C, 0x2B, 0x1A): bigEndian = false
            default: throw CaptureError(offset: offset, "pcapng section header has an unknown byte-order magic \(hexBytes([magic.0, magic.1, magic.2, magic.3]))")
            }
            interfaces.removeAll()
            type = 0x0A0D_0D0A
        }
        let length = Int(read32(start + 4))
        guard length >= 12, length % 4 == 0, length <= Self.maximumRecordLength + 64 else {
            throw CaptureError(offset: offset, "pcapng block of type 0x\(String(type, radix: 16)) has an impossible length \(length)")
        }
        guard buffer.count - start >= length else { return .needMore }
        let block = start
        start += length
        guard Int(read32(block + length - 4)) == length else {
            throw CaptureError(offset: consumed + block, "pcapng block of type 0x\(String(type, radix: 16)) has mismatched leading and trailing lengths")
        }
        func malformed(_ detail: String) -> BlockResult {
            .malformed(MalformedCaptureBlock(offset: consumed + block, length: length, blockType: type, detail: detail))
        }
        switch type {
        case 1: // Interface Description Block: link type, reserved, snap length
            guard length >= 20 else {
                // Keep interface numbering: packets naming this interface become foreign records.
                interfaces.append((Self.unknownLinkType, 1_000_000))
                return malformed("interface description block of \(length) bytes, under the 20-byte minimum")
            }
            let linkType = UInt32(read16(block + 8))
            interfaces.append((linkType, interfaceResolution(block: block, length: length)))
            return .other
        case 6: // Enhanced Packet Block
            guard length >= 32 else { return malformed("enhanced packet block of \(length) bytes, under the 32-byte minimum") }
            let interface = Int(read32(block + 8))
            let timestamp = Int64(read32(block + 12)) << 32 | Int64(read32(block + 16))
            let captured = Int(read32(block + 20))
            let original = Int(read32(block + 24))
            guard captured <= length - 32 else {
                return malformed("enhanced packet block claims \(captured) captured bytes in a \(length)-byte block")
            }
            guard interface < interfaces.count else {
                return malformed("packet refers to interface \(interface), but only \(interfaces.count) are described")
            }
            frameCount += 1
            return .record(CaptureRecord(
                frame: frameCount, linkType: interfaces[interface].linkType, bigEndian: bigEndian,
                timestampNanoseconds: Self.nanoseconds(timestamp, unitsPerSecond: interfaces[interface].unitsPerSecond),
                data: buffer[block + 28..<block + 28 + captured], originalLength: original))
        case 3: // Simple Packet Block: interface 0, captured length bounded by the block
            guard length >= 16 else { return malformed("simple packet block of \(length) bytes, under the 16-byte minimum") }
            guard let first = interfaces.first else {
                return malformed("simple packet block before any interface description")
            }
            let original = Int(read32(block + 8))
            let captured = min(original, length - 16)
            frameCount += 1
            return .record(CaptureRecord(
                frame: frameCount, linkType: first.linkType, bigEndian: bigEndian, timestampNanoseconds: 0,
                data: buffer[block + 12..<block + 12 + captured], originalLength: original))
        default:
            // Section headers, statistics, name resolution, custom blocks.
            return .other
        }
    }

    /// A pcapng timestamp in nanoseconds. Whole seconds and the remainder are
    /// scaled apart, so that units that do not divide a second in whole
    /// nanoseconds (binary resolutions, 2^-10 s say) are not rounded per unit.
    /// A corrupt timestamp may not fit in nanoseconds: saturate rather than trap.
    static func nanoseconds(_ timestamp: Int64, unitsPerSecond: Int64) -> Int64 {
        let units = max(unitsPerSecond, 1)
        if units >= 1_000_000_000 { return timestamp / (units / 1_000_000_000) }
        let (seconds, remainder) = timestamp.quotientAndRemainder(dividingBy: units)
        // |remainder| < units < 10^9, so this product fits.
        let fraction = remainder * 1_000_000_000 / units
        let whole = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let sum = whole.partialValue.addingReportingOverflow(fraction)
        return whole.overflow || sum.overflow ? (timestamp < 0 ? .min : .max) : sum.partialValue
    }

    /// `if_tsresol` option of an interface description (default microseconds).
    private func interfaceResolution(block: Int, length: Int) -> Int64 {
        var index = block + 16
        let end = block + length - 4
        while index + 4 <= end {
            let code = read16(index)
            let optionLength = Int(read16(index + 2))
            if code == 0 { break }
            if code == 9, optionLength >= 1, index + 4 < end {
                let value = buffer[index + 4]
                let exponent = Int64(value & 0x7F)
                guard exponent < 19 else { return 1_000_000 }
                var units: Int64 = 1
                for _ in 0..<exponent { units *= (value & 0x80) != 0 ? 2 : 10 }
                return units
            }
            index += 4 + (optionLength + 3) / 4 * 4
        }
        return 1_000_000
    }

    private func read16(_ index: Int) -> UInt16 {
        let a = UInt16(buffer[index]), b = UInt16(buffer[index + 1])
        return bigEndian ? a << 8 | b : b << 8 | a
    }

    private func read32(_ index: Int) -> UInt32 {
        let a = UInt32(buffer[index]), b = UInt32(buffer[index + 1]), c = UInt32(buffer[index + 2]), d = UInt32(buffer[index + 3])
        return bigEndian ? a << 24 | b << 16 | c << 8 | d : d << 24 | c << 16 | b << 8 | a
    }
}

func hexBytes(_ bytes: some Sequence<UInt8>, separator: String = " ") -> String {
    bytes.map(hexByte).joined(separator: separator)
}
