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
        """
    )

    @Option(help: "The role to run on each device: head-unit or phone.")
    var role: String = "head-unit"

    @Option(help: ArgumentHelp("Devices to take, VID or VID:PID in hex (repeatable). Default: 05ac and 1209:0001.", valueName: "vid[:pid]"))
    var match: [String] = []

    @Option(help: "Stop after this many connections have ended (for scripts).")
    var connections: Int?

    @Option(help: ArgumentHelp("Also write the traffic to a usbmon pcapng file as it happens, one device number per connection.",
                               valueName: "file.pcapng"))
    var trace: String?

    @Option(help: ArgumentHelp("With --role head-unit: show the head unit of the phone plugged in last in a browser at http://HOST:PORT/ (Docs/Hardware.md).",
                               valueName: "host:port"),
            transform: parseScreenAddress)
    var ui: ScreenAddress?

    @OptionGroup(title: "Authentication") var authentication: AuthenticationOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    func validate() throws {
        guard role == "phone" || role == "head-unit" else { throw ValidationError("--role is phone or head-unit, not \(role)") }
        if ui != nil && role != "head-unit" { throw ValidationError("--ui shows a head unit's screen: it needs --role head-unit") }
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

    private enum Input: Sendable {
        case udev(UdevMonitor.Event)
        /// An open on its thread finished: the endpoint is running, or the
        /// error says why not.
        case openFinished(PendingOpen, TransportError?)
        case ended(connection: Int, reason: String)
        case tick
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Log()
        let kind: EndKind = role == "phone" ? .phone : .headUnit
        var supervisor = DeviceSupervisor(configuration: .init(matcher: try matcher()))
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .bufferingNewest(4096))
        // Without udev the monitor would wait for ever for events that never come.
        if let problem = USBHost.problem(watching: true) { throw CommandFailure(message: "cannot watch USB devices: \(problem)") }
        let screen: HeadUnitScreen?
        if let ui { screen = try await startScreen(at: ui) } else { screen = nil }
        let monitor: UdevMonitor
        do {
            monitor = try UdevMonitor()
            try monitor.start { feed.yield(.udev($0)) }
        } catch {
            throw CommandFailure(message: "cannot watch USB devices: \(error)")
        }
        defer { monitor.stop() }
        logger("supervise", "watching for \(match.isEmpty ? "05ac:*, 1209:0001" : match.joined(separator: ", ")) to run the \(role) role")

        let traceFile = try trace.map { try TraceFile(path: $0) }
        let endpointAuthentication = try authentication.endpointAuthentication(for: kind)
        var opened = 0 // the supervisor numbers connections in the order opens succeed
        var endpoints: [Int: MediaEndpoint] = [:]
        var opening: [String: (MediaEndpoint, ConnectionLabel)] = [:] // by syspath, between open and connected
        // Opening blocks (libusb), so it runs on a thread of its own, one
        // device at a time: each open knows the connection number it gets
        // if it succeeds, and the others wait their turn here.
        var waitingOpens: [(USBDeviceInfo, attempt: Int)] = []
        var openInFlight = false
        var ended = 0
        var timer: Task<Void, Never>?
        func schedule() {
            timer?.cancel()
            guard let deadline = supervisor.nextDeadline else { return }
            let delay = max(0, deadline.nanoseconds - MonotonicClock.now().nanoseconds)
            timer = Task {
                try? await Task.sleep(for: .nanoseconds(delay))
                if !Task.isCancelled { feed.yield(.tick) }
            }
        }

        func startOpen(_ device: USBDeviceInfo, attempt: Int) {
            let selector = USBDeviceSelector(vendorID: device.vendorID, productID: device.productID,
                                             location: device.bus.flatMap { bus in device.address.map { (UInt8(truncatingIfNeeded: bus), $0) } })
            let label = ConnectionLabel()
            let usb = USBHostTransport(selector: selector)
            let transport = traceFile?.recording(usb, as: kind, connection: opened + 1) ?? usb
            let endpoint = MediaEndpoint(kind: kind, transport: transport, app: kind == .phone ? SampleApp() : nil,
                                         authentication: endpointAuthentication, logger: Console.logger { label.text })
            if kind == .headUnit { MediaEventText.follow(endpoint) { Console.result(label.text, $0) } }
            screen?.attach(endpoint)
            // One link per connection: its end (unplug, transfer error, timeout, RST) ends the connection.
            endpoint.stopWhen = { $0.endReason != nil }
            let open = PendingOpen(syspath: device.syspath, selector: selector, attempt: attempt, endpoint: endpoint, label: label)
            openInFlight = true
            do throws(TransportError) {
                try DedicatedThread.start("opening \(selector)") {
                    do throws(TransportError) {
                        try endpoint.start()
                        feed.yield(.openFinished(open, nil))
                    } catch {
                        feed.yield(.openFinished(open, error))
                    }
                }
            } catch {
                feed.yield(.openFinished(open, error))
            }
        }

        for await input in inputs {
            let now = MonotonicClock.now()
            var actions: [DeviceSupervisor.Action]
            switch input {
            case .udev(.failed(let reason)):
                throw CommandFailure(message: "the udev monitor stopped: \(reason)")
            case .udev(let event):
                guard let hotplug = event.hotplug else { continue }
                actions = supervisor.hotplug(hotplug, now: now)
            case .openFinished(let open, let error):
                openInFlight = false
                if let error {
                    // Every failure is retried a bounded number of times: just after
                    // "add", udev may not have applied the rules yet, and a device may
                    // still be switching configuration.
                    logger("supervise", "\(open.selector): attempt \(open.attempt) failed: \(error)")
                    actions = supervisor.openFailed(open.syspath, reason: error.description, retryable: true, now: now)
                } else {
                    actions = supervisor.opened(open.syspath)
                    if actions.contains(where: { if case .connected = $0 { true } else { false } }) {
                        opened += 1
                        opening[open.syspath] = (open.endpoint, open.label)
                    } else {
                        // Unplugged while it was opening: the supervisor no longer wants it.
                        await open.endpoint.driver.close()
                    }
                }
            case .ended(let connection, let reason):
                actions = supervisor.connectionEnded(connection, reason: reason)
            case .tick:
                actions = supervisor.tick(now: now)
            }
            while !actions.isEmpty {
                let action = actions.removeFirst()
                switch action {
                case .open(let device, let attempt):
                    waitingOpens.append((device, attempt))
                case .connected(let number, let device):
                    guard let (endpoint, label) = opening.removeValue(forKey: device.syspath) else { continue }
                    label.text = "\(role) #\(number)"
                    endpoints[number] = endpoint
                    logger(label.text, "connected: \(describe(device))")
                    Task {
                        await endpoint.run()
                        screen?.detach(endpoint, reason: endpoint.endReason ?? "the link ended")
                        feed.yield(.ended(connection: number, reason: endpoint.endReason ?? "the link ended"))
                    }
                case .disconnected(let number, let device, let reason):
                    logger("\(role) #\(number)", "disconnected: \(describe(device)): \(reason)")
                    ended += 1
                case .close(let number):
                    await endpoints.removeValue(forKey: number)?.driver.close()
                case .gaveUp(let device, let reason):
                    logger("supervise", "gave up on \(describe(device)): \(reason)")
                }
            }
            if !openInFlight, !waitingOpens.isEmpty {
                let (device, attempt) = waitingOpens.removeFirst()
                startOpen(device, attempt: attempt)
            }
            schedule()
            if let connections, ended >= connections { break }
        }
        timer?.cancel()
        for endpoint in endpoints.values { await endpoint.driver.close() }
    }

    private func describe(_ device: USBDeviceInfo) -> String {
        let ids = "\(device.vendorID.map(hex4) ?? "????"):\(device.productID.map(hex4) ?? "????")"
        guard let bus = device.bus, let address = device.address else { return ids }
        return "\(ids) on bus \(bus) device \(address)"
    }
}

/// A device being opened on a thread of its own.
private struct PendingOpen: Sendable {
    let syspath: String
    let selector: USBDeviceSelector
    let attempt: Int
    let endpoint: MediaEndpoint
    let label: ConnectionLabel
}

/// The log label of a connection, known once the supervisor numbers it.
private final class ConnectionLabel: Sendable {
    private let value = Mutex("supervise")
    var text: String {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
