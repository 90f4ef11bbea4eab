/// A USB device as the hotplug source describes it.
public struct USBDeviceInfo: Hashable, Sendable {
    /// The sysfs path: the one identity that add and remove events share.
    public var syspath: String
    public var bus: UInt16?
    public var address: UInt8?
    public var vendorID: UInt16?
    public var productID: UInt16?

    public init(syspath: String, bus: UInt16? = nil, address: UInt8? = nil, vendorID: UInt16? = nil, productID: UInt16? = nil) {
        self.syspath = syspath
        self.bus = bus
        self.address = address
        self.vendorID = vendorID
        self.productID = productID
    }
}

/// A device arriving or leaving. Everything else a udev monitor reports for
/// USB devices (bind, unbind, change) is not a hotplug event.
public enum HotplugEvent: Hashable, Sendable {
    case added(USBDeviceInfo)
    case removed(USBDeviceInfo)

    public var device: USBDeviceInfo {
        switch self {
        case .added(let device), .removed(let device): device
        }
    }

    /// Reads a udev event from its properties (ACTION, SUBSYSTEM, DEVTYPE,
    /// DEVPATH, PRODUCT, BUSNUM, DEVNUM). Returns nil for events that are
    /// not the add or remove of a whole USB device: interfaces, bind and
    /// unbind, change. Remove events carry no idVendor/idProduct attributes,
    /// so the ids come from `PRODUCT` ("vid/pid/bcdDevice" in hex without
    /// leading zeros), which both actions carry.
    public init?(udevProperties properties: [String: String]) {
        guard properties["SUBSYSTEM"] == "usb", properties["DEVTYPE"] == "usb_device",
              let devpath = properties["DEVPATH"], !devpath.isEmpty else { return nil }
        var device = USBDeviceInfo(syspath: "/sys" + devpath)
        if let product = properties["PRODUCT"] {
            let parts = product.split(separator: "/")
            if parts.count >= 2 {
                device.vendorID = UInt16(parts[0], radix: 16)
                device.productID = UInt16(parts[1], radix: 16)
            }
        }
        device.bus = properties["BUSNUM"].flatMap { UInt16($0) }
        device.address = properties["DEVNUM"].flatMap { UInt8($0) }
        switch properties["ACTION"] {
        case "add": self = .added(device)
        case "remove": self = .removed(device)
        default: return nil
        }
    }
}

/// Which devices the supervisor takes: by vendor and product id (a product
/// of nil is any product of the vendor).
public struct DeviceMatcher: Hashable, Sendable {
    public struct Rule: Hashable, Sendable {
        public var vendorID: UInt16
        public var productID: UInt16?
        public init(vendorID: UInt16, productID: UInt16? = nil) {
            self.vendorID = vendorID
            self.productID = productID
        }
    }

    public var rules: [Rule]
    public init(_ rules: [Rule]) { self.rules = rules }

    /// Apple's vendor id and the project's test hardware (the pid.codes test id).
    public static let iapDevices = DeviceMatcher([Rule(vendorID: 0x05AC), Rule(vendorID: 0x1209, productID: 0x0001)])

    public func matches(_ device: USBDeviceInfo) -> Bool {
        guard let vendor = device.vendorID else { return false }
        return rules.contains { $0.vendorID == vendor && ($0.productID == nil || $0.productID == device.productID) }
    }
}
