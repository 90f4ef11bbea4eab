import ArgumentParser
import Synchronization
import IAPScreen
import IAPTransport
import IAPUSB

extension USBRoleSwitch.Mode: ExpressibleByArgument {}

/// The head unit's side of the role switch (USB-HID-FACTS.md §4): ask the
/// phone to become the USB host, then present the bulk "iAP Interface" as
/// a USB device on this machine's device port.
struct RoleSwitchOptions: ParsableArguments {
    @Option(defaultAsFlag: USBRoleSwitch.Mode.iap,
            help: ArgumentHelp("With a usb: transport: ask the phone to become the USB host (vendor request 0x40/0x51, as CarPlay head units do), wait up to 5 s for it to leave the bus, then run as the USB device presenting the bulk iAP Interface (the gadget --gadget names, set up with scripts/gadget-setup.sh --identity accessory). carplay asks with CarPlay (wValue 1); CarPlay itself is not served.",
                               valueName: "iap|carplay"),
            completion: .list(USBRoleSwitch.Mode.allCases.map(\.rawValue)))
    var roleSwitch: USBRoleSwitch.Mode?

    @Option(help: ArgumentHelp("With --role-switch: the configfs gadget that presents the iAP Interface.", valueName: "directory"),
            completion: .directory)
    var gadget: String = "/sys/kernel/config/usb_gadget/iapaccessory"

    @Option(help: ArgumentHelp("With --role-switch: where that gadget's functionfs is mounted.", valueName: "directory"),
            completion: .directory)
    var ffs: String = "/dev/ffs-accessory"

    @Option(help: ArgumentHelp("With --role-switch: the device controller to bind the gadget to (a name from /sys/class/udc, or auto for the first).",
                               valueName: "name|auto"))
    var udc: String = "auto"

    func validate(transport: TransportSpec) throws {
        guard roleSwitch != nil else { return }
        guard case .usb = transport else {
            throw ValidationError("--role-switch asks a USB phone to become the host: it needs --transport usb:auto or usb:VID:PID, not \(transport)")
        }
    }
}

/// This machine as the accessory after the role switch: the bulk "iAP
/// Interface" gadget (descriptors written once, its connections in
/// `connections`), bound to the device controller after a phone took the
/// switch and left, unbound when the session is over.
final class RoleSwitchedAccessory: Sendable {
    enum Event: Sendable {
        case connection(Transport)
        /// No connection came within `phoneWait` of the switch: the phone
        /// did not come back as the host.
        case noPhone
    }

    /// How long the phone may take to come back as the host (an emulated
    /// iPhone waits up to 5 s for the accessory to appear).
    static let phoneWait: Duration = .seconds(10)

    let events: AsyncStream<Event>
    private let feed: AsyncStream<Event>.Continuation
    /// Connections so far, and switches so far: a wait ends quietly once
    /// either has moved on.
    private let counts = SwitchCounts()
    private let options: RoleSwitchOptions
    private let gadget: FunctionFSGadget
    private let logger = Log()

    /// Checks that this machine can be the device, before any phone is asked.
    init(_ options: RoleSwitchOptions) throws {
        if USBPort.roleSwitches().isEmpty && USBPort.deviceControllers().isEmpty {
            throw CommandFailure(message: "--role-switch: this machine cannot be a USB device: it has no USB role switch (\(USBPort.roleClass) is empty) and no device controller (\(USBPort.udcClass) is empty); use a board with an OTG or device port")
        }
        self.options = options
        do {
            gadget = try FunctionFSGadget(mountPoint: options.ffs, function: .bulk)
        } catch {
            throw CommandFailure(message: "--role-switch: \(error) (set the accessory's gadget up first: scripts/gadget-setup.sh --identity accessory)")
        }
        let (events, feed) = AsyncStream.makeStream(of: Event.self)
        self.events = events
        self.feed = feed
        let logger = self.logger, counts = self.counts
        do {
            try gadget.start(
                onEvent: { logger("gadget", "host event: \($0)", level: .debug) },
                onConnection: { connection in
                    counts.value.withLock { $0.connections += 1 }
                    feed.yield(.connection(connection))
                },
                onEnd: { reason in
                    logger("gadget", "stopped: \(reason)")
                    feed.finish()
                })
        } catch {
            throw CommandFailure(message: "--role-switch: \(error)")
        }
    }

    /// Asks the phone `selector` names to become the host, then takes the
    /// device role and presents the iAP Interface. Returns the switched
    /// phone and whether a kernel role switch was used.
    func switchRoles(with selector: USBDeviceSelector, mode: USBRoleSwitch.Mode) async throws -> USBRoleSwitch.Switched {
        if mode == .carPlay {
            logger("role-switch", "asking with CarPlay (wValue 1); this head unit serves iAP only, with no CarPlay network interface", level: .warning)
        }
        let switched: USBRoleSwitch.Switched
        do {
            switched = try await DedicatedThread.run("the role switch") { try USBRoleSwitch.perform(on: selector, mode: mode) }
        } catch {
            throw CommandFailure(message: "\(error)")
        }
        if let configuration = switched.selectedConfiguration {
            logger("role-switch", "selected configuration \(configuration) (the iAP HID interface's) before asking")
        }
        let departure = switched.departure.components
        logger("role-switch", "\(switched) took the role switch (\(mode.rawValue)) and left the bus after \(departure.seconds * 1000 + departure.attoseconds / 1_000_000_000_000_000) ms")
        let switches = try await DedicatedThread.run("the USB role") { try USBPort.setRole("device") }
        if switches.isEmpty {
            logger("role-switch", "no USB role switch in \(USBPort.roleClass): the device controller is used as it is (a board with a separate device port, or the lab)")
        } else {
            logger("role-switch", "switched \(switches.joined(separator: ", ")) to device; the port must keep powering the bus (VBUS on), as the phone expects of an accessory")
        }
        let gadget = options.gadget, udc = options.udc
        let controller = try await DedicatedThread.run("binding the gadget") { try USBPort.bind(gadget: gadget, to: udc) }
        logger("role-switch", "presenting the iAP Interface on \(controller); waiting for the phone, now the host")
        let before = counts.value.withLock { counts in
            counts.switches += 1
            return counts
        }
        Task { [counts, feed] in
            try? await Task.sleep(for: Self.phoneWait)
            if counts.value.withLock({ $0 == before }) { feed.yield(.noPhone) }
        }
        return switched
    }

    /// Leaves the bus; the port goes back to host where a role switch made it a device.
    func leave() async {
        let gadget = options.gadget
        _ = try? await DedicatedThread.run("leaving the bus") { try USBPort.unbind(gadget: gadget) }
        let switches = (try? await DedicatedThread.run("the USB role") { try USBPort.setRole("host") }) ?? []
        logger("role-switch", "left the bus" + (switches.isEmpty ? "" : "; \(switches.joined(separator: ", ")) is a host again"))
    }
}

/// Connections so far, and switches so far.
private final class SwitchCounts: Sendable {
    let value = Mutex((connections: 0, switches: 0))
}

/// The head unit with the role switch: the phone is asked to become the
/// host and leaves; this machine becomes the device, presents the bulk iAP
/// Interface and runs the head unit, its shell going on from one gadget
/// connection to the next (enumeration may enable the function more than
/// once), until the shell quits. Then the gadget leaves the bus.
func runRoleSwitchedHeadUnit(mode: USBRoleSwitch.Mode, switchOptions: RoleSwitchOptions, options: TransportOptions, once: Bool,
                             screen: HeadUnitScreen?) async throws {
    let logger = Log()
    guard case .usb(let vendor, let product) = options.transport else { return }
    let accessory = try RoleSwitchedAccessory(switchOptions)
    _ = try await accessory.switchRoles(with: USBDeviceSelector(vendorID: vendor, productID: product), mode: mode)
    let shell = ShellFeed()
    StandardInputLines.start(interrupt: shell.interrupt) { shell.feed($0) }
    let traceFile = try options.trace.map { try TraceFile(path: $0) }
    var number = 0
    var failed = true
    for await event in accessory.events {
        guard case .connection(let usb) = event else {
            if number > 0 { continue }
            logger("role-switch", "the phone took the role switch but did not come back as the USB host within \(RoleSwitchedAccessory.phoneWait)", level: .error)
            break
        }
        number += 1
        let transport = traceFile?.recording(usb, as: .headUnit, connection: number) ?? usb
        let outcome = try await runConnection(.headUnit, transport: transport, other: nil, options: options, once: once, library: .standard,
                                              shell: shell, logger: logger, screen: screen, serving: true)
        if !outcome.failed { failed = false }
        if outcome.quit || (once && !outcome.failed) { break }
        logger("head-unit", "connection #\(number) over the iAP Interface ended; waiting for the next")
    }
    await accessory.leave()
    if failed { throw ExitCode(1) }
}
