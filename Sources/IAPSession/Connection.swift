import IAPLink
import IAPRoles
import IAPWire

/// The whole iAP2 session above one link, for either end, as a sans-IO
/// state machine: link up → authentication → identification → the media
/// role, over the control and file-transfer sessions.
///
/// Fed link events, the bytes delivered per session, answers from the edge
/// (the authenticator, certificate and signature checks, the app's content)
/// and the time, it answers with bytes to send per session, typed events
/// and requests for the edge; `nextDeadline` says when `tick` is next due.
/// Every runner (real time, virtual time, the in-process pair) drives this
/// one type, so the sequence a demo shows is the sequence the product runs.
///
/// Each role is its own state machine: `PhoneConnection` (the device) and
/// `HeadUnitConnection` (the accessory), sharing `SessionChannels` (the
/// link's sessions, the stage, the outputs and the problem budget); each
/// says at every stage which messages it takes and which it lets out.
public struct Connection: Sendable {
    public struct Configuration: Sendable {
        /// `.device`, the phone: asks for authentication, then
        /// identification, then serves the media app. `.accessory`, the
        /// head unit: authenticates, identifies, then browses. The link's
        /// own role type: one end is one role at every layer.
        public var role: LinkRole
        /// Phone: whether to authenticate the accessory.
        public var authentication: AuthenticationPolicy
        /// How long each step of authentication and identification may take.
        public var stepTimeout: Duration
        /// Head unit: what it identifies as.
        public var identity: AccessoryIdentity

        public init(role: LinkRole, authentication: AuthenticationPolicy = .required, stepTimeout: Duration = .seconds(10),
                    identity: AccessoryIdentity = .devKitHeadUnit) {
            self.role = role
            self.authentication = authentication
            self.stepTimeout = stepTimeout
            self.identity = identity
        }
    }

    /// Where the session stands.
    public enum Stage: Hashable, Sendable, CustomStringConvertible {
        case disconnected
        case authenticating
        case identifying
        /// Identified as the accessory named (on the phone) or accepted (on the head unit).
        case identified(String)
        /// Authentication or identification failed; nothing more happens on this link.
        case failed(String)

        public var description: String {
            switch self {
            case .disconnected: "disconnected"
            case .authenticating: "authenticating"
            case .identifying: "identifying"
            case .identified(let name): "identified as \(name)"
            case .failed(let reason): "failed: \(reason)"
            }
        }
    }

    public enum Event: Hashable, Sendable {
        case stage(Stage)
        /// Phone: the accessory's certificate as the edge read it.
        case accessoryCertificate(String)
        /// Head unit: an event of the media role (tabs, pages, now playing, command status…).
        case media(HeadUnitMediaRole.Event)
        /// Head unit: a file (artwork) arrived over the file-transfer session.
        case fileReceived(transferID: UInt8, bytes: [UInt8])
        /// A message no role consumed (an answer to a diagnostic ping, say).
        case unhandled(ControlMessage)
        /// What happened, in words, for the log.
        case log(String)
        /// Something the peer did wrong, in words; the connection goes on.
        case problem(String)
    }

    public enum Output: Hashable, Sendable {
        /// Bytes to send on a link session, in order.
        case send(session: UInt8, [UInt8])
        case event(Event)
        /// Head unit: ask the authenticator; answer with `authenticatorAnswered`.
        case authenticator(AuthenticatorRequest)
        /// Phone: check a certificate or a signature; answer with `verified`.
        case verify(VerificationRequest)
        /// Phone: the app's content; answer with `complete`.
        case load(token: UInt32, PhoneMediaRole.LoadRequest)
        /// Phone: the head unit went away while playing.
        case pausePlayback
        /// Phone: run the app's handler for this command; answer with `performed`.
        case perform(RemoteCommand, PhoneMediaRole.CommandOrigin)
        /// Phone: read what the app is playing now; answer with
        /// `setNowPlaying`. Asked at the end of every input while a head
        /// unit is connected, so an update follows what a command or a
        /// play did; a load's status waits for the answer, so that the
        /// head unit sees the state a play caused by the time it hears the
        /// play's status.
        case readNowPlaying
    }

    public let configuration: Configuration
    /// The end this connection runs, each a whole state machine of its
    /// own: exactly one is set, by the role. Two optionals rather than an
    /// enum: an optional's value is changed and read where it lies
    /// (`phoneEnd!.received(…)`), where an enum's payload was copied out
    /// and back in, every reference in it retained and released, at every
    /// input.
    private var phoneEnd: PhoneConnection?
    private var headUnitEnd: HeadUnitConnection?

    /// Head unit: how many messages wait for authentication at most; more
    /// are refused with a problem naming them.
    public static let maximumHeldUntilAuthenticated = 16

    /// Phone: answers held for the app's now playing at most; past this
    /// they go out without it.
    public static let maximumAwaitingNowPlaying = 128

    /// How many `.problem` events one link reports one by one. A peer can
    /// repeat a mistake without end (a message flood before identification,
    /// say); after these, problems are only counted: the count is reported
    /// each time it doubles and when the link goes down, so the log grows
    /// with the logarithm of what the peer sends, not with it.
    public static let problemsReportedPerLink = 32

    /// Phone: files on their way at once (each held whole until the head
    /// unit has taken it). A head unit that asks for images and never takes
    /// them cannot make the phone hold more: the oldest is dropped.
    public static let maximumOpenFileTransfers = 16

    /// Phone: playlist contents sent at once; the rest wait their turn (a
    /// head unit takes a few transfers at a time: this project's takes 4).
    public static let maximumOpenPlaylistTransfers = 2
    /// Phone: playlist contents that may wait before the library sync holds
    /// its next message (so transfer ids, which count to 255, never repeat
    /// while one is in use).
    public static let maximumQueuedPlaylistTransfers = 8

    /// A connection for `configuration.role`: the phone's media role is
    /// used by a `.device`, the head unit's by an `.accessory`.
    public init(_ configuration: Configuration, phone: PhoneMediaRole = PhoneMediaRole(appName: "", commands: RemoteCommandCenter(), offersContent: false),
                headUnit: HeadUnitMediaRole = HeadUnitMediaRole(), readsNowPlaying: Bool = false) {
        self.configuration = configuration
        switch configuration.role {
        case .device: phoneEnd = PhoneConnection(configuration, role: phone, readsNowPlaying: readsNowPlaying)
        case .accessory: headUnitEnd = HeadUnitConnection(configuration, role: headUnit)
        }
        refreshReadings()
    }

    // What a driver reads after every input (the stage, the deadline,
    // whether a sync waits to send) is stored, kept current by `update`,
    // not computed by a getter: called from another module, a getter of
    // this struct works on a copy of the whole connection (over 3 KB).

    /// Where the session stands.
    public private(set) var stage = Stage.disconnected

    /// The phone's media role (on a head unit, an idle one that serves nothing).
    public var phone: PhoneMediaRole {
        phoneEnd?.role ?? Self.idlePhone
    }

    /// The head unit's media role (on a phone, an idle one that browses nothing).
    public var headUnit: HeadUnitMediaRole {
        headUnitEnd?.role ?? Self.idleHeadUnit
    }

    private static let idlePhone = PhoneMediaRole(appName: "", commands: RemoteCommandCenter(), offersContent: false)
    private static let idleHeadUnit = HeadUnitMediaRole()

    /// Phone: the accessory as it identified itself.
    public var accessory: AccessoryIdentity? {
        phoneEnd?.accessory
    }

    public var isMediaConnected: Bool {
        if case .identified = stage { return true }
        return false
    }

    /// When `tick` is next due, if ever.
    public private(set) var nextDeadline: LinkInstant?

    /// Changes the end the role runs, in place, then brings what a driver
    /// reads up to date.
    private mutating func update(phone: (inout PhoneConnection) -> [Output],
                                 headUnit: (inout HeadUnitConnection) -> [Output]) -> [Output] {
        defer { refreshReadings() }
        return phoneEnd != nil ? phone(&phoneEnd!) : headUnit(&headUnitEnd!)
    }

    private mutating func refreshReadings() {
        // Read where the end lies (`phoneEnd!.…`): `if let` would copy it.
        if phoneEnd != nil {
            stage = phoneEnd!.channels.stage
            nextDeadline = phoneEnd!.nextDeadline
            wantsToSend = phoneEnd!.wantsToSend
        } else {
            stage = headUnitEnd!.channels.stage
            nextDeadline = headUnitEnd!.nextDeadline
        }
    }

    // MARK: - Link

    public mutating func linkUp(_ link: NegotiatedLink, now: LinkInstant) -> [Output] {
        update(phone: { $0.linkUp(link, now: now) }, headUnit: { $0.linkUp(link, now: now) })
    }

    /// The link went down (or its transport closed): the session ends.
    public mutating func linkDown(now: LinkInstant) -> [Output] {
        update(phone: { $0.linkDown(now: now) }, headUnit: { $0.linkDown() })
    }

    /// Bytes delivered in order on a link session.
    public mutating func received(session: UInt8, _ bytes: [UInt8], now: LinkInstant) -> [Output] {
        update(phone: { $0.received(session: session, bytes, now: now) }, headUnit: { $0.received(session: session, bytes, now: now) })
    }

    public mutating func tick(now: LinkInstant) -> [Output] {
        update(phone: { $0.tick(now: now) }, headUnit: { $0.tick(now: now) })
    }

    // MARK: - Answers from the edge

    /// Phone: the edge's answer to a `.verify` request (a head unit has none to answer).
    public mutating func verified(_ answer: VerificationAnswer, now: LinkInstant) -> [Output] {
        update(phone: { $0.verified(answer, now: now) }, headUnit: { _ in [] })
    }

    /// Head unit: the authenticator's answer to an `.authenticator` request
    /// (a phone has none to answer).
    public mutating func authenticatorAnswered(_ answer: AuthenticatorAnswer, now: LinkInstant) -> [Output] {
        update(phone: { _ in [] }, headUnit: { $0.authenticatorAnswered(answer) })
    }

    /// Phone: the app's answer to a `.load`, to be completed at `at` (the
    /// app's own delay; `now` for at once).
    public mutating func complete(token: UInt32, with result: PhoneMediaRole.LoadResult, at: LinkInstant, now: LinkInstant) -> [Output] {
        update(phone: { $0.complete(token: token, with: result, at: at, now: now) }, headUnit: { _ in [] })
    }

    /// Phone: what the app is playing; an update goes out when it changed meaningfully.
    /// Loads whose time has come answer after it: what a load did to
    /// playback goes out before its status.
    public mutating func setNowPlaying(_ info: NowPlayingInfo, now: LinkInstant) -> [Output] {
        update(phone: { $0.setNowPlaying(info, now: now) }, headUnit: { _ in [] })
    }

    /// Phone: the app's answer to a `.perform`; its status goes out after
    /// the app's now playing is read.
    public mutating func performed(_ command: RemoteCommand, for origin: PhoneMediaRole.CommandOrigin, status: RequestStatus,
                                   now: LinkInstant) -> [Output] {
        update(phone: { $0.performed(command, for: origin, status: status, now: now) }, headUnit: { _ in [] })
    }

    /// Phone: a change to the app's command set or any other action on the role.
    public mutating func phoneDoes(now: LinkInstant, _ action: (inout PhoneMediaRole, LinkInstant) -> [PhoneMediaRole.Output]) -> [Output] {
        update(phone: { $0.does(now: now, action) }, headUnit: { _ in [] })
    }

    /// Head unit: an action on the media role (browse, play, a command, a button).
    public mutating func headUnitDoes(now: LinkInstant, _ action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) -> [Output] {
        update(phone: { _ in [] }, headUnit: { $0.does(now: now, action) })
    }

    /// A message from outside the roles (a diagnostic ping), sent in order.
    public mutating func send(_ message: ControlMessage, now: LinkInstant) -> [Output] {
        update(phone: { $0.sendFromOutside(message, now: now) }, headUnit: { $0.sendFromOutside(message) })
    }

    /// Phone: whether a media library sync has its next message ready for
    /// when the link has room (`sendMore`). The driver asks after each input.
    public private(set) var wantsToSend = false

    /// Phone: the next message of a media library sync, sized for this
    /// link: one link packet's payload (at least 1 KiB, at most a message's
    /// 64 KiB), so a head unit that reads a message per packet is served too.
    public mutating func sendMore(now: LinkInstant) -> [Output] {
        update(phone: { $0.sendMore(now: now) }, headUnit: { _ in [] })
    }

    static func name(_ id: UInt16) -> String {
        MessageCatalog.name(of: id) ?? "message 0x\(String(id, radix: 16, uppercase: true))"
    }
}
