import Dispatch
import IAPLink

/// Two transports joined by an in-memory wire, each direction with its own
/// seeded faults (loss, duplication, reordering, corruption, delay, jitter,
/// bandwidth), running in real time. Closing either end closes both, as
/// pulling a cable would.
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

/// The wire between the two loopback ends; handlers are called from its
/// serial queue.
///
/// `@unchecked Sendable`: every mutable property below is read and written
/// only in blocks running on `queue`, which runs one block at a time; the
/// methods other threads call only enqueue.
private final class LoopbackHub: @unchecked Sendable {
    private let queue = DispatchQueue(label: "iap.loopback")
    private var wires: [FaultyWire]
    private var handlers: [(@Sendable (TransportEvent) -> Void)?] = [nil, nil]
    /// Bytes that arrived before the receiving end started reading.
    private var waiting: [[[UInt8]]] = [[], []]
    private var closed = false
    private var scheduled: [LinkInstant?] = [nil, nil]

    init(wires: [FaultyWire]) { self.wires = wires }

    func attach(side: Int, handler: @escaping @Sendable (TransportEvent) -> Void) {
        queue.async { [self] in
            handlers[side] = handler
            for bytes in waiting[side] { handler(.received(bytes)) }
            waiting[side].removeAll()
            if closed { handler(.closed(TransportError(.closed, "the loopback was closed"))) }
        }
    }

    func write(_ bytes: [UInt8], from side: Int) {
        queue.async { [self] in
            guard !closed else { return }
            let now = MonotonicClock.now()
            wires[side].write(bytes, now: now)
            // Bytes due now (a wire without delay) arrive in this same block.
            deliver(from: side, upTo: now)
            schedule(side)
        }
    }

    private func deliver(from side: Int, upTo now: LinkInstant) {
        for bytes in wires[side].arrivals(upTo: now) {
            if let handler = handlers[1 - side] { handler(.received(bytes)) } else { waiting[1 - side].append(bytes) }
        }
    }

    func close(reason: TransportError, from side: Int) {
        queue.async { [self] in
            guard !closed else { return }
            closed = true
            handlers[side]?(.closed(reason))
            handlers[1 - side]?(.closed(TransportError(.closed, "the other loopback end closed")))
            handlers = [nil, nil]
        }
    }

    /// Arranges delivery of the earliest bytes in flight from `side`.
    private func schedule(_ side: Int) {
        guard let next = wires[side].nextArrival else { return }
        if let pending = scheduled[side], pending <= next { return }
        scheduled[side] = next
        let delay = max(0, next.nanoseconds - MonotonicClock.now().nanoseconds)
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
            scheduled[side] = nil
            guard !closed else { return }
            deliver(from: side, upTo: MonotonicClock.now())
            schedule(side)
        }
    }
}
