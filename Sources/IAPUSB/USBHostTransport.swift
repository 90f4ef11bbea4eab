#if canImport(Glibc)
import Glibc
#endif
import CLibUSB
import IAPHotplug
import IAPTransport
import IAPWire
import Logging
import Synchronization

/// A libusb error code with its name and libusb's description.
public struct USBError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    /// libusb's name for the code, such as LIBUSB_ERROR_ACCESS.
    public var name: String { String(cString: libusb_error_name(code)) }
    public var description: String { "\(name): \(String(cString: libusb_strerror(code)))" }
    public static let noDevice = USBError(Int32(LIBUSB_ERROR_NO_DEVICE.rawValue))
    public static let access = USBError(Int32(LIBUSB_ERROR_ACCESS.rawValue))

    /// What the code means to a transport.
    public var kind: TransportError.Kind {
        switch libusb_error(rawValue: code) {
        case LIBUSB_ERROR_ACCESS: .permission
        case LIBUSB_ERROR_NO_DEVICE, LIBUSB_ERROR_NOT_FOUND: .notFound
        case LIBUSB_ERROR_BUSY: .busy
        case LIBUSB_ERROR_TIMEOUT: .timedOut
        default: .other
        }
    }
}

extension TransportError {
    /// `what` failed with a libusb error: its name and libusb's words for it
    /// follow, then `hint`, and the kind is the one the code means.
    public init(_ what: String, _ error: USBError, hint: String = "") {
        self.init(error.kind, "\(what): \(error)\(hint)")
    }
}

/// Which USB device to open: by ids, or the first with an iAP interface.
public struct USBDeviceSelector: Hashable, Sendable, CustomStringConvertible {
    public var vendorID: UInt16?
    public var productID: UInt16?
    /// One device exactly, as hotplug names it (bus number and address).
    public var location: (bus: UInt8, address: UInt8)?

    public init(vendorID: UInt16? = nil, productID: UInt16? = nil, location: (bus: UInt8, address: UInt8)? = nil) {
        self.vendorID = vendorID
        self.productID = productID
        self.location = location
    }
    public var description: String {
        if let location { return "bus \(location.bus) device \(location.address)" }
        guard let vendorID else { return "the first device with an iAP interface" }
        let product = productID.map { hex4($0) } ?? "*"
        return "\(hex4(vendorID)):\(product)"
    }

    public static func == (a: Self, b: Self) -> Bool {
        a.vendorID == b.vendorID && a.productID == b.productID && a.location?.bus == b.location?.bus && a.location?.address == b.location?.address
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(vendorID)
        hasher.combine(productID)
        hasher.combine(location?.bus)
        hasher.combine(location?.address)
    }
}

/// The USB host side of a link through libusb, with transfers in flight on
/// one dedicated event thread. A device is used the way it carries iAP
/// (`USBDescriptors.iapAccess`):
/// - the bulk iAP interface (an accessory after the role switch, the lab
///   gadget): link packets as bulk transfers;
/// - iAP over HID (a real iPhone or iPod): the configuration holding the HID
///   interface is selected when another is active (kernel drivers are
///   detached from the active configuration's interfaces first, as the
///   kernel refuses otherwise; usbhid is detached from the HID interface
///   while it is claimed and attached again on close), the report
///   descriptor is read and its reports used (`HIDChannel`), output reports
///   go by SET_REPORT one at a time and one interrupt IN transfer is always
///   outstanding.
///
/// Unplugging at any moment is a normal end: whatever signal comes first (a
/// transfer ending with "no device", an error, `close`) marks the transport
/// dead; the event thread then cancels and drains every transfer, releases
/// the interface and closes the handle — never inside a transfer callback —
/// and reports `.closed` once.
public final class USBHostTransport: Transport {
    public let name: String
    /// Over bulk, once open: several link packets in one transfer, as a
    /// real iPhone sends them (the receiver splits a bulk read by the
    /// packets' length fields, IAP-FACTS.md). Over HID (and before the
    /// device is open) one packet per write, each in its own report
    /// sequence.
    public var acceptsCoalescedWrites: Bool {
        state.withLock { state in
            if case .bulk = state.device?.access { true } else { false }
        }
    }
    /// Once open, bulk or HID: the largest packets (`LinkPacketSizing.large`); nil before.
    public var linkPacketSizing: LinkPacketSizing? {
        state.withLock { $0.device == nil ? nil : .large }
    }
    public let selector: USBDeviceSelector
    /// iAP over HID: how many bytes a SET_REPORT carries.
    public let hidLengthForm: IAPHIDReportWriter.LengthForm
    private let logger: Logger
    /// Bulk IN transfers kept in flight, and the size of each.
    public static let inFlight = 4
    public static let readSize = 16 * 1024
    /// iAP over HID: the wait for each SET_REPORT and for the report
    /// descriptor, as ADIT's head-unit stack waits.
    public static let controlTimeoutMilliseconds: UInt32 = 1000
    /// iAP over HID: output reports waiting for their SET_REPORT. The link
    /// layer's window keeps far fewer queued; more means the device stopped
    /// taking them.
    public static let maximumQueuedReports = 4096

    private let state = Mutex<State>(State())

    /// Who may use the device, and when: `start` sets `device` and starts
    /// the event thread in one locked section; from then on the event thread
    /// owns it, and alone clears `device` (locked) and then releases it.
    /// Every other use — submitting a transfer, waking the event thread —
    /// happens under the lock while `device` is set, so nothing touches a
    /// released handle or context. Submitting under the lock also keeps
    /// `transfers` exactly what libusb holds, so the event thread cancels
    /// every one of them. No deadlock: the only libusb calls made under the
    /// lock are ones libusb allows inside transfer callbacks, so libusb
    /// holds none of the locks they need while a callback waits for ours.
    private struct State {
        var device: Device?
        var handler: (@Sendable (TransportEvent) -> Void)?
        var dead: TransportError?
        /// Transfers in flight and finished ones waiting to be freed, by
        /// address.
        var transfers: Set<UInt> = []
        var finished: [UInt] = []
        var reported = false
        /// iAP over HID: the reports' bookkeeping, the SET_REPORT data
        /// stages not yet sent, and whether one is on its way.
        var hid: HIDChannel?
        var queuedReports: [[UInt8]] = []
        var queuedStart = 0
        var reportInFlight = false
        var hidProblems = 0
    }

    /// The libusb context and the device opened in it with the iAP
    /// interface claimed.
    ///
    /// `@unchecked Sendable`: libusb's handles may be used from any thread;
    /// when they may be used, and by whom, is `State`'s rule above.
    private struct Device: @unchecked Sendable {
        let context: OpaquePointer
        let handle: OpaquePointer
        let access: USBDescriptors.IAPAccess

        var interfaceNumber: UInt8 { access.interface.number }

        /// Releases the interface (libusb attaches a kernel driver it
        /// detached again), closes the handle and ends the context.
        func release() {
            _ = libusb_release_interface(handle, Int32(interfaceNumber))
            libusb_close(handle)
            libusb_exit(context)
        }
    }

    public init(selector: USBDeviceSelector, hidLengthForm: IAPHIDReportWriter.LengthForm = .full,
                logger: Logger = Logger(label: "iap.usb")) {
        self.selector = selector
        self.hidLengthForm = hidLengthForm
        self.logger = logger
        self.name = "usb:" + (selector.vendorID == nil ? "auto" : selector.description)
    }

    public func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        var context: OpaquePointer?
        let result = libusb_init(&context)
        guard result == 0, let context else { throw TransportError("\(name): cannot initialise libusb", USBError(result)) }
        let device: Device
        let hid: HIDChannel?
        do {
            (device, hid) = try openDevice(context)
        } catch {
            libusb_exit(context)
            throw error
        }
        let failure = state.withLock { state -> TransportError? in
            state.handler = handler
            state.device = device
            state.hid = hid
            do throws(TransportError) {
                try DedicatedThread.start("\(name) USB events") { [self] in eventLoop(device) }
                return nil
            } catch {
                state.device = nil
                state.handler = nil
                return error
            }
        }
        if let failure {
            device.release()
            throw failure
        }
    }

    // MARK: Opening

    private func openDevice(_ context: OpaquePointer) throws(TransportError) -> (Device, HIDChannel?) {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(context, &list)
        guard count >= 0, let list else { throw TransportError("\(name): cannot list USB devices", USBError(Int32(count))) }
        defer { libusb_free_device_list(list, 1) }
        var lastProblem: TransportError?
        for index in 0..<count {
            guard let device = list[index] else { continue }
            var descriptor = libusb_device_descriptor()
            guard libusb_get_device_descriptor(device, &descriptor) == 0 else { continue }
            if let vendor = selector.vendorID, descriptor.idVendor != vendor { continue }
            if let product = selector.productID, descriptor.idProduct != product { continue }
            if let location = selector.location,
               libusb_get_bus_number(device) != location.bus || libusb_get_device_address(device) != location.address { continue }
            guard let access = USBDescriptors(Self.descriptorBytes(device, descriptor)).iapAccess else {
                if selector.vendorID != nil || selector.location != nil {
                    lastProblem = TransportError(.notFound, "\(selector) has no iAP interface (class 0xFF, subclass 0xF0, protocol 0x00) in any configuration, and is no Apple phone with a HID interface")
                }
                continue
            }
            var opened: OpaquePointer?
            let result = libusb_open(device, &opened)
            guard result == 0, let opened else {
                let hint = result == USBError.access.code ? " (install udev-rules/70-iap-devkit.rules; see Docs/Hardware.md)" : ""
                lastProblem = TransportError("cannot open bus \(libusb_get_bus_number(device)) device \(libusb_get_device_address(device))",
                                             USBError(result), hint: hint)
                continue
            }
            do {
                let hid = try claim(opened, access)
                return (Device(context: context, handle: opened, access: access), hid)
            } catch {
                libusb_close(opened)
                lastProblem = error
            }
        }
        let problem = lastProblem
            ?? TransportError(.notFound, selector.vendorID == nil && selector.location == nil ? "no device with an iAP interface is connected" : "no \(selector) is connected")
        throw TransportError(problem.kind, "\(name): \(problem.description)")
    }

    /// The device's descriptors as the kernel keeps them (the device
    /// descriptor, then every configuration in full), written back from
    /// libusb's parsed copy, so that one parser (`USBDescriptors`) decides
    /// here, in `iapctl devices` and in hotplug matching alike.
    static func descriptorBytes(_ device: OpaquePointer, _ descriptor: libusb_device_descriptor) -> [UInt8] {
        func word(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
        func extra(_ pointer: UnsafePointer<UInt8>?, _ length: Int32) -> [UInt8] {
            guard let pointer, length > 0 else { return [] }
            return Array(UnsafeBufferPointer(start: pointer, count: Int(length)))
        }
        var bytes: [UInt8] = [18, 1] + word(descriptor.bcdUSB) + [descriptor.bDeviceClass, descriptor.bDeviceSubClass,
                              descriptor.bDeviceProtocol, descriptor.bMaxPacketSize0] + word(descriptor.idVendor) + word(descriptor.idProduct)
            + word(descriptor.bcdDevice) + [descriptor.iManufacturer, descriptor.iProduct, descriptor.iSerialNumber, descriptor.bNumConfigurations]
        for index in 0..<descriptor.bNumConfigurations {
            var config: UnsafeMutablePointer<libusb_config_descriptor>?
            guard libusb_get_config_descriptor(device, index, &config) == 0, let config else { continue }
            defer { libusb_free_config_descriptor(config) }
            let c = config.pointee
            bytes += [9, 2] + word(c.wTotalLength) + [c.bNumInterfaces, c.bConfigurationValue, c.iConfiguration, c.bmAttributes, c.MaxPower]
            bytes += extra(c.extra, c.extra_length)
            for i in 0..<Int(c.bNumInterfaces) {
                let interface = c.interface[i]
                for a in 0..<Int(interface.num_altsetting) {
                    let setting = interface.altsetting[a]
                    bytes += [9, 4, setting.bInterfaceNumber, setting.bAlternateSetting, setting.bNumEndpoints, setting.bInterfaceClass,
                              setting.bInterfaceSubClass, setting.bInterfaceProtocol, setting.iInterface]
                    bytes += extra(setting.extra, setting.extra_length)
                    for e in 0..<Int(setting.bNumEndpoints) {
                        let endpoint = setting.endpoint[e]
                        bytes += [7, 5, endpoint.bEndpointAddress, endpoint.bmAttributes] + word(endpoint.wMaxPacketSize) + [endpoint.bInterval]
                        bytes += extra(endpoint.extra, endpoint.extra_length)
                    }
                }
            }
        }
        return bytes
    }

    /// Selects the configuration and claims the interface; for iAP over
    /// HID, also reads the report descriptor.
    private func claim(_ handle: OpaquePointer, _ access: USBDescriptors.IAPAccess) throws(TransportError) -> HIDChannel? {
        let interface = access.interface
        if case .hid = access { _ = libusb_set_auto_detach_kernel_driver(handle, 1) }
        var current: Int32 = 0
        if libusb_get_configuration(handle, &current) == 0, current != Int32(access.configuration) {
            if case .hid = access {
                for problem in Self.detachDrivers(handle) { logger.warning("\(name): \(problem)") }
            }
            let result = libusb_set_configuration(handle, Int32(access.configuration))
            guard result == 0 else {
                let hint = result == Int32(LIBUSB_ERROR_BUSY.rawValue) ? " (a program holds one of its interfaces: usbmuxd? see Docs/Hardware.md)" : ""
                throw TransportError("cannot select configuration \(access.configuration)", USBError(result), hint: hint)
            }
            logger.notice("\(name): selected configuration \(access.configuration) in place of \(current): \(access)")
        }
        var result = libusb_claim_interface(handle, Int32(interface.number))
        guard result == 0 else { throw TransportError("cannot claim interface \(interface.number)", USBError(result)) }
        if interface.alternateSetting != 0 {
            result = libusb_set_interface_alt_setting(handle, Int32(interface.number), Int32(interface.alternateSetting))
            guard result == 0 else { throw TransportError("cannot select alternate setting \(interface.alternateSetting)", USBError(result)) }
        }
        switch access {
        case .bulk:
            // Stale halts from an earlier session would stall the first transfer.
            if let input = interface.bulkIn { _ = libusb_clear_halt(handle, input.address) }
            if let output = interface.bulkOut { _ = libusb_clear_halt(handle, output.address) }
            return nil
        case .hid:
            let reports = try readReports(handle, interface)
            logger.info("\(name): iAP over HID on interface \(interface.number), input reports \(reports.input.map(\.description).joined(separator: " ")), output reports \(reports.output.map(\.description).joined(separator: " ")), SET_REPORT length form \(hidLengthForm)")
            return HIDChannel(reports: reports, form: hidLengthForm)
        }
    }

    /// Detaches kernel drivers from the active configuration's interfaces:
    /// the kernel refuses SET_CONFIGURATION while a driver holds one.
    /// Returns what could not be detached.
    static func detachDrivers(_ handle: OpaquePointer) -> [String] {
        var config: UnsafeMutablePointer<libusb_config_descriptor>?
        guard let device = libusb_get_device(handle), libusb_get_active_config_descriptor(device, &config) == 0, let config else { return [] }
        defer { libusb_free_config_descriptor(config) }
        var problems: [String] = []
        for i in 0..<Int(config.pointee.bNumInterfaces) {
            let number = Int32(config.pointee.interface[i].altsetting[0].bInterfaceNumber)
            if libusb_kernel_driver_active(handle, number) == 1 {
                let result = libusb_detach_kernel_driver(handle, number)
                if result != 0 { problems.append("cannot detach the kernel driver from interface \(number): \(USBError(result))") }
            }
        }
        return problems
    }

    /// Reads and parses the HID interface's report descriptor
    /// (GET_DESCRIPTOR, type 0x22, to the interface).
    private func readReports(_ handle: OpaquePointer, _ interface: USBDescriptors.Interface) throws(TransportError) -> IAPHIDReports {
        let length = min(interface.reportDescriptorLength ?? IAPHIDReports.maximumDescriptorLength, IAPHIDReports.maximumDescriptorLength)
        var buffer = [UInt8](repeating: 0, count: max(1, length))
        let read = libusb_control_transfer(handle, 0x81, UInt8(LIBUSB_REQUEST_GET_DESCRIPTOR.rawValue), 0x2200, UInt16(interface.number),
                                           &buffer, UInt16(buffer.count), Self.controlTimeoutMilliseconds)
        guard read >= 0 else { throw TransportError("cannot read the HID report descriptor of interface \(interface.number)", USBError(read)) }
        do {
            return try IAPHIDReports(descriptor: Array(buffer.prefix(Int(read))))
        } catch {
            throw TransportError(.other, "interface \(interface.number)'s HID report descriptor (\(read) bytes) offers no iAP reports: \(error.detail)")
        }
    }

    // MARK: Transfers

    /// Submits one IN transfer, unless the transport is ending.
    private func submitRead() {
        state.withLock { state in
            guard let device = state.device, state.dead == nil else { return }
            guard let transfer = libusb_alloc_transfer(0) else {
                markDead(&state, TransportError(.other, "cannot allocate a transfer"))
                return
            }
            let user = Unmanaged.passUnretained(self).toOpaque()
            switch device.access {
            case .bulk(_, let interface):
                let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.readSize)
                libusb_fill_bulk_transfer(transfer, device.handle, interface.bulkIn?.address ?? 0x81, buffer, Int32(Self.readSize), usbCallback, user, 0)
            case .hid(_, let interface):
                let size = state.hid?.readSize ?? 64
                let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: size)
                libusb_fill_interrupt_transfer(transfer, device.handle, interface.interruptIn?.address ?? 0x83, buffer, Int32(size), usbCallback, user, 0)
            }
            _ = submit(transfer, &state)
        }
    }

    /// Submits `transfer` (under the lock, while the device is set and the
    /// transport alive); a failure frees it and marks the transport dead.
    private func submit(_ transfer: UnsafeMutablePointer<libusb_transfer>, _ state: inout State) -> Bool {
        let result = libusb_submit_transfer(transfer)
        guard result == 0 else {
            Self.release(transfer)
            markDead(&state, result == USBError.noDevice.code ? Self.unplugged : TransportError("cannot submit a transfer", USBError(result)))
            return false
        }
        state.transfers.insert(UInt(bitPattern: transfer))
        return true
    }

    public func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        state.withLock { state in
            guard let device = state.device, state.dead == nil else { return }
            guard case .bulk(_, let interface) = device.access, let output = interface.bulkOut else {
                queueReports(bytes, &state)
                return
            }
            guard let transfer = libusb_alloc_transfer(0) else { return }
            let endpoint = output.address
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
            bytes.withUnsafeBufferPointer { buffer.initialize(from: $0.baseAddress!, count: bytes.count) }
            libusb_fill_bulk_transfer(transfer, device.handle, endpoint, buffer, Int32(bytes.count), usbCallback,
                                      Unmanaged.passUnretained(self).toOpaque(), 0)
            guard submit(transfer, &state) else { return }
            // A write that fills whole packets ends with a zero-length packet, or
            // a FunctionFS reader with a larger buffer waits for more (in the lab
            // a 512-byte link packet waited for the 1 s retransmission). Sent as
            // a transfer of its own: LIBUSB_TRANSFER_ADD_ZERO_PACKET was not
            // honoured by dummy_hcd, a separate zero-length transfer is.
            if bytes.count % max(1, Int(output.maxPacketSize)) == 0, let zero = libusb_alloc_transfer(0) {
                libusb_fill_bulk_transfer(zero, device.handle, endpoint, nil, 0, usbCallback, Unmanaged.passUnretained(self).toOpaque(), 0)
                _ = submit(zero, &state)
            }
        }
    }

    /// iAP over HID: a write's reports join the queue; the first is sent
    /// when no SET_REPORT is on its way.
    private func queueReports(_ bytes: [UInt8], _ state: inout State) {
        guard let hid = state.hid else { return }
        let reports = hid.transfers(carrying: bytes)
        guard state.queuedReports.count - state.queuedStart + reports.count <= Self.maximumQueuedReports else {
            markDead(&state, TransportError(.timedOut, "the device takes no more output reports: \(Self.maximumQueuedReports) wait for SET_REPORT"))
            return
        }
        state.queuedReports += reports
        sendNextReport(&state)
    }

    /// Sends the next queued output report by SET_REPORT (class request
    /// 0x21/0x09, wValue 0x02 << 8 | report id, wIndex the interface).
    private func sendNextReport(_ state: inout State) {
        guard !state.reportInFlight, state.queuedStart < state.queuedReports.count, let device = state.device, state.dead == nil else { return }
        let report = state.queuedReports[state.queuedStart]
        state.queuedStart += 1
        if state.queuedStart == state.queuedReports.count {
            state.queuedReports.removeAll(keepingCapacity: true)
            state.queuedStart = 0
        }
        guard let transfer = libusb_alloc_transfer(0) else {
            markDead(&state, TransportError(.other, "cannot allocate a transfer"))
            return
        }
        let setupSize = MemoryLayout<libusb_control_setup>.size
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: setupSize + report.count)
        libusb_fill_control_setup(buffer, 0x21, 0x09, 0x0200 | UInt16(report[0]), UInt16(device.interfaceNumber), UInt16(report.count))
        report.withUnsafeBufferPointer { (buffer + setupSize).initialize(from: $0.baseAddress!, count: report.count) }
        libusb_fill_control_transfer(transfer, device.handle, buffer, usbCallback, Unmanaged.passUnretained(self).toOpaque(), Self.controlTimeoutMilliseconds)
        state.reportInFlight = submit(transfer, &state)
    }

    /// Called on the event thread for every finished transfer.
    fileprivate func completed(_ transfer: UnsafeMutablePointer<libusb_transfer>) {
        if transfer.pointee.type == UInt8(LIBUSB_TRANSFER_TYPE_CONTROL.rawValue) {
            reportSent(transfer)
            return
        }
        let status = transfer.pointee.status
        let isRead = transfer.pointee.endpoint & 0x80 != 0
        // Nothing is freed here: the event loop reaps finished transfers.
        let address = UInt(bitPattern: transfer)
        state.withLock { current in
            current.transfers.remove(address)
            current.finished.append(address)
        }
        switch status {
        case LIBUSB_TRANSFER_COMPLETED:
            if isRead {
                let count = Int(transfer.pointee.actual_length)
                if count > 0, let buffer = transfer.pointee.buffer {
                    let bytes = Array(UnsafeBufferPointer(start: buffer, count: count))
                    let (handler, packets) = state.withLock { state -> ((@Sendable (TransportEvent) -> Void)?, [[UInt8]]) in
                        guard state.dead == nil else { return (nil, []) }
                        guard state.hid != nil else { return (state.handler, [bytes]) }
                        let received = state.hid!.received(transfer: bytes)
                        for problem in received.problems { hidProblem(problem, &state) }
                        return (state.handler, received.packets)
                    }
                    for packet in packets { handler?(.received(packet)) }
                }
                submitRead()
            }
        case LIBUSB_TRANSFER_NO_DEVICE:
            state.withLock { markDead(&$0, Self.unplugged) }
        case LIBUSB_TRANSFER_CANCELLED:
            break
        case LIBUSB_TRANSFER_STALL:
            state.withLock { markDead(&$0, TransportError(.other, "endpoint 0x\(String(transfer.pointee.endpoint, radix: 16)) stalled")) }
        case LIBUSB_TRANSFER_TIMED_OUT:
            if isRead { submitRead() }
        default:
            state.withLock { markDead(&$0, TransportError(.other, "a transfer failed (\(Self.statusName(status)))")) }
        }
    }

    /// A SET_REPORT finished: the next report goes, or the transport ends
    /// saying why the device refused this one.
    private func reportSent(_ transfer: UnsafeMutablePointer<libusb_transfer>) {
        let status = transfer.pointee.status
        let address = UInt(bitPattern: transfer)
        // The report id is wValue's low byte, the setup packet's third byte.
        let id = transfer.pointee.buffer.map { String($0[2], radix: 16) } ?? "?"
        state.withLock { state in
            state.transfers.remove(address)
            state.finished.append(address)
            state.reportInFlight = false
            switch status {
            case LIBUSB_TRANSFER_COMPLETED: sendNextReport(&state)
            case LIBUSB_TRANSFER_CANCELLED: break
            case LIBUSB_TRANSFER_NO_DEVICE: markDead(&state, Self.unplugged)
            case LIBUSB_TRANSFER_STALL:
                let other: IAPHIDReportWriter.LengthForm = hidLengthForm == .full ? .countIncludingID : .full
                markDead(&state, TransportError(.other, "the device refused output report 0x\(id) (SET_REPORT stalled); it may want the other SET_REPORT length form, --hid-report-length \(other)"))
            case LIBUSB_TRANSFER_TIMED_OUT:
                markDead(&state, TransportError(.timedOut, "the device did not take output report 0x\(id) within \(Self.controlTimeoutMilliseconds) ms"))
            default:
                markDead(&state, TransportError(.other, "SET_REPORT of report 0x\(id) failed (\(Self.statusName(status)))"))
            }
        }
    }

    /// A report the reassembler could not use: counted, logged at first and
    /// then each time the count doubles, so a noisy device cannot flood the log.
    private func hidProblem(_ problem: String, _ state: inout State) {
        state.hidProblems += 1
        let count = state.hidProblems
        if count & (count - 1) == 0 { logger.warning("\(name): input report skipped (\(count) so far): \(problem)") }
    }

    static func statusName(_ status: libusb_transfer_status) -> String {
        switch status {
        case LIBUSB_TRANSFER_ERROR: "error"
        case LIBUSB_TRANSFER_OVERFLOW: "overflow"
        default: "status \(status.rawValue)"
        }
    }

    private static let unplugged = TransportError(.notFound, "the device was unplugged")

    /// Records the first reason the transport ends and wakes the event
    /// thread to wind it down.
    private func markDead(_ state: inout State, _ reason: TransportError) {
        if state.dead == nil { state.dead = reason }
        if let device = state.device { libusb_interrupt_event_handler(device.context) }
    }

    public func close() { state.withLock { markDead(&$0, TransportError(.closed, "closed by this end")) } }

    private static func release(_ transfer: UnsafeMutablePointer<libusb_transfer>) {
        transfer.pointee.buffer?.deallocate()
        transfer.pointee.buffer = nil
        libusb_free_transfer(transfer)
    }

    // MARK: The event thread

    private func eventLoop(_ device: Device) {
        // iAP over HID: one interrupt IN transfer at a time keeps reports in order.
        let reads: Int
        if case .hid = device.access { reads = 1 } else { reads = Self.inFlight }
        for _ in 0..<reads { submitRead() }
        var cancelled = false
        while true {
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            _ = libusb_handle_events_timeout_completed(device.context, &timeout, nil)
            let (finished, dead, pending) = state.withLock { current -> ([UInt], TransportError?, [UInt]) in
                defer { current.finished.removeAll() }
                return (current.finished, current.dead, Array(current.transfers))
            }
            for address in finished {
                if let transfer = UnsafeMutablePointer<libusb_transfer>(bitPattern: address) { Self.release(transfer) }
            }
            guard let reason = dead else { continue }
            // Once dead, nothing more is submitted: `pending` holds every
            // transfer still in flight, and only this thread frees them.
            if !cancelled {
                for address in pending {
                    if let transfer = UnsafeMutablePointer<libusb_transfer>(bitPattern: address) { libusb_cancel_transfer(transfer) }
                }
                cancelled = true
            }
            // Drain: every cancelled transfer must come back before closing.
            guard pending.isEmpty else { continue }
            let handler = state.withLock { current -> (@Sendable (TransportEvent) -> Void)? in
                current.device = nil
                guard !current.reported else { return nil }
                current.reported = true
                defer { current.handler = nil }
                return current.handler
            }
            device.release()
            handler?(.closed(reason))
            return
        }
    }
}

/// The C callback: hands the transfer to its transport.
private func usbCallback(_ transfer: UnsafeMutablePointer<libusb_transfer>?) {
    guard let transfer, let context = transfer.pointee.user_data else { return }
    Unmanaged<USBHostTransport>.fromOpaque(context).takeUnretainedValue().completed(transfer)
}

/// Four lowercase hex digits, as lsusb writes ids.
func hex4(_ value: UInt16) -> String {
    let digits = String(value, radix: 16)
    return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
}
