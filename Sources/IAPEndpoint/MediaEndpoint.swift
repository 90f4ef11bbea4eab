#if canImport(Glibc)
import Glibc
#endif
import Dispatch
@_exported import IAPEndpointCore
import IAPLegacy
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import IAPWire
import Logging
import Synchronization

/// How an endpoint authenticates, at the edge: the cryptography the
/// connection core asks for.
public struct EndpointAuthentication: Sendable {
    /// Phone: whether to authenticate the accessory.
    public var policy: AuthenticationPolicy
    /// Head unit: produces the certificate and signs challenges.
    public var authenticator: (@Sendable (AuthenticatorRequest) async -> AuthenticatorAnswer)?
    /// Phone: reads certificates and checks signatures.
    public var verifier: (@Sendable (VerificationRequest) async -> VerificationAnswer)?

    public init(policy: AuthenticationPolicy, authenticator: (@Sendable (AuthenticatorRequest) async -> AuthenticatorAnswer)? = nil,
                verifier: (@Sendable (VerificationRequest) async -> VerificationAnswer)? = nil) {
        self.policy = policy
        self.authenticator = authenticator
        self.verifier = verifier
    }

    /// No authentication: the phone skips it; a head unit asked for it
    /// answers that it has no authenticator.
    public static let off = EndpointAuthentication(policy: .off)
}

/// One link end over a real transport with the session on top, in real
/// time: the driver of the endpoint core (`EndpointCore`). One lock (the
/// inbox), one timer at the core's next deadline, one writer.
///
/// Everything that happens (bytes read, the transport closing, the edge's
/// answers, the app's loads, the timer, actions from other tasks) is an
/// input, handled in order and one at a time on the thread that brings it:
/// the transport's reader for bytes, the timer for deadlines, the caller
/// for actions. Whoever finds the endpoint idle handles its input and any
/// that arrive meanwhile; others leave theirs in the inbox and return. So a
/// received message is answered on the thread that read it, with no
/// hand-off, and nothing ever waits: what the core writes goes to the
/// transport's queue, and its requests (a signature, a certificate check,
/// the app's content) run in tasks of their own whose answers come back as
/// inputs.
///
/// `@unchecked Sendable`: `core` is touched only by the thread handling
/// inputs, one at a time (see `submit`); everything else is under a lock.
public final class MediaEndpoint: @unchecked Sendable {
    /// What other tasks may read of the endpoint, as of the last input handled.
    public struct Status: Sendable {
        public var isUp = false
        public var negotiated: NegotiatedLink?
        public var statistics = LinkStatistics()
        public var stage = Connection.Stage.disconnected
        /// Whether a link has come up on this endpoint.
        public var everUp = false
        /// Why the link last went down or the transport closed, in words; nil while it has not.
        public var endReason: String?
        /// Why the transport closed, with its kind; nil while it is open.
        public var transportError: TransportError?
        /// Messages waiting for room on the link, and received bytes waiting for them.
        public var waiting: (messages: Int, receivedBytes: Int) = (0, 0)
        /// Head unit: its media role (tabs, pages, now playing; media libraries once synced,
        /// not while they change: `HeadUnitMediaRole.snapshot`); empty on other ends.
        public var headUnit = HeadUnitMediaRole()
        /// Head unit: now-playing updates received.
        public var nowPlayingUpdates: Int { headUnit.nowPlaying.updates }
    }

    public let kind: EndKind
    public let transport: Transport
    /// The phone's app; nil for a head unit, or a phone with nothing to serve.
    public let app: (any MediaApp)?
    private let logger: Logger
    private let authentication: EndpointAuthentication

    /// Inputs not yet handled, and whether a thread is handling them.
    private struct Inbox {
        var pending: [EndpointCore.Input] = []
        var handling = false
        /// The endpoint has stopped (transport closed, or `stopWhen`): inputs
        /// are dropped, but for the RST of `close`.
        var ended = false
        /// Callers of `run`, resumed when the endpoint stops.
        var runners: [CheckedContinuation<Void, Never>] = []
    }
    private let inbox = Mutex(Inbox())
    /// Touched only by the thread handling inputs.
    private var core: EndpointCore
    /// The link packets asked for at construction, over the transport's.
    private let linkPackets: (length: Int?, outstanding: Int?)
    /// False for a link probe, whose link configuration is taken as given.
    private let sizesLinkByTransport: Bool
    /// What the inputs handled since the inbox was last found empty wrote,
    /// when the transport takes several link packets in one write: it goes
    /// out in one write before the handling thread lets the inbox go (or
    /// once it reaches `coalescedWriteLimit`), so that a bare
    /// acknowledgement and the data the next input sends leave together and
    /// the peer wakes once for them. Touched only by the thread handling inputs.
    private var unwritten: [UInt8] = []
    /// Bytes held for one write at most.
    public static let coalescedWriteLimit = 64 * 1024
    private let status = Mutex(Status())
    private struct Hooks {
        var stopWhen: (@Sendable (Status) -> Bool)?
        var onMessage: (@Sendable (ControlMessage) -> Void)?
        var observers: [@Sendable (Connection.Event, Connection) -> Void] = []
        // A link probe's: every link event, every session's bytes, every write.
        var onLinkEvent: (@Sendable (LinkEvent) -> Void)?
        var onSessionData: (@Sendable (UInt8, [UInt8]) -> Void)?
        var onWrite: (@Sendable ([UInt8]) -> Void)?
    }
    private let hooks = Mutex(Hooks())
    /// Fires at the core's next deadline (or earlier: a tick does only what is due).
    private let timer = DeadlineTimer(label: "iap.endpoint.timer")
    /// The app's loads and the edge's signatures and checks in flight, by
    /// number: cancelled when the endpoint stops (nobody waits for them).
    private let inFlight = Mutex((next: 0, stopped: false, tasks: [Int: Task<Void, Never>]()))
    /// How the timer's and the transport's handlers reach this endpoint without keeping it alive.
    private let reference = EndpointReference()

    /// - Parameters:
    ///   - kind: which end, and what runs on top of the link.
    ///   - transport: the bytes' way to the peer; started by `start`.
    ///   - app: the phone's app; nil for a phone that serves nothing.
    ///   - headUnitLimits: what the head unit's screen can show.
    ///   - authentication: the edge's cryptography for the session's authentication.
    ///   - logger: link events, session stages, problems; the head unit's
    ///     media events in words at debug (`observe` has them typed).
    ///   - mediaLibraries: head unit: phone libraries kept from earlier connections.
    ///   - linkPacketLength, linkOutstandingPackets: the largest link packet
    ///     and the unacknowledged packets this end proposes to receive
    ///     (clamped to what a SYN can say, `LinkPacketSizing`); nil takes
    ///     the transport's (`Transport.linkPacketSizing`), else the link's
    ///     default.
    public convenience init(kind: EndKind, transport: Transport, app: (any MediaApp)? = nil, headUnitLimits: HeadUnitLimits = .audioApps,
                            authentication: EndpointAuthentication = .off, mediaLibraries: [MediaLibraryMirror] = [],
                            linkPacketLength: Int? = nil, linkOutstandingPackets: Int? = nil, logger: Logger) {
        self.init(kind: kind, transport: transport, app: kind == .phone ? app : nil, authentication: authentication, logger: logger,
                  // Whether writes coalesce, and the link packets, are set when the transport opens (`start`), before anything is written.
                  core: EndpointCore(kind: kind, app: app, headUnitLimits: headUnitLimits, authentication: authentication.policy,
                                     mediaLibraries: mediaLibraries),
                  linkPackets: (linkPacketLength, linkOutstandingPackets))
    }

    /// A link end with no session above it, for probing another
    /// implementation's link layer (`conformance --against`): what its
    /// sessions deliver goes to `onSessionData`, its link events to
    /// `onLinkEvent`, each packet it writes (its own write) to `onWrite`;
    /// it sends on a session only with `send(_:session:)`.
    public convenience init(linkProbe transport: Transport, link: LinkConfiguration, logger: Logger = .discarding("link probe")) {
        self.init(kind: link.role == .device ? .responder : .pinger, transport: transport, app: nil, authentication: .off, logger: logger,
                  core: EndpointCore(configuration: EndpointCore.Configuration(link: link, probesLink: true),
                                     connection: Connection(Connection.Configuration(role: link.role)), app: nil),
                  sizesLinkByTransport: false)
    }

    private init(kind: EndKind, transport: Transport, app: (any MediaApp)?, authentication: EndpointAuthentication, logger: Logger, core: EndpointCore,
                 linkPackets: (length: Int?, outstanding: Int?) = (nil, nil), sizesLinkByTransport: Bool = true) {
        self.kind = kind
        self.linkPackets = linkPackets
        self.sizesLinkByTransport = sizesLinkByTransport

        self.transport = transport
        self.logger = logger
        self.app = app
        self.authentication = authentication
        self.core = core
        reference.endpoint = self
        timer.start { [reference] in reference.endpoint?.submit(.tick) }
    }

    deinit { timer.cancel() }

    /// Starts the transport and the link.
    ///
    /// The link end starts before anything the transport reads is handled:
    /// bytes already waiting when it opens (a peer's detect in a listener's
    /// queue, a serial port's buffer) would otherwise reach a link end not
    /// yet started, which drops them. So this thread holds the inbox while
    /// the transport starts, and hands the core `.start` first.
    public func start() throws(TransportError) {
        inbox.withLock { $0.handling = true }
        do {
            try transport.start { [reference] event in reference.endpoint?.transportEvent(event) }
        } catch {
            inbox.withLock { $0.handling = false }
            throw error
        }
        let suited = sizesLinkByTransport ? transport.linkPacketSizing : nil
        core.transportOpened(coalescesWrites: transport.acceptsCoalescedWrites,
                             maximumPacketLength: linkPackets.length ?? suited?.maximumPacketLength,
                             maximumOutstandingPackets: linkPackets.outstanding ?? suited?.maximumOutstandingPackets)
        let (queued, stopped) = inbox.withLock { inbox in
            defer { inbox.pending = [] }
            return (inbox.pending, inbox.ended)
        }
        handle([.start] + queued, stopped: stopped)
    }

    /// Sends RST, then closes the transport; returns once both are done, so
    /// a program may exit right after.
    public func close() async {
        submit(.reset, evenAfterStop: true)
        // Off the caller's thread: a transport may wait briefly for its
        // queued writes (the RST) before it lets go.
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async { [transport] in
                transport.close()
                done.resume()
            }
        }
    }

    /// The endpoint as of the last input handled.
    public var current: Status { status.withLock { $0 } }
    // One field each, read in the lock: `current` copies the whole status
    // (the head unit's role with it).
    public var isUp: Bool { status.withLock { $0.isUp } }
    public var negotiated: NegotiatedLink? { status.withLock { $0.negotiated } }
    public var statistics: LinkStatistics { status.withLock { $0.statistics } }
    public var everUp: Bool { status.withLock { $0.everUp } }
    public var endReason: String? { status.withLock { $0.endReason } }
    /// Why the transport closed, with its kind (refused, not found, …); nil while it is open.
    public var transportError: TransportError? { status.withLock { $0.transportError } }
    public var headUnit: HeadUnitMediaRole { status.withLock { $0.headUnit } }
    public var nowPlayingUpdates: Int { status.withLock { $0.nowPlayingUpdates } }

    /// Whether to stop, asked after every input with the endpoint as it is then.
    public func stop(when condition: @escaping @Sendable (Status) -> Bool) {
        hooks.withLock { $0.stopWhen = condition }
    }

    /// Called for every message no role consumed (ping answers), instead of logging it.
    public func onUnhandledMessage(_ handler: @escaping @Sendable (ControlMessage) -> Void) {
        hooks.withLock { $0.onMessage = handler }
    }

    /// Writes bytes to the transport behind the link's back, after what the
    /// link has written so far: a stopped peer's RST, stale or corrupt packets.
    public func injectRaw(_ bytes: [UInt8]) { submit(.writeRaw(bytes)) }

    /// A link probe: calls `handler` with every link event, on the thread
    /// handling the input that caused it.
    public func onLinkEvent(_ handler: @escaping @Sendable (LinkEvent) -> Void) {
        hooks.withLock { $0.onLinkEvent = handler }
    }

    /// A link probe: calls `handler` with the bytes each session delivers, in order.
    public func onSessionData(_ handler: @escaping @Sendable (UInt8, [UInt8]) -> Void) {
        hooks.withLock { $0.onSessionData = handler }
    }

    /// A link probe: calls `handler` with each link packet written (the
    /// bytes `injectRaw` writes included), before it is written.
    public func onWrite(_ handler: @escaping @Sendable ([UInt8]) -> Void) {
        hooks.withLock { $0.onWrite = handler }
    }

    /// A link probe: sends `bytes` on `session` as they are, after what waits.
    public func send(_ bytes: [UInt8], session: UInt8) { submit(.sendRaw(session: session, bytes)) }

    /// Starts a fresh link end over the same transport (a new synchronisation).
    public func restart() { submit(.restart) }

    /// Runs the core's timers and the stop condition now, for a caller
    /// waiting on a condition while the peer is silent.
    public func wake() { submit(.tick) }

    /// Sends a message on the control session from another task (the ping
    /// loop); it goes out in order with everything else.
    public func sendFromOutside(_ message: ControlMessage) { submit(.send(message)) }

    /// Calls `observer` for every event of the core from now on, with the
    /// session as it is after the input that caused it (a head unit's screen,
    /// its shell, the library's waiting calls): on the thread handling that
    /// input, one call at a time, in order. It must not wait.
    public func observe(_ observer: @escaping @Sendable (Connection.Event, Connection) -> Void) {
        hooks.withLock { $0.observers.append(observer) }
    }

    /// Acts on the core from another task (a head unit's browse, a phone's
    /// new now-playing): the action runs in order with every other input,
    /// and what it outputs is carried out. Its effects show as events.
    public func withConnection(_ action: @escaping @Sendable (inout Connection, LinkInstant) -> [Connection.Output]) {
        submit(.action(action))
    }

    /// Returns once the endpoint has stopped: the transport closed (the
    /// link's last events handled), or the stop condition held after an
    /// input. Inputs are handled whether or not anyone waits here; after the
    /// stop they are dropped.
    public func run() async {
        await withCheckedContinuation { (runner: CheckedContinuation<Void, Never>) in
            let stopped = inbox.withLock { inbox -> Bool in
                if inbox.ended { return true }
                inbox.runners.append(runner)
                return false
            }
            if stopped { runner.resume() }
        }
    }

    /// Messages waiting for room on the link, and received bytes waiting for them.
    public var waiting: (messages: Int, receivedBytes: Int) { current.waiting }

    private func transportEvent(_ event: TransportEvent) {
        switch event {
        case .received(let bytes): submit(.received(bytes))
        case .closed(let reason):
            // Readable before the link's last events are handled.
            status.withLock { $0.transportError = reason }
            logger.info("transport closed: \(reason)")
            submit(.transportClosed(reason.description))
        }
    }

    /// Handles `input` now on this thread, with whatever arrives meanwhile,
    /// or leaves it for the thread already handling inputs.
    private func submit(_ input: EndpointCore.Input, evenAfterStop: Bool = false) {
        // Only the handling thread stops the endpoint, so its own copy of
        // `ended` stays true to the inbox's while it handles.
        let (batch, stopped) = inbox.withLock { inbox -> ([EndpointCore.Input], Bool) in
            guard !inbox.ended || evenAfterStop else { return ([], true) }
            inbox.pending.append(input)
            guard !inbox.handling else { return ([], inbox.ended) }
            inbox.handling = true
            defer { inbox.pending = [] }
            return (inbox.pending, inbox.ended)
        }
        handle(batch, stopped: stopped)
    }

    /// Handles `batch` on this thread, the inbox held, then whatever
    /// arrived meanwhile, until the inbox is empty; then lets it go and
    /// sets the timer at the core's deadline as the last input left it.
    /// Once, not after every input: a ping's answer makes an acknowledgement
    /// due and the next ping, sent from its handler, carries it; armed in
    /// between, the timer would be moved (a system call and a wake-up of
    /// libdispatch's timer thread) for a deadline already gone.
    private func handle(_ batch: [EndpointCore.Input], stopped: Bool) {
        var batch = batch
        var stopped = stopped
        var deadline: LinkInstant?
        defer { if !stopped { timer.schedule(at: deadline) } }
        while !batch.isEmpty {
            for input in batch {
                if stopped {
                    // After the stop only `close`'s RST still goes out; the
                    // endpoint stays as it was when it stopped.
                    if case .reset = input {
                        writeUnwritten()
                        for case .write(let bytes) in core.handle(input, now: MonotonicClock.now()) { transport.write(bytes) }
                    }
                    continue
                }
                deadline = handle(input)
                let closed = if case .transportClosed = input { true } else { false }
                if closed || hooks.withLock({ $0.stopWhen })?(current) == true {
                    stop()
                    stopped = true
                }
            }
            batch = inbox.withLock { inbox in
                defer { inbox.pending = [] }
                return inbox.pending
            }
            guard batch.isEmpty else { continue }
            // Written while this thread still handles: whoever handles next writes after it.
            writeUnwritten()
            batch = inbox.withLock { inbox in
                defer { inbox.pending = [] }
                if inbox.pending.isEmpty { inbox.handling = false }
                return inbox.pending
            }
        }
    }

    /// Writes `bytes` now, or with what the next inputs write when the transport takes them together.
    private func write(_ bytes: [UInt8]) {
        guard core.configuration.coalescesWrites else {
            transport.write(bytes)
            return
        }
        if unwritten.isEmpty { unwritten = bytes } else { unwritten.append(contentsOf: bytes) }
        if unwritten.count >= Self.coalescedWriteLimit { writeUnwritten() }
    }

    private func writeUnwritten() {
        guard !unwritten.isEmpty else { return }
        transport.write(unwritten)
        unwritten = []
    }

    /// Lets `run` return; inputs are dropped from now on. Called by the handling thread.
    private func stop() {
        timer.cancel()
        let tasks = inFlight.withLock { state in
            state.stopped = true
            defer { state.tasks = [:] }
            return Array(state.tasks.values)
        }
        for task in tasks { task.cancel() }
        let runners = inbox.withLock { inbox in
            inbox.ended = true
            defer { inbox.runners = [] }
            return inbox.runners
        }
        for runner in runners { runner.resume() }
    }

    /// Handles one input; gives the core's next deadline after it.
    private func handle(_ input: EndpointCore.Input) -> LinkInstant? {
        let now = MonotonicClock.now()
        if core.answersLegacy { core.unwrittenBytes = transport.queuedWriteBytes + unwritten.count }
        carryOut(core.handle(input, now: now, answeringFor: app), now: now)
        return Self.takeStatus(of: &core, into: status, headUnit: kind == .headUnit)
    }

    /// Copies what other threads read of the core into `status`, and gives
    /// the core's next deadline. The core is taken `inout` on purpose: read
    /// field by field through the class (in the lock's closure), the whole
    /// core was copied, every table in it retained and released, at every
    /// input (a third of an in-process ping's time).
    private static func takeStatus(of core: inout EndpointCore, into status: borrowing Mutex<Status>, headUnit: Bool) -> LinkInstant? {
        let isUp = core.link.isUp
        let negotiated = core.link.negotiated
        let statistics = core.link.statistics
        let stage = core.connection.stage
        let everUp = core.everUp
        let waiting = core.waiting
        let endReason = core.endReason
        let snapshot = headUnit ? core.connection.headUnit.snapshot : nil
        status.withLock { status in
            status.isUp = isUp
            status.negotiated = negotiated
            status.statistics = statistics
            status.stage = stage
            status.everUp = everUp
            status.waiting = waiting
            status.endReason = endReason
            if let snapshot { status.headUnit = snapshot }
        }
        return core.nextDeadline
    }

    /// Runs `work` in a task of its own, cancelled if the endpoint stops
    /// first; after the stop nothing new starts.
    private func spawn(_ work: @escaping @Sendable () async -> Void) {
        inFlight.withLock { state in
            guard !state.stopped else { return }
            state.next += 1
            let number = state.next
            state.tasks[number] = Task { [self] in
                await work()
                finished(number)
            }
        }
    }

    private func finished(_ number: Int) { inFlight.withLock { _ = $0.tasks.removeValue(forKey: number) } }

    // MARK: Outputs

    private func carryOut(_ outputs: [EndpointCore.Output], now: LinkInstant) {
        // Only a link probe's hooks are read per input: the others' inputs take no more locks.
        let probeHooks = core.configuration.probesLink ? hooks.withLock { $0 } : nil
        for output in outputs {
            switch output {
            case .write(let bytes):
                probeHooks?.onWrite?(bytes)
                write(bytes)
            case .link(let event):
                probeHooks?.onLinkEvent?(event)
                describe(event)
            case .sessionData(let session, let bytes): probeHooks?.onSessionData?(session, bytes)
            case .event(let event): describe(event)
            case .authenticator(let request, let link):
                guard let authenticator = authentication.authenticator else {
                    submit(.authenticatorAnswered(.failed("this head unit has no authenticator"), link: link))
                    continue
                }
                spawn { [self] in submit(.authenticatorAnswered(await authenticator(request), link: link)) }
            case .verify(let request, let link):
                guard let verifier = authentication.verifier else {
                    submit(.verified(Self.noVerifier(request), link: link))
                    continue
                }
                spawn { [self] in submit(.verified(await verifier(request), link: link)) }
            case .legacyVerify(let id, let request, let link):
                guard let verifier = authentication.verifier else {
                    // Authentication required and nothing to check with: refused, as iAP2 refuses it.
                    submit(.legacyVerified(id: id, Self.noVerifier(request), link: link))
                    continue
                }
                spawn { [self] in submit(.legacyVerified(id: id, await verifier(request), link: link)) }
            case .load(let token, let request):
                // In a task of its own: a slow app holds up nothing else. The
                // delay an app states (the sample's simulated network) is kept by the core.
                guard let app else { continue }
                spawn { [self] in
                    let (result, delay) = await app.load(request, now: now)
                    submit(.loaded(token: token, result, readyAt: now + delay))
                }
            case .legacyLoad(let token, let request):
                guard let app else { continue }
                spawn { [self] in
                    let (result, delay) = await app.load(request, now: now)
                    submit(.legacyLoaded(token: token, result, readyAt: now + delay))
                }
            case .legacyEvent(let event): describe(event)
            case .pausePlayback: app?.pause(at: now)
            case .perform, .legacyPerform, .readNowPlaying, .sentMessage: break  // the first three answered in `handle`
            case .log(let level, let line):
                switch level {
                case .info: logger.info("\(line)")
                case .notice: logger.notice("\(line)")
                case .warning: logger.warning("\(line)")
                case .error: logger.error("\(line)")
                }
            }
        }
    }

    private static func noVerifier(_ request: VerificationRequest) -> VerificationAnswer {
        request.isCertificate ? .certificateRejected("this phone has no verifier (use --auth off)") : .responseInvalid("this phone has no verifier")
    }

    private func describe(_ event: LinkEvent) {
        switch event {
        case .up(let link):
            let delivery = link.zeroAck ? "zero-ACK" : "retransmit after \(link.retransmitTimeout), at most \(link.maximumRetransmissions) times"
            let sessions = link.sessions.map { "\($0.id) \($0.type.name)" }.joined(separator: ", ")
            logger.info("link up: sending up to \(link.sendWindow) packets of \(link.sendPacketLength) bytes, \(delivery); sessions \(sessions)")
        case .down(let reason): logger.info("link down: \(reason)")
        case .failed(let failure): logger.error("link failed: \(failure)")
        case .restartScheduled(let delay): logger.info("starting the link over in \(delay)")
        case .peerViolation(let violation): logger.warning("the peer broke a link rule: \(violation) (counted; reported once per connection)")
        case .renegotiated(let link): logger.info("link renegotiated: window \(link.sendWindow), packets of \(link.sendPacketLength) bytes")
        case .negotiationAdjusted(let reasons): logger.notice("adjusted the peer's proposal: \(reasons.joined(separator: "; "))")
        case .proposalRefused(let reasons): logger.warning("refused the peer's proposal: \(reasons.joined(separator: "; "))")
        case .peerSleeping: logger.info("the peer is going to sleep")
        case .sessionWritable, .legacyFrame: break
        }
    }

    private func describe(_ event: LegacyPhone.Event) {
        switch event {
        case .identified(let lingoes, let idps, let authenticating):
            let names = lingoes.map { $0 < 16 ? "0x0" + String($0, radix: 16, uppercase: true) : "0x" + String($0, radix: 16, uppercase: true) }.joined(separator: ", ")
            logger.notice("an iAP1 head unit identified (lingoes \(names)\(idps ? ", through IDPS" : "")\(authenticating ? ", asking to be authenticated" : "")): answering in iAP1")
        case .authenticated(let summary): logger.info("iAP1 head unit authenticated: \(summary)")
        case .authenticationFailed(let reason): logger.error("iAP1 head unit failed authentication: \(reason)")
        }
    }

    private func describe(_ event: Connection.Event) {
        let hooks = hooks.withLock { $0 }
        // The session is copied for observers only: a ping's answer has none.
        if !hooks.observers.isEmpty {
            let connection = core.connection
            for observer in hooks.observers { observer(event, connection) }
        }
        switch event {
        case .stage(let stage):
            if case .failed = stage { logger.error("session now \(stage)") } else { logger.info("session now \(stage)") }
        case .accessoryCertificate: break // logged by the core with its summary
        case .media(let media): logger.debug("media: \(media)")
        case .fileReceived: break // logged by the core
        case .unhandled(let message):
            if let onMessage = hooks.onMessage { onMessage(message) } else { logger.debug("received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))")") }
        case .log(let line): logger.info("\(line)")
        case .problem(let problem): logger.warning("problem: \(problem)")
        }
    }
}

/// How the timer's and the transport's handlers reach their endpoint
/// without keeping it alive.
///
/// `@unchecked Sendable`: `endpoint` is set once, right after it is made,
/// before the handler it serves can run.
private final class EndpointReference: @unchecked Sendable {
    weak var endpoint: MediaEndpoint?
}

extension VerificationRequest {
    var isCertificate: Bool { if case .certificate = self { true } else { false } }
}
