#if canImport(Glibc)
import Glibc
#endif
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
/// Everything that happens (link events, the edge's answers, the app's
/// loads, the core's deadlines, actions from other tasks) is serialised
/// through one stream and handled in order by `run`, so the core is only
/// ever touched from one task.
///
/// `@unchecked Sendable`: the mutable state below is touched only from
/// `run` (one task at a time); other tasks only yield into `feed`.
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
    }

    public let kind: EndKind
    public let driver: LinkDriver
    public let inputs: AsyncStream<Input>
    private let feed: AsyncStream<Input>.Continuation
    private let logger: Logger
    private let authentication: EndpointAuthentication

    // Touched only from `run`.
    public private(set) var connection: Connection
    public private(set) var everUp = false
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
    private var timer: Task<Void, Never>?
    private var timerDeadline: LinkInstant?
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
        let (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        (self.inputs, self.feed) = (inputs, feed)
        // Link events go straight into the inputs; the transport closing is
        // the last of them.
        driver = LinkDriver(configuration: LinkConfiguration(role: kind.linkRole), transport: transport) { event in
            feed.yield(.link(event))
            if case .transportClosed = event { feed.finish() }
        }
        let phone = PhoneMediaRole(appName: app?.appName ?? "", commands: app?.commandCenter() ?? RemoteCommandCenter(),
                                   offersContent: kind == .phone && app?.offersContent == true)
        var nowPlaying: (@Sendable (LinkInstant) -> NowPlayingInfo)?
        if kind == .phone, let app { nowPlaying = { now in app.nowPlaying(at: now) } }
        connection = Connection(Connection.Configuration(role: kind.linkRole == .device ? .phone : .headUnit, authentication: authentication.policy),
                                phone: phone, headUnit: HeadUnitMediaRole(limits: headUnitLimits), nowPlaying: nowPlaying)
    }

    public var headUnit: HeadUnitMediaRole { connection.headUnit }
    public var nowPlayingUpdates: Int { connection.headUnit.nowPlaying.updates }

    /// Starts the transport and the link.
    public func start() throws(TransportError) {
        try driver.start()
    }

    /// Runs the core's timers and `stopWhen` now, for a caller waiting on
    /// a condition while the peer is silent.
    public func wake() { feed.yield(.tick) }

    /// Sends a message on the control session from another task (the ping
    /// loop); it goes out in order with everything else.
    public func sendFromOutside(_ message: ControlMessage) { feed.yield(.outgoing(message)) }

    /// Calls `observer` for every event of the core from now on, on the task
    /// running the endpoint, with the core as it is after the event (a
    /// head unit's screen, its shell, the library's waiting calls).
    public func observe(_ observer: @escaping @Sendable (Connection.Event, Connection) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Acts on the core from another task (a head unit's browse, a phone's
    /// new now-playing): the action runs in order with every other input,
    /// and what it outputs is carried out. Its effects show as events.
    public func withConnection(_ action: @escaping @Sendable (inout Connection, LinkInstant) -> [Connection.Output]) {
        feed.yield(.action(action))
    }

    /// Handles inputs until the link's events end or `stopWhen` says so.
    public func run() async {
        defer { timer?.cancel() }
        for await input in inputs {
            await handle(input)
            if stopWhen?(self) == true { return }
        }
    }

    private func now() -> LinkInstant { MonotonicClock.now() }

    private func handle(_ input: Input) async {
        let now = now()
        app?.setTime(now)
        switch input {
        case .link(let event): await linkEvent(event, now: now)
        case .authenticator(let answer): await perform(connection.authenticatorAnswered(answer, now: now))
        case .verified(let answer): await perform(connection.verified(answer, now: now))
        case .tick:
            timerDeadline = nil
            await perform(connection.tick(now: now))
        case .loaded(let token, let result, let readyAt):
            await perform(connection.complete(token: token, with: result, at: max(readyAt, now), now: now))
        case .action(let action):
            await perform(action(&connection, now))
        case .outgoing(let message):
            // A caller may see the driver up before this task has handled
            // link up: hold its messages (a bounded few) until then.
            if !everUp && heldOutgoing.count < 64 {
                heldOutgoing.append(message)
            } else {
                await perform(connection.send(message, now: now))
            }
        }
        armTimer(now: now)
    }

    private func linkEvent(_ event: LinkDriverEvent, now: LinkInstant) async {
        switch event {
        case .link(.up(let link)):
            everUp = true
            let delivery = link.zeroAck ? "zero-ACK" : "retransmit after \(link.retransmitTimeout), at most \(link.maximumRetransmissions) times"
            let sessions = link.sessions.map { "\($0.id) \($0.type.name)" }.joined(separator: ", ")
            logger.info("link up: sending up to \(link.sendWindow) packets of \(link.sendPacketLength) bytes, \(delivery); sessions \(sessions)")
            await perform(connection.linkUp(link, now: now))
            let held = heldOutgoing
            heldOutgoing = []
            for message in held { await perform(connection.send(message, now: now)) }
        case .link(.down(let reason)):
            logger.info("link down: \(reason)")
            endReason = "link down: \(reason)"
            await perform(connection.linkDown(now: now))
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
        case .link(.sessionWritable):
            break
        case .data(let session, let bytes):
            // Handed back once handled: a reader that falls behind holds the peer back.
            await perform(connection.received(session: session, bytes, now: now))
            driver.consumed(bytes.count)
        case .transportClosed(let reason):
            logger.info("transport closed: \(reason)")
            endReason = endReason ?? "transport closed: \(reason)"
            await perform(connection.linkDown(now: now))
        }
    }

    // MARK: Outputs

    private func perform(_ outputs: [Connection.Output]) async {
        var pending = outputs[...]
        while let output = pending.popFirst() {
            switch output {
            case .send(let session, let bytes):
                do {
                    try await driver.send(bytes, session: session)
                } catch {
                    logger.error("cannot send \(bytes.count) bytes on session \(session): \(error)")
                }
            case .event(let event):
                describe(event)
            case .authenticator(let request):
                guard let authenticator = authentication.authenticator else {
                    pending += connection.authenticatorAnswered(.failed("this head unit has no authenticator"), now: now())
                    continue
                }
                let feed = self.feed
                Task { feed.yield(.authenticator(await authenticator(request))) }
            case .verify(let request):
                guard let verifier = authentication.verifier else {
                    pending += connection.verified(request.isCertificate ? .certificateRejected("this phone has no verifier (use --auth off)")
                                                                         : .responseInvalid("this phone has no verifier"), now: now())
                    continue
                }
                let feed = self.feed
                Task { feed.yield(.verified(await verifier(request))) }
            case .load(let token, let request):
                guard let app else {
                    pending += connection.complete(token: token, with: .failed(.noSuchContent, "this phone serves no app"), at: now(), now: now())
                    continue
                }
                // In a task of its own: a slow app holds up nothing else.
                // The delay an app states (the sample's simulated network)
                // is kept by the core.
                let (feed, started) = (self.feed, now())
                Task {
                    let (result, delay) = await app.load(request, now: started)
                    feed.yield(.loaded(token: token, result, readyAt: started + delay))
                }
            case .pausePlayback:
                app?.pause(at: now())
            }
        }
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

    /// One timer, at the core's next deadline; no polling.
    private func armTimer(now: LinkInstant) {
        let deadline = connection.nextDeadline
        guard deadline != timerDeadline else { return }
        timer?.cancel()
        timerDeadline = deadline
        guard let deadline else { return }
        let feed = self.feed
        let delay = Duration.nanoseconds(max(0, deadline.nanoseconds - now.nanoseconds))
        timer = Task {
            try? await Task.sleep(for: delay)
            if !Task.isCancelled { feed.yield(.tick) }
        }
    }
}

extension VerificationRequest {
    var isCertificate: Bool { if case .certificate = self { true } else { false } }
}
