import IAPWire

/// The host's side of iAP over HID, without I/O: what each write becomes
/// (SET_REPORT data stages) and what each interrupt IN transfer holds
/// (reports, reassembled into packets with their padding trimmed).
/// `USBHostTransport` moves the bytes.
public struct HIDChannel: Sendable {
    public let reports: IAPHIDReports
    public let writer: IAPHIDReportWriter
    private var reassembler: IAPHIDReassembler

    /// What one interrupt IN transfer held.
    public struct Received: Hashable, Sendable {
        /// Whole packets, padding trimmed, in order.
        public var packets: [[UInt8]] = []
        /// Reports that could not be used, each in words.
        public var problems: [String] = []
    }

    public init(reports: IAPHIDReports, form: IAPHIDReportWriter.LengthForm) {
        self.reports = reports
        writer = IAPHIDReportWriter(reports: reports.output, form: form)
        reassembler = IAPHIDReassembler(reports: reports.input)
    }

    /// The size of each interrupt IN transfer: the largest input report with
    /// its id. A smaller report ends its transfer with a short packet.
    public var readSize: Int { (reports.input.map(\.count).max() ?? 0) + 1 }

    /// Reports rejected so far (unknown id, longer than declared, a
    /// continuation with no start, a link control byte out of range).
    public var rejectedReports: Int { reassembler.rejectedReports }

    /// The SET_REPORT data stages that carry one write, in order.
    public func transfers(carrying bytes: [UInt8]) -> [[UInt8]] { writer.transfers(carrying: bytes) }

    /// Reads one completed interrupt IN transfer. It normally holds one
    /// report; should a report end exactly on a packet boundary and the next
    /// follow in the same transfer, each is taken at its declared size.
    public mutating func received(transfer: [UInt8]) -> Received {
        var result = Received()
        var start = 0
        while start < transfer.count {
            let declared = reports.input.first { $0.id == transfer[start] }?.count
            // An unknown id gives no length: the rest of the transfer is that one report.
            let end = declared.map { min(transfer.count, start + $0 + 1) } ?? transfer.count
            switch reassembler.append(report: transfer[start..<end]) {
            case .complete(let packet): result.packets.append(IAPHIDReassembler.linkBytes(packet))
            case .pending: break
            case .rejected(let reason, _): result.problems.append(reason)
            }
            start = end
        }
        return result
    }
}
