import IAPLink
import IAPTransport
import IAPWire

/// Two link ends joined by a simulated wire, in virtual time: the whole
/// exchange is deterministic for a seed, runs in microseconds of real time
/// per simulated second, and needs no threads.
public struct LinkSimulator: Sendable {
    public struct Record: Hashable, Sendable {
        public var time: LinkInstant
        public var role: LinkRole
        public var event: LinkEvent
    }

    public var accessory: LinkEnd
    public var device: LinkEnd
    /// Accessory to device.
    public var outbound: FaultyWire
    /// Device to accessory.
    public var inbound: FaultyWire
    public private(set) var now: LinkInstant = .zero
    public private(set) var records: [Record] = []
    /// Bytes delivered per role and session, in order.
    public private(set) var delivered: [LinkRole: [UInt8: [UInt8]]] = [.accessory: [:], .device: [:]]
    /// The same deliveries one by one (for datagram sessions, one datagram each).
    public private(set) var deliveries: [LinkRole: [UInt8: [[UInt8]]]] = [.accessory: [:], .device: [:]]
    /// Every write each end made, in order (for checks on what went on the wire).
    public private(set) var sent: [LinkRole: [[UInt8]]] = [.accessory: [], .device: []]
    /// The same writes with the time they were made, in the order made.
    public private(set) var wireLog: [(time: LinkInstant, role: LinkRole, bytes: [UInt8])] = []
    /// Steps taken, to bound runaway scenarios.
    public private(set) var steps = 0
    public static let maximumSteps = 2_000_000
    /// Steps allowed in all (defaults to `maximumSteps`).
    public var stepBudget = LinkSimulator.maximumSteps
    /// Steps allowed without virtual time advancing: more means a timer that
    /// fires and is not moved on (a broken retransmission timer, say).
    public var stepsPerInstantBudget = 200_000
    /// Why the simulation stopped early, once a budget ran out. From then on
    /// `run` no longer steps: it moves time to the limit it is given, so
    /// callers that loop until a deadline end, and report this failure.
    public private(set) var budgetFailure: String?
    private var stepsAtInstant = 0

    /// Changes the faults of one direction from now on.
    public mutating func setFaults(_ faults: WireFaults, towards role: LinkRole) {
        if role == .device { outbound.faults = faults } else { inbound.faults = faults }
    }

    public init(accessory: LinkConfiguration, device: LinkConfiguration, outbound: WireFaults = .none, inbound: WireFaults = .none, seed: UInt64 = 1) {
        self.accessory = LinkEnd(configuration: accessory)
        self.device = LinkEnd(configuration: device)
        self.outbound = FaultyWire(faults: outbound, seed: seed &* 2 &+ 1)
        self.inbound = FaultyWire(faults: inbound, seed: seed &* 2 &+ 2)
    }

    public func events(_ role: LinkRole) -> [LinkEvent] { records.filter { $0.role == role }.map(\.event) }

    public func deliveredBytes(to role: LinkRole, session: UInt8) -> [UInt8] { delivered[role]?[session] ?? [] }
    public func deliveredDatagrams(to role: LinkRole, session: UInt8) -> [[UInt8]] { deliveries[role]?[session] ?? [] }

    /// Starts both ends.
    public mutating func start() {
        apply(device.start(now: now), from: .device)
        apply(accessory.start(now: now), from: .accessory)
    }

    /// Restarts one end as a fresh `LinkEnd` (a peer restart).
    public mutating func restart(_ role: LinkRole) {
        switch role {
        case .accessory:
            accessory = LinkEnd(configuration: accessory.configuration)
            apply(accessory.start(now: now), from: .accessory)
        case .device:
            device = LinkEnd(configuration: device.configuration)
            apply(device.start(now: now), from: .device)
        }
    }

    /// Pulls the cable: both ends see their transport close, and whatever
    /// was on the wire is lost.
    public mutating func unplug(reason: String = "cable unplugged") {
        _ = outbound.arrivals(upTo: LinkInstant(nanoseconds: .max))
        _ = inbound.arrivals(upTo: LinkInstant(nanoseconds: .max))
        apply(accessory.transportClosed(reason, now: now), from: .accessory)
        apply(device.transportClosed(reason, now: now), from: .device)
    }

    /// Plugs the cable back in: both ends start over as fresh link ends.
    public mutating func plug() {
        restart(.device)
        restart(.accessory)
    }

    /// Queues bytes on one end's session.
    public mutating func send(_ bytes: [UInt8], session: UInt8, from role: LinkRole) throws(LinkSendError) {
        switch role {
        case .accessory: apply(try accessory.send(bytes, session: session, now: now), from: .accessory)
        case .device: apply(try device.send(bytes, session: session, now: now), from: .device)
        }
    }

    /// Injects raw bytes as if the wire had carried them to `role`.
    public mutating func inject(_ bytes: [UInt8], to role: LinkRole) {
        switch role {
        case .accessory: apply(accessory.receive(bytes, now: now), from: .accessory)
        case .device: apply(device.receive(bytes, now: now), from: .device)
        }
    }

    public mutating func reset(_ role: LinkRole) {
        switch role {
        case .accessory: apply(accessory.reset(now: now), from: .accessory)
        case .device: apply(device.reset(now: now), from: .device)
        }
    }

    public mutating func renegotiate() {
        apply(accessory.renegotiate(now: now), from: .accessory)
    }

    /// Advances time, delivering and ticking, until `until` or until `done`
    /// holds. Returns whether `done` held.
    @discardableResult
    public mutating func run(until limit: LinkInstant, done: (LinkSimulator) -> Bool = { _ in false }) -> Bool {
        while budgetFailure == nil {
            if done(self) { return true }
            let candidates = [accessory.nextDeadline, device.nextDeadline, outbound.nextArrival, inbound.nextArrival].compactMap { $0 }
            guard let next = candidates.min(), next <= limit else {
                now = max(now, limit)
                return done(self)
            }
            if steps >= stepBudget {
                budgetFailure = "the simulation ran out of its step budget (\(stepBudget) steps) at \(now.nanoseconds / 1_000_000) ms of virtual time"
                break
            }
            if next > now { stepsAtInstant = 0 }
            stepsAtInstant += 1
            if stepsAtInstant > stepsPerInstantBudget {
                budgetFailure = "virtual time stopped at \(now.nanoseconds / 1_000_000) ms: \(stepsPerInstantBudget) steps without it advancing"
                    + " (accessory deadline \(accessory.nextDeadline.map { "\($0)" } ?? "none"), device deadline \(device.nextDeadline.map { "\($0)" } ?? "none"):"
                    + " a timer that fires without moving on?)"
                break
            }
            steps += 1
            now = max(now, next)
            for bytes in outbound.arrivals(upTo: now) { apply(device.receive(bytes, now: now), from: .device) }
            for bytes in inbound.arrivals(upTo: now) { apply(accessory.receive(bytes, now: now), from: .accessory) }
            if let deadline = accessory.nextDeadline, deadline <= now { apply(accessory.tick(now: now), from: .accessory) }
            if let deadline = device.nextDeadline, deadline <= now { apply(device.tick(now: now), from: .device) }
        }
        // Out of budget: no more steps, but time moves on so that loops bounded by a deadline end.
        now = max(now, limit)
        return done(self)
    }

    /// Runs for a span of virtual time.
    public mutating func run(for duration: Duration) {
        run(until: now + duration)
    }

    private mutating func apply(_ actions: [LinkAction], from role: LinkRole) {
        var consumed = 0
        for action in actions {
            switch action {
            case .send(let bytes):
                sent[role, default: []].append(bytes)
                wireLog.append((now, role, bytes))
                if role == .accessory { outbound.write(bytes, now: now) } else { inbound.write(bytes, now: now) }
            case .deliver(let session, let bytes):
                delivered[role, default: [:]][session, default: []].append(contentsOf: bytes)
                deliveries[role, default: [:]][session, default: []].append(bytes)
                consumed += bytes.count
            case .event(let event):
                records.append(Record(time: now, role: role, event: event))
            }
        }
        // The simulated reader keeps up: what it was given is handed back at once.
        guard consumed > 0 else { return }
        switch role {
        case .accessory: apply(accessory.consumed(consumed, now: now), from: .accessory)
        case .device: apply(device.consumed(consumed, now: now), from: .device)
        }
    }
}
