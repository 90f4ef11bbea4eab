import IAPLegacy
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

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

/// One whole link end as a sans-IO state machine: the link layer
/// (`LinkEnd`), the iAP2 session above it (`Connection`) and, on a phone
/// whose head unit speaks only iAP1, the legacy phone (`LegacyPhone`).
///
/// Fed one `Input` at a time with the time, it answers with `Output`s
/// (bytes to write, events, requests for the edge) and `nextDeadline`, the
/// one time `tick` is next due for all three. Every runner drives this one
/// type: the real-time endpoint over a transport, the virtual-time
/// simulator, the in-process pair and the fuzz targets.
///
/// What sits between the link and the session lives here too: a send the
/// link's queue has no room for waits in a backlog until the session is
/// writable; bytes received while one waits stay unhandled (and count
/// against the link's receive budget), so a peer that does not take our
/// answers gets no more made for it and holds itself back. Answers of the
/// edge carry the link they were asked on: one made for an earlier link is
/// dropped (a verdict on one accessory's certificate never passes for
/// another's).
///
/// It never calls the phone's app: the app's content leaves as `.load`
/// requests, its commands as `.perform` and what it plays as
/// `.readNowPlaying`, each answered by the edge with an input (h11's rule:
/// the state machine never runs user code).
public struct EndpointCore: Sendable {
    public enum Input: Sendable {
        /// Starts the link end (the transport is open).
        case start
        /// Bytes the transport read.
        case received([UInt8])
        /// The transport closed (why, in words): the link and the session end.
        case transportClosed(String)
        /// Time passed: whatever is due by now is done.
        case tick
        /// Sends RST (before the transport is closed on purpose).
        case reset
        /// Starts a fresh link end over the same or a new transport (a cable plugged back in).
        case restart
        /// The edge's authenticator answered the request made on link `link`.
        case authenticatorAnswered(AuthenticatorAnswer, link: Int)
        /// The edge's verifier answered the request made on link `link`.
        case verified(VerificationAnswer, link: Int)
        /// The edge's verifier answered the legacy phone's check `id`, asked on link `link`.
        case legacyVerified(id: UInt32, VerificationAnswer, link: Int)
        /// The app answered a load, ready at `readyAt` (its own stated delay).
        case loaded(token: UInt32, PhoneMediaRole.LoadResult, readyAt: LinkInstant)
        /// The app answered a load of the legacy phone's.
        case legacyLoaded(token: UInt32, PhoneMediaRole.LoadResult, readyAt: LinkInstant)
        /// The app ran a command asked for with `.perform`.
        case performed(RemoteCommand, PhoneMediaRole.CommandOrigin, RequestStatus)
        /// The app ran a command asked for with `.legacyPerform`.
        case legacyPerformed(LegacyPhone.Reply, RequestStatus)
        /// What the app plays now, the answer to `.readNowPlaying` (or news
        /// from the app at any time).
        case nowPlaying(NowPlayingInfo)
        /// A control message from outside the roles (a diagnostic ping); held
        /// (a bounded few) until the first link is up.
        case send(ControlMessage)
        /// Something to do with the session (a head unit's browse, a phone's
        /// new command set); what it outputs is carried out.
        case action(@Sendable (inout Connection, LinkInstant) -> [Connection.Output])
        /// Bytes for the transport behind the link's back (stale or corrupt
        /// packets, a stopped peer's RST), after what the link wrote so far.
        case writeRaw([UInt8])
        /// Bytes on a session behind the session's back, as a peer that
        /// breaks the rules would send them (conformance probes).
        case sendRaw(session: UInt8, [UInt8])
    }

    /// How loud a line of the core's own is.
    public enum Level: Hashable, Sendable {
        case info, notice, warning, error
    }

    public enum Output: Hashable, Sendable {
        /// Bytes for the transport, in order.
        case write([UInt8])
        /// What the link did (for logs; the core has acted on it already).
        case link(LinkEvent)
        /// What the session did.
        case event(Connection.Event)
        /// Head unit: ask the authenticator; answer with `.authenticatorAnswered`, giving `link` back.
        case authenticator(AuthenticatorRequest, link: Int)
        /// Phone: check a certificate or signature; answer with `.verified`, giving `link` back.
        case verify(VerificationRequest, link: Int)
        /// Phone serving iAP1: check the head unit's certificate or signature; answer with `.legacyVerified`.
        case legacyVerify(id: UInt32, VerificationRequest, link: Int)
        /// Phone: the app's content; answer with `.loaded`.
        case load(token: UInt32, PhoneMediaRole.LoadRequest)
        /// Phone serving iAP1: the app's content; answer with `.legacyLoaded`.
        case legacyLoad(token: UInt32, PhoneMediaRole.LoadRequest)
        /// Phone serving iAP1: what the head unit did.
        case legacyEvent(LegacyPhone.Event)
        /// Phone: the head unit went away while playing.
        case pausePlayback
        /// Phone: run the app's handler for this command (`commands`
        /// holds it); answer with `.performed`.
        case perform(RemoteCommand, PhoneMediaRole.CommandOrigin)
        /// Phone serving iAP1: run the app's handler for this command;
        /// answer with `.legacyPerformed`, giving the reply back.
        case legacyPerform(RemoteCommand, reply: LegacyPhone.Reply)
        /// Phone: read what the app plays now (`MediaApp.nowPlaying(at:)`);
        /// answer with `.nowPlaying`. Asked once, last, in the outputs of
        /// an input while a head unit is connected; a load's status waits
        /// for the answer.
        case readNowPlaying
        /// A link probe (`Configuration.probesLink`): bytes a session
        /// delivered, in order, for the edge to read.
        case sessionData(session: UInt8, [UInt8])
        /// A control message this end sent, by id (with `Configuration.recordsSentMessages`).
        case sentMessage(UInt16)
        /// A line for the log.
        case log(Level, String)
    }

    public struct Configuration: Sendable {
        public var link: LinkConfiguration
        /// Whether one write may carry several link packets (a byte stream);
        /// off, each packet is its own write (a USB transfer, a datagram).
        public var coalescesWrites: Bool
        /// A link probe (`conformance --against`): the session is left out.
        /// What a session delivers leaves as `.sessionData`, the session
        /// core is never told of the link (so it sends nothing), and each
        /// link packet is its own write, so the edge can look at each.
        public var probesLink: Bool

        public init(link: LinkConfiguration, coalescesWrites: Bool = true, probesLink: Bool = false) {
            self.link = link
            self.coalescesWrites = coalescesWrites && !probesLink
            self.probesLink = probesLink
        }
    }

    /// What the transport is, as it says once it is open (a USB device's
    /// interface, bulk or HID, is known only then): whether one write may
    /// carry several link packets (a link probe keeps one packet per
    /// write), and the largest link packet and the outstanding packets this
    /// end proposes to receive over it (nil keeps the configuration's;
    /// values a SYN cannot say are clamped to what it can).
    /// Called before `.start`: the link end is made again with the sizes.
    public mutating func transportOpened(coalescesWrites: Bool, maximumPacketLength: Int? = nil, maximumOutstandingPackets: Int? = nil) {
        configuration.coalescesWrites = coalescesWrites && !configuration.probesLink
        guard maximumPacketLength != nil || maximumOutstandingPackets != nil else { return }
        func clamp(_ value: Int, _ range: ClosedRange<Int>) -> Int { min(max(value, range.lowerBound), range.upperBound) }
        var parameters = configuration.link.parameters
        parameters.maximumPacketLength = clamp(maximumPacketLength ?? parameters.maximumPacketLength,
                                               LinkSynchronization.minimumPacketLength...LinkPacket.maximumLength)
        parameters.maximumOutstandingPackets = clamp(maximumOutstandingPackets ?? parameters.maximumOutstandingPackets,
                                                     LinkSynchronization.maximumOutstandingRange)
        // A SYN may not ask for more cumulative acknowledgements than packets outstanding.
        parameters.maximumCumulativeAcks = min(parameters.maximumCumulativeAcks, parameters.maximumOutstandingPackets)
        configuration.link.parameters = parameters
        link = LinkEnd(configuration: configuration.link)
        refreshReadings()
    }

    /// Messages from outside held before the first link up, at most.
    public static let maximumHeldOutgoing = 64

    public private(set) var configuration: Configuration
    /// Whether this end serves an app (a phone with one): its loads,
    /// commands and now playing are asked of the edge.
    public let servesApp: Bool
    public private(set) var link: LinkEnd
    public private(set) var connection: Connection
    /// The phone's answer to a head unit that speaks only iAP1; nil for
    /// other ends and a phone with no app.
    public private(set) var legacy: LegacyPhone?
    /// Whether `legacy` is set (from the start, for good). Stored, so a
    /// driver asking at every input reads one flag instead of copying the
    /// legacy phone out of the core.
    public let answersLegacy: Bool
    /// Whether a link has come up since the core was made.
    public private(set) var everUp = false
    /// Why the link last went down or the transport closed, in words; nil while it has not.
    public private(set) var endReason: String?
    /// Counts link ups and downs: what the edge answers for an earlier link is dropped.
    public private(set) var linkGeneration = 0
    /// Bytes written earlier that the transport still holds (the peer has
    /// not taken them), as the edge last said: iAP1 has no window, so they
    /// are what bounds the legacy phone's answers.
    public var unwrittenBytes = 0
    /// Control messages this end never sends: a peer that leaves a step
    /// out, for conformance cases.
    public var withheldMessages: Set<UInt16> = []
    /// Report each control message sent as `.sentMessage` (for checks).
    public var recordsSentMessages = false

    private var heldOutgoing: [ControlMessage] = []
    /// Sends the link's queue had no room for, per session, oldest first.
    private var backlog: [UInt8: [[UInt8]]] = [:]
    /// Bytes received while a backlog waits, not yet handled.
    private var heldData: [(session: UInt8, bytes: [UInt8])] = []
    /// The legacy phone's loads the app answered, to complete at their time.
    private var legacyCompletions: [(at: LinkInstant, token: UInt32, result: PhoneMediaRole.LoadResult)] = []
    /// iAP1 answers not sent because the head unit had not taken the ones before.
    private var legacyAnswersRefused = 0

    // One input's work.
    private var outputs: [Output] = []
    /// The session or the legacy phone wants the app's now playing.
    private var wantsNowPlaying = false
    private var writes: [UInt8] = []
    /// Link actions not yet acted on, oldest first (a queue, not recursion:
    /// a long exchange would otherwise make a deep stack).
    private var linkActions: [LinkAction] = []
    private var nextLinkAction = 0
    /// Delivered bytes handled since the link was last told.
    private var consumedUntold = 0

    /// - Parameters:
    ///   - connection: the session core, made for this end's role.
    ///   - app: the phone's app (its now playing, commands; its loads leave
    ///     as outputs); nil for a head unit or a phone that serves nothing.
    ///   - verifiesLegacy: the legacy phone authenticates the head unit. A
    ///     device end with an app whose link answers iAP1 (`answersIAP1`)
    ///     serves a head unit that speaks only iAP1 from the same app.
    public init(configuration: Configuration, connection: Connection, app: (any MediaApp)?, verifiesLegacy: Bool = false) {
        self.configuration = configuration
        servesApp = app != nil
        self.connection = connection
        link = LinkEnd(configuration: configuration.link)
        if configuration.link.answersIAP1, configuration.link.role == .device, let app {
            legacy = LegacyPhone(appName: app.appName, verifies: verifiesLegacy)
        }
        answersLegacy = legacy != nil
        refreshReadings()
    }

    /// The phone's command set as it is now (an app may change it while
    /// serving, `PhoneMediaRole.updateCommands`): the edge runs `.perform`
    /// and `.legacyPerform` with it, so an iAP1 head unit is served the
    /// same set as an iAP2 one.
    public var commands: RemoteCommandCenter { connection.phone.commands }

    /// The core of an end of `kind` as the CLI and IAPKit run it: a phone
    /// with an app serves it over iAP2 and to an iAP1 head unit.
    ///   - mediaLibraries: head unit: the phone libraries kept from earlier
    ///     connections (a returning phone is asked for what changed since).
    public init(kind: EndKind, app: (any MediaApp)?, headUnitLimits: HeadUnitLimits = .audioApps, authentication: AuthenticationPolicy,
                coalescesWrites: Bool = true, mediaLibraries: [MediaLibraryMirror] = []) {
        let servesLegacy = kind == .phone && app != nil
        let phone = PhoneMediaRole(appName: app?.appName ?? "", commands: app?.commandCenter() ?? RemoteCommandCenter(),
                                   offersContent: kind == .phone && app?.offersContent == true, library: kind == .phone ? app?.mediaLibrary : nil)
        let connection = Connection(Connection.Configuration(role: kind.linkRole, authentication: authentication),
                                    phone: phone, headUnit: HeadUnitMediaRole(limits: headUnitLimits, syncsMediaLibrary: kind == .headUnit, mediaLibraries: mediaLibraries),
                                    readsNowPlaying: kind == .phone && app != nil)
        self.init(configuration: Configuration(link: LinkConfiguration(role: kind.linkRole, answersIAP1: servesLegacy), coalescesWrites: coalescesWrites),
                  connection: connection, app: kind == .phone ? app : nil, verifiesLegacy: authentication == .required)
    }

    // What the driver reads after every input is stored, brought up to date
    // as each input ends, not computed by a getter: called from another
    // module, a getter of this struct works on a copy of the whole core
    // (link end, session and legacy phone, several KB). The link end, the
    // session and the legacy phone store theirs the same way.

    /// When `.tick` is next due, if ever: the earliest of the link's, the
    /// session's and the legacy phone's deadlines.
    public private(set) var nextDeadline: LinkInstant?

    /// Messages waiting for room on the link, and received bytes waiting for them.
    public private(set) var waiting: (messages: Int, receivedBytes: Int) = (0, 0)

    private mutating func refreshReadings() {
        // Merged one by one: an array of the candidates was an allocation at every input.
        var next = link.nextDeadline
        func consider(_ candidate: LinkInstant?) {
            if let candidate, next.map({ candidate < $0 }) ?? true { next = candidate }
        }
        consider(connection.nextDeadline)
        consider(legacy?.nextDeadline)
        for completion in legacyCompletions { consider(completion.at) }
        nextDeadline = next
        waiting = backlog.isEmpty && heldData.isEmpty ? (0, 0)
            : (backlog.values.reduce(0) { $0 + $1.count }, heldData.reduce(0) { $0 + $1.bytes.count })
    }

    /// Handles one input at `now`; returns what to carry out, in order (this
    /// input's write first: the peer waits for it).
    public mutating func handle(_ input: Input, now: LinkInstant) -> [Output] {
        switch input {
        case .start: linkDid(link.start(now: now), now: now)
        case .received(let bytes):
            // What arrived is answered in this turn where it can be (a
            // ping, a request the session serves at once): the answer's
            // data carries the acknowledgement, not a bare ACK before it.
            linkDid(link.receive(bytes, now: now, deferringAcknowledgement: true), now: now)
            linkDid(link.flushAcknowledgement(now: now), now: now)
        case .transportClosed(let reason):
            linkDid(link.transportClosed(reason, now: now), now: now)
            endReason = endReason ?? "transport closed: \(reason)"
            dropBacklog(because: "the transport closed", now: now)
            if !configuration.probesLink { perform(connection.linkDown(now: now), now: now) }
        case .tick:
            linkDid(link.tick(now: now), now: now)
            perform(connection.tick(now: now), now: now)
            if legacy != nil {
                performLegacy(legacy?.tick(now: now) ?? [], now: now)
                let due = legacyCompletions.filter { $0.at <= now }
                legacyCompletions.removeAll { $0.at <= now }
                for completion in due { performLegacy(legacy?.complete(token: completion.token, with: completion.result, now: now) ?? [], now: now) }
            }
        case .reset: linkDid(link.reset(now: now), now: now)
        case .restart:
            link = LinkEnd(configuration: configuration.link)
            consumedUntold = 0
            linkDid(link.start(now: now), now: now)
        case .authenticatorAnswered(let answer, let generation):
            if generation == linkGeneration { perform(connection.authenticatorAnswered(answer, now: now), now: now) }
        case .verified(let answer, let generation):
            if generation == linkGeneration { perform(connection.verified(answer, now: now), now: now) }
        case .legacyVerified(let id, let answer, let generation):
            if generation == linkGeneration { performLegacy(legacy?.verified(id: id, answer, now: now) ?? [], now: now) }
        case .loaded(let token, let result, let readyAt):
            perform(connection.complete(token: token, with: result, at: max(readyAt, now), now: now), now: now)
        case .legacyLoaded(let token, let result, let readyAt):
            if readyAt <= now {
                performLegacy(legacy?.complete(token: token, with: result, now: now) ?? [], now: now)
            } else {
                legacyCompletions.append((readyAt, token, result))
            }
        case .performed(let command, let origin, let status):
            perform(connection.performed(command, for: origin, status: status, now: now), now: now)
        case .legacyPerformed(let reply, let status):
            performLegacy(legacy?.performed(status, reply: reply) ?? [], now: now)
        case .nowPlaying(let info):
            perform(connection.setNowPlaying(info, now: now), now: now)
            if legacy?.isIdentified == true { performLegacy(legacy?.setNowPlaying(info, now: now) ?? [], now: now) }
            return finish(now: now, readingNowPlaying: false)
        case .send(let message):
            // A caller may see the link up before this core has handled its
            // coming up: its messages wait (a bounded few) until then.
            if !everUp && heldOutgoing.count < Self.maximumHeldOutgoing {
                heldOutgoing.append(message)
            } else {
                perform(connection.send(message, now: now), now: now)
            }
        case .action(let action):
            perform(action(&connection, now), now: now)
        case .writeRaw(let bytes):
            if configuration.coalescesWrites { write(bytes) } else { outputs.append(.write(bytes)) }
        case .sendRaw(let session, let bytes):
            send(bytes, session: session, now: now)
        }
        return finish(now: now)
    }

    /// Acts on the session now, as `.action` does, for a driver on one
    /// thread whose action need not outlive the call (the simulators).
    public mutating func act(now: LinkInstant, _ action: (inout Connection, LinkInstant) -> [Connection.Output]) -> [Output] {
        perform(action(&connection, now), now: now)
        return finish(now: now)
    }

    /// This input's outputs, ending with one request for what the app
    /// plays when the session or an identified iAP1 head unit wants it
    /// (not after the answer itself: the edge would be asked again and again).
    private mutating func finish(now: LinkInstant, readingNowPlaying: Bool = true) -> [Output] {
        pullSessionMessages(now: now)
        if readingNowPlaying, servesApp, wantsNowPlaying || legacy?.isIdentified == true { outputs.append(.readNowPlaying) }
        wantsNowPlaying = false
        return take()
    }

    /// Messages the session makes only when there is room for them (a
    /// media library streamed to a head unit): made while the link's queue
    /// on the control session takes them, so the library is never written
    /// out ahead of the link. Later inputs (acknowledgements making room)
    /// pull the rest.
    private mutating func pullSessionMessages(now: LinkInstant) {
        guard let control = controlSession else { return }
        var pulled = 0
        while connection.wantsToSend, backlog[control] == nil, pulled < Self.messagesPulledPerInput {
            perform(connection.sendMore(now: now), now: now)
            pulled += 1
        }
    }

    /// At most this many pulled messages per input: one input's work stays short.
    static let messagesPulledPerInput = 64

    // MARK: The link

    /// Acts on what the link end asked for, and on what that causes, until
    /// nothing is left.
    private mutating func linkDid(_ actions: [LinkAction], now: LinkInstant) {
        let draining = !linkActions.isEmpty
        linkActions += actions
        guard !draining else { return }
        while nextLinkAction < linkActions.count {
            let action = linkActions[nextLinkAction]
            nextLinkAction += 1
            switch action {
            case .send(let bytes):
                if configuration.coalescesWrites {
                    write(bytes)
                } else {
                    outputs.append(.write(bytes))
                }
            case .deliver(let session, let bytes):
                // Each packet's payload as it is: the session's decoder
                // buffers a stream itself (joining them here copied a long
                // message once more).
                received(bytes, session: session, now: now)
            case .event(let event):
                linkEvent(event, now: now)
            }
            if nextLinkAction == linkActions.count {
                linkActions.removeAll(keepingCapacity: true)
                nextLinkAction = 0
                // Handled bytes no longer count against the receive budget.
                if consumedUntold > 0 {
                    let count = consumedUntold
                    consumedUntold = 0
                    linkActions += link.consumed(count, now: now)
                }
            }
        }
    }

    private mutating func linkEvent(_ event: LinkEvent, now: LinkInstant) {
        switch event {
        case .up(let negotiated):
            everUp = true
            linkGeneration += 1
            outputs.append(.link(event))
            guard !configuration.probesLink else { return }
            perform(connection.linkUp(negotiated, now: now), now: now)
            let held = heldOutgoing
            heldOutgoing = []
            for message in held { perform(connection.send(message, now: now), now: now) }
        case .down(let reason):
            linkGeneration += 1
            endReason = "link down: \(reason)"
            outputs.append(.link(event))
            dropBacklog(because: "the link went down", now: now)
            if !configuration.probesLink { perform(connection.linkDown(now: now), now: now) }
        case .sessionWritable(let session):
            outputs.append(.link(event))
            sendBacklog(of: session, now: now)
        case .legacyFrame(let payload):
            performLegacy(legacy?.received(payload, now: now) ?? [], now: now)
            consumedUntold += payload.count
        default:
            outputs.append(.link(event))
        }
    }

    /// Hands received bytes to the session now, or holds them while answers
    /// wait for room.
    private mutating func received(_ bytes: [UInt8], session: UInt8, now: LinkInstant) {
        guard backlog.isEmpty && heldData.isEmpty else { return heldData.append((session, bytes)) }
        handOver(bytes, session: session, now: now)
    }

    /// Received bytes to the session (or, probing the link, to the edge).
    private mutating func handOver(_ bytes: [UInt8], session: UInt8, now: LinkInstant) {
        if configuration.probesLink {
            outputs.append(.sessionData(session: session, bytes))
        } else {
            perform(connection.received(session: session, bytes, now: now), now: now)
        }
        consumedUntold += bytes.count
    }

    /// Sends now, or after what already waits for room on the session.
    private mutating func send(_ bytes: [UInt8], session: UInt8, now: LinkInstant) {
        if backlog[session] == nil {
            do throws(LinkSendError) {
                return linkDid(try link.send(bytes, session: session, now: now), now: now)
            } catch {
                guard case .queueFull = error.kind else {
                    return log(.error, "cannot send \(bytes.count) bytes on session \(session): \(error)")
                }
            }
        }
        backlog[session, default: []].append(bytes)
    }

    /// Sends what waited for room on `session`, as far as there is room;
    /// then handles what was received meanwhile, in order, until its answers
    /// fill the link's queue again.
    private mutating func sendBacklog(of session: UInt8, now: LinkInstant) {
        guard let waiting = backlog[session] else { return }
        var sent = 0
        sending: for bytes in waiting {
            do throws(LinkSendError) {
                linkDid(try link.send(bytes, session: session, now: now), now: now)
            } catch {
                if case .queueFull = error.kind { break sending }
                log(.error, "cannot send \(bytes.count) bytes on session \(session): \(error)")
            }
            sent += 1
        }
        backlog[session] = sent == waiting.count ? nil : Array(waiting[sent...])
        var handled = 0
        while backlog.isEmpty && handled < heldData.count {
            let (session, bytes) = heldData[handled]
            handled += 1
            handOver(bytes, session: session, now: now)
        }
        heldData.removeFirst(handled)
    }

    private mutating func dropBacklog(because reason: String, now: LinkInstant) {
        let messages = backlog.values.reduce(0) { $0 + $1.count }
        if messages > 0 { log(.warning, "\(messages) messages not sent: \(reason) while they waited for room") }
        let held = heldData.reduce(0) { $0 + $1.bytes.count }
        if held > 0 { log(.warning, "\(held) received bytes not handled: \(reason) while answers waited for room") }
        backlog = [:]
        heldData = []
        consumedUntold += held
    }

    // MARK: The session

    private mutating func perform(_ sessionOutputs: [Connection.Output], now: LinkInstant) {
        for output in sessionOutputs {
            switch output {
            case .send(let session, let bytes):
                if session == controlSession, !withheldMessages.isEmpty || recordsSentMessages,
                   let id = Self.messageID(bytes) {
                    if withheldMessages.contains(id) { continue }
                    if recordsSentMessages { outputs.append(.sentMessage(id)) }
                }
                send(bytes, session: session, now: now)
            case .event(let event): outputs.append(.event(event))
            case .authenticator(let request): outputs.append(.authenticator(request, link: linkGeneration))
            case .verify(let request): outputs.append(.verify(request, link: linkGeneration))
            case .load(let token, let request):
                guard servesApp else {
                    perform(connection.complete(token: token, with: .failed(.noSuchContent, "this phone serves no app"), at: now, now: now), now: now)
                    continue
                }
                outputs.append(.load(token: token, request))
            case .pausePlayback: outputs.append(.pausePlayback)
            case .perform(let command, let origin): outputs.append(.perform(command, origin))
            case .readNowPlaying: wantsNowPlaying = true
            }
        }
    }

    private var controlSession: UInt8? { link.negotiated?.sessions.first { $0.type == .control }?.id }

    /// The id of the control message `bytes` start with (the session core
    /// sends one message per output).
    private static func messageID(_ bytes: [UInt8]) -> UInt16? {
        guard bytes.count >= 6 else { return nil }
        return UInt16(bytes[4]) << 8 | UInt16(bytes[5])
    }

    // MARK: The legacy phone

    private mutating func performLegacy(_ legacyOutputs: [LegacyPhone.Output], now: LinkInstant) {
        for output in legacyOutputs {
            switch output {
            case .send(let packet):
                let name = packet.name ?? "command 0x\(String(packet.command, radix: 16))"
                let frame: [UInt8]
                do {
                    frame = try packet.encoded(sync: true)
                } catch {
                    log(.error, "cannot send iAP1 \(name) to the head unit: \(error)")
                    continue
                }
                do throws(LinkSendError) {
                    linkDid(try link.sendLegacy(frame, queued: unwrittenBytes, now: now), now: now)
                } catch {
                    guard case .legacyQueueFull = error.kind else {
                        log(.error, "cannot send iAP1 \(name) to the head unit: \(error)")
                        continue
                    }
                    // Counted; said at the first and each doubling: a head unit that
                    // asks without reading must not grow the log with its requests.
                    legacyAnswersRefused += 1
                    if legacyAnswersRefused & (legacyAnswersRefused - 1) == 0 {
                        log(.warning, "\(legacyAnswersRefused) iAP1 answers not sent so far: \(error)")
                    }
                }
            case .load(let token, let request): outputs.append(.legacyLoad(token: token, request))
            case .perform(let command, let reply): outputs.append(.legacyPerform(command, reply: reply))
            case .verify(let id, let request): outputs.append(.legacyVerify(id: id, request, link: linkGeneration))
            case .event(let event): outputs.append(.legacyEvent(event))
            case .log(let line): log(.info, "iAP1: \(line)")
            }
        }
    }

    private mutating func log(_ level: Level, _ line: String) { outputs.append(.log(level, line)) }

    /// Adds `bytes` to this input's write; the first packet of a turn is
    /// taken as it is (appending it to the empty write copied it, a whole
    /// 64 KB packet at a time).
    private mutating func write(_ bytes: [UInt8]) {
        if writes.isEmpty { writes = bytes } else { writes += bytes }
    }

    /// This input's outputs, its write first.
    private mutating func take() -> [Output] {
        refreshReadings()
        var taken = outputs
        // Handed over, not emptied in place: emptying storage the caller
        // holds allocated a new buffer at every input.
        outputs = []
        if !writes.isEmpty {
            taken.insert(.write(writes), at: 0)
            writes = []
        }
        return taken
    }
}
