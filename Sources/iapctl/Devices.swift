import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPHotplug
import IAPTrace
import IAPUdev
import IAPWire

struct Devices: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the USB devices this stack can talk to, their iAP interface and whether you may open them.",
        discussion: """
        Lists devices with Apple's vendor id, the project's test hardware
        (1209:0001) or an iAP interface (class 0xFF, subclass 0xF0, protocol
        0x00) in any configuration: bus and address, ids, strings, speed, how it
        carries iAP (the bulk iAP interface with its endpoints, or, on an Apple
        phone, iAP over HID: the HID interface, its configuration, which is
        selected when the device is opened, and its report sizes when the kernel
        has read them), the transport name to pass to
        `--transport`, and whether this user may open the device node (with the
        fix when not). `--all` lists every USB device. A last line says how many
        were found.

        `--json` writes one object per device per line: syspath, bus, address,
        vendor_id, product_id (four hex digits), manufacturer, product, serial,
        speed_mbps, devnode, active_configuration, matches (the supervisor would
        take it), iap_interface (configuration, interface, endpoint_in,
        endpoint_out, max_packet_size, or null; with kind "bulk" or "hid", and for
        hid also report_descriptor_length, input_reports and output_reports, each
        a list of {id, count} or null until the kernel has read the descriptor),
        transport, access, access_problem;
        the count goes to standard error.

        The exit status is 1 when USB devices cannot be listed here (no
        /sys/bus/usb: a kernel without USB, or sysfs not mounted), 0 otherwise,
        also when none is found.
        """
    )

    @Flag(help: "List every USB device, not only iAP ones.")
    var all = false

    @Flag(help: "One JSON object per device per line.")
    var json = false

    func run() throws {
        if let problem = USBHost.problem(watching: false) { throw CommandFailure(message: "cannot list USB devices: \(problem)") }
        let devices: [UdevUSBDevice]
        do {
            devices = try UdevUSB.presentDevices()
        } catch {
            throw CommandFailure(message: "cannot list USB devices: \(error)")
        }
        let shown = devices.filter { all || $0.isCandidate }
        for device in shown {
            print(json ? USBDeviceText.json(device) : USBDeviceText.line(device))
        }
        let summary = USBDeviceText.summary(shown: shown, of: devices, all: all)
        if json { printError(summary) } else { print(summary) }
    }
}

struct Monitor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch USB devices come and go (udev hotplug events), live.",
        discussion: """
        Reports the devices present at start ("present"), then each one plugged in
        ("add") or unplugged ("remove"), for iAP devices by default (Apple's
        vendor id, 1209:0001, or an iAP interface) and every USB device with
        `--all`. Bind, unbind and change events are not hotplug and are not shown.
        Runs until interrupted, or until --count events. Needs /sys/bus/usb and
        a running udev daemon (systemd-udevd); without either it says so and
        exits with status 1.

        `--json` writes one object per event per line: event, time (seconds since
        the start), and the device fields of `iapctl devices --json` (a removed
        device has only syspath, bus, address, vendor_id, product_id, devnode,
        matches).
        """
    )

    @Flag(help: "Every USB device, not only iAP ones.")
    var all = false

    @Flag(help: "One JSON object per event per line.")
    var json = false

    @Option(parsing: .unconditional, help: "Stop after this many events (present devices included).")
    var count: Int?

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() async throws {
        // Without udevd, libudev's monitor opens but never hears anything: fail instead of waiting forever.
        if let problem = USBHost.problem(watching: true) { throw CommandFailure(message: "cannot watch USB devices: \(problem)") }
        let monitor: UdevMonitor
        let (events, feed) = AsyncStream.makeStream(of: UdevMonitor.Event.self, bufferingPolicy: .bufferingNewest(1024))
        do {
            monitor = try UdevMonitor()
            try monitor.start { feed.yield($0) }
        } catch {
            throw CommandFailure(message: "cannot watch USB devices: \(error)")
        }
        defer { monitor.stop() }
        let clock = ContinuousClock()
        let start = clock.now
        var reported = 0
        // Removes lack the attributes that made a device a candidate: remember what was shown.
        var shown = Set<String>()
        for await event in events {
            let kind: String, device: UdevUSBDevice
            switch event {
            case .present(let present): (kind, device) = ("present", present)
            case .added(let added): (kind, device) = ("add", added)
            case .removed(let removed): (kind, device) = ("remove", removed)
            case .failed(let reason): throw CommandFailure(message: "the udev monitor stopped: \(reason)")
            }
            if kind == "remove" {
                guard all || shown.remove(device.info.syspath) != nil || device.isCandidate else { continue }
            } else {
                guard all || device.isCandidate else { continue }
                shown.insert(device.info.syspath)
            }
            let milliseconds = Int(((clock.now - start) / .milliseconds(1)).rounded())
            let secondsText = "\(milliseconds / 1000).\(String(milliseconds % 1000).leftPadded(to: 3))"
            if json {
                print(USBDeviceText.json(device, leading: [("event", JSONObjectWriter.quoted(kind)), ("time", secondsText)]))
            } else {
                print("[\(secondsText)] \(kind.padded(to: 7)) \(kind == "remove" ? USBDeviceText.short(device) : USBDeviceText.line(device))")
            }
            fflush(nil) // each event as it happens, also into a pipe or file
            reported += 1
            if let count, reported >= count { return }
        }
    }
}

/// Whether this machine shows USB devices at all: sysfs's USB bus for
/// listing, and a udev daemon for watching them come and go.
enum USBHost {
    static func problem(watching: Bool) -> String? {
        if access("/sys/bus/usb", F_OK) != 0 {
            return "this machine has no /sys/bus/usb (a kernel without USB, or sysfs not mounted, as in some containers)"
        }
        if watching && access("/run/udev/control", F_OK) != 0 {
            return "no udev daemon is running (no /run/udev/control; containers usually have none), so devices coming and going cannot be seen"
        }
        return nil
    }
}

extension UdevUSBDevice {
    /// A device the stack would talk to: a known vendor/product or an iAP interface.
    var isCandidate: Bool { DeviceMatcher.iapDevices.matches(info) || descriptors?.iapAccess != nil }

    /// The reports of a HID iAP interface, when the kernel has read its
    /// report descriptor (its configuration active, a HID driver holding
    /// it); otherwise the transport reads them when it opens the device.
    func hidReports(configuration: UInt8, interface: UInt8) -> Result<IAPHIDReports, WireError>? {
        guard let bytes = hidReportDescriptor(configuration: configuration, interface: interface, limit: IAPHIDReports.maximumDescriptorLength)
        else { return nil }
        do { return .success(try IAPHIDReports(descriptor: bytes)) } catch { return .failure(error) }
    }

    var transportName: String? {
        guard let vendor = info.vendorID, let product = info.productID else { return nil }
        return "usb:\(hex4(vendor)):\(hex4(product))"
    }
}

/// How `devices` and `monitor` print a device, as text and as JSON.
enum USBDeviceText {
    /// What `devices` found: `shown` of `devices`, every device with `all`.
    static func summary(shown: [UdevUSBDevice], of devices: [UdevUSBDevice], all: Bool) -> String {
        if devices.isEmpty { return "no USB devices found" }
        let total = TraceText.counted(devices.count, "USB device")
        if all {
            let iap = devices.filter { $0.descriptors?.iapAccess != nil }.count
            return "\(total), \(iap == 0 ? "none" : String(iap)) with an iAP interface"
        }
        if shown.isEmpty { return "no iAP devices among \(total) (--all lists them)" }
        return "\(TraceText.counted(shown.count, "iAP device")) among \(total) (--all lists every one)"
    }

    static func short(_ device: UdevUSBDevice) -> String {
        let ids = "\(device.info.vendorID.map(hex4) ?? "????"):\(device.info.productID.map(hex4) ?? "????")"
        let location = device.info.bus.map { "bus \(pad3($0)) device \(device.info.address.map { pad3(UInt16($0)) } ?? "???")" } ?? device.info.syspath
        return "\(location)  \(ids)"
    }

    static func line(_ device: UdevUSBDevice) -> String {
        var parts = [short(device)]
        let name = [device.manufacturer, device.product].compactMap { $0 }.joined(separator: " ")
        if !name.isEmpty { parts.append(name + (device.serial.map { " (serial \($0))" } ?? "")) }
        if let speed = device.speed { parts.append("\(speed) Mbit/s") }
        switch device.descriptors?.iapAccess {
        case .bulk(let configuration, let interface)?:
            if let input = interface.bulkIn, let output = interface.bulkOut {
                parts.append("bulk iAP interface \(interface.number) in configuration \(configuration): bulk IN 0x\(hex2(input.address)), OUT 0x\(hex2(output.address)), \(input.maxPacketSize)-byte packets")
            }
        case .hid(let configuration, let interface)?:
            var text = "iAP over HID: interface \(interface.number) in configuration \(configuration)"
            if let active = device.activeConfiguration, active != configuration { text += " (active: \(active); selected when opened)" }
            if let input = interface.interruptIn { text += ", interrupt IN 0x\(hex2(input.address))" }
            if let length = interface.reportDescriptorLength { text += ", report descriptor \(length) bytes" }
            switch device.hidReports(configuration: configuration, interface: interface.number) {
            case .success(let reports)?:
                text += ", reports in \(reports.input.map(\.description).joined(separator: " ")), out \(reports.output.map(\.description).joined(separator: " "))"
            case .failure(let error)?: text += ", its report descriptor offers no iAP reports (\(error.detail))"
            case nil: text += ", report sizes read when opened"
            }
            parts.append(text)
        case nil:
            parts.append("no iAP interface")
        }
        let access = device.access
        if access.allowed {
            if let transport = device.transportName, device.descriptors?.iapAccess != nil { parts.append("use --transport \(transport)") }
        } else {
            parts.append("cannot open (\(access.problem ?? "no access")): install udev-rules/70-iap-devkit.rules and replug (Docs/Hardware.md)")
        }
        return parts.joined(separator: "  ")
    }

    static func json(_ device: UdevUSBDevice, leading: [(String, String)] = []) -> String {
        var object = JSONObjectWriter()
        for (key, rawValue) in leading { object.raw(key, rawValue) }
        object.string("syspath", device.info.syspath)
        object.raw("bus", device.info.bus.map { String($0) } ?? "null")
        object.raw("address", device.info.address.map { String($0) } ?? "null")
        object.stringOrNull("vendor_id", device.info.vendorID.map(hex4))
        object.stringOrNull("product_id", device.info.productID.map(hex4))
        object.stringOrNull("devnode", device.devnode)
        object.bool("matches", DeviceMatcher.iapDevices.matches(device.info))
        guard let descriptors = device.descriptors else { return object.finish() } // a removed device: nothing more to read
        object.stringOrNull("manufacturer", device.manufacturer)
        object.stringOrNull("product", device.product)
        object.stringOrNull("serial", device.serial)
        object.raw("speed_mbps", device.speed.flatMap { Double($0) }.map { $0 == $0.rounded() ? String(Int($0)) : String($0) } ?? "null")
        object.raw("active_configuration", device.activeConfiguration.map { String($0) } ?? "null")
        switch descriptors.iapAccess {
        case .bulk(let configuration, let interface)? where interface.bulkIn != nil && interface.bulkOut != nil:
            var iap = JSONObjectWriter()
            iap.integer("configuration", Int(configuration))
            iap.integer("interface", Int(interface.number))
            iap.string("endpoint_in", "0x" + hex2(interface.bulkIn!.address))
            iap.string("endpoint_out", "0x" + hex2(interface.bulkOut!.address))
            iap.integer("max_packet_size", Int(interface.bulkIn!.maxPacketSize))
            iap.string("kind", "bulk")
            object.raw("iap_interface", iap.finish())
        case .hid(let configuration, let interface)?:
            var iap = JSONObjectWriter()
            iap.integer("configuration", Int(configuration))
            iap.integer("interface", Int(interface.number))
            iap.stringOrNull("endpoint_in", interface.interruptIn.map { "0x" + hex2($0.address) })
            iap.raw("endpoint_out", "null")
            iap.raw("max_packet_size", interface.interruptIn.map { String($0.maxPacketSize) } ?? "null")
            iap.raw("report_descriptor_length", interface.reportDescriptorLength.map(String.init) ?? "null")
            func sizes(_ reports: [IAPHIDReports.Report]) -> String {
                "[" + reports.map { "{\"id\":\($0.id),\"count\":\($0.count)}" }.joined(separator: ",") + "]"
            }
            if case .success(let reports)? = device.hidReports(configuration: configuration, interface: interface.number) {
                iap.raw("input_reports", sizes(reports.input))
                iap.raw("output_reports", sizes(reports.output))
            } else {
                iap.raw("input_reports", "null")
                iap.raw("output_reports", "null")
            }
            iap.string("kind", "hid")
            object.raw("iap_interface", iap.finish())
        default:
            object.raw("iap_interface", "null")
        }
        object.stringOrNull("transport", device.transportName)
        let access = device.access
        object.bool("access", access.allowed)
        object.stringOrNull("access_problem", access.problem)
        return object.finish()
    }

    private static func pad3(_ value: UInt16) -> String { String(value).leftPadded(to: 3) }
}

func hex2(_ value: UInt8) -> String { String(value, radix: 16).leftPadded(to: 2) }
func hex4(_ value: UInt16) -> String { String(value, radix: 16).leftPadded(to: 4) }

extension String {
    /// Zero-padded on the left to `width` characters.
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
    func padded(to width: Int) -> String { self + String(repeating: " ", count: max(0, width - count)) }
}
