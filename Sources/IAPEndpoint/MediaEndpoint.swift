#if canImport(Glibc)
import Glibc
#endif
import IAPLegacy
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import IAPWire
import Logging
import Synchronization

/// Which end of the link a command runs, and with what on top.
public enum EndKind: String, Sendable {
    /// The device end: authentication and identification of the accessory, then the media role serving an app.
    case phone = "phone"
    /// The accessory end: authentication and identification, then the media role.
    case headUnit = "head-unit"
    /// A device end with no role: it answers pings.
    case responder = "responder"
    /// An accessory end with no role, for `iapctl ping`.
    case pinger = "ping"

    public var linkRole: LinkRole { self == .phone || self == .responder ? .device : .accessory }
}

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
/// time: a thin driver of the connection core (`IAPSession.Connection`).
///
/// Everything that happens (link events, the edge's answers, the app's
/// loads, the core's deadlines, actions from other tasks) is an input,
/// handled in order and one at a time on the thread that brings it: the
/// transport's reader for bytes, the timer for deadlines, the caller for
/// actions. Whoever finds the endpoint idle handles its input and any that
/// arrive meanwhile; others leave theirs in the inbox and return. So a
/// received message is answered on the thread that read it, with no hand-off
/// between the link end and the core, and nothing ever waits: a send the
/// link's queue has no room for waits in a backlog until the link says the
/// session is writable, and bytes received meanwhile wait unhandled (and
/// are not handed back to the driver): a peer that does not take our
/// answers gets no more made for it and holds itself back.
///
/// `@unchecked Sendable`: the mutable state below (not `inbox`) is touched
/// only by the thread handling inputs, one at a time (see `submit`); other
/// threads only add to the inbox, under its lock.
public final class MediaEndpoint: @unchecked Sendable {
    public enum Input: Sendable {
        case link(LinkDriverEvent)
        case authenticator(AuthenticatorAnswer)
        case verified(VerificationAnswer)
        case tick
        case outgoing(ControlMessage)
        /// The app answered a load.
        case loaded(token: UInt32, PhoneMediaRole.LoadResult, readyAt: LinkInstant)
        /// Something to do with the core, from another task (`withConnection`).
        case action(@Sendable (inout Connection, LinkInstant) -> [Connection.Output])
        /// The app answered a load of the legacy phone's.
        case legacyLoaded(token: UInt32, PhoneMediaRole.LoadResult)
        /// The verifier answered the legacy phone's verification `id`.
        case legacyVerified(id: UInt32, VerificationAnswer)
    }

    public let kind: EndKind
    public let driver: LinkDriver
    private let logger: Logger
    private let authentication: EndpointAuthentication

    /// Inputs not yet handled, and whether a thread is handling them.
    private struct Inbox {
        var pending: [Input] = []
        var handling = false
        /// The endpoint has stopped (transport closed, or `stopWhen`): inputs are dropped.
        var ended = false
        /// Callers of `run`, resumed when the endpoint stops.
        var runners: [CheckedContinuation<Void, Never>] = []
    }
    private let inbox = Mutex(Inbox())

    // Touched only by the thread handling inputs.
    public private(set) var connection: Connection
    public private(set) var everUp = false
    /// Counts link ups and downs: an answer of the edge's authenticator or
    /// verifier made for an earlier link is dropped, not taken for the
    /// current link's (a verdict on one accessory's certificate must never
    /// pass for another's).
    private var linkGeneration = 0
    /// Why the link last went down or the transport closed, in words for
    /// logs; nil while it has not.
    public private(set) var endReason: String?
    /// Why the transport closed, with its kind (refused, not found, …),
    /// readable from any task; nil while it is open.
    public var transportError: TransportError? { driver.transportError }
    /// The phone's app; nil for a head unit, or a phone with nothing to serve.
    public let app: (any MediaApp)?
    /// Messages from outside that came before the first link up.
    private var heldOutgoing: [ControlMessage] = []
    /// Sends the link's queue had no room for, per session, oldest first.
    private var backlog: [UInt8: [[UInt8]]] = [:]
    /// Bytes received while a backlog waits, not yet handled: a peer that
    /// does not take our answers gets no more made for it, and what it
    /// sends meanwhile stays within the link's receive budget (it is handed
    /// back to the driver only once handled).
    private var heldData: [(session: UInt8, bytes: [UInt8])] = []
    /// Fires at the core's next deadline (or earlier: a tick does only what is due).
    private let timer = DeadlineTimer(label: "iap.endpoint.timer")
    /// The app's loads and the edge's signatures and checks in flight, by
    /// number: cancelled when the endpoint stops (nobody waits for them).
    private let inFlight = Mutex((next: 0, stopped: false, tasks: [Int: Task<Void, Never>]()))
    /// The phone's answer to a head unit that speaks only iAP1; nil for
    /// other ends and a phone with no app.
    private var legacy: LegacyPhone?
    /// iAP1 answers not sent because the head unit had not taken the ones before.
    private var legacyAnswersRefused = 0
    /// Called for every message no role consumed (ping answers).
    public var onMessage: (@Sendable (ControlMessage) -> Void)?
    private let observers = Mutex<[@Sendable (Connection.Event, Connection) -> Void]>([])
    /// Whether to stop, checked after every input.
    public var stopWhen: (@Sendable (MediaEndpoint) -> Bool)?

    /// - Parameters:
    ///   - kind: which end, and what runs on top of the link.
    ///   - transport: the bytes' way to the peer; started by `start`.
    ///   - app: the phone's app; nil for a phone that serves nothing.
    ///   - headUnitLimits: what the head unit's screen can show.
    ///   - authentication: the edge's cryptography for the session's authentication.
    ///   - logger: link events, session stages, problems; the head unit's
    ///     media events in words at debug (`observe` has them typed).
    public init(kind: EndKind, transport: Transport, app: (any MediaApp)? = nil, headUnitLimits: HeadUnitLimits = .audioApps,
                authentication: EndpointAuthentication = .off, logger: Logger) {
        self.kind = kind
        self.logger = logger
        self.app = app
        self.authentication = authentication
        // The driver is made before this endpoint exists; its events reach
        // the endpoint through a reference set below, before `start`.
        let reference = EndpointReference()
        let servesLegacy = kind == .phone && app != nil
        driver = LinkDriver(configuration: LinkConfiguration(role: kind.linkRole, answersIAP1: servesLegacy), transport: transport) { event in
            reference.endpoint?.submit(.link(event))
        }
        let phone = PhoneMediaRole(appName: app?.appName ?? "", commands: app?.commandCenter() ?? RemoteCommandCenter(),
                                   offersContent: kind == .phone && app?.offersContent == true)
        var nowPlaying: (@Sendable (LinkInstant) -> NowPlayingInfo)?
        if kind == .phone, let app { nowPlaying = { now in app.nowPlaying(at: now) } }
        connection = Connection(Connection.Configuration(role: kind.linkRole == .device ? .phone : .headUnit, authentication: authentication.policy),
                                phone: phone, headUnit: HeadUnitMediaRole(limits: headUnitLimits), nowPlaying: nowPlaying)
        if servesLegacy, let app {
            legacy = LegacyPhone(appName: app.appName, commands: app.commandCenter(),
                                 verifies: authentication.policy == .required)
        }
        reference.endpoint = self
        timer.start { reference.endpoint?.submit(.tick) }
    }

    deinit { timer.cancel() }

    public var headUnit: HeadUnitMediaRole { connection.headUnit }
    public var nowPlayingUpdates: Int { connection.headUnit.nowPlaying.updates }

    /// Starts the transport and the link.
    public func start() throws(TransportError) {
        try driver.start()
    }

    /// Runs the core's timers and `stopWhen` now, for a caller waiting on
    /// a condition while the peer is silent.
    public func wake() { submit(.tick) }

    /// Sends a message on the control session from another task (the ping
    /// loop); it goes out in order with everything else.
    public func sendFromOutside(_ message: ControlMessage) { submit(.outgoing(message)) }

    /// Calls `observer` for every event of the core from now on, with the
    /// core as it is after the event (a head unit's screen, its shell, the
    /// library's waiting calls): on the thread handling the input that
    /// caused it, one call at a time, in order. It must not wait.
    public func observe(_ observer: @escaping @Sendable (Connection.Event, Connection) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Acts on the core from another task (a head unit's browse, a phone's
    /// new now-playing): the action runs in order with every other input,
    /// and what it outputs is carried out. Its effects show as events.
    public func withConnection(_ action: @escaping @Sendable (inout Connection, LinkInstant) -> [Connection.Output]) {
        submit(.action(action))
    }

    /// Returns once the endpoint has stopped: the transport closed (the
    /// link's last events handled), or `stopWhen` said so after an input.
    /// Inputs are handled whether or not anyone waits here; after the stop
    /// they are dropped.
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

    /// Handles `input` now on this thread, with whatever arrives meanwhile,
    /// or leaves it for the thread already handling inputs.
    private func submit(_ input: Input) {
        var batch = inbox.withLock { inbox -> [Input] in
            guard !inbox.ended else { return [] }
            inbox.pending.append(input)
            guard !inbox.handling else { return [] }
            inbox.handling = true
            defer { inbox.pending = [] }
            return inbox.pending
        }
        while !batch.isEmpty {
            for input in batch {
                handle(input)
                if case .link(.transportClosed) = input { return stop() }
                if stopWhen?(self) == true { return stop() }
            }
            batch = inbox.withLock { inbox in
                defer { inbox.pending = [] }
                if inbox.pending.isEmpty { inbox.handling = false }
                return inbox.pending
            }
        }
    }

    /// Drops what is left and lets `run` return; called by the handling thread.
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
            inbox.pending = []
            defer { inbox.runners = [] }
            return inbox.runners
        }
        for runner in runners { runner.resume() }
    }

    private func now() -> LinkInstant { MonotonicClock.now() }

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

    private func handle(_ input: Input) {
        let now = now()
        app?.setTime(now)
        switch input {
        case .link(let event): linkEvent(event, now: now)
        case .authenticator(let answer): perform(connection.authenticatorAnswered(answer, now: now))
        case .verified(let answer): perform(connection.verified(answer, now: now))
        case .tick:
            perform(connection.tick(now: now))
            if let outputs = legacy?.tick(now: now) { performLegacy(outputs) }
        case .legacyLoaded(let token, let result):
            if let outputs = legacy?.complete(token: token, with: result, now: now) { performLegacy(outputs) }
        case .legacyVerified(let id, let answer):
            if let outputs = legacy?.verified(id: id, answer, now: now) { performLegacy(outputs) }
        case .loaded(let token, let result, let readyAt):
            perform(connection.complete(token: token, with: result, at: max(readyAt, now), now: now))
        case .action(let action):
            perform(action(&connection, now))
        case .outgoing(let message):
            // A caller may see the driver up before this endpoint has handled
            // link up: hold its messages (a bounded few) until then.
            if !everUp && heldOutgoing.count < 64 {
                heldOutgoing.append(message)
            } else {
                perform(connection.send(message, now: now))
            }
        }
        // What plays, read after every input, as the core reads it.
        if let app, legacy?.isIdentified == true, let outputs = legacy?.setNowPlaying(app.nowPlaying(at: now), now: now) {
            performLegacy(outputs)
        }
        let deadlines = [connection.nextDeadline, legacy?.nextDeadline].compactMap { $0 }
        timer.schedule(at: deadlines.min())
    }

    private func linkEvent(_ event: LinkDriverEvent, now: LinkInstant) {
        switch event {
        case .link(.up(let link)):
            everUp = true
            linkGeneration += 1
            let delivery = link.zeroAck ? "zero-ACK" : "retransmit after \(link.retransmitTimeout), at most \(link.maximumRetransmissions) times"
            let sessions = link.sessions.map { "\($0.id) \($0.type.name)" }.joined(separator: ", ")
            logger.info("link up: sending up to \(link.sendWindow) packets of \(link.sendPacketLength) bytes, \(delivery); sessions \(sessions)")
            perform(connection.linkUp(link, now: now))
            let held = heldOutgoing
            heldOutgoing = []
            for message in held { perform(connection.send(message, now: now)) }
        case .link(.down(let reason)):
            linkGeneration += 1
            logger.info("link down: \(reason)")
            endReason = "link down: \(reason)"
            dropBacklog(because: "the link went down")
            perform(connection.linkDown(now: now))
        case .link(.failed(let failure)):
            logger.error("link failed: \(failure)")
        case .link(.restartScheduled(let delay)):
            logger.info("starting the link over in \(delay)")
        case .link(.peerViolation(let violation)):
            logger.warning("the peer broke a link rule: \(violation) (counted; reported once per connection)")
        case .link(.renegotiated(let link)):
            logger.info("link renegotiated: window \(link.sendWindow), packets of \(link.sendPacketLength) bytes")
        case .link(.negotiationAdjusted(let reasons)):
            logger.notice("adjusted the peer's proposal: \(reasons.joined(separator: "; "))")
        case .link(.proposalRefused(let reasons)):
            logger.warning("refused the peer's proposal: \(reasons.joined(separator: "; "))")
        case .link(.peerSleeping):
            logger.info("the peer is going to sleep")
        case .link(.sessionWritable(let session)):
            sendBacklog(of: session)
        case .link(.legacyFrame(let payload)):
            // The app's commands as they are now: an IAPKit app may have changed them.
            if let app { legacy?.setCommands(app.commandCenter()) }
            if let outputs = legacy?.received(payload, now: now) { performLegacy(outputs) }
            // Handled: the frame no longer counts against the link's receive budget.
            driver.consumed(payload.count)
        case .data(let session, let bytes):
            if backlog.isEmpty && heldData.isEmpty {
                receive(bytes, session: session, now: now)
            } else {
                heldData.append((session, bytes))
            }
        case .transportClosed(let reason):
            logger.info("transport closed: \(reason)")
            endReason = endReason ?? "transport closed: \(reason)"
            dropBacklog(because: "the transport closed")
            perform(connection.linkDown(now: now))
        }
    }

    // MARK: Outputs

    private func perform(_ outputs: [Connection.Output]) {
        var pending = outputs[...]
        while let output = pending.popFirst() {
            switch output {
            case .send(let session, let bytes):
                send(bytes, session: session)
            case .event(let event):
                describe(event)
            case .authenticator(let request):
                guard let authenticator = authentication.authenticator else {
                    pending += connection.authenticatorAnswered(.failed("this head unit has no authenticator"), now: now())
                    continue
                }
                answerLater({ await authenticator(request) }) { $0.authenticatorAnswered($1, now: $2) }
            case .verify(let request):
                guard let verifier = authentication.verifier else {
                    pending += connection.verified(request.isCertificate ? .certificateRejected("this phone has no verifier (use --auth off)")
                                                                         : .responseInvalid("this phone has no verifier"), now: now())
                    continue
                }
                answerLater({ await verifier(request) }) { $0.verified($1, now: $2) }
            case .load(let token, let request):
                guard let app else {
                    pending += connection.complete(token: token, with: .failed(.noSuchContent, "this phone serves no app"), at: now(), now: now())
                    continue
                }
                // In a task of its own: a slow app holds up nothing else.
                // The delay an app states (the sample's simulated network)
                // is kept by the core.
                let started = now()
                spawn { [self] in
                    let (result, delay) = await app.load(request, now: started)
                    submit(.loaded(token: token, result, readyAt: started + delay))
                }
            case .pausePlayback:
                app?.pause(at: now())
            }
        }
    }

    /// Carries out what the legacy phone asks for.
    private func performLegacy(_ outputs: [LegacyPhone.Output]) {
        var pending = outputs[...]
        while let output = pending.popFirst() {
            switch output {
            case .send(let packet):
                do {
                    try driver.sendLegacy(packet.encoded(sync: true))
                } catch let error as LinkSendError {
                    guard case .legacyQueueFull = error.kind else {
                        logger.error("cannot send iAP1 \(packet.name ?? "command 0x\(String(packet.command, radix: 16))") to the head unit: \(error)")
                        continue
                    }
                    // Counted; said at the first and each doubling: a head unit that
                    // asks without reading must not grow the log with its requests.
                    legacyAnswersRefused += 1
                    if legacyAnswersRefused & (legacyAnswersRefused - 1) == 0 {
                        logger.warning("\(legacyAnswersRefused) iAP1 answers not sent so far: \(error)")
                    }
                } catch {
                    logger.error("cannot send iAP1 \(packet.name ?? "command 0x\(String(packet.command, radix: 16))") to the head unit: \(error)")
                }
            case .load(let token, let request):
                guard let app else { continue }
                // In a task of its own, as the core's loads; the delay an app
                // states (the sample's simulated network) is waited out there.
                let started = now()
                spawn { [self] in
                    let (result, delay) = await app.load(request, now: started)
                    if delay > .zero { try? await Task.sleep(for: delay) }
                    submit(.legacyLoaded(token: token, result))
                }
            case .verify(let id, let request):
                guard let verifier = authentication.verifier else {
                    // Authentication required and nothing to check with: refused, as iAP2 refuses it.
                    pending += legacy?.verified(id: id, request.isCertificate ? .certificateRejected("this phone has no verifier (use --auth off)")
                                                                             : .responseInvalid("this phone has no verifier"), now: now()) ?? []
                    continue
                }
                spawn { [self] in
                    let answer = await verifier(request)
                    submit(.legacyVerified(id: id, answer))
                }
            case .event(let event):
                switch event {
                case .identified(let lingoes, let idps, let authenticating):
                    let names = lingoes.map { $0 < 16 ? "0x0" + String($0, radix: 16, uppercase: true) : "0x" + String($0, radix: 16, uppercase: true) }.joined(separator: ", ")
                    logger.notice("an iAP1 head unit identified (lingoes \(names)\(idps ? ", through IDPS" : "")\(authenticating ? ", asking to be authenticated" : "")): answering in iAP1")
                case .authenticated(let summary):
                    logger.info("iAP1 head unit authenticated: \(summary)")
                case .authenticationFailed(let reason):
                    logger.error("iAP1 head unit failed authentication: \(reason)")
                }
            case .log(let line):
                logger.info("iAP1: \(line)")
            }
        }
    }

    /// Sends now, or after what already waits for room on the session.
    private func send(_ bytes: [UInt8], session: UInt8) {
        if backlog[session] == nil {
            do throws(LinkSendError) {
                return try driver.sendNow(bytes, session: session)
            } catch {
                guard case .queueFull = error.kind else {
                    return logger.error("cannot send \(bytes.count) bytes on session \(session): \(error)")
                }
            }
        }
        backlog[session, default: []].append(bytes)
    }

    /// Sends what waited for room on `session`, as far as there is room.
    private func sendBacklog(of session: UInt8) {
        guard let waiting = backlog[session] else { return }
        var sent = 0
        sending: for bytes in waiting {
            do throws(LinkSendError) {
                try driver.sendNow(bytes, session: session)
            } catch {
                if case .queueFull = error.kind { break sending }
                logger.error("cannot send \(bytes.count) bytes on session \(session): \(error)")
            }
            sent += 1
        }
        backlog[session] = sent == waiting.count ? nil : Array(waiting[sent...])
        // Room again: what was received meanwhile is handled, in order,
        // until its answers fill the link's queue again.
        var handled = 0
        while backlog.isEmpty && handled < heldData.count {
            let (session, bytes) = heldData[handled]
            handled += 1
            receive(bytes, session: session, now: now())
        }
        heldData.removeFirst(handled)
    }

    /// Messages waiting for room on the link, and received bytes waiting
    /// for them (for tests, from the handling thread: `withConnection`).
    var waiting: (messages: Int, receivedBytes: Int) {
        (backlog.values.reduce(0) { $0 + $1.count }, heldData.reduce(0) { $0 + $1.bytes.count })
    }

    /// Hands received bytes to the core, then back to the driver: a reader
    /// that falls behind holds the peer back.
    private func receive(_ bytes: [UInt8], session: UInt8, now: LinkInstant) {
        perform(connection.received(session: session, bytes, now: now))
        driver.consumed(bytes.count)
    }

    /// Runs the edge's slow work (a signature, a certificate check) off the
    /// handling thread and hands its answer to the core, unless the link it
    /// was asked for has gone since.
    private func answerLater<Answer: Sendable>(_ work: @escaping @Sendable () async -> Answer,
                                               _ apply: @escaping @Sendable (inout Connection, Answer, LinkInstant) -> [Connection.Output]) {
        let generation = linkGeneration
        spawn { [self] in
            let answer = await work()
            submit(.action { [self] connection, now in
                guard generation == linkGeneration else { return [] }
                return apply(&connection, answer, now)
            })
        }
    }

    private func dropBacklog(because reason: String) {
        let messages = backlog.values.reduce(0) { $0 + $1.count }
        if messages > 0 { logger.warning("\(messages) messages not sent: \(reason) while they waited for room") }
        let held = heldData.reduce(0) { $0 + $1.bytes.count }
        if held > 0 { logger.warning("\(held) received bytes not handled: \(reason) while answers waited for room") }
        backlog = [:]
        heldData = []
        if held > 0 { driver.consumed(held) }
    }

    private func describe(_ event: Connection.Event) {
        for observer in observers.withLock({ $0 }) { observer(event, connection) }
        switch event {
        case .stage(let stage):
            if case .failed = stage { logger.error("session now \(stage)") } else { logger.info("session now \(stage)") }
        case .accessoryCertificate: break // logged by the core with its summary
        case .media(let media): logger.debug("media: \(media)")
        case .fileReceived: break // logged by the core
        case .unhandled(let message):
            if let onMessage { onMessage(message) } else { logger.debug("received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))")") }
        case .log(let line): logger.info("\(line)")
        case .problem(let problem): logger.warning("problem: \(problem)")
        }
    }
}

/// How the driver's event handler, made before its endpoint exists, reaches
/// it.
///
/// `@unchecked Sendable`: `endpoint` is set once, in the endpoint's
/// initialiser, before the driver is started and so before any thread reads it.
private final class EndpointReference: @unchecked Sendable {
    weak var endpoint: MediaEndpoint?
}

extension VerificationRequest {
    var isCertificate: Bool { if case .certificate = self { true } else { false } }
}
