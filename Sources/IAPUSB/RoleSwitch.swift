#if canImport(Glibc)
import Glibc
#endif
import CLibUSB
import IAPHotplug
import IAPTransport

/// The role switch (USB-HID-FACTS.md §4): a head unit asks an Apple device
/// to become the USB host with the vendor request 0x40/0x51, as CarPlay head
/// units do; the device acknowledges and leaves the bus, and the head unit
/// then presents its bulk "iAP Interface" as a USB device.
///
/// Blocking (control transfer, then polling the bus): call it from a
/// dedicated thread, never from Swift concurrency's pool.
public enum USBRoleSwitch {
    /// What the head unit asks for: wValue 0 is iAP alone, 1 is with CarPlay
    /// ("Digital iPod Out" in ADIT's words).
    public enum Mode: String, Sendable, CaseIterable {
        case iap
        case carPlay = "carplay"

        var requestValue: UInt16 { self == .carPlay ? 1 : 0 }
    }

    public static let requestType: UInt8 = 0x40
    public static let request: UInt8 = 0x51
    /// ADIT's head-unit stack waits 3 s for the acknowledgement.
    public static let requestTimeoutMilliseconds: UInt32 = 3000
    /// How long the device may take to leave after acknowledging. ADIT's
    /// head-unit stack waits 2 s; a phone that leaves is never hurt by a
    /// longer wait, and the emulated iPhone of the USB lab took 0.8-1.8 s on
    /// an idle machine and over 2 s on a loaded one.
    public static let departureLimit: Duration = .seconds(5)

    /// The device that was asked, as it was on the bus.
    public struct Switched: Sendable, CustomStringConvertible {
        public let vendorID: UInt16
        public let productID: UInt16
        public let bus: UInt8
        public let address: UInt8
        /// How long it took to leave after the request was sent.
        public let departure: Duration
        /// The configuration selected before asking (the one holding the
        /// iAP HID interface), when another was active.
        public let selectedConfiguration: UInt8?

        public var description: String { "\(hex4(vendorID)):\(hex4(productID)) on bus \(bus) device \(address)" }
    }

    /// Sends the role switch to the device `selector` names (or, for
    /// `usb:auto`, the first Apple phone, 05ac:12xx) and waits up to
    /// `departureLimit` for it to leave the bus. Throws `.notFound` when no
    /// such device is connected, `.refused` when it stalls the request (it
    /// does not do the role switch), `.timedOut` when it acknowledged but
    /// stayed, and the libusb error otherwise.
    public static func perform(on selector: USBDeviceSelector, mode: Mode,
                               departureLimit: Duration = departureLimit) throws(TransportError) -> Switched {
        var context: OpaquePointer?
        let result = libusb_init(&context)
        guard result == 0, let context else { throw TransportError("role switch: cannot initialise libusb", USBError(result)) }
        defer { libusb_exit(context) }
        let (device, identity) = try find(selector, in: context)
        defer { libusb_unref_device(device) }
        var handle: OpaquePointer?
        let opened = libusb_open(device, &handle)
        guard opened == 0, let handle else {
            let hint = opened == USBError.access.code ? " (install udev-rules/70-iap-devkit.rules; see Docs/Hardware.md)" : ""
            throw TransportError("role switch: cannot open \(identity)", USBError(opened), hint: hint)
        }
        // The iPhone-shaped gadget, like any FunctionFS device, hears device
        // requests only in the configuration holding its function: the
        // configuration with the iAP HID interface is selected first, as a
        // head unit does to reach that interface (wiomoc sets it before
        // anything else); a real iPhone answers in any configuration.
        var selected: UInt8?
        if let access = USBDescriptors(USBHostTransport.descriptorBytes(device, try descriptor(of: device))).iapAccess, case .hid = access {
            var current: Int32 = 0
            if libusb_get_configuration(handle, &current) == 0, current != Int32(access.configuration) {
                _ = USBHostTransport.detachDrivers(handle)
                let result = libusb_set_configuration(handle, Int32(access.configuration))
                guard result == 0 else {
                    libusb_close(handle)
                    throw TransportError("role switch: cannot select configuration \(access.configuration) of \(identity)", USBError(result))
                }
                selected = access.configuration
            }
        }
        let clock = ContinuousClock()
        let sent = clock.now
        let answer = libusb_control_transfer(handle, requestType, request, mode.requestValue, 0, nil, 0, requestTimeoutMilliseconds)
        // Kept open: a request on it says at once when the device is gone.
        defer { libusb_close(handle) }
        switch libusb_error(rawValue: answer) {
        case LIBUSB_SUCCESS:
            break
        case LIBUSB_ERROR_PIPE:
            throw TransportError(.refused, "role switch: \(identity) stalled the request 0x40/0x51: it does not do the role switch")
        case LIBUSB_ERROR_NO_DEVICE, LIBUSB_ERROR_IO:
            // Gone before the status stage: it left, as asked.
            break
        default:
            throw TransportError("role switch: the request 0x40/0x51 to \(identity) failed", USBError(answer))
        }
        while clock.now - sent < departureLimit {
            if hasLeft(identity, handle, in: context) { return Switched(identity, departure: clock.now - sent, selected: selected) }
            usleep(20_000)
        }
        if hasLeft(identity, handle, in: context) { return Switched(identity, departure: clock.now - sent, selected: selected) }
        throw TransportError(.timedOut, "role switch: \(identity) acknowledged the request but was still on the bus after \(departureLimit)")
    }

    fileprivate struct Identity: CustomStringConvertible {
        let vendorID: UInt16, productID: UInt16, bus: UInt8, address: UInt8
        var description: String { "\(hex4(vendorID)):\(hex4(productID)) on bus \(bus) device \(address)" }
    }

    /// The device to ask, referenced (the caller unrefs it).
    private static func find(_ selector: USBDeviceSelector, in context: OpaquePointer) throws(TransportError) -> (OpaquePointer, Identity) {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(context, &list)
        guard count >= 0, let list else { throw TransportError("role switch: cannot list USB devices", USBError(Int32(count))) }
        defer { libusb_free_device_list(list, 1) }
        for index in 0..<count {
            guard let device = list[index] else { continue }
            var descriptor = libusb_device_descriptor()
            guard libusb_get_device_descriptor(device, &descriptor) == 0 else { continue }
            let bus = libusb_get_bus_number(device), address = libusb_get_device_address(device)
            if let location = selector.location, location.bus != bus || location.address != address { continue }
            if let vendor = selector.vendorID {
                guard descriptor.idVendor == vendor, selector.productID.map({ $0 == descriptor.idProduct }) ?? true else { continue }
            } else if selector.location == nil {
                // usb:auto: only Apple's phones and iPods answer the role switch.
                guard USBDescriptors.isApplePhone(vendorID: descriptor.idVendor, productID: descriptor.idProduct) else { continue }
            }
            libusb_ref_device(device)
            return (device, Identity(vendorID: descriptor.idVendor, productID: descriptor.idProduct, bus: bus, address: address))
        }
        let what = selector.vendorID == nil && selector.location == nil ? "no Apple phone (05ac:12xx)" : "no \(selector)"
        throw TransportError(.notFound, "role switch: \(what) is connected")
    }

    private static func descriptor(of device: OpaquePointer) throws(TransportError) -> libusb_device_descriptor {
        var descriptor = libusb_device_descriptor()
        let result = libusb_get_device_descriptor(device, &descriptor)
        guard result == 0 else { throw TransportError("role switch: cannot read the device descriptor", USBError(result)) }
        return descriptor
    }

    /// Whether the device is still at its bus address (a device that comes
    /// back is given a new address).
    /// Whether the device has left the bus. The kernel knows first: a
    /// request on the open handle (GET_STATUS) ends with "no device" as
    /// soon as it has gone. libusb's device list follows udev's events,
    /// which a loaded machine delivers seconds later (the CI lab saw over
    /// 5 s).
    private static func hasLeft(_ identity: Identity, _ handle: OpaquePointer, in context: OpaquePointer) -> Bool {
        var status: [UInt8] = [0, 0]
        let answer = libusb_control_transfer(handle, 0x80, 0x00, 0, 0, &status, 2, 100)
        return answer == LIBUSB_ERROR_NO_DEVICE.rawValue || !isPresent(identity, in: context)
    }

    private static func isPresent(_ identity: Identity, in context: OpaquePointer) -> Bool {
        var list: UnsafeMutablePointer<OpaquePointer?>?
        let count = libusb_get_device_list(context, &list)
        guard count >= 0, let list else { return true }
        defer { libusb_free_device_list(list, 1) }
        for index in 0..<count {
            guard let device = list[index],
                  libusb_get_bus_number(device) == identity.bus, libusb_get_device_address(device) == identity.address else { continue }
            var descriptor = libusb_device_descriptor()
            if libusb_get_device_descriptor(device, &descriptor) == 0, descriptor.idVendor == identity.vendorID,
               descriptor.idProduct == identity.productID {
                return true
            }
        }
        return false
    }
}

extension USBRoleSwitch.Switched {
    fileprivate init(_ identity: USBRoleSwitch.Identity, departure: Duration, selected: UInt8?) {
        self.init(vendorID: identity.vendorID, productID: identity.productID, bus: identity.bus, address: identity.address,
                  departure: departure, selectedConfiguration: selected)
    }
}
