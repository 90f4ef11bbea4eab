import Dispatch
import IAPLink

/// What a running link reports to the program above it.
public enum LinkDriverEvent: Sendable {
    case link(LinkEvent)
    /// Bytes delivered in order on a session.
    case data(session: UInt8, [UInt8])
    /// The transport closed; nothing more will be reported.
    case transportClosed(String)
}

/// Runs a `LinkEnd` over a transport in real time: the edge that owns the
/// clock, the timer and the transport, and serialises every input to the
/// link on one queue. Events arrive on `events`; `send` waits (suspending,
/// never blocking a thread) while a session's queue is full.
///
/// Received data counts against the link's receive buffer limit until the
/// reader hands it back with `consumed`: a reader that falls behind holds
/// the peer back instead of letting `events` grow.
public final class LinkDriver: @unchecked Sendable {
    public let events: AsyncStream<LinkDriverEvent>
    public let transport: Transport

    // Everything below is touched only on `queue`.
    private let queue = DispatchQueue(label: "iap.link.driver")
    private var link: LinkEnd
    private let continuation: AsyncStream<LinkDriverEvent>.Continuation
    private var timer: DispatchSourceTimer?
    private var waiters: [UInt8: [CheckedContinuation<Void, Never>]] = [:]
    private var finished = false
    private var writeTap: (@Sendable ([UInt8]) -> Void)?

    public init(configuration: LinkConfiguration, transport: Transport) {
        self.link = LinkEnd(configuration: configuration)
        self.transport = transport
        (events, continuation) = AsyncStream.makeStream(of: LinkDriverEvent.self, bufferingPolicy: .unbounded)
    }

    /// Opens the transport and starts the link end.
    public func start() throws(TransportError) {
        try transport.start { [weak self] event in
            guard let self else { return }
            queue.async { self.transportEvent(event) }
        }
        queue.async { [self] in
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in
                guard let self else { return }
                apply(link.tick(now: MonotonicClock.now()))
            }
            timer.resume()
            self.timer = timer
            apply(link.start(now: MonotonicClock.now()))
        }
    }

    /// Sends bytes on a session, waiting while its queue is full.
    public func send(_ bytes: [UInt8], session: UInt8) async throws(LinkSendError) {
        while true {
            let outcome: Result<Void, LinkSendError> = queue.sync {
                do throws(LinkSendError) {
                    apply(try link.send(bytes, session: session, now: MonotonicClock.now()))
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success:
                return
            case .failure(let error):
                guard case .queueFull = error.kind else { throw error }
                await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                    queue.async { [self] in
                        if link.canSend(bytes.count, session: session) || !link.isUp {
                            waiter.resume()
                        } else {
                            waiters[session, default: []].append(waiter)
                        }
                    }
                }
            }
        }
    }

    /// The reader has handled `count` bytes of `.data` events.
    public func consumed(_ count: Int) {
        queue.async { [self] in
            guard !finished else { return }
            apply(link.consumed(count, now: MonotonicClock.now()))
        }
    }

    /// Starts the link end over again on the same transport (a peer restart,
    /// or re-synchronising after RST).
    public func restart() {
        queue.sync {
            guard !finished else { return } // nothing to restart over a closed transport
            link = LinkEnd(configuration: link.configuration)
            apply(link.start(now: MonotonicClock.now()))
        }
    }

    /// Writes bytes to the transport behind the link's back: stale bytes,
    /// corrupted or duplicated packets, for conformance probes.
    public func injectRaw(_ bytes: [UInt8]) {
        queue.sync { transport.write(bytes) }
    }

    /// Called with every write the link makes, on the driver's queue.
    public func tapWrites(_ tap: @escaping @Sendable ([UInt8]) -> Void) {
        queue.sync { writeTap = tap }
    }

    /// Whether the link is up right now.
    public var isUp: Bool { queue.sync { link.isUp } }
    public var negotiated: NegotiatedLink? { queue.sync { link.negotiated } }
    public var statistics: LinkStatistics { queue.sync { link.statistics } }

    /// Sends RST, then closes the transport; returns once both are done, so a
    /// program may exit right after. Not to be called from an event handler
    /// running on the driver's queue.
    public func close() {
        queue.sync {
            apply(link.reset(now: MonotonicClock.now()))
            transport.close()
        }
    }

    private func transportEvent(_ event: TransportEvent) {
        guard !finished else { return }
        switch event {
        case .received(let bytes):
            apply(link.receive(bytes, now: MonotonicClock.now()))
        case .closed(let reason):
            apply(link.transportClosed(reason, now: MonotonicClock.now()))
            finished = true
            timer?.cancel()
            timer = nil
            resumeAllWaiters()
            continuation.yield(.transportClosed(reason))
            continuation.finish()
        }
    }

    private func apply(_ actions: [LinkAction]) {
        for action in actions {
            switch action {
            case .send(let bytes):
                writeTap?(bytes)
                transport.write(bytes)
            case .deliver(let session, let bytes):
                continuation.yield(.data(session: session, bytes))
            case .event(let event):
                continuation.yield(.link(event))
                switch event {
                case .sessionWritable(let session):
                    for waiter in waiters.removeValue(forKey: session) ?? [] { waiter.resume() }
                case .down, .failed:
                    resumeAllWaiters()
                default:
                    break
                }
            }
        }
        rearm()
    }

    private func resumeAllWaiters() {
        let all = waiters.values.flatMap { $0 }
        waiters.removeAll()
        for waiter in all { waiter.resume() }
    }

    /// Points the timer at the link's next deadline.
    private func rearm() {
        guard let timer else { return }
        if let deadline = link.nextDeadline {
            let delay = max(0, deadline.nanoseconds - MonotonicClock.now().nanoseconds)
            timer.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .microseconds(200))
        } else {
            timer.schedule(deadline: .distantFuture)
        }
    }
}
