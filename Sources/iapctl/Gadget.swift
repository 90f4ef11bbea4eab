import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPDemo
import IAPEndpoint
import IAPLink
import IAPTransport
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
        """
    )

    @Option(help: ArgumentHelp("The role to run over USB: phone or head-unit.", valueName: "phone|head-unit"),
            completion: .list(["phone", "head-unit"]))
    var role: String = "phone"

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

    @OptionGroup(title: "Authentication") var authentication: AuthenticationOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    func validate() throws {
        guard role == "phone" || role == "head-unit" else { throw ValidationError("--role is phone or head-unit, not \(role)") }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Log()
        let kind: EndKind = role == "phone" ? .phone : .headUnit
        let gadgetDevice: FunctionFSGadget
        do {
            gadgetDevice = try FunctionFSGadget(mountPoint: ffs)
        } catch {
            throw CommandFailure(message: error.description)
        }
        logger("gadget", "descriptors written to \(ffs)/ep0")
        let (connections, feed) = AsyncStream.makeStream(of: Transport.self)
        do {
            try gadgetDevice.start(
                onEvent: { logger("gadget", "host event: \($0)") },
                onConnection: { feed.yield($0) },
                onEnd: { reason in
                    logger("gadget", "stopped: \(reason)")
                    feed.finish()
                })
        } catch {
            throw CommandFailure(message: error.description)
        }
        let endpointAuthentication = try authentication.endpointAuthentication(for: kind)
        if let udc { try bind(udc, logger: logger) }
        let traceFile = try trace.map { try TraceFile(path: $0) }
        var number = 0
        for await usb in connections {
            number += 1
            let transport = traceFile?.recording(usb, as: kind, connection: number) ?? usb
            let label = "\(role) #\(number)"
            let endpoint = MediaEndpoint(kind: kind, transport: transport, app: kind == .phone ? SampleApp() : nil, authentication: endpointAuthentication, logger: Logger(label: label))
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

    private func bind(_ requested: String, logger: Log) throws {
        var name = requested
        if requested == "auto" {
            guard let directory = opendir("/sys/class/udc") else { throw ValidationError("no /sys/class/udc: this kernel has no USB device controller") }
            defer { closedir(directory) }
            var found: String?
            while let entry = readdir(directory) {
                let entryName = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if !entryName.hasPrefix(".") { found = entryName; break }
            }
            guard let found else { throw ValidationError("/sys/class/udc is empty: load a UDC driver (dummy_hcd in the lab)") }
            name = found
        }
        let path = gadget + "/UDC"
        let fd = open(path, O_WRONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("cannot open \(path): \(Errno(rawValue: errno).description) (run scripts/gadget-setup.sh as root first)") }
        defer { close(fd) }
        let line = name + "\n"
        let written = line.withCString { write(fd, $0, strlen($0)) }
        guard written > 0 else { throw ValidationError("binding to \(name) failed: \(Errno(rawValue: errno).description)") }
        logger("gadget", "bound to UDC \(name)")
    }
}
