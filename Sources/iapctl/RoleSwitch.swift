import ArgumentParser
import IAPScreen
import IAPTransport
import IAPUSB

extension USBRoleSwitch.Mode: ExpressibleByArgument {}

/// The head unit's side of the role switch (USB-HID-FACTS.md §4): ask the
/// phone to become the USB host, then present the bulk "iAP Interface" as
/// a USB device on this machine's device port.
struct RoleSwitchOptions: ParsableArguments {
    @Option(defaultAsFlag: USBRoleSwitch.Mode.iap,
            help: ArgumentHelp("With a usb: transport: ask the phone to become the USB host (vendor request 0x40/0x51, as CarPlay head units do), wait up to 2 s for it to leave the bus, then run as the USB device presenting the bulk iAP Interface (the gadget --gadget names, set up with scripts/gadget-setup.sh --identity accessory). carplay asks with CarPlay (wValue 1); CarPlay itself is not served.",
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

/// The head unit with the role switch: the phone is asked to become the
/// host and leaves; this machine becomes the device (through the kernel's
/// role switch when it has one), presents the bulk iAP Interface and runs
/// the head unit, its shell going on from one gadget connection to the next
/// (enumeration may enable the function more than once), until the shell
/// quits. Then the gadget leaves the bus and the port goes back to host.
func runRoleSwitchedHeadUnit(mode: USBRoleSwitch.Mode, switchOptions: RoleSwitchOptions, options: TransportOptions, once: Bool,
                             screen: HeadUnitScreen?) async throws {
    let logger = Log()
    guard case .usb(let vendor, let product) = options.transport else { return }
    // Everything this machine needs to be the device is checked before the phone is asked.
    if USBPort.roleSwitches().isEmpty && USBPort.deviceControllers().isEmpty {
        throw CommandFailure(message: "--role-switch: this machine cannot be a USB device: it has no USB role switch (\(USBPort.roleClass) is empty) and no device controller (\(USBPort.udcClass) is empty); use a board with an OTG or device port")
    }
    let gadgetDevice: FunctionFSGadget
    do {
        gadgetDevice = try FunctionFSGadget(mountPoint: switchOptions.ffs, function: .bulk)
    } catch {
        throw CommandFailure(message: "--role-switch: \(error) (set the accessory's gadget up first: scripts/gadget-setup.sh --identity accessory)")
    }
    if mode == .carPlay {
        logger("role-switch", "asking with CarPlay (wValue 1); this head unit serves iAP only, with no CarPlay network interface", level: .warning)
    }
    let selector = USBDeviceSelector(vendorID: vendor, productID: product)
    let switched: USBRoleSwitch.Switched
    do {
        switched = try await DedicatedThread.run("the role switch") { try USBRoleSwitch.perform(on: selector, mode: mode) }
    } catch {
        throw CommandFailure(message: "\(error)")
    }
    if let configuration = switched.selectedConfiguration {
        logger("role-switch", "selected configuration \(configuration) (the iAP HID interface's) before asking")
    }
    logger("role-switch", "\(switched) took the role switch (\(mode.rawValue)) and left the bus after \(switched.departure.components.seconds * 1000 + switched.departure.components.attoseconds / 1_000_000_000_000_000) ms")
    let switches = try await DedicatedThread.run("the USB role") { try USBPort.setRole("device") }
    if switches.isEmpty {
        logger("role-switch", "no USB role switch in \(USBPort.roleClass): the device controller is used as it is (a board with a separate device port, or the lab)")
    } else {
        logger("role-switch", "switched \(switches.joined(separator: ", ")) to device; the port must keep powering the bus (VBUS on), as the phone expects of an accessory")
    }
    let (connections, feed) = AsyncStream.makeStream(of: Transport.self)
    do {
        try gadgetDevice.start(
            onEvent: { logger("gadget", "host event: \($0)", level: .debug) },
            onConnection: { feed.yield($0) },
            onEnd: { reason in
                logger("gadget", "stopped: \(reason)")
                feed.finish()
            })
    } catch {
        throw CommandFailure(message: "--role-switch: \(error)")
    }
    let gadget = switchOptions.gadget, udc = switchOptions.udc
    let controller = try await DedicatedThread.run("binding the gadget") { try USBPort.bind(gadget: gadget, to: udc) }
    logger("role-switch", "presenting the iAP Interface on \(controller); waiting for the phone, now the host")
    let shell = ShellFeed()
    StandardInputLines.start(interrupt: shell.interrupt) { shell.feed($0) }
    let traceFile = try options.trace.map { try TraceFile(path: $0) }
    var number = 0
    var failed = true
    for await usb in connections {
        number += 1
        let transport = traceFile?.recording(usb, as: .headUnit, connection: number) ?? usb
        let outcome = try await runConnection(.headUnit, transport: transport, other: nil, options: options, once: once, library: .standard,
                                              shell: shell, logger: logger, screen: screen, serving: true)
        if !outcome.failed { failed = false }
        if outcome.quit || (once && !outcome.failed) { break }
        logger("head-unit", "connection #\(number) over the iAP Interface ended; waiting for the next")
    }
    _ = try? await DedicatedThread.run("leaving the bus") { try USBPort.unbind(gadget: gadget) }
    if !switches.isEmpty { _ = try? await DedicatedThread.run("the USB role") { try USBPort.setRole("host") } }
    logger("role-switch", "left the bus" + (switches.isEmpty ? "" : "; the port is a host again"))
    if failed { throw ExitCode(1) }
}
