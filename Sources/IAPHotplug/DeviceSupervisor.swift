import IAPWire

/// Turns hotplug events and transport and link signals into one connection
/// per plugged device, sans-IO.
///
/// For each matching device that appears it asks the edge to open it
/// (retrying with backoff, since the "arrived" event can come before udev
/// has fixed the permissions); once open, it reports `.connected` with a
/// fresh connection number. Whatever signal of departure comes first (udev
/// remove, a transfer error, link timeout, RST) reports `.disconnected`
/// exactly once for that connection and asks the edge to close it; later
/// signals for the same connection are ignored. The next plug is a new
/// connection with fresh state.
public struct DeviceSupervisor: Sendable {
    public struct Configuration: Hashable, Sendable {
        public var matcher: DeviceMatcher
        public var firstRetry: Duration
        public var maximumRetry: Duration
        public var maximumAttempts: Int
        /// Devices tracked at once; a flood of hotplug events cannot grow it.
        public var maximumDevices: Int

        public init(matcher: DeviceMatcher = .iapDevices, firstRetry: Duration = .milliseconds(100), maximumRetry: Duration = .seconds(2),
                    maximumAttempts: Int = 10, maximumDevices: Int = 32) {
            self.matcher = matcher
            self.firstRetry = firstRetry
            self.maximumRetry = maximumRetry
            self.maximumAttempts = maximumAttempts
            self.maximumDevices = maximumDevices
        }
    }

    public enum Action: Hashable, Sendable {
        /// Try to open the device (attempt counts from 1).
        case open(USBDeviceInfo, attempt: Int)
        /// Release the connection's transport.
        case close(connection: Int)
        case connected(connection: Int, USBDeviceInfo)
        case disconnected(connection: Int, USBDeviceInfo, reason: String)
        /// The device could not be opened; the reason says why.
        case gaveUp(USBDeviceInfo, reason: String)
    }

    private enum DeviceState: Hashable, Sendable {
        case opening(attempt: Int, retryAt: LinkInstant?)
        case connected(Int)
    }

    public let configuration: Configuration
    private var devices: [String: (info: USBDeviceInfo, state: DeviceState)] = [:]
    private var connections = 0

    public init(configuration: Configuration = Configuration()) { self.configuration = configuration }

    /// The devices connected now, by connection number.
    public var connected: [Int: USBDeviceInfo] {
        var result: [Int: USBDeviceInfo] = [:]
        for (_, entry) in devices { if case .connected(let number) = entry.state { result[number] = entry.info } }
        return result
    }

    /// A device appeared or left (also for each device found by enumeration at start).
    public mutating func hotplug(_ event: HotplugEvent, now: LinkInstant) -> [Action] {
        switch event {
        case .added(let device):
            guard configuration.matcher.matches(device), devices[device.syspath] == nil else { return [] }
            guard devices.count < configuration.maximumDevices else {
                return [.gaveUp(device, reason: "already supervising \(configuration.maximumDevices) devices")]
            }
            devices[device.syspath] = (device, .opening(attempt: 1, retryAt: nil))
            return [.open(device, attempt: 1)]
        case .removed(let device):
            return depart(device.syspath, reason: "unplugged")
        }
    }

    /// The edge opened the device.
    public mutating func opened(_ syspath: String) -> [Action] {
        guard let entry = devices[syspath], case .opening = entry.state else { return [] }
        connections += 1
        devices[syspath] = (entry.info, .connected(connections))
        return [.connected(connection: connections, entry.info)]
    }

    /// The edge could not open the device. Retryable failures (permission
    /// not yet granted, device busy) are tried again with backoff.
    public mutating func openFailed(_ syspath: String, reason: String, retryable: Bool, now: LinkInstant) -> [Action] {
        guard let entry = devices[syspath], case .opening(let attempt, _) = entry.state else { return [] }
        guard retryable, attempt < configuration.maximumAttempts else {
            devices[syspath] = nil
            return [.gaveUp(entry.info, reason: retryable ? "\(reason) (after \(attempt) attempts)" : reason)]
        }
        var delay = configuration.firstRetry
        for _ in 1..<attempt { delay = min(delay * 2, configuration.maximumRetry) }
        devices[syspath] = (entry.info, .opening(attempt: attempt + 1, retryAt: now + delay))
        return []
    }

    /// The connection's transport failed or its link went down: the device
    /// is gone as far as this connection is concerned.
    public mutating func connectionEnded(_ connection: Int, reason: String) -> [Action] {
        guard let syspath = devices.first(where: { $0.value.state == .connected(connection) })?.key else { return [] }
        return depart(syspath, reason: reason)
    }

    private mutating func depart(_ syspath: String, reason: String) -> [Action] {
        guard let entry = devices.removeValue(forKey: syspath) else { return [] }
        if case .connected(let number) = entry.state {
            return [.disconnected(connection: number, entry.info, reason: reason), .close(connection: number)]
        }
        return []
    }

    /// Retries that are due.
    public mutating func tick(now: LinkInstant) -> [Action] {
        var actions: [Action] = []
        for (path, entry) in devices.sorted(by: { $0.key < $1.key }) {
            guard case .opening(let attempt, let retryAt?) = entry.state, retryAt <= now else { continue }
            devices[path] = (entry.info, .opening(attempt: attempt, retryAt: nil))
            actions.append(.open(entry.info, attempt: attempt))
        }
        return actions
    }

    public var nextDeadline: LinkInstant? {
        devices.values.compactMap { entry -> LinkInstant? in
            if case .opening(_, let retryAt) = entry.state { retryAt } else { nil }
        }.min()
    }
}
