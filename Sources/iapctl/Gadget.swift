import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPDemo
import IAPEndpoint
import IAPLink
import IAPTransport
import IAPUSB
import Logging
import SystemPackage

struct Gadget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make this Linux board USB test hardware: an iAP interface over FunctionFS, running the phone or head-unit role.",
        discussion: """
        A board with a USB device controller (a Raspberry Pi Zero, a BeagleBone, or
        the dummy UDC of the QEMU lab) appears to the host it is plugged into as a
        device with the iAP interface (class 0xFF, subclass 0xF0, protocol 0x00,
        one bulk IN and one bulk OUT endpoint, at full, high and super speed).
        Each time the host enables it, a fresh connection runs the chosen role;
        disable, suspend and unbind end it (reported once), the next enable starts
        a new one.

        Set the gadget up first, as root: scripts/gadget-setup.sh creates the
        configfs gadget /sys/kernel/config/usb_gadget/iapdevkit (1209:0001) and
        mounts functionfs at /dev/ffs-iap. Then:
          iapctl gadget --role phone --udc auto
        or, to bind it yourself once this command has written the descriptors:
          ls /sys/class/udc | head -1 > /sys/kernel/config/usb_gadget/iapdevkit/UDC
        Docs/Hardware.md has the whole procedure.

        `--identity iphone` serves what a real iPhone shows a car instead: iAP
        over HID (a HID interface with the real 208-byte report descriptor, input
        reports on an interrupt IN endpoint, output reports by SET_REPORT in
        either length form), answering SET_IDLE, GET_REPORT and Apple's power
        request as real devices do. Set the gadget up for it with
          scripts/gadget-setup.sh --identity iphone [--product-id 12a8] [--ipod-first]
        (05ac:12a8, configuration 1 "PTP", configuration 2 "iPod USB Interface"
        with UAC1 audio and this HID interface). A head unit on the host reaches
        it with --transport usb:05ac:12a8 (or usb:auto) and selects configuration
        2 itself. The default identity (lab) is the project's test hardware,
        1209:0001 with the bulk iAP interface.

        As an iPhone it answers a head unit's role switch (0x40/0x51) as a real
        iPhone does (--role-switch answer, the default): it acknowledges, leaves
        the bus, becomes the USB host and runs the phone over the accessory's bulk
        iAP Interface (head-unit --role-switch presents it), then comes back as a
        device. --role-switch stall refuses it.
        """
    )

    enum Identity: String, ExpressibleByArgument, CaseIterable {
        case lab, iphone
    }

    @Option(help: ArgumentHelp("The role to run over USB: phone or head-unit.", valueName: "phone|head-unit"),
            completion: .list(["phone", "head-unit"]))
    var role: String = "phone"

    @Option(help: ArgumentHelp("What to serve: lab (1209:0001, the bulk iAP interface) or iphone (iAP over HID, as a real iPhone; set up with scripts/gadget-setup.sh --identity iphone).",
                               valueName: "lab|iphone"))
    var identity: Identity = .lab

    @Option(help: ArgumentHelp("Where functionfs is mounted.", valueName: "directory"), completion: .directory)
    var ffs: String = "/dev/ffs-iap"

    @Option(help: ArgumentHelp("Bind the gadget to this UDC once the descriptors are written (a name from /sys/class/udc, or auto for the first).",
                               valueName: "name|auto"))
    var udc: String?

    @Option(help: ArgumentHelp("The configfs gadget directory (for --udc).", valueName: "directory"), completion: .directory)
    var gadget: String = "/sys/kernel/config/usb_gadget/iapdevkit"

    @Option(help: ArgumentHelp("Also write the traffic to a usbmon pcapng file as it happens, one device number per connection.",
                               valueName: "file.pcapng"))
    var trace: String?

    enum RoleSwitchAnswer: String, ExpressibleByArgument, CaseIterable {
        case answer, stall
    }

    @Option(help: ArgumentHelp("With --identity iphone: what a head unit's role switch request (0x40/0x51) gets. answer: acknowledge it, leave the bus and run the phone as the USB host over the accessory's bulk iAP Interface (as a real iPhone does), then come back as a device when that ends. stall: refuse it (a phone without the role switch).",
                               valueName: "answer|stall"))
    var roleSwitch: RoleSwitchAnswer = .answer

    /// How long the phone, now the host, waits for the accessory to appear
    /// (an emulated iPhone waits 5 s; a board's port may take longer).
    static let accessoryWait: Duration = .seconds(10)

    @OptionGroup(title: "Link packets") var linkPackets: LinkPacketOptions
    @OptionGroup(title: "Authentication") var authentication: AuthenticationOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    /// What the gadget's ep0 brings: a connection, or the host's role switch request.
    enum Happening: Sendable {
        case connection(Transport)
        case roleSwitch(carPlay: Bool)
    }

    func validate() throws {
        guard role == "phone" || role == "head-unit" else { throw ValidationError("--role is phone or head-unit, not \(role)") }
        if identity == .iphone && role != "phone" { throw ValidationError("--identity iphone presents a phone: it needs --role phone") }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Log()
        let kind: EndKind = role == "phone" ? .phone : .headUnit
        let gadgetDevice: FunctionFSGadget
        do {
            gadgetDevice = try FunctionFSGadget(mountPoint: ffs, function: identity == .iphone ? .hid(reportDescriptor: FunctionFSDescriptors.iPhoneReportDescriptor) : .bulk)
        } catch {
            throw CommandFailure(message: error.description)
        }
        logger("gadget", "descriptors written to \(ffs)/ep0")
        let (happenings, feed) = AsyncStream.makeStream(of: Happening.self)
        if identity == .iphone && roleSwitch == .answer {
            gadgetDevice.onRoleSwitch { value in feed.yield(.roleSwitch(carPlay: value == 1)) }
        }
        do {
            try gadgetDevice.start(
                onEvent: { logger("gadget", "host event: \($0)") },
                onConnection: { feed.yield(.connection($0)) },
                onEnd: { reason in
                    logger("gadget", "stopped: \(reason)")
                    feed.finish()
                })
        } catch {
            throw CommandFailure(message: error.description)
        }
        let endpointAuthentication = try authentication.endpointAuthentication(for: kind)
        if let udc {
            try checkIdentity()
            logger("gadget", "bound to UDC \(try USBPort.bind(gadget: gadget, to: udc))")
        }
        let traceFile = try trace.map { try TraceFile(path: $0) }
        var number = 0
        for await happening in happenings {
            guard case .connection(let usb) = happening else {
                if case .roleSwitch(let carPlay) = happening {
                    await serveAsHost(carPlay: carPlay, authentication: endpointAuthentication, logger: logger)
                }
                continue
            }
            number += 1
            let transport = traceFile?.recording(usb, as: kind, connection: number) ?? usb
            let label = "\(role) #\(number)"
            let endpoint = MediaEndpoint(kind: kind, transport: transport, app: kind == .phone ? SampleApp() : nil, authentication: endpointAuthentication,
                                         linkPacketLength: linkPackets.linkPacketLength, linkOutstandingPackets: linkPackets.linkOutstanding, logger: Logger(label: label))
            if kind == .headUnit { MediaEventText.follow(endpoint) { Console.result(label, $0) } }
            // A new phone program on the host side gets a fresh link without a
            // replug: the accessory link end starts over by itself.
            do {
                try endpoint.start()
            } catch {
                logger(label, "cannot start: \(error)", level: .error)
                continue
            }
            logger(label, "connected")
            Task {
                await endpoint.run()
                logger(label, "disconnected")
            }
        }
    }

    /// The role switch, answered as a real iPhone does (USB-HID-FACTS.md
    /// §4): leave the bus, become the host (through the kernel's role switch
    /// when the port has one), and run the phone over the accessory's bulk
    /// iAP Interface once it appears; when that connection ends, or no
    /// accessory appears within `accessoryWait`, come back as a device.
    private func serveAsHost(carPlay: Bool, authentication: EndpointAuthentication, logger: Log) async {
        let gadget = self.gadget
        logger("gadget", "the head unit asked for the role switch\(carPlay ? " with CarPlay (served without it: iAP only)" : ""); leaving the bus")
        let controller: String?
        do {
            controller = try await DedicatedThread.run("leaving the bus") { try USBPort.unbind(gadget: gadget) }
        } catch {
            logger("gadget", "cannot leave the bus: \(error); staying a device", level: .error)
            return
        }
        defer { Task { await Self.comeBack(gadget: gadget, to: controller, logger: logger) } }
        let switches = (try? await DedicatedThread.run("the USB role") { try USBPort.setRole("host") }) ?? []
        if switches.isEmpty {
            guard USBPort.hasHostController() else {
                logger("gadget", "this machine cannot be a USB host (no role switch in \(USBPort.roleClass), no host controller): the role switch failed", level: .error)
                return
            }
            logger("gadget", "no USB role switch: this machine's host controller is used as it is (the lab)")
        } else {
            logger("gadget", "switched \(switches.joined(separator: ", ")) to host")
        }
        let label = "phone (host)"
        let clock = ContinuousClock()
        let deadline = clock.now + Self.accessoryWait
        while true {
            let endpoint = MediaEndpoint(kind: .phone, transport: USBHostTransport(selector: USBDeviceSelector()), app: SampleApp(),
                                         authentication: authentication, linkPacketLength: linkPackets.linkPacketLength, linkOutstandingPackets: linkPackets.linkOutstanding, logger: Logger(label: label))
            endpoint.stop(when: { $0.endReason != nil })
            do {
                try endpoint.start()
            } catch where error.kind == .notFound && clock.now < deadline {
                try? await Task.sleep(for: .milliseconds(200))
                continue
            } catch {
                logger(label, "no accessory to serve: \(error)", level: .error)
                break
            }
            logger(label, "connected to the accessory's iAP Interface")
            await endpoint.run()
            logger(label, "disconnected: \(endpoint.endReason ?? "the connection ended")")
            break
        }
        if !switches.isEmpty { _ = try? await DedicatedThread.run("the USB role") { try USBPort.setRole("device") } }
    }

    /// Binds the gadget again once its device controller is free (the
    /// accessory may still hold it), trying every 2 s.
    private static func comeBack(gadget: String, to controller: String?, logger: Log) async {
        guard let controller else { return }
        var told = false
        while true {
            do {
                _ = try await DedicatedThread.run("binding the gadget") { try USBPort.bind(gadget: gadget, to: controller) }
                logger("gadget", "back on the bus as a device (\(controller))")
                return
            } catch {
                if !told { logger("gadget", "\(controller) is not free yet (\(error)); trying every 2 s") }
                told = true
                try? await Task.sleep(for: .seconds(2))
            }
        }
    }

    /// The configfs gadget must have been set up for the identity served:
    /// a host takes iAP over HID only from Apple's vendor id, and the lab's
    /// test id only over bulk.
    private func checkIdentity() throws {
        let path = gadget + "/idVendor"
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw CommandFailure(message: "cannot open \(path): \(Errno(rawValue: errno).description) (run scripts/gadget-setup.sh as root first)") }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 16)
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        let vendor = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).filter { !$0.isWhitespace }
        let apple = vendor == "0x05ac"
        if identity == .iphone && !apple {
            throw CommandFailure(message: "the configfs gadget presents vendor \(vendor), not Apple's 0x05ac: set it up with scripts/gadget-setup.sh --identity iphone")
        }
        if identity == .lab && apple {
            throw CommandFailure(message: "the configfs gadget is set up as an iPhone: run iapctl gadget with --identity iphone, or set it up again with scripts/gadget-setup.sh")
        }
    }
}
