#if canImport(Glibc)
import Glibc
#endif
import CLibUDev
import IAPHotplug
import IAPTransport
import SystemPackage

/// A libudev failure, saying which call failed and why.
public struct UdevError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// A USB device as udev and sysfs describe it.
public struct UdevUSBDevice: Hashable, Sendable {
    public var info: USBDeviceInfo
    public var manufacturer: String?
    public var product: String?
    public var serial: String?
    /// The usbfs node (`/dev/bus/usb/BBB/DDD`) that libusb opens.
    public var devnode: String?
    /// Link speed in Mbit/s as sysfs writes it ("480", "12", ...).
    public var speed: String?
    public var activeConfiguration: UInt8?
    /// All configurations with their interfaces and endpoints.
    public var descriptors: USBDescriptors?

    /// Whether this process may open the device node for reading and
    /// writing (what libusb needs), and the reason when not.
    public var access: (allowed: Bool, problem: String?) {
        guard let devnode else { return (false, "no device node") }
        if Glibc.access(devnode, R_OK | W_OK) == 0 { return (true, nil) }
        return (false, "\(devnode): \(Errno(rawValue: errno).description)")
    }
}

/// Reading USB devices from udev: enumeration of what is plugged in now.
public enum UdevUSB {
    /// Every USB device (not interfaces) present now, in sysfs path order.
    public static func presentDevices() throws(UdevError) -> [UdevUSBDevice] {
        guard let udev = udev_new() else { throw UdevError("udev_new failed: \(Errno(rawValue: errno).description)") }
        defer { udev_unref(udev) }
        return try presentDevices(udev).compactMap { describe($0, action: "add")?.device }
    }

    /// Enumerates usb_device entries; each returned handle is owned by the caller.
    static func presentDevices(_ udev: OpaquePointer) throws(UdevError) -> [OpaquePointer] {
        guard let enumerate = udev_enumerate_new(udev) else { throw UdevError("udev_enumerate_new failed") }
        defer { udev_enumerate_unref(enumerate) }
        udev_enumerate_add_match_subsystem(enumerate, "usb")
        udev_enumerate_add_match_property(enumerate, "DEVTYPE", "usb_device")
        let status = udev_enumerate_scan_devices(enumerate)
        guard status >= 0 else { throw UdevError("cannot enumerate USB devices: \(Errno(rawValue: -status).description)") }
        var devices: [OpaquePointer] = []
        var entry = udev_enumerate_get_list_entry(enumerate)
        while let current = entry {
            if let path = udev_list_entry_get_name(current), let device = udev_device_new_from_syspath(udev, path) {
                devices.append(device)
            }
            entry = udev_list_entry_get_next(current)
        }
        return devices
    }

    /// Reads a udev device (and unrefs it). `action` stands in for events
    /// from enumeration, which carry none. Nil when it is not a whole USB
    /// device, or an event other than add or remove.
    static func describe(_ device: OpaquePointer, action: String) -> (added: Bool, device: UdevUSBDevice)? {
        defer { udev_device_unref(device) }
        var properties: [String: String] = ["ACTION": action]
        var entry = udev_device_get_properties_list_entry(device)
        while let current = entry {
            if let name = udev_list_entry_get_name(current) {
                properties[String(cString: name)] = udev_list_entry_get_value(current).map { String(cString: $0) } ?? ""
            }
            entry = udev_list_entry_get_next(current)
        }
        if let action = udev_device_get_action(device) { properties["ACTION"] = String(cString: action) }
        guard let event = HotplugEvent(udevProperties: properties) else { return nil }
        var result = UdevUSBDevice(info: event.device)
        result.devnode = properties["DEVNAME"]
        guard case .added = event else { return (false, result) } // a removed device has no attributes left to read
        func attribute(_ name: String) -> String? {
            udev_device_get_sysattr_value(device, name).map { String(cString: $0).trimmingTrailingWhitespace }
        }
        result.manufacturer = attribute("manufacturer")
        result.product = attribute("product")
        result.serial = attribute("serial")
        result.speed = attribute("speed")
        result.activeConfiguration = attribute("bConfigurationValue").flatMap { UInt8($0) }
        result.descriptors = readDescriptors(result.info.syspath + "/descriptors")
        return (true, result)
    }

    /// The sysfs `descriptors` file holds binary bytes (NULs included), so it
    /// is read as a file, at most 64 KiB.
    static func readDescriptors(_ path: String) -> USBDescriptors? {
        readBinary(path, limit: 65536).map { USBDescriptors($0) }
    }

    /// A binary sysfs file, at most `limit` bytes; nil when it cannot be opened.
    static func readBinary(_ path: String, limit: Int) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            guard case .success(let count) = chunk.withUnsafeMutableBytes({ SystemCall.read(fd, into: $0) }), count > 0 else { break }
            bytes += chunk[..<min(count, limit - bytes.count)]
        }
        return bytes
    }
}

extension UdevUSBDevice {
    /// A HID interface's report descriptor as the kernel read it: there
    /// only while the interface's configuration is active and a HID driver
    /// holds it (`<device>/<port>:<configuration>.<interface>/<hid device>/report_descriptor`).
    public func hidReportDescriptor(configuration: UInt8, interface: UInt8, limit: Int) -> [UInt8]? {
        guard activeConfiguration == configuration, let port = info.syspath.split(separator: "/").last else { return nil }
        let directory = "\(info.syspath)/\(port):\(configuration).\(interface)"
        guard let entries = opendir(directory) else { return nil }
        defer { closedir(entries) }
        while let entry = readdir(entries) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            // HID devices are named BUS:VENDOR:PRODUCT.INSTANCE, e.g. 0003:05AC:12A8.0001.
            guard name.split(separator: ":").count == 3, name.contains(".") else { continue }
            if let bytes = UdevUSB.readBinary("\(directory)/\(name)/report_descriptor", limit: limit) { return bytes }
        }
        return nil
    }
}

extension String {
    var trimmingTrailingWhitespace: String {
        var result = Substring(self)
        while let last = result.last, last.isWhitespace { result.removeLast() }
        return String(result)
    }
}
