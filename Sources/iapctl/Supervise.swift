import ArgumentParser
import IAPDemo
import IAPEndpoint
import IAPHotplug
import IAPLink
import IAPTransport
import Logging
import IAPUSB
import IAPScreen
import IAPUdev
import Synchronization

struct Supervise: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a role on every matching USB device as it is plugged in, and tear it down as it goes.",
        discussion: """
        What a head unit (or a test rig) does all day: watch udev for USB devices,
        and for each one that matches (Apple's vendor id and the project's test
        hardware 1209:0001 by default, or --match) open it over libusb, bring the
        link up and run the role. A device that cannot be opened yet (udev still
        fixing permissions, the device still settling) is retried with backoff.
        Unplugging, a transfer error, a link timeout or an RST ends that
        connection, reported once; the next plug is a fresh connection. Devices
        plugged in before the command started are taken too.

        Examples:
          iapctl supervise --role head-unit                 # any iPhone or test rig
          iapctl supervise --role phone --match 1209:0001   # the phone on the host side
          iapctl supervise --role-switch                    # each iPhone becomes the host

        With --role-switch each Apple phone plugged in (05ac:12xx, or what --match
        names) is asked to become the USB host (0x40/0x51); this machine then
        presents the bulk iAP Interface as a USB device (scripts/gadget-setup.sh
        --identity accessory) and runs the head unit until that session ends,
        leaves the bus, and waits for the next phone (Docs/Hardware.md, "The role
        switch").
        """
    )

    @Option(help: ArgumentHelp("The role to run on each device: head-unit or phone.", valueName: "head-unit|phone"),
            completion: .list(["head-unit", "phone"]))
    var role: String = "head-unit"

    @Option(help: ArgumentHelp("Devices to take, VID or VID:PID in hex (repeatable). Default: 05ac and 1209:0001.", valueName: "vid[:pid]"))
    var match: [String] = []

    @Option(parsing: .unconditional, help: "Stop after this many connections have ended (for scripts).")
    var connections: Int?

    @Option(help: ArgumentHelp("Also write the traffic to a usbmon pcapng file as it happens, one device number per connection.",
                               valueName: "file.pcapng"))
    var trace: String?

    @Option(help: ArgumentHelp("With --role head-unit: show the head unit of the phone plugged in last in a browser at http://HOST:PORT/ (Docs/Hardware.md).",
                               valueName: "host:port"),
            transform: parseScreenAddress)
    var ui: ScreenAddress?

    @Flag(help: "Let --ui serve on an address other machines can reach: anyone on that network can then drive the head unit (a warning says so).")
    var uiAllowRemote = false

    @OptionGroup(title: "Role switch (USB)") var roleSwitching: RoleSwitchOptions
    @OptionGroup(title: "Authentication") var authentication: AuthenticationOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    func validate() throws {
        guard role == "phone" || role == "head-unit" else { throw ValidationError("--role is phone or head-unit, not \(role)") }
        if roleSwitching.roleSwitch != nil && role != "head-unit" {
            throw ValidationError("--role-switch is the head unit's request to the phone: it needs --role head-unit")
        }
        if ui != nil && role != "head-unit" { throw ValidationError("--ui shows a head unit's screen: it needs --role head-unit") }
        if uiAllowRemote && ui == nil { throw ValidationError("--ui-allow-remote goes with --ui") }
        _ = try matcher()
        if let connections, connections < 1 { throw ValidationError("--connections must be at least 1") }
    }

    private func matcher() throws -> DeviceMatcher {
        guard !match.isEmpty else { return .iapDevices }
        return DeviceMatcher(try match.map { text in
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let vendor = UInt16(parts[0], radix: 16),
                  parts.count == 1 || UInt16(parts[1], radix: 16) != nil else {
                throw ValidationError("--match takes VID or VID:PID in hex (e.g. 05ac or 1209:0001), not \(text)")
            }
            return DeviceMatcher.Rule(vendorID: vendor, productID: parts.count == 2 ? UInt16(parts[1], radix: 16) : nil)
        })
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Log()
        let kind: EndKind = role == "phone" ? .phone : .headUnit
        // Without udev the monitor would wait for ever for events that never come.
        if let problem = USBHost.problem(watching: true) { throw CommandFailure(message: "cannot watch USB devices: \(problem)") }
        let screen: HeadUnitScreen?
        if let ui { screen = try await startScreen(at: ui, allowRemote: uiAllowRemote) } else { screen = nil }
        let traceFile = try trace.map { try TraceFile(path: $0) }
        let endpointAuthentication = try authentication.endpointAuthentication(for: kind)
        if let mode = roleSwitching.roleSwitch {
            try await superviseRoleSwitched(mode: mode, authentication: endpointAuthentication, screen: screen, traceFile: traceFile, logger: logger)
            return
        }
        let runner = HotplugRunner(configuration: .init(matcher: try matcher()), stopAfter: connections)
        logger("supervise", "watching for \(match.isEmpty ? "05ac:*, 1209:0001" : match.joined(separator: ", ")) to run the \(role) role")
        let role = self.role
        do {
            try await runner.run(make: { device, number in
                let selector = USBDeviceSelector(vendorID: device.vendorID, productID: device.productID,
                                                 location: device.bus.flatMap { bus in device.address.map { (UInt8(truncatingIfNeeded: bus), $0) } })
                let usb = USBHostTransport(selector: selector)
                let transport = traceFile?.recording(usb, as: kind, connection: number) ?? usb
                return EndpointConnection(kind: kind, transport: transport, authentication: endpointAuthentication, screen: screen)
            }, events: { event in
                switch event {
                case .openFailed(let device, let attempt, let error):
                    logger("supervise", "\(Self.describe(device)): attempt \(attempt) failed: \(error)")
                case .connected(let number, let device, let connection):
                    let label = "\(role) #\(number)"
                    (connection as? EndpointConnection)?.label.text = label
                    logger(label, "connected: \(Self.describe(device))")
                case .disconnected(let number, let device, let reason):
                    logger("\(role) #\(number)", "disconnected: \(Self.describe(device)): \(reason)")
                case .gaveUp(let device, let reason):
                    logger("supervise", "gave up on \(Self.describe(device)): \(reason)")
                }
            })
        } catch let failure as HotplugRunner.Failure {
            throw CommandFailure(message: failure.description)
        }
    }

    /// Each phone plugged in takes the role switch; the head unit runs over
    /// the iAP Interface gadget until a session whose link came up ends (or
    /// the phone never comes back as the host), then leaves the bus.
    private func superviseRoleSwitched(mode: USBRoleSwitch.Mode, authentication: EndpointAuthentication, screen: HeadUnitScreen?,
                                       traceFile: TraceFile?, logger: Log) async throws {
        let accessory = try RoleSwitchedAccessory(roleSwitching)
        let matcher = try matcher()
        let explicit = !match.isEmpty
        let (arrivals, arrival) = AsyncStream.makeStream(of: USBDeviceInfo.self, bufferingPolicy: .bufferingNewest(16))
        let monitor: UdevMonitor
        do {
            monitor = try UdevMonitor()
            try monitor.start { event in
                if case .failed(let reason) = event {
                    logger("supervise", "the udev monitor stopped: \(reason)", level: .error)
                    arrival.finish()
                }
                guard case .added(let device)? = event.hotplug, let vendor = device.vendorID, let product = device.productID,
                      matcher.matches(device),
                      explicit || USBDescriptors.isApplePhone(vendorID: vendor, productID: product) else { return }
                arrival.yield(device)
            }
        } catch {
            throw CommandFailure(message: "cannot watch USB devices: \(error)")
        }
        defer { monitor.stop() }
        logger("supervise", "watching for \(explicit ? match.joined(separator: ", ") : "Apple phones (05ac:12xx)") to take the role switch (\(mode.rawValue))")
        var events = accessory.events.makeAsyncIterator()
        var number = 0
        var ended = 0
        for await device in arrivals {
            let selector = USBDeviceSelector(vendorID: device.vendorID, productID: device.productID,
                                             location: device.bus.flatMap { bus in device.address.map { (UInt8(truncatingIfNeeded: bus), $0) } })
            do {
                _ = try await accessory.switchRoles(with: selector, mode: mode)
            } catch {
                logger("supervise", "\(Self.describe(device)): \(error)", level: .error)
                continue
            }
            number += 1
            let label = "head-unit #\(number)"
            logger(label, "connected: \(Self.describe(device)), now the USB host")
            var reason = "the phone did not come back as the USB host within \(RoleSwitchedAccessory.phoneWait)"
            var connection = 0
            while let event = await events.next() {
                guard case .connection(let usb) = event else {
                    if connection == 0 { break } else { continue }
                }
                connection += 1
                let transport = traceFile?.recording(usb, as: .headUnit, connection: number) ?? usb
                let endpoint = MediaEndpoint(kind: .headUnit, transport: transport, app: nil, authentication: authentication,
                                             logger: Console.logger { label })
                endpoint.stop(when: { $0.endReason != nil })
                MediaEventText.follow(endpoint) { Console.result(label, $0) }
                screen?.attach(endpoint)
                do {
                    try endpoint.start()
                } catch {
                    reason = "\(error)"
                    continue
                }
                await endpoint.run()
                reason = endpoint.endReason ?? "the link ended"
                screen?.detach(endpoint, reason: reason)
                // The session happened and is over (the phone went, or its link failed).
                if endpoint.everUp { break }
            }
            await accessory.leave()
            logger(label, "disconnected: \(reason)")
            ended += 1
            if let connections, ended >= connections { return }
        }
    }

    private static func describe(_ device: USBDeviceInfo) -> String {
        let ids = "\(device.vendorID.map(hex4) ?? "????"):\(device.productID.map(hex4) ?? "????")"
        guard let bus = device.bus, let address = device.address else { return ids }
        return "\(ids) on bus \(bus) device \(address)"
    }
}

/// One supervised device's connection: the endpoint over its USB transport,
/// with its log label known once the runner numbers it.
private final class EndpointConnection: SupervisedConnection {
    let endpoint: MediaEndpoint
    let label = ConnectionLabel()
    private let screen: HeadUnitScreen?

    init(kind: EndKind, transport: Transport, authentication: EndpointAuthentication, screen: HeadUnitScreen?) {
        let label = self.label
        endpoint = MediaEndpoint(kind: kind, transport: transport, app: kind == .phone ? SampleApp() : nil,
                                 authentication: authentication, logger: Console.logger { label.text })
        // One link per connection: its end (unplug, transfer error, timeout, RST) ends the connection.
        endpoint.stop(when: { $0.endReason != nil })
        if kind == .headUnit { MediaEventText.follow(endpoint) { Console.result(label.text, $0) } }
        screen?.attach(endpoint)
        self.screen = screen
    }

    func open() throws(TransportError) { try endpoint.start() }

    func run() async -> String {
        await endpoint.run()
        let reason = endpoint.endReason ?? "the link ended"
        screen?.detach(endpoint, reason: reason)
        return reason
    }

    func close() async { await endpoint.close() }
}

/// The log label of a connection, known once the supervisor numbers it.
private final class ConnectionLabel: Sendable {
    private let value = Mutex("supervise")
    var text: String {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
