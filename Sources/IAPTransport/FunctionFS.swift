#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import IAPWire
import Synchronization
import SystemPackage

/// The descriptors a Linux USB gadget writes to FunctionFS's ep0 to expose
/// the iAP interface: vendor class 0xFF, subclass 0xF0, protocol 0x00, one
/// bulk IN and one bulk OUT endpoint, at full, high and super speed.
///
/// Layout (linux/usb/functionfs.h): a v2 header (magic 3, total length,
/// flags: full/high/super speed descriptors present), the count of
/// descriptors per speed, then the descriptors of each speed. Strings are a
/// separate block (magic 2) with one language, US English.
public enum FunctionFSDescriptors {

    enum Magic {
        static let descriptorsV2: UInt32 = 3
        static let strings: UInt32 = 2
    }

    enum Flag {
        static let fullSpeed: UInt32 = 1
        static let highSpeed: UInt32 = 2
        static let superSpeed: UInt32 = 4
        /// Requests to the device (Apple's vendor requests) reach the
        /// function too, not only those to its interface and endpoints.
        static let allControlRecipients: UInt32 = 64
    }

    /// Bulk max packet size per speed.
    static let packetSizes: (full: UInt16, high: UInt16, superSpeed: UInt16) = (64, 512, 1024)

    /// The descriptor block for ep0. Endpoint 1 is IN (the gadget writes),
    /// endpoint 2 is OUT (the gadget reads); FunctionFS names their files
    /// ep1 and ep2 in that order.
    public static var descriptors: [UInt8] {
        func interface() -> [UInt8] {
            [9, 4, 0, 0, 2, IAPBulkInterface.interfaceClass, IAPBulkInterface.interfaceSubclass, IAPBulkInterface.interfaceProtocol, 1]
        }
        func endpoint(_ address: UInt8, _ packet: UInt16) -> [UInt8] {
            [7, 5, address, 2, UInt8(packet & 0xFF), UInt8(packet >> 8), 0]
        }
        let companion: [UInt8] = [6, 0x30, 0, 0, 0, 0]
        let full = interface() + endpoint(0x81, packetSizes.full) + endpoint(0x02, packetSizes.full)
        let high = interface() + endpoint(0x81, packetSizes.high) + endpoint(0x02, packetSizes.high)
        let superSpeed = interface() + endpoint(0x81, packetSizes.superSpeed) + companion + endpoint(0x02, packetSizes.superSpeed) + companion
        var block: [UInt8] = []
        let body = full + high + superSpeed
        let total = 12 + 12 + body.count
        block.appendLE32(Magic.descriptorsV2)
        block.appendLE32(UInt32(total))
        block.appendLE32(Flag.fullSpeed | Flag.highSpeed | Flag.superSpeed)
        block.appendLE32(3)
        block.appendLE32(3)
        block.appendLE32(5)
        return block + body
    }

    /// The HID report descriptor a real iPhone reports at high speed
    /// (208 bytes; shared USB-HID-FACTS.md §1b: oandrew/ipod-gadget's
    /// `ipod_hid_report`, wDescriptorLength 208 in real devices' dumps):
    /// input reports 0x01-0x0C of 5 to 767 bytes, output reports 0x0D-0x15
    /// of 5 to 255 bytes, vendor page 0xFF00, 8-bit fields.
    public static let iPhoneReportDescriptor: [UInt8] = [
        0x06, 0x00, 0xFF, 0x09, 0x01, 0xA1, 0x01, 0x75, 0x08, 0x26, 0x80, 0x00, 0x15, 0x00,
        0x09, 0x01, 0x85, 0x01, 0x95, 0x05, 0x82, 0x02, 0x01, 0x09, 0x01, 0x85, 0x02, 0x95, 0x09, 0x82, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x03, 0x95, 0x0D, 0x82, 0x02, 0x01, 0x09, 0x01, 0x85, 0x04, 0x95, 0x11, 0x82, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x05, 0x95, 0x19, 0x82, 0x02, 0x01, 0x09, 0x01, 0x85, 0x06, 0x95, 0x31, 0x82, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x07, 0x95, 0x5F, 0x82, 0x02, 0x01, 0x09, 0x01, 0x85, 0x08, 0x95, 0xC1, 0x82, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x09, 0x96, 0x01, 0x01, 0x82, 0x02, 0x01, 0x09, 0x01, 0x85, 0x0A, 0x96, 0x81, 0x01, 0x82, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x0B, 0x96, 0x01, 0x02, 0x82, 0x02, 0x01, 0x09, 0x01, 0x85, 0x0C, 0x96, 0xFF, 0x02, 0x82, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x0D, 0x95, 0x05, 0x92, 0x02, 0x01, 0x09, 0x01, 0x85, 0x0E, 0x95, 0x09, 0x92, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x0F, 0x95, 0x0D, 0x92, 0x02, 0x01, 0x09, 0x01, 0x85, 0x10, 0x95, 0x11, 0x92, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x11, 0x95, 0x19, 0x92, 0x02, 0x01, 0x09, 0x01, 0x85, 0x12, 0x95, 0x31, 0x92, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x13, 0x95, 0x5F, 0x92, 0x02, 0x01, 0x09, 0x01, 0x85, 0x14, 0x95, 0xC1, 0x92, 0x02, 0x01,
        0x09, 0x01, 0x85, 0x15, 0x95, 0xFF, 0x92, 0x02, 0x01, 0xC0,
    ]

    /// The HID class descriptor (type 0x21): HID 1.11, no country, one
    /// report descriptor of `reportLength` bytes.
    static func hidClassDescriptor(reportLength: Int) -> [UInt8] {
        [9, 0x21, 0x11, 0x01, 0, 1, 0x22, UInt8(reportLength & 0xFF), UInt8(reportLength >> 8)]
    }

    /// The descriptor block for an iPhone's iAP-over-HID interface, as in
    /// its configuration 2: interface class 3 (HID), subclass 0, protocol 0,
    /// the HID class descriptor, one interrupt IN endpoint of 64 bytes
    /// polled every (micro)frame. Output reports come by SET_REPORT on ep0,
    /// so the function also asks for requests to the device (Apple's power
    /// request).
    public static func hid(reportDescriptor: [UInt8]) -> [UInt8] {
        let interface: [UInt8] = [9, 4, 0, 0, 1, 0x03, 0x00, 0x00, 0] + hidClassDescriptor(reportLength: reportDescriptor.count)
        let endpoint: [UInt8] = [7, 5, 0x81, 0x03, 64, 0, 1]
        let companion: [UInt8] = [6, 0x30, 0, 0, 64, 0]
        let body = interface + endpoint + interface + endpoint + interface + endpoint + companion
        var block: [UInt8] = []
        block.appendLE32(Magic.descriptorsV2)
        block.appendLE32(UInt32(12 + 12 + body.count))
        block.appendLE32(Flag.fullSpeed | Flag.highSpeed | Flag.superSpeed | Flag.allControlRecipients)
        block.appendLE32(3)
        block.appendLE32(3)
        block.appendLE32(4)
        return block + body
    }

    /// A strings block with no strings (the iPhone's HID interface names none).
    static var noStrings: [UInt8] {
        var block: [UInt8] = []
        block.appendLE32(Magic.strings)
        block.appendLE32(16)
        block.appendLE32(0)
        block.appendLE32(0)
        return block
    }

    /// The strings block: the interface's name in US English.
    public static var strings: [UInt8] {
        let text = Array(IAPBulkInterface.name.utf8) + [0]
        var block: [UInt8] = []
        block.appendLE32(Magic.strings)
        block.appendLE32(UInt32(16 + 2 + text.count))
        block.appendLE32(1)   // strings per language
        block.appendLE32(1)   // languages
        block += [0x09, 0x04] // en-US
        return block + text
    }
}

/// What the host did to the gadget, read from ep0.
public enum FunctionFSEvent: UInt8, Sendable, CustomStringConvertible {
    case bind = 0, unbind, enable, disable, setup, suspend, resume

    public var description: String {
        switch self {
        case .bind: "bind"
        case .unbind: "unbind"
        case .enable: "enable"
        case .disable: "disable"
        case .setup: "setup"
        case .suspend: "suspend"
        case .resume: "resume"
        }
    }

    /// Each event is 12 bytes: an 8-byte setup packet, the type, 3 bytes of padding.
    static let size = 12
}

/// What a gadget's function carries iAP on.
public enum GadgetFunction: Sendable, Hashable {
    /// The bulk "iAP Interface" (what an accessory presents after the role
    /// switch; the lab's test hardware).
    case bulk
    /// iAP over HID, as a real iPhone carries it: a HID interface with this
    /// report descriptor, input reports on its interrupt IN endpoint, output
    /// reports by SET_REPORT.
    case hid(reportDescriptor: [UInt8])
}

/// A Linux board as USB test hardware: FunctionFS's ep0 gets the
/// function's descriptors, and each time the host enables the function
/// (plugged in and configured) a fresh connection — a `Transport` over the
/// endpoint files — is handed to `onConnection`. Disable, unbind and
/// suspend end that connection, once; the next enable starts a new one.
///
/// As a HID function it answers on ep0 as real devices do (shared
/// USB-HID-FACTS.md §3a, §3d): GET_DESCRIPTOR for the report and HID
/// descriptors, SET_REPORT (its data taken as an output report, whatever
/// length form the host uses), SET_IDLE and Apple's power request (0x40/0x40)
/// acknowledged, GET_REPORT answered with zeros, the role switch (0x40/0x51)
/// acknowledged and handed to `onRoleSwitch` when one is set (stalled, "not
/// supported", otherwise); anything else stalls.
public final class FunctionFSGadget: Sendable {
    public let mountPoint: String
    public let function: GadgetFunction
    private let ep0: Int32
    private let current = Mutex<(any GadgetConnection)?>(nil)
    /// The HID function's reports, read from its own descriptor.
    private let reports: IAPHIDReports?
    private let roleSwitchHandler = Mutex(RoleSwitchHandler())
    /// A struct around the closure: see `DescriptorTransport.State`.
    private struct RoleSwitchHandler {
        var handle: (@Sendable (_ value: UInt16) -> Void)?
    }

    /// Opens ep0 under the FunctionFS mount point and writes the descriptors
    /// and strings; the UDC may be bound once this returns.
    public init(mountPoint: String, function: GadgetFunction = .bulk) throws(TransportError) {
        self.mountPoint = mountPoint
        self.function = function
        let blocks: [(String, [UInt8])]
        switch function {
        case .bulk:
            reports = nil
            blocks = [("descriptors", FunctionFSDescriptors.descriptors), ("strings", FunctionFSDescriptors.strings)]
        case .hid(let reportDescriptor):
            do {
                reports = try IAPHIDReports(descriptor: reportDescriptor)
            } catch {
                throw TransportError(.invalidSpec, "the gadget's own HID report descriptor offers no iAP reports: \(error.detail)")
            }
            blocks = [("descriptors", FunctionFSDescriptors.hid(reportDescriptor: reportDescriptor)), ("strings", FunctionFSDescriptors.noStrings)]
        }
        let fd = try TransportError.open(mountPoint + "/ep0", .readWrite, options: [], what: "cannot open \(mountPoint)/ep0") { _ in
            " (is functionfs mounted there? see scripts/gadget-setup.sh)"
        }
        for (what, block) in blocks {
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == block.count else {
                let failure = written < 0 ? errno : EIO
                close(fd)
                throw TransportError("writing the \(what) to \(mountPoint)/ep0 failed", errno: failure)
            }
        }
        ep0 = fd
    }

    deinit { close(ep0) }

    /// Answers the host's role switch request (0x40/0x51, USB-HID-FACTS.md
    /// §4): the request is acknowledged, then `handler` gets its wValue (1:
    /// with CarPlay) on the ep0 thread; it must not block (leave the bus
    /// from another thread). Without a handler the request stalls, which
    /// tells a head unit the device does not switch.
    public func onRoleSwitch(_ handler: @escaping @Sendable (_ value: UInt16) -> Void) {
        roleSwitchHandler.withLock { $0.handle = handler }
    }

    /// Runs `run` on its own thread; `onEnd` gets the reason it stopped.
    public func start(onEvent: @escaping @Sendable (FunctionFSEvent) -> Void, onConnection: @escaping @Sendable (Transport) -> Void,
                      onEnd: @escaping @Sendable (TransportError) -> Void) throws(TransportError) {
        try DedicatedThread.start("gadget ep0") { [self] in onEnd(run(onEvent: onEvent, onConnection: onConnection)) }
    }

    /// Reads ep0 events until an error, calling `onEvent` for each and
    /// `onConnection` with a new transport at each enable. Blocks.
    public func run(onEvent: (FunctionFSEvent) -> Void, onConnection: (Transport) -> Void) -> TransportError {
        var buffer = [UInt8](repeating: 0, count: FunctionFSEvent.size * 4)
        while true {
            let count: Int
            switch buffer.withUnsafeMutableBytes({ SystemCall.read(ep0, into: $0) }) {
            case .success(let read): count = read
            case .failure(let error):
                let failure = TransportError("reading \(mountPoint)/ep0 failed", errno: error.rawValue)
                endConnection(failure)
                return failure
            }
            var offset = 0
            while offset + FunctionFSEvent.size <= count {
                let type = buffer[offset + 8]
                let setup = Array(buffer[offset..<offset + 8])
                offset += FunctionFSEvent.size
                guard let event = FunctionFSEvent(rawValue: type) else { continue }
                onEvent(event)
                switch event {
                case .enable:
                    endConnection(TransportError(.closed, "the host enabled the function again"))
                    let transport: any GadgetConnection = if let reports {
                        HIDGadgetTransport(output: mountPoint + "/ep1", reports: reports)
                    } else {
                        EndpointTransport(input: mountPoint + "/ep2", output: mountPoint + "/ep1")
                    }
                    current.withLock { $0 = transport }
                    onConnection(transport)
                case .disable, .suspend:
                    endConnection(TransportError(.closed, "the host \(event == .disable ? "disabled the function" : "suspended the bus")"))
                case .unbind:
                    // The UDC may be bound again later: keep ep0 open.
                    endConnection(TransportError(.closed, "the gadget was unbound"))
                case .setup:
                    answer(setup)
                case .bind, .resume:
                    break
                }
            }
        }
    }

    /// Answers a control request on ep0. The data stage (or, without data,
    /// the status stage) is a read for a request to the device and a write
    /// for one from it; using ep0 the other way stalls, as FunctionFS does.
    private func answer(_ setup: [UInt8]) {
        let requestType = setup[0], request = setup[1]
        let value = UInt16(setup[2]) | UInt16(setup[3]) << 8
        let length = Int(UInt16(setup[6]) | UInt16(setup[7]) << 8)
        func send(_ bytes: [UInt8]) {
            _ = Array(bytes.prefix(length)).withUnsafeBytes { SystemCall.write(ep0, $0) }
        }
        func take() -> [UInt8] {
            var data = [UInt8](repeating: 0, count: length)
            let count = (try? data.withUnsafeMutableBytes { SystemCall.read(ep0, into: $0) }.get()) ?? 0
            return Array(data.prefix(count))
        }
        func stall() {
            var none: UInt8 = 0
            if requestType & 0x80 != 0 { _ = read(ep0, &none, 0) } else { _ = write(ep0, &none, 0) }
        }
        guard case .hid(let reportDescriptor) = function else { return stall() }
        switch (requestType, request) {
        case (0x81, 0x06) where value == 0x2200: send(reportDescriptor)
        case (0x81, 0x06) where value == 0x2100: send(FunctionFSDescriptors.hidClassDescriptor(reportLength: reportDescriptor.count))
        case (0x21, 0x09):  // SET_REPORT: the data stage is an output report
            let report = take()
            let transport = current.withLock { $0 }
            transport?.outputReport(report)
        case (0x21, 0x0A), (0x40, 0x40): _ = take()  // SET_IDLE; Apple's power request
        case (0x40, 0x51):
            guard let handler = roleSwitchHandler.withLock({ $0.handle }) else { return stall() }
            _ = take()  // the status stage: acknowledged
            handler(value)
        case (0xA1, 0x01): send([UInt8](repeating: 0, count: length))  // GET_REPORT
        default: stall()
        }
    }

    private func endConnection(_ reason: TransportError) {
        let transport = current.withLock { current -> (any GadgetConnection)? in
            defer { current = nil }
            return current
        }
        transport?.end(reason)
    }
}

/// A gadget's connection: a transport the ep0 loop can end, and hand
/// output reports to.
protocol GadgetConnection: Transport {
    func end(_ reason: TransportError)
    /// An output report that came by SET_REPORT (HID functions only).
    func outputReport(_ report: [UInt8])
}

/// A connection over two FunctionFS endpoint files: bulk OUT read, bulk IN
/// written.
final class EndpointTransport: GadgetConnection {
    let name = "gadget"
    /// Several link packets in one bulk transfer, as a real iPhone sends
    /// them: the host splits a bulk read by the packets' length fields
    /// (IAP-FACTS.md).
    var acceptsCoalescedWrites: Bool { true }
    var linkPacketSizing: LinkPacketSizing? { .large }
    /// Writes block until the host reads; they go out from here, in order.
    private let writer = DispatchQueue(label: "iap.gadget.write")
    private let input: String
    private let output: String
    private let state = Mutex(State())
    /// A struct around the handler: see `DescriptorTransport.State`.
    private struct State {
        var inFD: Int32 = -1
        var outFD: Int32 = -1
        var handler: (@Sendable (TransportEvent) -> Void)?
        var closed = false
    }

    init(input: String, output: String) {
        self.input = input
        self.output = output
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let inFD = try TransportError.open(input, .readOnly, options: [], what: "cannot open the gadget's endpoint \(input)")
        let outFD: Int32
        do {
            outFD = try TransportError.open(output, .writeOnly, options: [], what: "cannot open the gadget's endpoint \(output)")
        } catch {
            Glibc.close(inFD)
            throw error
        }
        state.withLock { $0 = State(inFD: inFD, outFD: outFD, handler: handler, closed: false) }
        try DedicatedThread.start("\(name) reads") { [self] in readLoop(inFD) }
    }

    private func readLoop(_ fd: Int32) {
        // FunctionFS completes a read when the buffer is full or a short
        // packet arrives; the host sends a zero-length packet after writes
        // that are a multiple of the packet size.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            switch buffer.withUnsafeMutableBytes({ SystemCall.read(fd, into: $0) }) {
            case .success(0):
                continue
            case .success(let count):
                let handler = state.withLock { $0.closed ? nil : $0.handler }
                handler?(.received(Array(buffer[0..<count])))
            case .failure(let error):
                end(TransportError("the host went away", errno: error.rawValue))
                return
            }
        }
    }

    func write(_ bytes: [UInt8]) {
        writer.async { [self] in writeNow(bytes) }
    }

    private func writeNow(_ bytes: [UInt8]) {
        let fd = state.withLock { $0.closed ? -1 : $0.outFD }
        guard fd >= 0 else { return }
        if case .failure(let error) = SystemCall.writeAll(fd, bytes) {
            end(TransportError("writing to the host failed", errno: error.rawValue))
            return
        }
        // A write of whole packets ends with a zero-length packet, or the
        // host's larger read waits for more. The packet size depends on the
        // speed the host chose (64, 512 or 1024): every one divides 1024 and
        // is divided by 64, so a count that is a multiple of 64 may need it;
        // an extra zero-length packet only completes an empty read.
        if bytes.count % 64 == 0 {
            _ = SystemCall.write(fd, UnsafeRawBufferPointer(start: nil, count: 0))
        }
    }

    /// After the writes queued before it (an RST, say).
    func close() { writer.sync { end(TransportError(.closed, "closed by this end")) } }

    func outputReport(_ report: [UInt8]) {}

    /// Reports `.closed` once and releases the endpoint files.
    func end(_ reason: TransportError) {
        let (inFD, outFD, handler) = state.withLock { current -> (Int32, Int32, (@Sendable (TransportEvent) -> Void)?) in
            guard !current.closed else { return (-1, -1, nil) }
            current.closed = true
            defer { current.handler = nil }
            return (current.inFD, current.outFD, current.handler)
        }
        if inFD >= 0 { Glibc.close(inFD) }
        if outFD >= 0 { Glibc.close(outFD) }
        handler?(.closed(reason))
    }
}

/// iAP over HID on the device side: output reports arrive by SET_REPORT
/// (from the ep0 loop) and are reassembled into packets; writes leave as
/// input reports on the interrupt IN endpoint file, each report one write,
/// padded to its declared size.
final class HIDGadgetTransport: GadgetConnection {
    let name = "gadget (HID)"
    /// Each write is one packet in its own reports.
    var acceptsCoalescedWrites: Bool { false }
    var linkPacketSizing: LinkPacketSizing? { .large }
    /// Writes block until the host reads; they go out from here, in order.
    private let writer = DispatchQueue(label: "iap.gadget.hid.write")
    /// Packets reach the handler from here, one at a time and in the order
    /// the reports came (queued under the state's lock).
    private let deliveries = DispatchQueue(label: "iap.gadget.hid.read")
    private let output: String
    private let reportWriter: IAPHIDReportWriter
    private struct State {
        var fd: Int32 = -1
        var handler: (@Sendable (TransportEvent) -> Void)?
        var closed = false
        var reassembler: IAPHIDReassembler
        /// Packets that came before `start`: a host sends its first report
        /// as soon as it has configured the device, while the connection
        /// is still being set up.
        var early: [[UInt8]] = []
    }
    private let state: Mutex<State>
    /// Packets kept for `start`; a host that sends more before the
    /// connection is up loses the oldest (its link layer sends again).
    static let maximumEarlyPackets = 16

    init(output: String, reports: IAPHIDReports) {
        self.output = output
        reportWriter = IAPHIDReportWriter(reports: reports.input)
        state = Mutex(State(reassembler: IAPHIDReassembler(reports: reports.output)))
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let fd = try TransportError.open(output, .writeOnly, options: [], what: "cannot open the gadget's endpoint \(output)")
        // Queued under the lock, the early packets stay ahead of any that come meanwhile.
        state.withLock {
            $0.fd = fd
            $0.handler = handler
            let early = $0.early
            $0.early = []
            if !early.isEmpty { deliveries.async { for packet in early { handler(.received(packet)) } } }
        }
    }

    /// Reports the host sent that cannot be used (an unknown id, a
    /// continuation with no start) are skipped; the link layer's checksums
    /// catch what they leave missing.
    func outputReport(_ report: [UInt8]) {
        state.withLock { state in
            guard !state.closed, case .complete(let packet) = state.reassembler.append(report: report) else { return }
            let bytes = IAPHIDReassembler.linkBytes(packet)
            guard let handler = state.handler else {
                if state.early.count == Self.maximumEarlyPackets { state.early.removeFirst() }
                state.early.append(bytes)
                return
            }
            deliveries.async { handler(.received(bytes)) }
        }
    }

    func write(_ bytes: [UInt8]) {
        writer.async { [self] in
            for report in reportWriter.transfers(carrying: bytes) {
                let fd = state.withLock { $0.closed ? -1 : $0.fd }
                guard fd >= 0 else { return }
                if case .failure(let error) = report.withUnsafeBytes({ SystemCall.write(fd, $0) }) {
                    end(TransportError("writing an input report to the host failed", errno: error.rawValue))
                    return
                }
            }
        }
    }

    func close() { writer.sync { end(TransportError(.closed, "closed by this end")) } }

    func end(_ reason: TransportError) {
        let (fd, handler) = state.withLock { current -> (Int32, (@Sendable (TransportEvent) -> Void)?) in
            guard !current.closed else { return (-1, nil) }
            current.closed = true
            defer { current.handler = nil }
            return (current.fd, current.handler)
        }
        if fd >= 0 { Glibc.close(fd) }
        handler?(.closed(reason))
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE32(_ value: UInt32) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8 & 0xFF))
        append(UInt8(value >> 16 & 0xFF))
        append(UInt8(value >> 24))
    }
}
