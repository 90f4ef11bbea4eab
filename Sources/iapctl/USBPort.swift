#if canImport(Glibc)
import Glibc
#endif
import IAPTransport
import SystemPackage

/// This machine's USB port as sysfs shows it: the device controllers
/// (/sys/class/udc) a configfs gadget binds to, the kernel's USB role
/// switches (/sys/class/usb_role) that turn an OTG port into a host or a
/// device, and the host controllers (/sys/bus/usb/devices/usbN). What the
/// role switch needs on either side; blocking file writes, so callers run
/// them off Swift concurrency's pool (`DedicatedThread.run`).
enum USBPort {
    static let udcClass = "/sys/class/udc"
    static let roleClass = "/sys/class/usb_role"
    static let usbDevices = "/sys/bus/usb/devices"

    /// The device controllers, by name.
    static func deviceControllers() -> [String] { entries(of: udcClass) }

    /// The kernel's USB role switches, by name.
    static func roleSwitches() -> [String] { entries(of: roleClass) }

    /// Whether this machine has a USB host controller (a root hub).
    static func hasHostController() -> Bool {
        entries(of: usbDevices).contains { $0.hasPrefix("usb") && Int($0.dropFirst(3)) != nil }
    }

    /// `requested`, or for `auto` the first device controller.
    static func resolveUDC(_ requested: String) throws -> String {
        guard requested == "auto" else { return requested }
        guard let first = deviceControllers().first else {
            throw CommandFailure(message: "\(udcClass) is empty: this machine has no USB device controller (load one; dummy_hcd in the lab)")
        }
        return first
    }

    /// Binds the configfs gadget to a device controller (`auto`: the first);
    /// returns its name.
    @discardableResult
    static func bind(gadget: String, to requested: String) throws -> String {
        let name = try resolveUDC(requested)
        try write(name + "\n", to: gadget + "/UDC", failing: "binding \(gadget) to \(name)",
                  hint: " (run scripts/gadget-setup.sh as root first)")
        return name
    }

    /// Unbinds the configfs gadget (it leaves the bus); returns the device
    /// controller it was bound to, nil when it was not bound.
    @discardableResult
    static func unbind(gadget: String) throws -> String? {
        let bound = read(gadget + "/UDC")?.filter { !$0.isWhitespace }
        guard let bound, !bound.isEmpty else { return nil }
        try write("\n", to: gadget + "/UDC", failing: "unbinding \(gadget) from \(bound)")
        return bound
    }

    /// Puts every role switch in `role` ("host" or "device"); returns their
    /// names (none: the machine has no role switch, and its ports keep the
    /// roles they have).
    static func setRole(_ role: String) throws -> [String] {
        let switches = roleSwitches()
        for name in switches {
            try write(role + "\n", to: "\(roleClass)/\(name)/role", failing: "switching \(name) to \(role)")
        }
        return switches
    }

    static func read(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 256)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        return count < 0 ? nil : String(decoding: buffer.prefix(count), as: UTF8.self)
    }

    private static func write(_ text: String, to path: String, failing what: String, hint: String = "") throws {
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CommandFailure(message: "\(what): cannot open \(path): \(Errno(rawValue: errno).description)\(hint)") }
        defer { close(fd) }
        // One write: a sysfs attribute takes its value in one.
        if case .failure(let error) = Array(text.utf8).withUnsafeBytes({ SystemCall.write(fd, $0) }) {
            throw CommandFailure(message: "\(what) failed: \(error)")
        }
    }

    private static func entries(of directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if !name.hasPrefix(".") { names.append(name) }
        }
        return names.sorted()
    }
}
