/// One Linux usbmon event as captured by libpcap (link types 189 and 220).
///
/// Header (48 bytes; link type 220 adds 16 more): id u64, event type
/// ('S' submit, 'C' complete, 'E' error), transfer type (0 iso, 1 interrupt,
/// 2 control, 3 bulk), endpoint (bit 7 set for IN), device, bus u16,
/// flag_setup, flag_data (0 when data follows), seconds s64, microseconds
/// s32, status s32, URB length u32, captured data length u32, setup[8].
/// Multi-byte fields are in the capturing host's byte order, which the file
/// records (`CaptureRecord.bigEndian`).
public struct UsbmonEvent: Hashable, Sendable {
    public enum EventType: UInt8, Sendable { case submit = 0x53, complete = 0x43, error = 0x45 }
    public enum TransferType: UInt8, Sendable { case isochronous = 0, interrupt = 1, control = 2, bulk = 3 }

    public var id: UInt64
    public var eventType: EventType
    public var transferType: TransferType
    /// Endpoint address including the direction bit (0x81 is IN endpoint 1).
    public var endpoint: UInt8
    public var device: UInt8
    public var bus: UInt16
    public var setup: [UInt8]?
    public var status: Int32
    public var urbLength: Int
    /// Data length the URB carried at this event (before snaplen truncation).
    public var dataLength: Int
    /// Bytes present in the capture.
    public var data: ArraySlice<UInt8>

    public var isIn: Bool { endpoint & 0x80 != 0 }

    /// The bytes that moved on the wire in this event, if any: OUT data is
    /// seen at submission, IN data at completion.
    public var transferredData: ArraySlice<UInt8>? {
        switch (isIn, eventType) {
        case (false, .submit), (true, .complete): return data.isEmpty ? nil : data
        default: return nil
        }
    }

    public static func headerLength(linkType: UInt32) -> Int? {
        switch linkType {
        case CaptureReader.linkTypeUSBLinux: 48
        case CaptureReader.linkTypeUSBLinuxMmapped: 64
        default: nil
        }
    }

    /// Parses a record of link type 189 or 220; nil for records that are too
    /// short or carry an unknown event or transfer type.
    public init?(record: CaptureRecord) {
        guard let headerLength = Self.headerLength(linkType: record.linkType) else { return nil }
        let bytes = record.data
        guard bytes.count >= headerLength else { return nil }
        let base = bytes.startIndex
        func u16(_ at: Int) -> UInt16 {
            let a = UInt16(bytes[base + at]), b = UInt16(bytes[base + at + 1])
            return record.bigEndian ? a << 8 | b : b << 8 | a
        }
        func u32(_ at: Int) -> UInt32 {
            record.bigEndian ? UInt32(u16(at)) << 16 | UInt32(u16(at + 2)) : UInt32(u16(at + 2)) << 16 | UInt32(u16(at))
        }
        func u64(_ at: Int) -> UInt64 {
            record.bigEndian ? UInt64(u32(at)) << 32 | UInt64(u32(at + 4)) : UInt64(u32(at + 4)) << 32 | UInt64(u32(at))
        }
        guard let eventType = EventType(rawValue: bytes[base + 8]),
              let transferType = TransferType(rawValue: bytes[base + 9]) else { return nil }
        id = u64(0)
        self.eventType = eventType
        self.transferType = transferType
        endpoint = bytes[base + 10]
        device = bytes[base + 11]
        bus = u16(12)
        setup = bytes[base + 14] == 0 ? Array(bytes[base + 40..<base + 48]) : nil
        status = Int32(bitPattern: u32(28))
        urbLength = Int(u32(32))
        dataLength = Int(u32(36))
        var dataStart = base + headerLength
        if record.linkType == CaptureReader.linkTypeUSBLinuxMmapped, transferType == .isochronous {
            dataStart += 16 * Int(min(u32(60), 1024))
        }
        let hasData = bytes[base + 15] == 0
        let end = min(bytes.endIndex, dataStart + dataLength)
        data = hasData && dataStart < end ? bytes[dataStart..<end] : bytes[bytes.endIndex..<bytes.endIndex]
    }
}

/// Writes usbmon events as a pcapng file (link type 220, little-endian), the
/// form `tcpdump -i usbmonN` and Wireshark write: used for demo traces and
/// for test and benchmark captures.
public struct UsbmonPcapngWriter: Sendable {
    public private(set) var bytes: [UInt8] = []
    private var nextID: UInt64 = 1

    public init(snapLength: UInt32 = 262_144) {
        // Section header block.
        appendBlock(type: 0x0A0D_0D0A, body: [0x4D, 0x3C, 0x2B, 0x1A, 1, 0, 0, 0] + Array(repeating: 0xFF, count: 8))
        // Interface description block: link type 220, microsecond timestamps.
        var idb: [UInt8] = []
        idb.appendLittleEndian(UInt16(CaptureReader.linkTypeUSBLinuxMmapped))
        idb.appendLittleEndian(UInt16(0))
        idb.appendLittleEndian(snapLength)
        appendBlock(type: 1, body: idb)
    }

    /// Takes the bytes written so far, leaving the writer ready to continue
    /// (for writing a long capture to a file in pieces).
    public mutating func drain() -> [UInt8] {
        defer { bytes.removeAll(keepingCapacity: true) }
        return bytes
    }

    /// Records one bulk transfer as a submission and a completion, the way
    /// usbmon shows it: OUT data in the submission, IN data in the completion.
    public mutating func bulkTransfer(bus: UInt16 = 1, device: UInt8, endpoint: UInt8, data: [UInt8], timestampMicroseconds: Int64) {
        let isIn = endpoint & 0x80 != 0
        let id = nextID
        nextID += 1
        event(id: id, type: .submit, transfer: .bulk, bus: bus, device: device, endpoint: endpoint,
              urbLength: data.count, data: isIn ? [] : data, status: -115, time: timestampMicroseconds)
        event(id: id, type: .complete, transfer: .bulk, bus: bus, device: device, endpoint: endpoint,
              urbLength: data.count, data: isIn ? data : [], status: 0, time: timestampMicroseconds)
    }

    /// Records one interrupt transfer (a HID report).
    public mutating func interruptTransfer(bus: UInt16 = 1, device: UInt8, endpoint: UInt8, data: [UInt8], timestampMicroseconds: Int64) {
        let isIn = endpoint & 0x80 != 0
        let id = nextID
        nextID += 1
        event(id: id, type: .submit, transfer: .interrupt, bus: bus, device: device, endpoint: endpoint,
              urbLength: data.count, data: isIn ? [] : data, status: -115, time: timestampMicroseconds)
        event(id: id, type: .complete, transfer: .interrupt, bus: bus, device: device, endpoint: endpoint,
              urbLength: data.count, data: isIn ? data : [], status: 0, time: timestampMicroseconds)
    }

    public mutating func event(id: UInt64, type: UsbmonEvent.EventType, transfer: UsbmonEvent.TransferType, bus: UInt16,
                               device: UInt8, endpoint: UInt8, urbLength: Int, data: [UInt8], status: Int32, time: Int64) {
        var header: [UInt8] = []
        header.reserveCapacity(64 + data.count)
        header.appendLittleEndian(id)
        header.append(type.rawValue)
        header.append(transfer.rawValue)
        header.append(endpoint)
        header.append(device)
        header.appendLittleEndian(bus)
        header.append(0x2D)                      // flag_setup: '-' (no setup packet)
        header.append(data.isEmpty ? 0x3C : 0)   // flag_data: '<' (none) or 0 (present)
        header.appendLittleEndian(UInt64(bitPattern: time / 1_000_000))
        header.appendLittleEndian(UInt32(truncatingIfNeeded: time % 1_000_000))
        header.appendLittleEndian(UInt32(bitPattern: status))
        header.appendLittleEndian(UInt32(urbLength))
        header.appendLittleEndian(UInt32(data.count))
        header.append(contentsOf: [UInt8](repeating: 0, count: 8 + 16))
        header.append(contentsOf: data)

        var epb: [UInt8] = []
        epb.reserveCapacity(20 + header.count + 3)
        epb.appendLittleEndian(UInt32(0))
        epb.appendLittleEndian(UInt32(truncatingIfNeeded: UInt64(bitPattern: time) >> 32))
        epb.appendLittleEndian(UInt32(truncatingIfNeeded: UInt64(bitPattern: time)))
        epb.appendLittleEndian(UInt32(header.count))
        epb.appendLittleEndian(UInt32(header.count))
        epb.append(contentsOf: header)
        appendBlock(type: 6, body: epb)
    }

    private mutating func appendBlock(type: UInt32, body: [UInt8]) {
        let padded = (body.count + 3) / 4 * 4
        let total = UInt32(12 + padded)
        bytes.appendLittleEndian(type)
        bytes.appendLittleEndian(total)
        bytes.append(contentsOf: body)
        bytes.append(contentsOf: [UInt8](repeating: 0, count: padded - body.count))
        bytes.appendLittleEndian(total)
    }
}

extension Array where Element == UInt8 {
    mutating func appendLittleEndian<T: FixedWidthInteger>(_ value: T) {
        var shift = 0
        while shift < T.bitWidth {
            append(UInt8(truncatingIfNeeded: value >> shift))
            shift += 8
        }
    }
}
