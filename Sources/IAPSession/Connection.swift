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
    /// Phone: whether the edge answers `.readNowPlaying` (the phone serves
    /// an app); without, now playing changes only through `setNowPlaying`.
    private let readsNowPlaying: Bool
    public private(set) var stage = Stage.disconnected
    public private(set) var phone: PhoneMediaRole
    public private(set) var headUnit: HeadUnitMediaRole
    /// Phone: the accessory as it identified itself.
    public private(set) var accessory: AccessoryIdentity?

    private var link: NegotiatedLink?
    private var controlSession: UInt8?
    private var fileSession: UInt8?
    private var channel = ControlChannel()
    private var deviceAuthentication: DeviceAuthentication
    private var accessoryAuthentication = AccessoryAuthentication()
    private var phoneIdentification = PhoneIdentificationRole()
    private var headIdentification: HeadUnitIdentificationRole
    private var identificationDeadline: LinkInstant?
    /// Head unit: when it reports that the device has not started anything.
    private var stallDeadline: LinkInstant?
    private var fileSenders: [UInt8: FileTransferSender] = [:]
    /// The transfers in `fileSenders`, oldest first.
    private var fileSenderOrder: [UInt8] = []
    private var fileReceiver = FileTransferReceiver()
    /// Phone: playlist contents waiting for one of the transfers open for
    /// them to finish, oldest first.
    private var queuedFiles: [(id: UInt8, bytes: [UInt8], type: UInt16)] = []
    /// Phone: loads the app answered, to complete at their time.
    private var completions: [(at: LinkInstant, token: UInt32, result: PhoneMediaRole.LoadResult)] = []
    /// Phone: answers waiting for the app's now playing (`.readNowPlaying`)
    /// before they go out, oldest first: loads whose time has come and
    /// commands the app ran. The head unit sees the state a play or a
    /// command caused by the time it hears its status.
    private var awaitingNowPlaying: [AwaitingNowPlaying] = []

    private enum AwaitingNowPlaying {
        case load(token: UInt32, result: PhoneMediaRole.LoadResult)
        case command(RemoteCommand, PhoneMediaRole.CommandOrigin, RequestStatus)
    }
    private var problemsOnLink = 0
    private var outputs: [Output] = []
    /// Head unit: whether it may send more than authentication messages on
    /// this link: the device sent AuthenticationSucceeded, or skipped
    /// authentication by starting identification.
    private var clearedToSend = false
    /// Head unit: messages asked for before it was cleared to send, oldest
    /// first; sent once it is, dropped if the link ends or authentication fails.
    private var heldUntilAuthenticated: [ControlMessage] = []

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

    public init(_ configuration: Configuration, phone: PhoneMediaRole = PhoneMediaRole(appName: "", commands: RemoteCommandCenter(), offersContent: false),
                headUnit: HeadUnitMediaRole = HeadUnitMediaRole(), readsNowPlaying: Bool = false) {
        self.configuration = configuration
        self.readsNowPlaying = readsNowPlaying
        self.phone = phone
        self.headUnit = headUnit
        deviceAuthentication = DeviceAuthentication(stepTimeout: configuration.stepTimeout)
        headIdentification = HeadUnitIdentificationRole(identity: configuration.identity)
    }

    public var isMediaConnected: Bool {
        if case .identified = stage { return true }
        return false
    }

    /// When `tick` is next due, if ever.
    public var nextDeadline: LinkInstant? {
        let candidates: [LinkInstant?] = [
            channel.deadline, deviceAuthentication.deadline, identificationDeadline, stallDeadline, completions.map(\.at).min(),
            isMediaConnected ? phone.nextDeadline : nil, isMediaConnected ? headUnit.nextDeadline : nil,
        ]
        return candidates.compactMap { $0 }.min()
    }

    // MARK: - Link

    public mutating func linkUp(_ link: NegotiatedLink, now: LinkInstant) -> [Output] {
        if self.link != nil { endLink(now: now) }
        problemsOnLink = 0
        self.link = link
        clearedToSend = false
        heldUntilAuthenticated = []
        controlSession = link.sessions.first { $0.type == .control }?.id
        fileSession = link.sessions.first { $0.type == .fileTransfer }?.id
        channel.reset()
        fileSenders = [:]
        fileSenderOrder = []
        queuedFiles = []
        fileReceiver = FileTransferReceiver()
        switch configuration.role {
        case .device:
            switch configuration.authentication {
            case .required:
                setStage(.authenticating)
                perform(deviceAuthentication.start(now: now), now: now)
            case .off:
                log("authentication is off (--auth off): identifying the accessory without it")
                startIdentification(now: now)
            }
        case .accessory:
            setStage(.authenticating)
            stallDeadline = now + configuration.stepTimeout
        }
        return take(now)
    }

    /// The link went down (or its transport closed): the session ends.
    public mutating func linkDown(now: LinkInstant) -> [Output] {
        endLink(now: now)
        return take(now)
    }

    private mutating func endLink(now: LinkInstant) {
        guard link != nil else { return }
        if problemsOnLink > Self.problemsReportedPerLink {
            outputs.append(.event(.problem("\(problemsOnLink) problems on this link, the last \(problemsOnLink - Self.problemsReportedPerLink) of them not reported one by one")))
        }
        problemsOnLink = 0
        dropHeld(because: "the link ended before authentication succeeded")
        clearedToSend = false
        link = nil
        controlSession = nil
        fileSession = nil
        channel.reset()
        deviceAuthentication.reset()
        accessoryAuthentication.reset()
        identificationDeadline = nil
        stallDeadline = nil
        completions.removeAll()
        awaitingNowPlaying.removeAll()
        queuedFiles = []
        switch configuration.role {
        case .device:
            for output in phoneIdentification.linkDown() { roleOutput(output) }
            accessory = nil
            if phone.isConnected { phoneOutputs(phone.disconnect(now: now)) }
        case .accessory:
            headIdentification.linkDown()
            headUnit.disconnect()
        }
        setStage(.disconnected)
    }

    /// Bytes delivered in order on a link session.
    public mutating func received(session: UInt8, _ bytes: [UInt8], now: LinkInstant) -> [Output] {
        if session == controlSession {
            controlInputs(channel.receive(bytes, now: now), now: now)
        } else if session == fileSession {
            fileDatagram(bytes, now: now)
        } else {
            emit(.problem("\(bytes.count) bytes on session \(session), which carries nothing this end uses"))
        }
        return take(now)
    }

    public mutating func tick(now: LinkInstant) -> [Output] {
        controlInputs(channel.expire(now: now), now: now)
        perform(deviceAuthentication.tick(now: now), now: now)
        if let deadline = identificationDeadline, now >= deadline {
            identificationDeadline = nil
            fail("no IdentificationInformation within \(configuration.stepTimeout) of StartIdentification")
        }
        if let deadline = stallDeadline, now >= deadline {
            stallDeadline = nil
            emit(.problem("the device has not started authentication or identification \(configuration.stepTimeout) after link up; still waiting"))
        }
        for completion in completions where completion.at <= now { awaitingNowPlaying.append(.load(token: completion.token, result: completion.result)) }
        completions.removeAll { $0.at <= now }
        if isMediaConnected {
            switch configuration.role {
            case .device: phoneOutputs(phone.tick(now: now))
            case .accessory: headUnitOutputs(headUnit.tick(now: now), now: now)
            }
        }
        return take(now)
    }

    // MARK: - Answers from the edge

    /// Phone: the edge's answer to a `.verify` request.
    public mutating func verified(_ answer: VerificationAnswer, now: LinkInstant) -> [Output] {
        perform(deviceAuthentication.verified(answer, now: now), now: now)
        return take(now)
    }

    /// Head unit: the authenticator's answer to an `.authenticator` request.
    public mutating func authenticatorAnswered(_ answer: AuthenticatorAnswer, now: LinkInstant) -> [Output] {
        accessoryOutputs(accessoryAuthentication.answered(answer))
        return take(now)
    }

    /// Phone: the app's answer to a `.load`, to be completed at `at` (the
    /// app's own delay; `now` for at once).
    public mutating func complete(token: UInt32, with result: PhoneMediaRole.LoadResult, at: LinkInstant, now: LinkInstant) -> [Output] {
        if at <= now {
            awaitingNowPlaying.append(.load(token: token, result: result))
        } else {
            completions.append((at, token, result))
        }
        return take(now)
    }

    /// Phone: what the app is playing; an update goes out when it changed meaningfully.
    /// Loads whose time has come answer after it: what a load did to
    /// playback goes out before its status.
    public mutating func setNowPlaying(_ info: NowPlayingInfo, now: LinkInstant) -> [Output] {
        if phone.isConnected { publishNowPlaying(info, now: now) }
        answerAwaiting(now: now)
        return take(now, readingNowPlaying: false)
    }

    /// Phone: the app's answer to a `.perform`; its status goes out after
    /// the app's now playing is read.
    public mutating func performed(_ command: RemoteCommand, for origin: PhoneMediaRole.CommandOrigin, status: RequestStatus,
                                   now: LinkInstant) -> [Output] {
        // An edge that never answers `.readNowPlaying` cannot make these
        // grow without end (loads are bounded by the role's pending requests).
        if awaitingNowPlaying.count >= Self.maximumAwaitingNowPlaying { answerAwaiting(now: now) }
        awaitingNowPlaying.append(.command(command, origin, status))
        return take(now)
    }

    private mutating func answerAwaiting(now: LinkInstant) {
        let awaiting = awaitingNowPlaying
        awaitingNowPlaying.removeAll()
        for answer in awaiting {
            switch answer {
            case .load(let token, let result): phoneOutputs(phone.complete(token: token, with: result, now: now))
            case .command(let command, let origin, let status): phoneOutputs(phone.performed(command, for: origin, status: status, now: now))
            }
        }
    }

    /// Phone: a change to the app's command set or any other action on the role.
    public mutating func phoneDoes(now: LinkInstant, _ action: (inout PhoneMediaRole, LinkInstant) -> [PhoneMediaRole.Output]) -> [Output] {
        phoneOutputs(action(&phone, now))
        return take(now)
    }

    /// Head unit: an action on the media role (browse, play, a command, a button).
    public mutating func headUnitDoes(now: LinkInstant, _ action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) -> [Output] {
        guard isMediaConnected else {
            emit(.problem("not identified yet: the head unit cannot browse or send commands"))
            return take(now)
        }
        headUnitOutputs(action(&headUnit, now), now: now)
        return take(now)
    }

    /// A message from outside the roles (a diagnostic ping), sent in order.
    public mutating func send(_ message: ControlMessage, now: LinkInstant) -> [Output] {
        sendMessage(message)
        return take(now)
    }

    /// Phone: whether a media library sync has its next message ready for
    /// when the link has room (`sendMore`). The driver asks after each input.
    public var wantsToSend: Bool {
        configuration.role == .device && controlSession != nil && phone.hasLibraryMessage
            && queuedFiles.count < Self.maximumQueuedPlaylistTransfers
    }

    /// Phone: the next message of a media library sync, sized for this
    /// link: one link packet's payload (at least 1 KiB, at most a message's
    /// 64 KiB), so a head unit that reads a message per packet is served too.
    public mutating func sendMore(now: LinkInstant) -> [Output] {
        guard wantsToSend, let link else { return take(now) }
        let budget = min(ControlMessage.maximumLength, max(1024, link.maximumPayload))
        phoneOutputs(phone.nextLibraryMessage(budget: budget))
        return take(now)
    }

    // MARK: - Messages

    /// What the control channel made of the bytes: ping answers go back at
    /// once; a message that never completes is reported and dropped.
    private mutating func controlInputs(_ output: ControlChannel.Output, now: LinkInstant) {
        for reply in output.replies { sendMessage(reply) }
        for input in output.inputs {
            switch input {
            case .problem(let problem): emit(.problem("control session: \(problem)"))
            case .message(let message): received(message, now: now)
            }
        }
    }

    private mutating func received(_ message: ControlMessage, now: LinkInstant) {
        // Answers to this end's diagnostic pings, at any stage.
        if DiagnosticPing.requestIDs.contains(message.id) {
            emit(.unhandled(message))
            return
        }
        let name = Self.name(message.id)
        switch configuration.role {
        case .device:
            if MessageID.authentication.contains(message.id) {
                guard deviceAuthentication.isActive else {
                    emit(.problem("the accessory sent \(name) outside authentication; ignored"))
                    return
                }
                perform(deviceAuthentication.received(message, now: now), now: now)
                return
            }
            if case .authenticating = stage {
                emit(.problem("the accessory sent \(name) before authentication finished; ignored"))
                return
            }
            if case .failed = stage {
                emit(.problem("the accessory sent \(name) after the session failed; ignored"))
                return
            }
            if !MessageID.identification.contains(message.id), !phone.isConnected {
                emit(.problem("the accessory sent \(name) before identification finished; ignored"))
                return
            }
            if MessageID.identification.contains(message.id) {
                // A rejected identification may be corrected: each attempt gets a full step.
                if message.id == MessageID.identificationInformation, case .identifying = stage {
                    identificationDeadline = now + configuration.stepTimeout
                }
                for output in phoneIdentification.received(message) { roleOutput(output) }
                if case .identified(let identity) = phoneIdentification.state, !phone.isConnected {
                    identificationDeadline = nil
                    accessory = identity
                    setStage(.identified(identity.name))
                    phoneOutputs(phone.connect(now: now))
                }
                return
            }
            guard let accessory, accessory.messagesSent.contains(message.id) else {
                emit(.problem("the accessory sent \(name), which it did not declare in MessagesSentByAccessory; ignored"))
                return
            }
            guard let typed = typed(message) else { return }
            phoneOutputs(phone.receive(typed, now: now))
        case .accessory:
            if MessageID.authentication.contains(message.id) {
                stallDeadline = nil
                accessoryOutputs(accessoryAuthentication.received(message))
                return
            }
            if MessageID.identification.contains(message.id) {
                stallDeadline = nil
                // A device that starts identification has skipped (or finished) authentication.
                if message.id == MessageID.startIdentification { clearToSend() }
                if message.id == MessageID.startIdentification { setStage(.identifying) }
                for output in headIdentification.received(message) { roleOutput(output) }
                if message.id == MessageID.identificationAccepted {
                    setStage(.identified(configuration.identity.name))
                    headUnitOutputs(headUnit.connect(now: now), now: now)
                }
                return
            }
            guard isMediaConnected else {
                emit(.problem("the device sent \(name) before identification was accepted; ignored"))
                return
            }
            guard headIdentification.identity.messagesReceived.contains(message.id) else {
                emit(.problem("the device sent \(name), which this head unit did not declare in MessagesReceivedByAccessory; ignored"))
                return
            }
            guard let typed = typed(message) else { return }
            headUnitOutputs(headUnit.receive(typed, now: now), now: now)
        }
    }

    private mutating func typed(_ message: ControlMessage) -> MediaMessage? {
        do {
            guard let typed = try MediaMessage(message) else {
                emit(.unhandled(message))
                return nil
            }
            return typed
        } catch {
            emit(.problem("malformed \(Self.name(message.id)): \(error.detail)"))
            // The phone still answers a request it could not read.
            if configuration.role == .device { phoneOutputs(phone.receiveMalformed(message, error)) }
            return nil
        }
    }

    private mutating func startIdentification(now: LinkInstant) {
        setStage(.identifying)
        identificationDeadline = now + configuration.stepTimeout
        for output in phoneIdentification.linkUp() { roleOutput(output) }
    }

    /// Sends a message after the declared lists allow it: what the phone
    /// sends must be in the accessory's MessagesReceivedByAccessory, what the
    /// head unit sends in its own MessagesSentByAccessory.
    ///
    /// The head unit sends nothing but authentication messages until it is
    /// cleared to (AuthenticationSucceeded, or the device starting
    /// identification without it): a device ignores anything else before,
    /// so what comes earlier waits, in order, and goes out then.
    private mutating func sendMessage(_ message: ControlMessage) {
        if configuration.role == .accessory, !clearedToSend, !MessageID.authentication.contains(message.id) {
            guard controlSession != nil else {
                emit(.problem("cannot send \(Self.name(message.id)): the link is not up"))
                return
            }
            guard heldUntilAuthenticated.count < Self.maximumHeldUntilAuthenticated else {
                emit(.problem("not sending \(Self.name(message.id)): authentication has not succeeded yet and \(Self.maximumHeldUntilAuthenticated) messages already wait for it"))
                return
            }
            heldUntilAuthenticated.append(message)
            return
        }
        let always = MessageID.authentication.contains(message.id) || MessageID.identification.contains(message.id)
            || DiagnosticPing.requestIDs.contains(message.id)
        if !always {
            switch configuration.role {
            case .device:
                guard let accessory, accessory.messagesReceived.contains(message.id) else {
                    emit(.problem("not sending \(Self.name(message.id)): the accessory did not declare it in MessagesReceivedByAccessory"))
                    return
                }
            case .accessory:
                guard headIdentification.identity.messagesSent.contains(message.id) else {
                    emit(.problem("not sending \(Self.name(message.id)): this head unit did not declare it in MessagesSentByAccessory"))
                    return
                }
            }
        }
        guard let session = controlSession else {
            emit(.problem("cannot send \(Self.name(message.id)): the link is not up"))
            return
        }
        do {
            outputs.append(.send(session: session, try message.encoded()))
        } catch {
            emit(.problem("cannot send \(Self.name(message.id)): \(error.detail)"))
        }
    }

    /// Head unit: from now on it may send anything; what waited goes out, in order.
    private mutating func clearToSend() {
        guard !clearedToSend else { return }
        clearedToSend = true
        let held = heldUntilAuthenticated
        heldUntilAuthenticated = []
        for message in held { sendMessage(message) }
    }

    /// Head unit: what waited for authentication is not sent.
    private mutating func dropHeld(because reason: String) {
        guard !heldUntilAuthenticated.isEmpty else { return }
        let names = heldUntilAuthenticated.map { Self.name($0.id) }.joined(separator: ", ")
        heldUntilAuthenticated = []
        emit(.problem("not sent, \(reason): \(names)"))
    }

    // MARK: - Role outputs

    private mutating func perform(_ authentication: [DeviceAuthentication.Output], now: LinkInstant) {
        for output in authentication {
            switch output {
            case .send(let message): sendMessage(message)
            case .verify(let request): outputs.append(.verify(request))
            case .certificate(let summary):
                emit(.accessoryCertificate(summary))
                log("accessory certificate: \(summary)")
            case .succeeded(let reading):
                log("authentication succeeded" + (reading.map { " (the response holds for \($0))" } ?? ""))
                startIdentification(now: now)
            case .failed(let reason):
                log("authentication failed: \(reason); no identification")
                setStage(.failed("authentication failed: \(reason)"))
            }
        }
    }

    private mutating func accessoryOutputs(_ authentication: [AccessoryAuthentication.Output]) {
        for output in authentication {
            switch output {
            case .send(let message): sendMessage(message)
            case .authenticator(let request): outputs.append(.authenticator(request))
            case .succeeded:
                log("authentication succeeded")
                clearToSend()
            case .failed(let reason):
                log("authentication failed: \(reason)")
                dropHeld(because: "authentication failed")
                setStage(.failed("authentication failed: \(reason)"))
            case .problem(let problem): emit(.problem(problem))
            }
        }
    }

    private mutating func roleOutput(_ output: RoleOutput) {
        switch output {
        case .send(let message): sendMessage(message)
        case .log(let line): log(line)
        }
    }

    private mutating func phoneOutputs(_ phoneOutputs: [PhoneMediaRole.Output]) {
        for output in phoneOutputs {
            switch output {
            case .send(let message): sendMessage(message.controlMessage)
            case .sendMessage(let message): sendMessage(message)
            case .load(let token, let request): outputs.append(.load(token: token, request))
            case .perform(let command, let origin): outputs.append(.perform(command, origin))
            case .transferFile(let id, let bytes, let type): startTransfer(id, bytes, type: type)
            case .pausePlayback: outputs.append(.pausePlayback)
            case .connected(let number): log("media connection \(number) open")
            case .disconnected(let number): log("media connection \(number) closed")
            case .log(let line): log(line)
            }
        }
    }

    private mutating func headUnitOutputs(_ roleOutputs: [HeadUnitMediaRole.Output], now: LinkInstant) {
        for output in roleOutputs {
            switch output {
            case .send(let message): sendMessage(message.controlMessage)
            case .event(let event):
                emit(.media(event))
                // Browsing starts from the root as soon as the phone says it has
                // a tree, if the phone sent its command set first; a head unit
                // never asks for a tree offered before the commands.
                if case .appInformation(_, true) = event {
                    if headUnit.hasCommandSet {
                        headUnitOutputs(headUnit.openRoot(now: now), now: now)
                    } else {
                        emit(.problem("the phone offered its content tree before its command set: a head unit does not browse it (send AdvertisedCommands first)"))
                    }
                }
            }
        }
    }

    // MARK: - File transfer (artwork, playlist contents)

    private mutating func startTransfer(_ id: UInt8, _ bytes: [UInt8], type: UInt16) {
        guard let session = fileSession, let link else {
            emit(.problem("file transfer \(id) not started: the link has no file-transfer session"))
            return
        }
        if type == FileTransferFileType.playlistContents,
           fileSenders.values.filter({ $0.fileType == FileTransferFileType.playlistContents }).count >= Self.maximumOpenPlaylistTransfers {
            queuedFiles.append((id, bytes, type))
            return
        }
        do {
            var sender = try FileTransferSender(transferID: id, file: bytes, fileType: type,
                                                maximumDataPerDatagram: link.maximumPayload - FileTransferSender.datagramHeaderSize)
            let setup = try sender.start()
            fileSenders[id] = sender
            fileSenderOrder.removeAll { $0 == id }
            fileSenderOrder.append(id)
            if fileSenderOrder.count > Self.maximumOpenFileTransfers {
                let oldest = fileSenderOrder.removeFirst()
                fileSenders[oldest] = nil
                emit(.problem("file transfer \(oldest) dropped: the head unit has not taken the last \(Self.maximumOpenFileTransfers) files sent"))
            }
            outputs.append(.send(session: session, setup.encoded()))
        } catch {
            emit(.problem("file transfer \(id) failed to start: \(error)"))
        }
    }

    private mutating func fileDatagram(_ bytes: [UInt8], now: LinkInstant) {
        guard let session = fileSession else { return }
        do {
            let datagram = try FileTransferDatagram(decoding: bytes)
            if configuration.role == .device {
                guard var sender = fileSenders[datagram.transferID] else {
                    emit(.problem("file-transfer datagram for unknown transfer \(datagram.transferID)"))
                    return
                }
                let output = try sender.handle(.received(datagram))
                fileSenders[datagram.transferID] = sender
                for outgoing in output.datagrams { outputs.append(.send(session: session, outgoing.encoded())) }
                switch output.state {
                case .finished, .cancelled:
                    fileSenders[datagram.transferID] = nil
                    fileSenderOrder.removeAll { $0 == datagram.transferID }
                    startQueuedTransfer()
                default: break
                }
            } else {
                for output in try fileReceiver.receive(datagram) {
                    switch output {
                    case .send(let answer): outputs.append(.send(session: session, answer.encoded()))
                    case .completed(let id, let file, _):
                        log("file transfer \(id): \(file.count) bytes received")
                        if headUnit.isLibraryTransfer(id) {
                            headUnitOutputs(headUnit.libraryContentsReceived(transferID: id, bytes: file), now: now)
                        } else {
                            headUnit.keepUnclaimedFile(transferID: id, bytes: file)
                            emit(.fileReceived(transferID: id, bytes: file))
                        }
                    case .cancelled(let id, let reason):
                        log("file transfer \(id) cancelled: \(reason)")
                        headUnitOutputs(headUnit.libraryContentsFailed(transferID: id, reason: "\(reason)"), now: now)
                    case .paused(let id): log("file transfer \(id) paused")
                    }
                }
            }
        } catch {
            emit(.problem("file-transfer session: \(error)"))
        }
    }

    /// Phone: the oldest waiting playlist contents go out once a transfer has ended.
    private mutating func startQueuedTransfer() {
        guard !queuedFiles.isEmpty else { return }
        let next = queuedFiles.removeFirst()
        startTransfer(next.id, next.bytes, type: next.type)
    }

    // MARK: - Helpers

    private mutating func setStage(_ stage: Stage) {
        guard self.stage != stage else { return }
        self.stage = stage
        emit(.stage(stage))
    }

    private mutating func fail(_ reason: String) {
        log(reason)
        setStage(.failed(reason))
    }

    private mutating func emit(_ event: Event) {
        if case .problem = event {
            problemsOnLink += 1
            if problemsOnLink > Self.problemsReportedPerLink {
                // Powers of two past the budget: 64, 128, 256…
                guard problemsOnLink & (problemsOnLink - 1) == 0 else { return }
                outputs.append(.event(.problem("\(problemsOnLink) problems on this link so far; past the first \(Self.problemsReportedPerLink) they are counted, not reported one by one")))
                return
            }
        }
        outputs.append(.event(event))
    }
    private mutating func log(_ line: String) { emit(.log(line)) }

    /// The outputs of one input, ending with a request for the app's now
    /// playing while a head unit is connected. Without one to read (no
    /// app, or no head unit), loads whose time has come answer at once.
    private mutating func take(_ now: LinkInstant, readingNowPlaying: Bool = true) -> [Output] {
        if readingNowPlaying {
            if readsNowPlaying && phone.isConnected {
                outputs.append(.readNowPlaying)
            } else if !awaitingNowPlaying.isEmpty {
                answerAwaiting(now: now)
            }
        }
        defer { outputs.removeAll(keepingCapacity: true) }
        return outputs
    }

    /// Artwork travels over the file-transfer session: on a link without
    /// one, the app's artwork is not offered.
    private mutating func publishNowPlaying(_ info: NowPlayingInfo, now: LinkInstant) {
        var info = info
        if fileSession == nil { info.artworkImageID = nil }
        phoneOutputs(phone.setNowPlaying(info, now: now))
    }

    static func name(_ id: UInt16) -> String {
        MessageCatalog.name(of: id) ?? "message 0x\(String(id, radix: 16, uppercase: true))"
    }
}
