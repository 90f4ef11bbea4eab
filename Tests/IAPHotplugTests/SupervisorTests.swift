import Foundation
import Testing
import IAPHotplug
import IAPLink
import IAPWire

let iPhone = USBDeviceInfo(syspath: "/sys/devices/pci0000:00/0000:00:14.0/usb1/1-2", bus: 1, address: 5, vendorID: 0x05AC, productID: 0x12A8)
let rig = USBDeviceInfo(syspath: "/sys/devices/platform/dummy_hcd.0/usb3/3-1", bus: 3, address: 2, vendorID: 0x1209, productID: 0x0001)
let keyboard = USBDeviceInfo(syspath: "/sys/devices/usb1/1-3", bus: 1, address: 7, vendorID: 0x046D, productID: 0xC31C)

func ms(_ value: Int64) -> LinkInstant { .milliseconds(value) }

@Suite struct HotplugEventTests {
    @Test func addAndRemoveAreReadFromUdevProperties() {
        let add: [String: String] = ["ACTION": "add", "SUBSYSTEM": "usb", "DEVTYPE": "usb_device", "DEVPATH": "/devices/usb1/1-2",
                                     "PRODUCT": "5ac/12a8/1107", "BUSNUM": "001", "DEVNUM": "005"]
        #expect(HotplugEvent(udevProperties: add) == .added(USBDeviceInfo(syspath: "/sys/devices/usb1/1-2", bus: 1, address: 5, vendorID: 0x05AC, productID: 0x12A8)))
        // Remove events lack idVendor/idProduct attributes; PRODUCT still names the device.
        var remove = add
        remove["ACTION"] = "remove"
        #expect(HotplugEvent(udevProperties: remove)?.device.vendorID == 0x05AC)
        guard case .removed? = HotplugEvent(udevProperties: remove) else {
            Issue.record("remove not read")
            return
        }
    }

    @Test func bindUnbindInterfacesAndOtherSubsystemsAreNotHotplug() {
        let base: [String: String] = ["SUBSYSTEM": "usb", "DEVTYPE": "usb_device", "DEVPATH": "/devices/usb1/1-2", "PRODUCT": "5ac/12a8/1107"]
        for action in ["bind", "unbind", "change"] {
            var properties = base
            properties["ACTION"] = action
            #expect(HotplugEvent(udevProperties: properties) == nil, "\(action)")
        }
        var interface = base
        interface["ACTION"] = "add"
        interface["DEVTYPE"] = "usb_interface"
        #expect(HotplugEvent(udevProperties: interface) == nil)
        var block = base
        block["ACTION"] = "add"
        block["SUBSYSTEM"] = "block"
        #expect(HotplugEvent(udevProperties: block) == nil)
    }

    @Test func matcherTakesAppleAndTheTestRigOnly() {
        #expect(DeviceMatcher.iapDevices.matches(iPhone))
        #expect(DeviceMatcher.iapDevices.matches(rig))
        #expect(!DeviceMatcher.iapDevices.matches(keyboard))
        #expect(!DeviceMatcher.iapDevices.matches(USBDeviceInfo(syspath: "/x", vendorID: 0x1209, productID: 0x0002)))
    }
}

@Suite struct SupervisorTests {
    @Test func aDevicePresentAtStartIsConnectedAndReportedOnce() {
        var supervisor = DeviceSupervisor()
        // Enumeration at start feeds the same event as a hotplug add.
        #expect(supervisor.hotplug(.added(iPhone), now: ms(0)) == [.open(iPhone, attempt: 1)])
        #expect(supervisor.hotplug(.added(iPhone), now: ms(1)).isEmpty, "a device is opened once")
        #expect(supervisor.hotplug(.added(keyboard), now: ms(1)).isEmpty)
        #expect(supervisor.opened(iPhone.syspath) == [.connected(connection: 1, iPhone)])
        #expect(supervisor.connected == [1: iPhone])
    }

    @Test func disconnectIsReportedExactlyOnceWhicheverSignalComesFirst() {
        for order in [["remove", "transfer", "link"], ["transfer", "remove", "link"], ["link", "transfer", "remove"]] {
            var supervisor = DeviceSupervisor()
            _ = supervisor.hotplug(.added(iPhone), now: ms(0))
            _ = supervisor.opened(iPhone.syspath)
            var reports: [DeviceSupervisor.Action] = []
            for signal in order {
                switch signal {
                case "remove": reports += supervisor.hotplug(.removed(iPhone), now: ms(10))
                case "transfer": reports += supervisor.connectionEnded(1, reason: "transfer error: no device")
                default: reports += supervisor.connectionEnded(1, reason: "link down: RST")
                }
            }
            let disconnects = reports.filter { if case .disconnected = $0 { true } else { false } }
            #expect(disconnects.count == 1, "\(order)")
            #expect(reports.filter { $0 == .close(connection: 1) }.count == 1)
            #expect(supervisor.connected.isEmpty)
        }
    }

    @Test func theNextPlugIsAFreshConnection() {
        var supervisor = DeviceSupervisor()
        var connects: [Int] = []
        var disconnects: [Int] = []
        for cycle in 0..<100 {
            let now = ms(Int64(cycle) * 100)
            for action in supervisor.hotplug(.added(rig), now: now) + supervisor.opened(rig.syspath) + supervisor.hotplug(.removed(rig), now: now) {
                if case .connected(let number, _) = action { connects.append(number) }
                if case .disconnected(let number, _, _) = action { disconnects.append(number) }
            }
        }
        #expect(connects == Array(1...100))
        #expect(disconnects == Array(1...100), "no missed or doubled disconnects over 100 plug cycles")
    }

    @Test func openingIsRetriedWithBackoffWhileUdevFixesPermissions() {
        var supervisor = DeviceSupervisor(configuration: .init(firstRetry: .milliseconds(100), maximumRetry: .milliseconds(400), maximumAttempts: 5))
        _ = supervisor.hotplug(.added(iPhone), now: ms(0))
        var retries: [Int64] = []
        var now = ms(0)
        for _ in 0..<3 {
            #expect(supervisor.openFailed(iPhone.syspath, reason: "permission denied", retryable: true, now: now).isEmpty)
            guard let due = supervisor.nextDeadline else { Issue.record("no retry scheduled"); return }
            retries.append((due.nanoseconds - now.nanoseconds) / 1_000_000)
            now = due
            #expect(supervisor.tick(now: now).count == 1)
        }
        #expect(retries == [100, 200, 400])
        #expect(supervisor.opened(iPhone.syspath) == [.connected(connection: 1, iPhone)])
    }

    @Test func givingUpSaysWhy() {
        var supervisor = DeviceSupervisor(configuration: .init(maximumAttempts: 2))
        _ = supervisor.hotplug(.added(iPhone), now: ms(0))
        _ = supervisor.openFailed(iPhone.syspath, reason: "permission denied", retryable: true, now: ms(0))
        _ = supervisor.tick(now: ms(1000))
        let final = supervisor.openFailed(iPhone.syspath, reason: "permission denied", retryable: true, now: ms(1000))
        #expect(final == [.gaveUp(iPhone, reason: "permission denied (after 2 attempts)")])
        var other = DeviceSupervisor()
        _ = other.hotplug(.added(rig), now: ms(0))
        #expect(other.openFailed(rig.syspath, reason: "no iAP interface", retryable: false, now: ms(0)) == [.gaveUp(rig, reason: "no iAP interface")])
        // Removal while still opening reports nothing: there was no connection.
        var third = DeviceSupervisor()
        _ = third.hotplug(.added(rig), now: ms(0))
        #expect(third.hotplug(.removed(rig), now: ms(1)).isEmpty)
    }

    @Test func aFloodOfDevicesIsBounded() {
        var supervisor = DeviceSupervisor(configuration: .init(maximumDevices: 4))
        var opened = 0
        for index in 0..<50 {
            let device = USBDeviceInfo(syspath: "/sys/x/\(index)", vendorID: 0x05AC, productID: 1)
            for case .open in supervisor.hotplug(.added(device), now: ms(0)) { opened += 1 }
        }
        #expect(opened == 4)
    }
}

@Suite struct UdevRulesTests {
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("udev-rules/70-iap-devkit.rules")

    @Test func rulesGrantTheUserAndAGroupNeverTheWorld() throws {
        let text = try String(contentsOf: Self.rules, encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        #expect(lines.contains { $0.contains(#"TAG+="uaccess""#) })
        #expect(lines.contains { $0.contains(#"GROUP="plugdev""#) })
        for line in lines where line.contains("MODE=") {
            #expect(line.contains(#"MODE="0660""#), "a mode other than 0660: \(line)")
        }
        #expect(!text.contains("0666") && !text.contains("0777"))
        // Matching uses PRODUCT, which remove events carry too.
        #expect(lines.contains { $0.contains(#"ENV{PRODUCT}=="5ac/*""#) })
        #expect(lines.contains { $0.contains(#"ENV{PRODUCT}=="1209/1/*""#) })
        #expect(!lines.contains { $0.contains("ATTR{idVendor}") }, "attributes are gone on remove: match on ENV{PRODUCT}")
        // The ids the rules name are the ones the supervisor takes.
        #expect(DeviceMatcher.iapDevices.rules.map(\.vendorID).sorted() == [0x05AC, 0x1209])
    }
}
