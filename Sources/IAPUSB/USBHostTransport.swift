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
public final class USBHostTransport: Transport {
    public let name: String
    /// One link packet per bulk transfer: a device may read each transfer
    /// as one packet.
    public var acceptsCoalescedWrites: Bool { false }
    public let selector: USBDeviceSelector
    /// IN transfers kept in flight, and the size of each.
    public static let inFlight = 4
    public static let readSize = 16 * 1024

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
    }

    /// The libusb context and the device opened in it with the iAP
    /// interface claimed.
    ///
    /// `@unchecked Sendable`: libusb's handles may be used from any thread;
    /// when they may be used, and by whom, is `State`'s rule above.
    private struct Device: @unchecked Sendable {
        let context: OpaquePointer
        let handle: OpaquePointer
        let interface: FoundInterface

        /// Releases the interface, closes the handle and ends the context.
        func release() {
            _ = libusb_release_interface(handle, Int32(interface.number))
            libusb_close(handle)
            libusb_exit(context)
        }
    }

    public init(selector: USBDeviceSelector) {
        self.selector = selector
        self.name = "usb:" + (selector.vendorID == nil ? "auto" : selector.description)
    }

    public func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        var context: OpaquePointer?
        let result = libusb_init(&context)
        guard result == 0, let context else { throw TransportError("\(name): cannot initialise libusb", USBError(result)) }
        let device: Device
        do {
            device = try openDevice(context)
        } catch {
            libusb_exit(context)
            throw error
        }
        let failure = state.withLock { state -> TransportError? in
            state.handler = handler
            state.device = device
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

    private func openDevice(_ context: OpaquePointer) throws(TransportError) -> Device {
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
            guard let found = Self.iapInterface(device, configurations: descriptor.bNumConfigurations) else {
                if selector.vendorID != nil || selector.location != nil {
                    lastProblem = TransportError(.notFound, "\(selector) has no iAP interface (class 0xFF, subclass 0xF0, protocol 0x00) in any configuration")
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
                try claim(opened, found)
                return Device(context: context, handle: opened, interface: found)
            } catch {
                libusb_close(opened)
                lastProblem = error
            }
        }
        let problem = lastProblem
            ?? TransportError(.notFound, selector.vendorID == nil && selector.location == nil ? "no device with an iAP interface is connected" : "no \(selector) is connected")
        throw TransportError(problem.kind, "\(name): \(problem.description)")
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
            guard result == 0 else { throw TransportError("cannot select configuration \(found.configuration)", USBError(result)) }
        }
        var result = libusb_claim_interface(handle, Int32(found.number))
        guard result == 0 else { throw TransportError("cannot claim interface \(found.number)", USBError(result)) }
        if found.alternate != 0 {
            result = libusb_set_interface_alt_setting(handle, Int32(found.number), Int32(found.alternate))
            guard result == 0 else { throw TransportError("cannot select alternate setting \(found.alternate)", USBError(result)) }
        }
        // Stale halts from an earlier session would stall the first transfer.
        _ = libusb_clear_halt(handle, found.endpointIn)
        _ = libusb_clear_halt(handle, found.endpointOut)
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
            let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: Self.readSize)
            libusb_fill_bulk_transfer(transfer, device.handle, device.interface.endpointIn, buffer, Int32(Self.readSize), usbCallback,
                                      Unmanaged.passUnretained(self).toOpaque(), 0)
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
            guard let device = state.device, state.dead == nil, let transfer = libusb_alloc_transfer(0) else { return }
            let endpoint = device.interface.endpointOut
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
            if bytes.count % device.interface.outPacketSize == 0, let zero = libusb_alloc_transfer(0) {
                libusb_fill_bulk_transfer(zero, device.handle, endpoint, nil, 0, usbCallback, Unmanaged.passUnretained(self).toOpaque(), 0)
                _ = submit(zero, &state)
            }
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
        for _ in 0..<Self.inFlight { submitRead() }
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
