#if canImport(Glibc)
import Glibc
#endif
import CLibUSB
import IAPTransport
import Synchronization

/// A libusb error code with its name and libusb's description.
public struct USBError: Error, Hashable, Sendable, CustomStringConvertible {
    public let code: Int32
    public init(_ code: Int32) { self.code = code }
    public var name: String { String(cString: libusb_error_name(code)) }
    public var description: String { "\(name): \(String(cString: libusb_strerror(code)))" }
    public static let noDevice = USBError(Int32(LIBUSB_ERROR_NO_DEVICE.rawValue))
    public static let access = USBError(Int32(LIBUSB_ERROR_ACCESS.rawValue))
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

/// The iAP interface: vendor specific class 0xFF, subclass 0xF0, protocol 0x00.
public enum IAPInterface {
    public static let interfaceClass: UInt8 = 0xFF
    public static let subclass: UInt8 = 0xF0
    public static let `protocol`: UInt8 = 0x00
}

/// The USB host side of a link: the iAP interface's bulk endpoints through
/// libusb, with transfers in flight on one dedicated event thread.
///
/// Unplugging at any moment is a normal end: whatever signal comes first (a
/// transfer ending with "no device", an error, `close`) marks the transport
/// dead; the event thread then cancels and drains every transfer, releases
/// the interface and closes the handle — never inside a transfer callback —
/// and reports `.closed` once.
public final class USBHostTransport: Transport, @unchecked Sendable {
    public let name: String
    public let selector: USBDeviceSelector
    /// IN transfers kept in flight, and the size of each.
    public static let inFlight = 4
    public static let readSize = 16 * 1024

    // Set in start(); read by the event thread and callbacks.
    private var context: OpaquePointer?
    private var handle: OpaquePointer?
    private var interfaceNumber: Int32 = 0
    private var endpointIn: UInt8 = 0
    private var endpointOut: UInt8 = 0
    private var outPacketSize = 512
    private let state = Mutex<State>(State())

    private struct State {
        var handler: (@Sendable (TransportEvent) -> Void)?
        var dead: String?
        /// Transfers in flight and finished ones waiting to be freed, by
        /// address (the state is shared with the event thread).
        var transfers: Set<UInt> = []
        var finished: [UInt] = []
        var reported = false
    }

    public init(selector: USBDeviceSelector) {
        self.selector = selector
        self.name = "usb:" + (selector.vendorID == nil ? "auto" : selector.description)
    }

    public func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        var context: OpaquePointer?
        let result = libusb_init(&context)
        guard result == 0, let context else { throw TransportError("\(name): cannot initialise libusb: \(USBError(result))") }
        self.context = context
        do {
            try openDevice(context)
        } catch {
            libusb_exit(context)
            self.context = nil
            throw error
        }
        state.withLock { $0.handler = handler }
        for _ in 0..<Self.inFlight {
            if let problem = submitRead() {
                markDead(problem)
                break
            }
        }
        try DedicatedThread.start("\(name) USB events") { [self] in eventLoop() }
    }

    // MARK: Opening

    private func openDevice(_ context: OpaquePointer) throws(TransportError) {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(context, &list)
        guard count >= 0, let list else { throw TransportError("\(name): cannot list USB devices: \(USBError(Int32(count)))") }
        defer { libusb_free_device_list(list, 1) }
        var lastProblem: String?
        for index in 0..<count {
            guard let device = list[index] else { continue }
            var descriptor = libusb_device_descriptor()
            guard libusb_get_device_descriptor(device, &descriptor) == 0 else { continue }
            if let vendor = selector.vendorID, descriptor.idVendor != vendor { continue }
            if let product = selector.productID, descriptor.idProduct != product { continue }
            if let location = selector.location,
               libusb_get_bus_number(device) != location.bus || libusb_get_device_address(device) != location.address { continue }
            guard let found = Self.iapInterface(device, configurations: descriptor.bNumConfigurations) else {
                if selector.vendorID != nil || selector.location != nil { lastProblem = "\(selector) has no iAP interface (class 0xFF, subclass 0xF0, protocol 0x00) in any configuration" }
                continue
            }
            var opened: OpaquePointer?
            let result = libusb_open(device, &opened)
            guard result == 0, let opened else {
                let hint = result == USBError.access.code ? " (install udev-rules/70-iap-devkit.rules; see Docs/Hardware.md)" : ""
                lastProblem = "cannot open bus \(libusb_get_bus_number(device)) device \(libusb_get_device_address(device)): \(USBError(result))\(hint)"
                continue
            }
            do {
                try claim(opened, found)
                handle = opened
                return
            } catch {
                libusb_close(opened)
                lastProblem = error.description
            }
        }
        throw TransportError("\(name): " + (lastProblem ?? (selector.vendorID == nil && selector.location == nil ? "no device with an iAP interface is connected" : "no \(selector) is connected")))
    }

    struct FoundInterface {
        var configuration: UInt8
        var number: UInt8
        var alternate: UInt8
        var endpointIn: UInt8
        var endpointOut: UInt8
        var outPacketSize: Int
    }

    /// The iAP interface in any configuration, with its bulk endpoints.
    static func iapInterface(_ device: OpaquePointer, configurations: UInt8) -> FoundInterface? {
        for index in 0..<configurations {
            var config: UnsafeMutablePointer<libusb_config_descriptor>?
            guard libusb_get_config_descriptor(device, index, &config) == 0, let config else { continue }
            defer { libusb_free_config_descriptor(config) }
            for i in 0..<Int(config.pointee.bNumInterfaces) {
                let interface = config.pointee.interface[i]
                for a in 0..<Int(interface.num_altsetting) {
                    let setting = interface.altsetting[a]
                    guard setting.bInterfaceClass == IAPInterface.interfaceClass, setting.bInterfaceSubClass == IAPInterface.subclass,
                          setting.bInterfaceProtocol == IAPInterface.protocol else { continue }
                    var inAddress: UInt8?
                    var outAddress: UInt8?
                    var outSize = 512
                    for e in 0..<Int(setting.bNumEndpoints) {
                        let endpoint = setting.endpoint[e]
                        guard endpoint.bmAttributes & 0x03 == UInt8(LIBUSB_TRANSFER_TYPE_BULK.rawValue) else { continue }
                        if endpoint.bEndpointAddress & 0x80 != 0 {
                            inAddress = inAddress ?? endpoint.bEndpointAddress
                        } else if outAddress == nil {
                            outAddress = endpoint.bEndpointAddress
                            outSize = Int(endpoint.wMaxPacketSize & 0x7FF)
                        }
                    }
                    if let inAddress, let outAddress {
                        return FoundInterface(configuration: config.pointee.bConfigurationValue, number: setting.bInterfaceNumber,
                                              alternate: setting.bAlternateSetting, endpointIn: inAddress, endpointOut: outAddress,
                                              outPacketSize: max(1, outSize))
                    }
                }
            }
        }
        return nil
    }

    private func claim(_ handle: OpaquePointer, _ found: FoundInterface) throws(TransportError) {
        var current: Int32 = 0
        if libusb_get_configuration(handle, &current) == 0, current != Int32(found.configuration) {
            let result = libusb_set_configuration(handle, Int32(found.configuration))
            guard result == 0 else { throw TransportError("cannot select configuration \(found.configuration): \(USBError(result))") }
        }
        var result = libusb_claim_interface(handle, Int32(found.number))
        guard result == 0 else { throw TransportError("cannot claim interface \(found.number): \(USBError(result))") }
        if found.alternate != 0 {
            result = libusb_set_interface_alt_setting(handle, Int32(found.number), Int32(found.alternate))
            guard result == 0 else { throw TransportError("cannot select alternate setting \(found.alternate): \(USBError(result))") }
        }
        // Stale halts from an earlier session would stall the first transfer.
        _ = libusb_clear_halt(handle, found.endpointIn)
        _ = libusb_clear_halt(handle, found.endpointOut)
        interfaceNumber = Int32(found.number)
        endpointIn = found.endpointIn
        endpointOut = found.endpointOut
        outPacketSize = found.outPacketSize
    }

    // MARK: Transfers

    /// Submits one IN transfer; returns why not, if it could not.
    private func submitRead() -> String? {
        guard let handle, let transfer = libusb_alloc_transfer(0) else { return "cannot allocate a transfer" }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.readSize)
        libusb_fill_bulk_transfer(transfer, handle, endpointIn, buffer, Int32(Self.readSize), usbCallback,
                                  Unmanaged.passUnretained(self).toOpaque(), 0)
        return submit(transfer)
    }

    private func submit(_ transfer: UnsafeMutablePointer<libusb_transfer>) -> String? {
        let refused = state.withLock { current -> Bool in
            guard current.dead == nil else { return true }
            current.transfers.insert(UInt(bitPattern: transfer))
            return false
        }
        if refused {
            Self.release(transfer)
            return nil
        }
        let result = libusb_submit_transfer(transfer)
        guard result == 0 else {
            let address = UInt(bitPattern: transfer)
            _ = state.withLock { $0.transfers.remove(address) }
            Self.release(transfer)
            return result == USBError.noDevice.code ? "the device was unplugged" : "cannot submit a transfer: \(USBError(result))"
        }
        return nil
    }

    public func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty, let handle, let transfer = libusb_alloc_transfer(0) else { return }
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
        bytes.withUnsafeBufferPointer { buffer.initialize(from: $0.baseAddress!, count: bytes.count) }
        libusb_fill_bulk_transfer(transfer, handle, endpointOut, buffer, Int32(bytes.count), usbCallback,
                                  Unmanaged.passUnretained(self).toOpaque(), 0)
        if let problem = submit(transfer) {
            markDead(problem)
            return
        }
        // A write that fills whole packets ends with a zero-length packet, or
        // a FunctionFS reader with a larger buffer waits for more (in the lab
        // a 512-byte link packet waited for the 1 s retransmission). Sent as
        // a transfer of its own: LIBUSB_TRANSFER_ADD_ZERO_PACKET was not
        // honoured by dummy_hcd, a separate zero-length transfer is.
        if bytes.count % outPacketSize == 0, let zero = libusb_alloc_transfer(0) {
            libusb_fill_bulk_transfer(zero, handle, endpointOut, nil, 0, usbCallback, Unmanaged.passUnretained(self).toOpaque(), 0)
            if let problem = submit(zero) { markDead(problem) }
        }
    }

    /// Called on the event thread for every finished transfer.
    fileprivate func completed(_ transfer: UnsafeMutablePointer<libusb_transfer>) {
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
                    let handler = state.withLock { $0.dead == nil ? $0.handler : nil }
                    handler?(.received(bytes))
                }
                if let problem = submitRead() { markDead(problem) }
            }
        case LIBUSB_TRANSFER_NO_DEVICE:
            markDead("the device was unplugged")
        case LIBUSB_TRANSFER_CANCELLED:
            break
        case LIBUSB_TRANSFER_STALL:
            markDead("endpoint 0x\(String(transfer.pointee.endpoint, radix: 16)) stalled")
        case LIBUSB_TRANSFER_TIMED_OUT:
            if isRead, let problem = submitRead() { markDead(problem) }
        default:
            markDead("a transfer failed (\(Self.statusName(status)))")
        }
    }

    static func statusName(_ status: libusb_transfer_status) -> String {
        switch status {
        case LIBUSB_TRANSFER_ERROR: "error"
        case LIBUSB_TRANSFER_OVERFLOW: "overflow"
        default: "status \(status.rawValue)"
        }
    }

    private func markDead(_ reason: String) {
        state.withLock { if $0.dead == nil { $0.dead = reason } }
        if let context { libusb_interrupt_event_handler(context) }
    }

    public func close() { markDead("closed by this end") }

    private static func release(_ transfer: UnsafeMutablePointer<libusb_transfer>) {
        transfer.pointee.buffer?.deallocate()
        transfer.pointee.buffer = nil
        libusb_free_transfer(transfer)
    }

    // MARK: The event thread

    private func eventLoop() {
        guard let context else { return }
        var cancelled = false
        while true {
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            _ = libusb_handle_events_timeout_completed(context, &timeout, nil)
            let (finished, dead, pending) = state.withLock { current -> ([UInt], String?, [UInt]) in
                defer { current.finished.removeAll() }
                return (current.finished, current.dead, Array(current.transfers))
            }
            for address in finished {
                if let transfer = UnsafeMutablePointer<libusb_transfer>(bitPattern: address) { Self.release(transfer) }
            }
            guard let reason = dead else { continue }
            if !cancelled {
                for address in pending {
                    if let transfer = UnsafeMutablePointer<libusb_transfer>(bitPattern: address) { libusb_cancel_transfer(transfer) }
                }
                cancelled = true
            }
            // Drain: every cancelled transfer must come back before closing.
            guard pending.isEmpty else { continue }
            if let handle {
                _ = libusb_release_interface(handle, interfaceNumber)
                libusb_close(handle)
                self.handle = nil
            }
            libusb_exit(context)
            self.context = nil
            let handler = state.withLock { current -> (@Sendable (TransportEvent) -> Void)? in
                guard !current.reported else { return nil }
                current.reported = true
                defer { current.handler = nil }
                return current.handler
            }
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
