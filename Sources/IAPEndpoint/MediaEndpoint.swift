#if canImport(Glibc)
import Glibc
#endif
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import IAPWire

/// Which end of the link a command runs, and with what on top.
public enum EndKind: String, Sendable {
    /// The device end: identification, then the media role with the sample app.
    case phone = "phone"
    /// The accessory end: identification, then the media role and its shell.
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
/// Everything that happens (link events, the edge's answers, the core's
/// deadlines, shell lines) is serialised through one stream and handled in
/// order by `run`, so the core is only ever touched from one task.
///
/// `@unchecked Sendable`: the mutable state below is touched only from
/// `run` (one task at a time); other tasks only yield into `feed`.
public final class MediaEndpoint: @unchecked Sendable {
    public enum Input: Sendable {
        case link(LinkDriverEvent)
        case authenticator(AuthenticatorAnswer)
        case verified(VerificationAnswer)
        case tick
        case shell(String?)
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
    private let log: @Sendable (String) -> Void
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
    /// The phone's app (the sample app unless another was given).
    public let app: any MediaApp
    private var shell: HeadUnitShell?
    private var shellLines: [String] = []
    private var shellEnded = false
    /// Messages from outside that came before the first link up.
    private var heldOutgoing: [ControlMessage] = []
    private var timer: Task<Void, Never>?
    private var timerDeadline: LinkInstant?
    /// Called for every message no role consumed (ping answers).
    public var onMessage: (@Sendable (ControlMessage) -> Void)?
    /// Called for every event of the core, on the task running the
    /// endpoint, with the core as it is after the event (set before `start`).
    public var onEvent: (@Sendable (Connection.Event, Connection) -> Void)?
    /// Whether to stop, checked after every input.
    public var stopWhen: (@Sendable (MediaEndpoint) -> Bool)?

    /// - Parameters:
    ///   - app: the phone's app; the sample app serving `library` when nil.
    ///   - headUnitLimits: what the head unit's screen can show.
    public init(kind: EndKind, transport: Transport, shell: Bool = false, library: SampleLibrary = .standard, app: (any MediaApp)? = nil,
                headUnitLimits: HeadUnitLimits = .audioApps, authentication: EndpointAuthentication = .off,
                log: @escaping @Sendable (String) -> Void) {
        self.kind = kind
        let app = app ?? SampleApp(library: library)
        self.app = app
        self.log = log
        self.authentication = authentication
        driver = LinkDriver(configuration: LinkConfiguration(role: kind.linkRole), transport: transport)
        (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        let phone = PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: kind == .phone && app.offersContent)
        var nowPlaying: (@Sendable (LinkInstant) -> NowPlayingInfo)?
        if kind == .phone { nowPlaying = { now in app.nowPlaying(at: now) } }
        connection = Connection(Connection.Configuration(role: kind.linkRole == .device ? .phone : .headUnit, authentication: authentication.policy),
                                phone: phone, headUnit: HeadUnitMediaRole(limits: headUnitLimits), nowPlaying: nowPlaying)
        if shell { self.shell = HeadUnitShell() }
    }

    public var headUnit: HeadUnitMediaRole { connection.headUnit }
    public var nowPlayingUpdates: Int { connection.headUnit.nowPlaying.updates }
    public var shellFinished: Bool { shellEnded && shellLines.isEmpty && connection.headUnit.nextDeadline == nil }

    /// Starts the transport and the forwarding of link events.
    public func start() throws(TransportError) {
        try driver.start()
        let events = driver.events
        let feed = self.feed
        Task {
            for await event in events { feed.yield(.link(event)) }
            feed.finish()
        }
    }

    /// Runs the core's timers and `stopWhen` now, for a caller waiting on
    /// a condition while the peer is silent.
    public func wake() { feed.yield(.tick) }

    /// Lines for the shell (a script on standard input, or a person).
    public func feedShell(_ line: String?) { feed.yield(.shell(line)) }

    /// Sends a message on the control session from another task (the ping
    /// loop); it goes out in order with everything else.
    public func sendFromOutside(_ message: ControlMessage) { feed.yield(.outgoing(message)) }

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
        app.setTime(now)
        switch input {
        case .link(let event): await linkEvent(event, now: now)
        case .authenticator(let answer): await perform(connection.authenticatorAnswered(answer, now: now))
        case .verified(let answer): await perform(connection.verified(answer, now: now))
        case .tick:
            timerDeadline = nil
            await perform(connection.tick(now: now))
        case .shell(let line):
            if let line { shellLines.append(line) } else { shellEnded = true }
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
        // Any input may have answered what the shell's script waits for.
        await runShell(now: now)
        armTimer(now: now)
    }

    private func linkEvent(_ event: LinkDriverEvent, now: LinkInstant) async {
        switch event {
        case .link(.up(let link)):
            everUp = true
            log("link up: sending up to \(link.sendWindow) packets of \(link.sendPacketLength) bytes, "
                + (link.zeroAck ? "zero-ACK" : "retransmit after \(link.retransmitTimeout), at most \(link.maximumRetransmissions) times")
                + "; sessions " + link.sessions.map { "\($0.id) \($0.type.name)" }.joined(separator: ", "))
            await perform(connection.linkUp(link, now: now))
            let held = heldOutgoing
            heldOutgoing = []
            for message in held { await perform(connection.send(message, now: now)) }
        case .link(.down(let reason)):
            log("link down: \(reason)")
            endReason = "link down: \(reason)"
            await perform(connection.linkDown(now: now))
        case .link(.failed(let failure)):
            log("link failed: \(failure)")
        case .link(.restartScheduled(let delay)):
            log("starting the link over in \(delay)")
        case .link(.peerViolation(let violation)):
            log("the peer broke a link rule: \(violation) (counted; reported once per connection)")
        case .link(.renegotiated(let link)):
            log("link renegotiated: window \(link.sendWindow), packets of \(link.sendPacketLength) bytes")
        case .link(.negotiationAdjusted(let reasons)):
            log("adjusted the peer's proposal: " + reasons.joined(separator: "; "))
        case .link(.proposalRefused(let reasons)):
            log("refused the peer's proposal: " + reasons.joined(separator: "; "))
        case .link(.peerSleeping):
            log("the peer is going to sleep")
        case .link(.sessionWritable):
            break
        case .data(let session, let bytes):
            // Handed back once handled: a reader that falls behind holds the peer back.
            await perform(connection.received(session: session, bytes, now: now))
            driver.consumed(bytes.count)
        case .transportClosed(let reason):
            log("transport closed: \(reason)")
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
                    log("cannot send \(bytes.count) bytes on session \(session): \(error)")
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
                // In a task of its own: a slow app holds up nothing else.
                // The delay an app states (the sample's simulated network)
                // is kept by the core.
                let (app, feed, started) = (self.app, self.feed, now())
                Task {
                    let (result, delay) = await app.load(request, now: started)
                    feed.yield(.loaded(token: token, result, readyAt: started + delay))
                }
            case .pausePlayback:
                app.pause(at: now())
            }
        }
    }

    private func describe(_ event: Connection.Event) {
        onEvent?(event, connection)
        switch event {
        case .stage(let stage): log("session now \(stage)")
        case .accessoryCertificate: break // logged by the core with its summary
        case .media(let media): log(MediaEventText.describe(media, headUnit: connection.headUnit, now: now()))
        case .fileReceived: break // logged by the core
        case .unhandled(let message):
            if let onMessage { onMessage(message) } else { log("received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))")") }
        case .log(let line): log(line)
        case .problem(let problem): log("problem: \(problem)")
        }
    }

    /// One timer, at the earliest of the core's deadline and the shell's
    /// next watch line; no polling.
    private func armTimer(now: LinkInstant) {
        var deadline = connection.nextDeadline
        if let watch = shell?.watchUntil, now < watch {
            let next = (shell?.lastWatch).map { $0 + .seconds(1) } ?? now
            deadline = deadline.map { min($0, next) } ?? next
        }
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

    // MARK: Shell

    private func runShell(now: LinkInstant) async {
        guard var current = shell, connection.isMediaConnected, connection.headUnit.appName != nil else { return }
        // A script waits for the answers to one line before the next.
        while !shellLines.isEmpty, connection.headUnit.nextDeadline == nil {
            let line = shellLines.removeFirst()
            var text: [String] = []
            let outputs = connection.headUnitDoes(now: now) { role, now in
                let (outputs, printed) = current.execute(line, role: &role, now: now)
                text = printed
                return outputs
            }
            for printed in text { log(printed) }
            shell = current
            await perform(outputs)
            current = shell ?? current
            if current.quit { shellEnded = true; shellLines.removeAll() }
        }
        shell = current
        if let watch = current.watchUntil, now < watch, current.lastWatch.map({ now.nanoseconds - $0.nanoseconds >= 1_000_000_000 }) ?? true {
            shell?.lastWatch = now
            log(MediaEventText.nowPlayingLine(connection.headUnit, now: now))
        }
    }

    public var shellQuit: Bool { shell?.quit ?? false }
}

extension VerificationRequest {
    var isCertificate: Bool { if case .certificate = self { true } else { false } }
}
