import IAPHotplug
import IAPTransport

/// A connection the hotplug runner keeps for one plugged device. The caller
/// makes it (a transport to the device and what runs over it); the runner
/// opens it on a thread of its own (opening a USB device blocks), runs it
/// until it ends, and closes it when the device goes away.
public protocol SupervisedConnection: AnyObject, Sendable {
    /// Opens the device and starts the connection; may block.
    func open() throws(TransportError)
    /// Runs until the connection ends; returns why, in words.
    func run() async -> String
    /// Ends the connection (the device was unplugged).
    func close() async
}

/// One connection per plugged device, for as long as it is plugged in:
/// udev's add and remove events (`UdevMonitor`) drive the sans-IO
/// `DeviceSupervisor`, whose actions this carries out: opens (retried with
/// backoff, one device at a time), connections numbered as they open, and
/// a disconnect reported once whichever signal comes first (the unplug or
/// the connection's own end). What `iapctl supervise` runs.
public struct HotplugRunner: Sendable {
    public enum Event: Sendable {
        case openFailed(USBDeviceInfo, attempt: Int, TransportError)
        case connected(number: Int, USBDeviceInfo, any SupervisedConnection)
        case disconnected(number: Int, USBDeviceInfo, reason: String)
        case gaveUp(USBDeviceInfo, reason: String)
    }

    /// The udev monitor could not be started or stopped working.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public var configuration: DeviceSupervisor.Configuration
    /// Stop once this many connections have ended (nil: run until cancelled).
    public var stopAfter: Int?

    public init(configuration: DeviceSupervisor.Configuration = .init(), stopAfter: Int? = nil) {
        self.configuration = configuration
        self.stopAfter = stopAfter
    }

    private enum Input: Sendable {
        case udev(UdevMonitor.Event)
        case openFinished(USBDeviceInfo, attempt: Int, any SupervisedConnection, TransportError?)
        case ended(connection: Int, reason: String)
        case tick
        case cancelled
    }

    /// Runs until `stopAfter` connections have ended or the task is
    /// cancelled. `make(device, number)` makes the connection for a device;
    /// `number` is the one it gets if it opens.
    public func run(make: @escaping @Sendable (USBDeviceInfo, _ number: Int) -> any SupervisedConnection,
                    events: @escaping @Sendable (Event) -> Void) async throws {
        var supervisor = DeviceSupervisor(configuration: configuration)
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .bufferingNewest(4096))
        let monitor: UdevMonitor
        do {
            monitor = try UdevMonitor()
            try monitor.start { feed.yield(.udev($0)) }
        } catch {
            throw Failure(description: "cannot watch USB devices: \(error)")
        }
        defer { monitor.stop() }

        var opened = 0
        var running: [Int: any SupervisedConnection] = [:]
        var opening: [String: any SupervisedConnection] = [:]
        var waitingOpens: [(USBDeviceInfo, Int)] = []
        var openInFlight = false
        var ended = 0
        var timer: Task<Void, Never>?
        defer { timer?.cancel() }

        func schedule() {
            timer?.cancel()
            guard let deadline = supervisor.nextDeadline else { return }
            let delay = max(0, deadline.nanoseconds - MonotonicClock.now().nanoseconds)
            timer = Task {
                try? await Task.sleep(for: .nanoseconds(delay))
                if !Task.isCancelled { feed.yield(.tick) }
            }
        }

        // One open at a time, on a thread of its own, so connection numbers follow the order of opens.
        func startOpen(_ device: USBDeviceInfo, attempt: Int) {
            let connection = make(device, opened + 1)
            openInFlight = true
            do {
                try DedicatedThread.start("opening \(device.syspath)") {
                    do throws(TransportError) {
                        try connection.open()
                        feed.yield(.openFinished(device, attempt: attempt, connection, nil))
                    } catch {
                        feed.yield(.openFinished(device, attempt: attempt, connection, error))
                    }
                }
            } catch {
                feed.yield(.openFinished(device, attempt: attempt, connection, error))
            }
        }

        try await withTaskCancellationHandler {
            for await input in inputs {
                let now = MonotonicClock.now()
                var actions: [DeviceSupervisor.Action]
                switch input {
                case .cancelled:
                    actions = []
                case .udev(.failed(let reason)):
                    for connection in running.values { await connection.close() }
                    throw Failure(description: "the udev monitor stopped: \(reason)")
                case .udev(let event):
                    guard let hotplug = event.hotplug else { continue }
                    actions = supervisor.hotplug(hotplug, now: now)
                case .openFinished(let device, let attempt, let connection, let error):
                    let syspath = device.syspath
                    openInFlight = false
                    if let error {
                        // Retried a bounded number of times: just after "add", udev may not
                        // have applied its rules yet, and a device may still be switching
                        // configuration.
                        events(.openFailed(device, attempt: attempt, error))
                        actions = supervisor.openFailed(syspath, reason: error.description, retryable: true, now: now)
                    } else {
                        actions = supervisor.opened(syspath)
                        if actions.contains(where: { if case .connected = $0 { true } else { false } }) {
                            opened += 1
                            opening[syspath] = connection
                        } else {
                            // Unplugged while it was opening: the supervisor no longer wants it.
                            await connection.close()
                        }
                    }
                case .ended(let number, let reason):
                    actions = supervisor.connectionEnded(number, reason: reason)
                case .tick:
                    actions = supervisor.tick(now: now)
                }
                while !actions.isEmpty {
                    switch actions.removeFirst() {
                    case .open(let device, let attempt):
                        waitingOpens.append((device, attempt))
                    case .connected(let number, let device):
                        guard let connection = opening.removeValue(forKey: device.syspath) else { continue }
                        running[number] = connection
                        events(.connected(number: number, device, connection))
                        Task {
                            let reason = await connection.run()
                            feed.yield(.ended(connection: number, reason: reason))
                        }
                    case .disconnected(let number, let device, let reason):
                        events(.disconnected(number: number, device, reason: reason))
                        ended += 1
                    case .close(let number):
                        await running.removeValue(forKey: number)?.close()
                    case .gaveUp(let device, let reason):
                        events(.gaveUp(device, reason: reason))
                    }
                }
                if !openInFlight, !waitingOpens.isEmpty {
                    let (device, attempt) = waitingOpens.removeFirst()
                    startOpen(device, attempt: attempt)
                }
                schedule()
                if let stopAfter, ended >= stopAfter { break }
                if Task.isCancelled { break }
            }
        } onCancel: {
            feed.yield(.cancelled)
        }
        for connection in running.values { await connection.close() }
    }
}
