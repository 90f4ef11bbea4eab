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
/// and without waiting on anything, on the thread that brings it. What the
/// link end asks for (writes, events, waking senders) is carried out right
/// after, outside the lock and in the order it was asked for: one thread at
/// a time carries out everything pending, so a woken reader or sender never
/// finds the lock held by the thread that woke it. Transports queue writes
/// and never block the caller; the packets of one input go as one write
/// when the transport takes coalesced writes. So any method may be called
/// from any thread or task: `send` waits (suspending, never blocking a
/// thread) only while a session's queue is full, and `close` until the
/// transport is closed.
///
/// Received data counts against the link's receive buffer limit until the
/// reader hands it back with `consumed`: a reader that falls behind holds
/// the peer back instead of letting its events grow.
public final class LinkDriver: Sendable {
    public let events: AsyncStream<LinkDriverEvent>
    public let transport: Transport

    private let state: Mutex<State>
    /// Where events go: `events`, or the handler given to `init`.
    private let report: @Sendable (LinkDriverEvent) -> Void
    private let endReports: @Sendable () -> Void
    /// Fires at the link end's next deadline; rearmed after every input.
    private let timer = DeadlineTimer(label: "iap.link.driver.timer")
    /// Bytes the reader handed back that the link end has not been told of.
    private let consumedPending = Atomic<Int>(0)
    /// Whether the link end holds packets until the reader hands bytes back.
    private let holdingForReader = Atomic<Bool>(false)

    /// Something to carry out after the lock, in order.
    private enum Effect {
        case write([UInt8])
        case report(LinkDriverEvent)
        case resume([CheckedContinuation<Void, Never>])
        case endReports
    }

    private struct State {
        var link: LinkEnd
        /// Senders waiting for room on a session.
        var waiters: [UInt8: [CheckedContinuation<Void, Never>]] = [:]
        var finished = false
        var writeTap: (@Sendable ([UInt8]) -> Void)?
        var transportError: TransportError?
        /// Effects not yet carried out, oldest first.
        var outbox: [Effect] = []
        /// Whether a thread is carrying out the outbox (it takes what is
        /// added meanwhile too).
        var carrying = false

        /// Takes the outbox for the caller to carry out, unless another
        /// thread is already carrying it out.
        mutating func claimOutbox() -> [Effect] {
            guard !carrying, !outbox.isEmpty else { return [] }
            carrying = true
            defer { outbox = [] }
            return outbox
        }
    }

    /// Events are reported on `events`.
    public convenience init(configuration: LinkConfiguration, transport: Transport) {
        let (events, continuation) = AsyncStream.makeStream(of: LinkDriverEvent.self, bufferingPolicy: .unbounded)
        self.init(configuration: configuration, transport: transport, events: events,
                  report: { continuation.yield($0) }, endReports: { continuation.finish() })
    }

    /// Events go to `handler` instead of `events` (which then ends at once):
    /// for a caller that merges them into an input stream of its own, one
    /// hop fewer. The handler is called on the thread of an input (a
    /// transport's reader, the timer, a sender), one call at a time and in
    /// order, outside the driver's lock; it must return promptly.
    public convenience init(configuration: LinkConfiguration, transport: Transport,
                            handler: @escaping @Sendable (LinkDriverEvent) -> Void) {
        let (events, continuation) = AsyncStream.makeStream(of: LinkDriverEvent.self)
        continuation.finish()
        self.init(configuration: configuration, transport: transport, events: events, report: handler, endReports: {})
    }

    private init(configuration: LinkConfiguration, transport: Transport, events: AsyncStream<LinkDriverEvent>,
                 report: @escaping @Sendable (LinkDriverEvent) -> Void, endReports: @escaping @Sendable () -> Void) {
        state = Mutex(State(link: LinkEnd(configuration: configuration)))
        self.transport = transport
        self.events = events
        self.report = report
        self.endReports = endReports
        timer.start { [weak self] in
            guard let self else { return }
            withLink { self.apply($0.link.tick(now: MonotonicClock.now()), &$0) }
        }
    }

    deinit { timer.cancel() }

    /// Opens the transport and starts the link end.
    public func start() throws(TransportError) {
        try transport.start { [weak self] event in self?.transportEvent(event) }
        withLink { apply($0.link.start(now: MonotonicClock.now()), &$0) }
    }

    /// Sends bytes on a session, waiting while its queue is full.
    public func send(_ bytes: [UInt8], session: UInt8) async throws(LinkSendError) {
        while true {
            do throws(LinkSendError) {
                return try sendNow(bytes, session: session)
            } catch {
                guard case .queueFull = error.kind else { throw error }
            }
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.finished || state.link.canSend(bytes.count, session: session) || !state.link.isUp { return true }
                    state.waiters[session, default: []].append(waiter)
                    return false
                }
                if ready { waiter.resume() }
            }
        }
    }

    /// Writes a framed iAP1 packet to a head unit that identified in iAP1
    /// (a device end with `answersIAP1`), or throws `.noLegacyPeer`. As a
    /// session's send queue, what the head unit has not taken is bounded:
    /// while the transport holds bytes and this frame would take them past
    /// the configuration's `sendQueueLimit`, it throws `.legacyQueueFull`
    /// and sends nothing.
    public func sendLegacy(_ frame: [UInt8]) throws(LinkSendError) {
        var failure: LinkSendError?
        withLink(evenWhenFinished: true) { state in
            do throws(LinkSendError) {
                apply(try state.link.sendLegacy(frame, queued: transport.queuedWriteBytes, now: MonotonicClock.now()), &state)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// Sends bytes on a session at once, or throws: `.queueFull` when the
    /// session's queue has no room (a `.sessionWritable` event follows once
    /// it has), and whatever else `LinkEnd.send` refuses. Never waits.
    public func sendNow(_ bytes: [UInt8], session: UInt8) throws(LinkSendError) {
        // Over a closed transport the link end is closed too, and says so.
        var failure: LinkSendError?
        withLink(evenWhenFinished: true) { state in
            do throws(LinkSendError) {
                apply(try state.link.send(bytes, session: session, now: MonotonicClock.now()), &state)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
    }

    /// The reader has handled `count` bytes of `.data` events (or of
    /// `.legacyFrame` payloads, which count against the same budget). Without a
    /// lock while the link end holds nothing back for the reader: the count
    /// is passed on with the next input.
    public func consumed(_ count: Int) {
        // Sequentially consistent with `apply`'s store and load: either this
        // end sees the link holding packets back, or `apply` sees the count.
        consumedPending.add(count, ordering: .sequentiallyConsistent)
        guard holdingForReader.load(ordering: .sequentiallyConsistent) else { return }
        withLink { _ in }
    }

    /// Starts the link end over again on the same transport (a peer restart,
    /// or re-synchronising after RST). Nothing happens over a closed transport.
    public func restart() {
        withLink { state in
            state.link = LinkEnd(configuration: state.link.configuration)
            _ = consumedPending.exchange(0, ordering: .sequentiallyConsistent)
            apply(state.link.start(now: MonotonicClock.now()), &state)
        }
    }

    /// Writes bytes to the transport behind the link's back, after what the
    /// link end has written so far: stale bytes, corrupted or duplicated
    /// packets, for conformance probes.
    public func injectRaw(_ bytes: [UInt8]) {
        withLink { $0.outbox.append(.write(bytes)) }
    }

    /// Called with every packet (or detect sequence) the link writes from
    /// now on, one at a time and in order, under the driver's lock.
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
        withLink { apply($0.link.reset(now: MonotonicClock.now()), &$0) }
        // Off the caller's thread: a transport may wait briefly for its
        // queued writes (the RST) before it lets go.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [transport] in
                transport.close()
                done.resume()
            }
        }
    }

    /// Runs `body` under the lock, after passing on what the reader handed
    /// back, unless the transport has closed; then carries out what it
    /// asked for.
    private func withLink(evenWhenFinished: Bool = false, _ body: (inout State) -> Void) {
        let effects = state.withLock { state -> [Effect] in
            guard evenWhenFinished || !state.finished else { return [] }
            settleConsumed(&state)
            body(&state)
            return state.claimOutbox()
        }
        carryOut(effects)
    }

    /// Carries out `effects`, then whatever other threads added meanwhile,
    /// until the outbox is empty: one thread at a time, in order.
    private func carryOut(_ effects: [Effect]) {
        var batch = effects
        while !batch.isEmpty {
            for effect in batch {
                switch effect {
                case .write(let bytes): transport.write(bytes)
                case .report(let event): report(event)
                case .resume(let waiters): for waiter in waiters { waiter.resume() }
                case .endReports: endReports()
                }
            }
            batch = state.withLock { state in
                state.carrying = false
                return state.claimOutbox()
            }
        }
    }

    /// Tells the link end what the reader has handed back since the last input.
    private func settleConsumed(_ state: inout State) {
        let count = consumedPending.exchange(0, ordering: .sequentiallyConsistent)
        guard count > 0, !state.finished else { return }
        apply(state.link.consumed(count, now: MonotonicClock.now()), &state)
    }

    private func transportEvent(_ event: TransportEvent) {
        withLink { state in
            switch event {
            case .received(let bytes):
                apply(state.link.receive(bytes, now: MonotonicClock.now()), &state)
            case .closed(let reason):
                state.transportError = reason
                apply(state.link.transportClosed(reason.description, now: MonotonicClock.now()), &state)
                state.finished = true
                timer.cancel()
                resumeAllWaiters(&state)
                state.outbox.append(.report(.transportClosed(reason)))
                state.outbox.append(.endReports)
            }
        }
    }

    /// Turns what the link end asked for into effects, under the lock, in
    /// the order the link end made them: the packets of one input as one
    /// write when the transport takes coalesced writes, consecutive
    /// deliveries on the control session as one event.
    private func apply(_ actions: [LinkAction], _ state: inout State) {
        let first = state.outbox.endIndex
        var writing: [UInt8] = []
        var delivering: (session: UInt8, bytes: [UInt8])?
        func deliver() {
            guard let (session, bytes) = delivering else { return }
            delivering = nil
            state.outbox.append(.report(.data(session: session, bytes)))
        }
        for action in actions {
            switch action {
            case .send(let bytes):
                state.writeTap?(bytes)
                if !transport.acceptsCoalescedWrites {
                    state.outbox.append(.write(bytes))
                } else if writing.isEmpty {
                    writing = bytes
                } else {
                    writing += bytes
                }
            case .deliver(let session, let bytes):
                // Only a byte stream: file-transfer and external-accessory
                // sessions carry datagrams whose boundaries the reader needs.
                if delivering?.session == session, state.link.negotiated?.session(session)?.type == .control {
                    delivering!.bytes += bytes
                } else {
                    deliver()
                    delivering = (session, bytes)
                }
            case .event(let event):
                deliver()
                state.outbox.append(.report(.link(event)))
                switch event {
                case .sessionWritable(let session):
                    if let waiters = state.waiters.removeValue(forKey: session) { state.outbox.append(.resume(waiters)) }
                case .down, .failed:
                    resumeAllWaiters(&state)
                default:
                    break
                }
            }
        }
        // This input's write goes before its events (after everything
        // earlier): the peer waits for it, the reader does not.
        if !writing.isEmpty { state.outbox.insert(.write(writing), at: first) }
        deliver()
        timer.schedule(at: state.link.nextDeadline)
        let holding = state.link.isHoldingForReader
        holdingForReader.store(holding, ordering: .sequentiallyConsistent)
        if holding && consumedPending.load(ordering: .sequentiallyConsistent) > 0 { settleConsumed(&state) }
    }

    private func resumeAllWaiters(_ state: inout State) {
        let all = state.waiters.values.flatMap { $0 }
        state.waiters.removeAll()
        if !all.isEmpty { state.outbox.append(.resume(all)) }
    }
}
