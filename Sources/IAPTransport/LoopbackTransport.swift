import Dispatch
import Synchronization
import IAPWire

/// Two transports joined by an in-memory wire, each direction with its own
/// seeded faults (loss, duplication, reordering, corruption, delay, jitter,
/// bandwidth), running in real time. Closing either end closes both, as
/// pulling a cable would. Bytes a clean wire carries reach the other end's
/// handler inside `write`, on the writer's thread.
public final class LoopbackTransport: Transport {
    public let name: String
    private let hub: LoopbackHub
    private let side: Int

    fileprivate init(name: String, hub: LoopbackHub, side: Int) {
        self.name = name
        self.hub = hub
        self.side = side
    }

    /// A connected pair: bytes written to the first arrive at the second
    /// with `towardsSecond` faults, and the other way with `towardsFirst`.
    public static func pair(towardsSecond: WireFaults = .none, towardsFirst: WireFaults = .none, seed: UInt64 = 1) -> (LoopbackTransport, LoopbackTransport) {
        let hub = LoopbackHub(wires: [FaultyWire(faults: towardsSecond, seed: seed &* 2 &+ 1), FaultyWire(faults: towardsFirst, seed: seed &* 2 &+ 2)])
        return (LoopbackTransport(name: "loopback", hub: hub, side: 0), LoopbackTransport(name: "loopback", hub: hub, side: 1))
    }

    public func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        hub.attach(side: side, handler: handler)
    }

    public func write(_ bytes: [UInt8]) { hub.write(bytes, from: side) }
    public func close() { hub.close(reason: TransportError(.closed, "closed by this end"), from: side) }
}

/// The wire between the two loopback ends. Bytes due at once are handed to
/// the receiving end on the writer's thread, inside `write`: no thread
/// hand-off between two link ends in one process. Each direction has one
/// deliverer at a time (whoever finds it idle; others leave their bytes in
/// its queue), so a side's handler is called one call at a time and in
/// order, and never under the hub's lock: a handler that writes back (the
/// other direction) or writes again (this direction, left for the
/// deliverer already on the stack) cannot deadlock. Delayed bytes (wire
/// faults) arrive from a timer queue the same way.
private final class LoopbackHub: Sendable {
    private struct Direction {
        var wire: FaultyWire
        /// Whether the wire injects nothing (no delay either): bytes skip it.
        let instant: Bool
        /// Events due for the receiving end, oldest first.
        var due: [TransportEvent] = []
        /// Whether a thread is handing `due` to the receiving end.
        var delivering = false
        /// When the timer queue will next look for delayed bytes.
        var scheduled: LinkInstant?
    }

    private struct State {
        /// Index: the sending side.
        var directions: [Direction]
        /// Index: the receiving side; nil until it starts.
        var handlers: [(@Sendable (TransportEvent) -> Void)?] = [nil, nil]
        var closed = false
    }

    private let state: Mutex<State>
    private let timerQueue = DispatchQueue(label: "iap.loopback.delay")

    init(wires: [FaultyWire]) {
        state = Mutex(State(directions: wires.map { Direction(wire: $0, instant: $0.faults == WireFaults(delay: .zero)) }))
    }

    func attach(side: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        state.withLock { $0.handlers[side] = handler }
        // Bytes written before this end started reading.
        deliver(from: 1 - side)
    }

    func write(_ bytes: [UInt8], from side: Int) {
        let scheduleAt = state.withLock { state -> LinkInstant? in
            guard !state.closed else { return nil }
            if state.directions[side].instant {
                state.directions[side].due.append(.received(bytes))
                return nil
            }
            let now = MonotonicClock.now()
            state.directions[side].wire.write(bytes, now: now)
            for arrived in state.directions[side].wire.arrivals(upTo: now) { state.directions[side].due.append(.received(arrived)) }
            return nextCheck(side, &state)
        }
        if let scheduleAt { arm(side, at: scheduleAt) }
        deliver(from: side)
    }

    func close(reason: TransportError, from side: Int) {
        let first = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.closed = true
            // After the bytes already due, each end hears of the close once.
            state.directions[1 - side].due.append(.closed(reason))
            state.directions[side].due.append(.closed(TransportError(.closed, "the other loopback end closed")))
            return true
        }
        guard first else { return }
        deliver(from: 1 - side)
        deliver(from: side)
    }

    /// Hands what is due from `side` to the other end, unless another thread
    /// is doing so (it takes these too) or that end has not started.
    private func deliver(from side: Int) {
        let receiver = 1 - side
        // What is due and the receiving end's handler, for the thread that
        // delivers; nil when there is nothing to do (or someone else does it).
        func claim(_ state: inout State) -> ([TransportEvent], @Sendable (TransportEvent) -> Void)? {
            guard let handler = state.handlers[receiver], !state.directions[side].due.isEmpty else {
                state.directions[side].delivering = false
                return nil
            }
            state.directions[side].delivering = true
            defer { state.directions[side].due = [] }
            return (state.directions[side].due, handler)
        }
        var batch = state.withLock { state in state.directions[side].delivering ? nil : claim(&state) }
        while let (events, handler) = batch {
            for event in events { handler(event) }
            batch = state.withLock { state in
                if case .closed = events.last { state.handlers[receiver] = nil }
                return claim(&state)
            }
        }
    }

    /// When the timer queue should next look at the wire from `side`, if it
    /// is not already due to look by then.
    private func nextCheck(_ side: Int, _ state: inout State) -> LinkInstant? {
        guard let next = state.directions[side].wire.nextArrival else { return nil }
        if let pending = state.directions[side].scheduled, pending <= next { return nil }
        state.directions[side].scheduled = next
        return next
    }

    private func arm(_ side: Int, at instant: LinkInstant) {
        let delay = max(0, instant.nanoseconds - MonotonicClock.now().nanoseconds)
        timerQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
            let again = state.withLock { state -> LinkInstant? in
                state.directions[side].scheduled = nil
                guard !state.closed else { return nil }
                for arrived in state.directions[side].wire.arrivals(upTo: MonotonicClock.now()) {
                    state.directions[side].due.append(.received(arrived))
                }
                return nextCheck(side, &state)
            }
            if let again { arm(side, at: again) }
            deliver(from: side)
        }
    }
}
