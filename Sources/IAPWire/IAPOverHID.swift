/// iAP over USB HID, as a real iPhone carries it in its configuration 2
/// ("iPod USB Interface"): every report is
/// `[report id][link control byte][iAP bytes][zero padding]`, output reports
/// (host to device) go by SET_REPORT on endpoint 0, input reports (device to
/// host) on the interrupt endpoint. The link control byte groups the reports
/// of one packet: 0x00 a whole packet, 0x02 the first of several, 0x03 a
/// middle one, 0x01 the last (bit 0: continues a packet, bit 1: more follow).
///
/// Facts and their sources: shared USB-HID-FACTS.md §1-2 (oandrew/ipod-gadget,
/// oandrew/ipod, ADIT's head-unit stack, wiomoc/iap2, catplay, ExOS).

/// The reports a HID interface's report descriptor declares that can carry
/// iAP: report ids and their sizes, by direction, read from the descriptor
/// (never assumed: a real iPhone declares 21 reports in 208 bytes, ipod-gadget
/// 9 in 96).
public struct IAPHIDReports: Hashable, Sendable {
    public struct Report: Hashable, Sendable, CustomStringConvertible {
        public var id: UInt8
        /// Bytes after the report id: the link control byte, iAP bytes and padding.
        public var count: Int

        public init(id: UInt8, count: Int) {
            self.id = id
            self.count = count
        }

        public var description: String { "0x\(id < 0x10 ? "0" : "")\(String(id, radix: 16, uppercase: true))(\(count))" }
    }

    /// Device to host (interrupt IN), smallest first.
    public let input: [Report]
    /// Host to device (SET_REPORT), smallest first.
    public let output: [Report]

    /// Descriptors longer than this are refused before they are read: real
    /// ones are 96 and 208 bytes, and the HID class's wDescriptorLength is a u16.
    public static let maximumDescriptorLength = 4096
    /// The largest report accepted, id included: a SET_REPORT's wLength is
    /// a u16; a real iPhone's largest is 768 bytes.
    public static let maximumReportLength = 0xFFFF

    public init(input: [Report], output: [Report]) throws(WireError) {
        for report in input + output {
            guard report.id != 0 else { throw WireError(.badValue, "report id 0 is reserved: iAP over HID needs report ids") }
            guard report.count >= 2, report.count < Self.maximumReportLength else {
                throw WireError(.badLength, "report \(report) cannot carry iAP: its size must be 2 to \(Self.maximumReportLength - 1) bytes")
            }
        }
        guard !input.isEmpty else { throw WireError(.badValue, "no input report can carry iAP (device to host)") }
        guard !output.isEmpty else { throw WireError(.badValue, "no output report can carry iAP (host to device)") }
        self.input = input.sorted { ($0.count, $0.id) < ($1.count, $1.id) }
        self.output = output.sorted { ($0.count, $0.id) < ($1.count, $1.id) }
    }

    /// Reads the input and output reports a report descriptor declares.
    ///
    /// Global items (Report Size, Report Count, Report ID, Push, Pop) are
    /// followed; each Input and Output main item adds Report Size × Report
    /// Count bits to its report. Feature reports are ignored. Reports of
    /// fewer than two bytes (no room after the link control byte) are left
    /// out; a descriptor without report ids, with a report that is not whole
    /// bytes or of an absurd size, or with no usable report in either
    /// direction is refused with an error that says which.
    public init(descriptor: [UInt8]) throws(WireError) {
        guard !descriptor.isEmpty else { throw WireError(.badLength, "the report descriptor is empty") }
        guard descriptor.count <= Self.maximumDescriptorLength else {
            throw WireError(.tooLarge, "the report descriptor is \(descriptor.count) bytes, over \(Self.maximumDescriptorLength)")
        }
        struct Globals {
            var reportSize = 0
            var reportCount = 0
            var reportID: UInt8 = 0
        }
        var globals = Globals()
        var stack: [Globals] = []
        // Bits per report id, and the ids in the order they were first declared.
        var inputBits: [UInt8: Int] = [:], outputBits: [UInt8: Int] = [:]
        var inputOrder: [UInt8] = [], outputOrder: [UInt8] = []
        var index = 0
        while index < descriptor.count {
            let prefix = descriptor[index]
            if prefix == 0xFE {  // long item: FE, size, tag, data (none is defined; skipped)
                guard index + 2 < descriptor.count else {
                    throw WireError(.truncated, "long item at offset \(index) has no size and tag")
                }
                index += 3 + Int(descriptor[index + 1])
                continue
            }
            let size = [0, 1, 2, 4][Int(prefix & 0x03)]
            guard index + 1 + size <= descriptor.count else {
                throw WireError(.truncated, "item 0x\(String(prefix, radix: 16)) at offset \(index) needs \(size) data bytes, \(descriptor.count - index - 1) remain")
            }
            var value = 0
            for k in 0..<size { value |= Int(descriptor[index + 1 + k]) << (8 * k) }  // little-endian, unsigned
            switch prefix & 0xFC {
            case 0x74: globals.reportSize = value
            case 0x94: globals.reportCount = value
            case 0x84:
                guard value > 0, value <= 0xFF else {
                    throw WireError(.badValue, "Report ID \(value) at offset \(index): ids are 1 to 255")
                }
                globals.reportID = UInt8(value)
            case 0xA4:
                guard stack.count < 16 else { throw WireError(.nestingTooDeep, "more than 16 Push items at offset \(index)") }
                stack.append(globals)
            case 0xB4:
                guard let saved = stack.popLast() else { throw WireError(.badValue, "Pop without Push at offset \(index)") }
                globals = saved
            case 0x80, 0x90:
                let isInput = prefix & 0xFC == 0x80
                guard globals.reportID != 0 else {
                    throw WireError(.badValue, "\(isInput ? "an input" : "an output") report is declared without a Report ID: iAP over HID needs report ids")
                }
                // Both factors are at most 2^32-1 (four data bytes); the product is checked before it is added.
                let (bits, overflow) = globals.reportSize.multipliedReportingOverflow(by: globals.reportCount)
                let id = globals.reportID
                let total = (isInput ? inputBits[id] : outputBits[id]) ?? 0
                guard !overflow, bits <= Self.maximumReportLength * 8, total + bits <= Self.maximumReportLength * 8 else {
                    throw WireError(.tooLarge, "report 0x\(String(id, radix: 16)) is declared larger than \(Self.maximumReportLength) bytes")
                }
                if isInput {
                    if inputBits[id] == nil { inputOrder.append(id) }
                    inputBits[id] = total + bits
                } else {
                    if outputBits[id] == nil { outputOrder.append(id) }
                    outputBits[id] = total + bits
                }
            default: break  // collections, usages, logical ranges and the rest do not change a report's size
            }
            index += 1 + size
        }
        func reports(_ order: [UInt8], _ bits: [UInt8: Int], _ direction: String) throws(WireError) -> [Report] {
            var reports: [Report] = []
            for id in order {
                let count = bits[id] ?? 0
                guard count % 8 == 0 else {
                    throw WireError(.badLength, "\(direction) report 0x\(String(id, radix: 16)) is \(count) bits, not whole bytes")
                }
                if count / 8 >= 2 { reports.append(Report(id: id, count: count / 8)) }
            }
            return reports
        }
        try self.init(input: try reports(inputOrder, inputBits, "input"), output: try reports(outputOrder, outputBits, "output"))
    }

    /// The report with this id, either direction.
    public func report(id: UInt8) -> Report? {
        input.first { $0.id == id } ?? output.first { $0.id == id }
    }
}

/// Cuts the packets one end writes into HID reports.
///
/// Report ids are chosen as the sources do (ADIT, a recorded Mitsubishi head
/// unit, ExOS, catplay): a packet that fits one report goes in the smallest
/// that fits; a longer one fills the largest report until what is left fits,
/// and the last piece takes the smallest that fits. Every report is padded
/// with zeros to its declared size.
///
/// iAP1 frames travel in HID without their `FF` sync byte (`55 len …`), as
/// every recorded head unit and iPod sends them; the iAP2 detect
/// (`FF 55 02 00 EE 10`) and iAP2 link packets (`FF 5A …`) keep theirs.
public struct IAPHIDReportWriter: Sendable {
    /// How many bytes a SET_REPORT carries. The sources disagree
    /// (USB-HID-FACTS.md §2e); receivers here accept every form.
    public enum LengthForm: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
        /// The report id and the report's declared count: count + 1 bytes,
        /// the HID specification's form. A real Pioneer AVH-4200NEX, a
        /// Mitsubishi head unit and wiomoc (through hidraw) send this.
        case full
        /// The declared count with the report id counted inside it, so the
        /// last padding byte is left off: ADIT's head-unit stack and the car
        /// of ipod-gadget issue 4.
        case countIncludingID = "count"

        public var description: String { rawValue }
    }

    public let reports: [IAPHIDReports.Report]
    public let form: LengthForm

    /// `reports`: the direction this end writes (output reports on the host,
    /// input reports on the device; input reports always take `.full`).
    public init(reports: [IAPHIDReports.Report], form: LengthForm = .full) {
        self.reports = reports.sorted { ($0.count, $0.id) < ($1.count, $1.id) }
        self.form = form
    }

    /// iAP bytes a report carries after its id and link control byte.
    public func capacity(of report: IAPHIDReports.Report) -> Int {
        form == .full ? report.count - 1 : report.count - 2
    }

    /// The bytes of every transfer that carries `packet`, in order.
    public func transfers(carrying packet: [UInt8]) -> [[UInt8]] {
        let bytes = Self.hidForm(of: packet)
        guard !bytes.isEmpty, let largest = reports.last else { return [] }
        var transfers: [[UInt8]] = []
        var start = bytes.startIndex
        while start < bytes.endIndex {
            let remaining = bytes.endIndex - start
            let report = reports.first { capacity(of: $0) >= remaining } ?? largest
            let end = start + min(remaining, capacity(of: report))
            let first = start == bytes.startIndex, last = end == bytes.endIndex
            let control: UInt8 = first ? (last ? 0x00 : 0x02) : (last ? 0x01 : 0x03)
            var transfer = [report.id, control]
            transfer.reserveCapacity(2 + capacity(of: report))
            transfer.append(contentsOf: bytes[start..<end])
            transfer.append(contentsOf: repeatElement(0, count: 2 + capacity(of: report) - transfer.count))
            transfers.append(transfer)
            start = end
        }
        return transfers
    }

    /// The bytes as they travel in HID: an iAP1 frame loses its sync byte.
    static func hidForm(of packet: [UInt8]) -> ArraySlice<UInt8> {
        if packet.count > 2, packet[0] == 0xFF, packet[1] == 0x55, packet != DetectSequence.bytes {
            return packet[1...]
        }
        return packet[...]
    }
}

/// Reassembles the packets carried in HID reports and trims their padding.
///
/// Reports are checked against the sizes the descriptor declared when they
/// are known: an unknown id, a report longer than declared, a continuation
/// without a first report or a link control byte outside 0x00-0x03 is
/// rejected and counted, never a crash or unbounded growth; a report
/// shorter than declared is taken (senders that leave padding off exist).
public struct IAPHIDReassembler: Sendable {
    public enum Output: Hashable, Sendable {
        /// A complete packet's bytes (one or more frames, possibly padded).
        case complete([UInt8])
        /// Waiting for more reports.
        case pending
        /// The report could not be used; the reason says why.
        case rejected(reason: String, bytes: Int)
    }

    public let maximumLength: Int
    /// The declared report sizes by id, when known.
    private let declared: [UInt8: Int]?
    /// Bytes of partial packets dropped because a new packet began first.
    public private(set) var abandonedBytes = 0
    /// Reports rejected so far.
    public private(set) var rejectedReports = 0
    private var buffer: [UInt8] = []
    private var assembling = false

    /// `reports`: the reports the sender may use (input reports on the host,
    /// output reports on the device); nil accepts any id and size.
    public init(reports: [IAPHIDReports.Report]? = nil, maximumLength: Int = 0xFFFF + 8) {
        self.maximumLength = maximumLength
        declared = reports.map { Dictionary($0.map { ($0.id, $0.count) }, uniquingKeysWith: max) }
    }

    public mutating func append(report: some Collection<UInt8>) -> Output {
        let report = Array(report)
        guard report.count >= 2 else { return reject("report shorter than report id and link control", report.count) }
        if let declared {
            guard let count = declared[report[0]] else {
                return reject("report id 0x\(String(report[0], radix: 16)) is not one the descriptor declares", report.count)
            }
            guard report.count <= count + 1 else {
                return reject("report 0x\(String(report[0], radix: 16)) is \(report.count) bytes, longer than the \(count + 1) declared", report.count)
            }
        }
        let control = report[1]
        let data = report[2...]
        switch control {
        case 0x00:
            // A whole packet while another was being assembled: that one was
            // abandoned by the sender.
            abandonedBytes += assembling ? buffer.count : 0
            buffer.removeAll(keepingCapacity: true)
            assembling = false
            return .complete(Array(data))
        case 0x02:
            abandonedBytes += assembling ? buffer.count : 0
            buffer.removeAll(keepingCapacity: true)
            guard data.count <= maximumLength else { return reject("report exceeds \(maximumLength) bytes", report.count) }
            buffer.append(contentsOf: data)
            assembling = true
            return .pending
        case 0x03, 0x01:
            guard assembling else { return reject("continuation report without a first report", report.count) }
            guard buffer.count + data.count <= maximumLength else {
                buffer.removeAll(keepingCapacity: true)
                assembling = false
                return reject("reassembled packet exceeds \(maximumLength) bytes", report.count)
            }
            buffer.append(contentsOf: data)
            if control == 0x03 { return .pending }
            assembling = false
            defer { buffer.removeAll(keepingCapacity: true) }
            return .complete(buffer)
        default:
            return reject("unknown link control byte 0x\(String(control, radix: 16))", report.count)
        }
    }

    private mutating func reject(_ reason: String, _ bytes: Int) -> Output {
        rejectedReports += 1
        return .rejected(reason: reason, bytes: bytes)
    }

    /// A reassembled packet as the link layer reads a byte stream: the
    /// frames it starts with (iAP2 link packets, the detect, iAP1 frames
    /// with or without their sync byte), each complete and declaring its
    /// own length, without the padding of the last report; iAP1 frames get
    /// back the `FF` that HID leaves off, since a stream decoder trusts an
    /// iAP1 frame's start only with it (HID's reports say where a packet
    /// starts, so nothing is guessed). Bytes that start no frame, or
    /// anything but zeros after the frames, leave the packet as it came,
    /// for the stream decoder to report.
    public static func linkBytes(_ packet: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(packet.count + 1)
        var end = 0
        while end < packet.count {
            if packet.count - end >= LinkPacket.headerLength, packet[end] == 0xFF, packet[end + 1] == 0x5A {
                let length = Int(packet[end + 2]) << 8 | Int(packet[end + 3])
                guard length >= LinkPacket.headerLength, end + length <= packet.count else { return packet }
                output += packet[end..<end + length]
                end += length
            } else if let frame = IAP1Frame.parse(packet, at: end) {
                if packet[end] != 0xFF { output.append(0xFF) }
                output += packet[end..<end + frame.encodedLength]
                end += frame.encodedLength
            } else {
                break
            }
        }
        // Only zeros may follow the last frame for them to be padding.
        guard end > 0, packet[end...].allSatisfy({ $0 == 0 }) else { return packet }
        return output
    }
}
