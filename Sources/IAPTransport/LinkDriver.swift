import Dispatch
import IAPLink
import Synchronization

/// What a running link reports to the program above it.
public enum LinkDriverEvent: Sendable {
    case link(LinkEvent)
    /// Bytes delivered in order on a session.
    case data(session: UInt8, [UInt8])
    /// The transport closed, with why and its kind; nothing more will be reported.
    case transportClosed(TransportError)
}

/// Runs a `LinkEnd` over a transport in real time: the edge that owns the
/// clock, the timer and the transport. Every input to the link end (bytes
/// from the transport, the timer, a send) is handled under one lock, briefly
/// and without waiting on anything, on the thread that brings it; what the
/// link end writes goes to the transport from a serial queue of its own, in
/// order. So any method may be called from any thread or task: `send` waits
/// (suspending, never blocking a thread) only while a session's queue is
/// full, and `close` until the transport is closed.
///
/// Received data counts against the link's receive buffer limit until the
/// reader hands it back with `consumed`: a reader that falls behind holds
/// the peer back instead of letting `events` grow.
public final class LinkDriver: Sendable {
    public let events: AsyncStream<LinkDriverEvent>
    public let transport: Transport

    private let state: Mutex<State>
    private let continuation: AsyncStream<LinkDriverEvent>.Continuation
    /// Fires at the link end's next deadline; rearmed after every input.
    private let timer = DeadlineTimer()
    /// Writes to the transport, in the order the link end made them.
    private let writer = DispatchQueue(label: "iap.link.driver.write")

    private struct State {
        var link: LinkEnd
        /// Senders waiting for room on a session.
        var waiters: [UInt8: [CheckedContinuation<Void, Never>]] = [:]
        var finished = false
        var writeTap: (@Sendable ([UInt8]) -> Void)?
        var transportError: TransportError?
    }

    public init(configuration: LinkConfiguration, transport: Transport) {
        state = Mutex(State(link: LinkEnd(configuration: configuration)))
        self.transport = transport
        (events, continuation) = AsyncStream.makeStream(of: LinkDriverEvent.self, bufferingPolicy: .unbounded)
        timer.start { [weak self] in
            guard let self else { return }
            state.withLock { state in
                guard !state.finished else { return }
                apply(state.link.tick(now: MonotonicClock.now()), &state)
            }
        }
    }

    deinit { timer.cancel() }

    /// Opens the transport and starts the link end.
    public func start() throws(TransportError) {
        try transport.start { [weak self] event in self?.transportEvent(event) }
        state.withLock { apply($0.link.start(now: MonotonicClock.now()), &$0) }
    }

    /// Sends bytes on a session, waiting while its queue is full.
    public func send(_ bytes: [UInt8], session: UInt8) async throws(LinkSendError) {
        while true {
            let outcome = state.withLock { state -> Result<Void, LinkSendError> in
                do throws(LinkSendError) {
                    apply(try state.link.send(bytes, session: session, now: MonotonicClock.now()), &state)
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            guard case .failure(let error) = outcome else { return }
            guard case .queueFull = error.kind else { throw error }
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.link.canSend(bytes.count, session: session) || !state.link.isUp { return true }
                    state.waiters[session, default: []].append(waiter)
                    return false
                }
                if ready { waiter.resume() }
            }
        }
    }

    /// The reader has handled `count` bytes of `.data` events.
    public func consumed(_ count: Int) {
        state.withLock { state in
            guard !state.finished else { return }
            apply(state.link.consumed(count, now: MonotonicClock.now()), &state)
        }
    }

    /// Starts the link end over again on the same transport (a peer restart,
    /// or re-synchronising after RST).
    public func restart() {
        state.withLock { state in
            guard !state.finished else { return } // nothing to restart over a closed transport
            state.link = LinkEnd(configuration: state.link.configuration)
            apply(state.link.start(now: MonotonicClock.now()), &state)
        }
    }

    /// Writes bytes to the transport behind the link's back, after what the
    /// link end has written so far: stale bytes, corrupted or duplicated
    /// packets, for conformance probes.
    public func injectRaw(_ bytes: [UInt8]) {
        writer.async { [transport] in transport.write(bytes) }
    }

    /// Called with every write the link makes from now on, in order, on the
    /// driver's writing queue.
    public func tapWrites(_ tap: @escaping @Sendable ([UInt8]) -> Void) {
        state.withLock { $0.writeTap = tap }
    }

    /// Whether the link is up right now.
    public var isUp: Bool { state.withLock { $0.link.isUp } }
    public var negotiated: NegotiatedLink? { state.withLock { $0.link.negotiated } }
    public var statistics: LinkStatistics { state.withLock { $0.link.statistics } }
    /// Why the transport closed; nil while it is open. Set before the link's
    /// last events (its going down) are on `events`.
    public var transportError: TransportError? { state.withLock { $0.transportError } }

    /// Sends RST, then closes the transport; returns once both are done, so a
    /// program may exit right after.
    public func close() async {
        state.withLock { apply($0.link.reset(now: MonotonicClock.now()), &$0) }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            writer.async { [transport] in
                transport.close()
                done.resume()
            }
        }
    }

    private func transportEvent(_ event: TransportEvent) {
        state.withLock { state in
            guard !state.finished else { return }
            switch event {
            case .received(let bytes):
                apply(state.link.receive(bytes, now: MonotonicClock.now()), &state)
            case .closed(let reason):
                state.transportError = reason
                apply(state.link.transportClosed(reason.description, now: MonotonicClock.now()), &state)
                state.finished = true
                timer.cancel()
                resumeAllWaiters(&state)
                continuation.yield(.transportClosed(reason))
                continuation.finish()
            }
        }
    }

    /// Carries out what the link end asked for, under the lock: events are
    /// reported and writes queued in the order the link end made them.
    private func apply(_ actions: [LinkAction], _ state: inout State) {
        for action in actions {
            switch action {
            case .send(let bytes):
                writer.async { [transport, tap = state.writeTap] in
                    tap?(bytes)
                    transport.write(bytes)
                }
            case .deliver(let session, let bytes):
                continuation.yield(.data(session: session, bytes))
            case .event(let event):
                continuation.yield(.link(event))
                switch event {
                case .sessionWritable(let session):
                    for waiter in state.waiters.removeValue(forKey: session) ?? [] { waiter.resume() }
                case .down, .failed:
                    resumeAllWaiters(&state)
                default:
                    break
                }
            }
        }
        timer.schedule(at: state.link.nextDeadline)
    }

    private func resumeAllWaiters(_ state: inout State) {
        let all = state.waiters.values.flatMap { $0 }
        state.waiters.removeAll()
        for waiter in all { waiter.resume() }
    }
}

/// A timer that fires at a deadline, set from any thread.
///
/// `@unchecked Sendable`: Dispatch on Linux does not mark its timer source
/// Sendable, but libdispatch makes `schedule` and `cancel` safe to call from
/// any thread, and they are all this class does once `start` has run (in
/// its owner's initialiser, before it is shared).
private final class DeadlineTimer: @unchecked Sendable {
    private let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "iap.link.driver.timer"))

    /// Sets what firing does and starts the timer, unscheduled.
    func start(_ fire: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: fire)
        source.resume()
    }

    /// Fires at `deadline`, or never when it is nil.
    func schedule(at deadline: LinkInstant?) {
        guard let deadline else {
            source.schedule(deadline: .distantFuture)
            return
        }
        let delay = max(0, deadline.nanoseconds - MonotonicClock.now().nanoseconds)
        source.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .microseconds(200))
    }

    func cancel() { source.cancel() }
}
