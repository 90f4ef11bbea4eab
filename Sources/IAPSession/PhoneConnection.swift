import IAPLink
import IAPRoles
import IAPWire

/// The phone's end of a `Connection` (the link's device): it asks the
/// accessory to authenticate, identifies it, then serves the app's media
/// over the control session and files (artwork, playlist contents) over
/// the file-transfer session.
struct PhoneConnection: SessionEnd, Sendable {
    /// What the phone does with a message from the accessory.
    private enum Route {
        case authentication, identification, media
        case refused(String)
    }

    private enum AwaitingNowPlaying {
        case load(token: UInt32, result: PhoneMediaRole.LoadResult)
        case command(RemoteCommand, PhoneMediaRole.CommandOrigin, RequestStatus)
    }

    let configuration: Connection.Configuration
    /// Whether the edge answers `.readNowPlaying` (the phone serves an
    /// app); without, now playing changes only through `setNowPlaying`.
    private let readsNowPlaying: Bool
    var channels = SessionChannels()
    private(set) var role: PhoneMediaRole
    /// The accessory as it identified itself.
    private(set) var accessory: AccessoryIdentity?
    private var authentication: DeviceAuthentication
    private var identification = PhoneIdentificationRole()
    private var identificationDeadline: LinkInstant?
    private var fileSenders: [UInt8: FileTransferSender] = [:]
    /// The transfers in `fileSenders`, oldest first.
    private var fileSenderOrder: [UInt8] = []
    /// Playlist contents waiting for one of the transfers open for them to
    /// finish, oldest first.
    private var queuedFiles: [(id: UInt8, bytes: [UInt8], type: UInt16)] = []
    /// Loads the app answered, to complete at their time.
    private var completions: [(at: LinkInstant, token: UInt32, result: PhoneMediaRole.LoadResult)] = []
    /// Answers waiting for the app's now playing (`.readNowPlaying`)
    /// before they go out, oldest first: loads whose time has come and
    /// commands the app ran. The head unit sees the state a play or a
    /// command caused by the time it hears its status.
    private var awaitingNowPlaying: [AwaitingNowPlaying] = []

    init(_ configuration: Connection.Configuration, role: PhoneMediaRole, readsNowPlaying: Bool) {
        self.configuration = configuration
        self.role = role
        self.readsNowPlaying = readsNowPlaying
        authentication = DeviceAuthentication(stepTimeout: configuration.stepTimeout)
    }

    var nextDeadline: LinkInstant? {
        var next = earliest(channels.control.deadline, authentication.deadline)
        next = earliest(next, identificationDeadline)
        next = earliest(next, completions.lazy.map(\.at).min())
        return channels.isMediaConnected ? earliest(next, role.nextDeadline) : next
    }

    /// Whether a media library sync has its next message ready for when
    /// the link has room.
    var wantsToSend: Bool {
        channels.controlSession != nil && role.hasLibraryMessage && queuedFiles.count < Connection.maximumQueuedPlaylistTransfers
    }

    // MARK: - Link

    mutating func linkUp(_ link: NegotiatedLink, now: LinkInstant) -> [Connection.Output] {
        endLink(now: now)
        channels.up(link)
        fileSenders = [:]
        fileSenderOrder = []
        queuedFiles = []
        switch configuration.authentication {
        case .required:
            channels.setStage(.authenticating)
            perform(authentication.start(now: now), now: now)
        case .off:
            channels.log("authentication is off (--auth off): identifying the accessory without it")
            startIdentification(now: now)
        }
        return take(now)
    }

    mutating func linkDown(now: LinkInstant) -> [Connection.Output] {
        endLink(now: now)
        return take(now)
    }

    private mutating func endLink(now: LinkInstant) {
        guard channels.down() else { return }
        authentication.reset()
        identificationDeadline = nil
        completions.removeAll()
        awaitingNowPlaying.removeAll()
        queuedFiles = []
        for output in identification.linkDown() { roleOutput(output) }
        accessory = nil
        if role.isConnected { mediaOutputs(role.disconnect(now: now)) }
        channels.setStage(.disconnected)
    }

    mutating func received(session: UInt8, _ bytes: [UInt8], now: LinkInstant) -> [Connection.Output] {
        deliver(session: session, bytes, now: now)
        return take(now)
    }

    mutating func tick(now: LinkInstant) -> [Connection.Output] {
        controlInputs(channels.control.expire(now: now), now: now)
        perform(authentication.tick(now: now), now: now)
        if let deadline = identificationDeadline, now >= deadline {
            identificationDeadline = nil
            channels.fail("no IdentificationInformation within \(configuration.stepTimeout) of StartIdentification")
        }
        for completion in completions where completion.at <= now { awaitingNowPlaying.append(.load(token: completion.token, result: completion.result)) }
        completions.removeAll { $0.at <= now }
        if channels.isMediaConnected { mediaOutputs(role.tick(now: now)) }
        return take(now)
    }

    // MARK: - Answers from the edge

    mutating func verified(_ answer: VerificationAnswer, now: LinkInstant) -> [Connection.Output] {
        perform(authentication.verified(answer, now: now), now: now)
        return take(now)
    }

    mutating func complete(token: UInt32, with result: PhoneMediaRole.LoadResult, at: LinkInstant, now: LinkInstant) -> [Connection.Output] {
        if at <= now {
            awaitingNowPlaying.append(.load(token: token, result: result))
        } else {
            completions.append((at, token, result))
        }
        return take(now)
    }

    mutating func setNowPlaying(_ info: NowPlayingInfo, now: LinkInstant) -> [Connection.Output] {
        if role.isConnected {
            // Artwork travels over the file-transfer session: on a link
            // without one, the app's artwork is not offered.
            var info = info
            if channels.fileSession == nil { info.artworkImageID = nil }
            mediaOutputs(role.setNowPlaying(info, now: now))
        }
        answerAwaiting(now: now)
        return take(now, readingNowPlaying: false)
    }

    mutating func performed(_ command: RemoteCommand, for origin: PhoneMediaRole.CommandOrigin, status: RequestStatus,
                            now: LinkInstant) -> [Connection.Output] {
        // An edge that never answers `.readNowPlaying` cannot make these
        // grow without end (loads are bounded by the role's pending requests).
        if awaitingNowPlaying.count >= Connection.maximumAwaitingNowPlaying { answerAwaiting(now: now) }
        awaitingNowPlaying.append(.command(command, origin, status))
        return take(now)
    }

    mutating func does(now: LinkInstant, _ action: (inout PhoneMediaRole, LinkInstant) -> [PhoneMediaRole.Output]) -> [Connection.Output] {
        mediaOutputs(action(&role, now))
        return take(now)
    }

    mutating func sendMore(now: LinkInstant) -> [Connection.Output] {
        guard wantsToSend, let link = channels.link else { return take(now) }
        let budget = min(ControlMessage.maximumLength, max(1024, link.maximumPayload))
        mediaOutputs(role.nextLibraryMessage(budget: budget))
        return take(now)
    }

    mutating func sendFromOutside(_ message: ControlMessage, now: LinkInstant) -> [Connection.Output] {
        send(message)
        return take(now)
    }

    private mutating func answerAwaiting(now: LinkInstant) {
        let awaiting = awaitingNowPlaying
        awaitingNowPlaying.removeAll()
        for answer in awaiting {
            switch answer {
            case .load(let token, let result): mediaOutputs(role.complete(token: token, with: result, now: now))
            case .command(let command, let origin, let status): mediaOutputs(role.performed(command, for: origin, status: status, now: now))
            }
        }
    }

    // MARK: - Messages

    /// Where the session stands says which messages the phone takes:
    /// authentication messages only while it authenticates, nothing else
    /// until that is over, identification messages from then on, and the
    /// media messages the accessory declared once it is identified.
    private func route(_ id: UInt16) -> Route {
        if MessageID.authentication.contains(id) {
            return authentication.isActive ? .authentication : .refused("the accessory sent \(Connection.name(id)) outside authentication; ignored")
        }
        switch channels.stage {
        case .authenticating:
            return .refused("the accessory sent \(Connection.name(id)) before authentication finished; ignored")
        case .failed:
            return .refused("the accessory sent \(Connection.name(id)) after the session failed; ignored")
        case .disconnected, .identifying, .identified:
            if MessageID.identification.contains(id) { return .identification }
            guard role.isConnected else {
                return .refused("the accessory sent \(Connection.name(id)) before identification finished; ignored")
            }
            guard let accessory, accessory.messagesSent.contains(id) else {
                return .refused("the accessory sent \(Connection.name(id)), which it did not declare in MessagesSentByAccessory; ignored")
            }
            return .media
        }
    }

    mutating func handle(_ message: ControlMessage, now: LinkInstant) {
        switch route(message.id) {
        case .refused(let reason): channels.emit(.problem(reason))
        case .authentication: perform(authentication.received(message, now: now), now: now)
        case .identification: identify(message, now: now)
        case .media:
            do {
                guard let typed = try channels.typed(message) else { return }
                mediaOutputs(role.receive(typed, now: now))
            } catch {
                channels.emit(.problem("malformed \(Connection.name(message.id)): \(error.detail)"))
                // The phone still answers a request it could not read.
                mediaOutputs(role.receiveMalformed(message, error))
            }
        }
    }

    private mutating func identify(_ message: ControlMessage, now: LinkInstant) {
        // A rejected identification may be corrected: each attempt gets a full step.
        if message.id == MessageID.identificationInformation, case .identifying = channels.stage {
            identificationDeadline = now + configuration.stepTimeout
        }
        for output in identification.received(message) { roleOutput(output) }
        if case .identified(let identity) = identification.state, !role.isConnected {
            identificationDeadline = nil
            accessory = identity
            channels.setStage(.identified(identity.name))
            mediaOutputs(role.connect(now: now))
        }
    }

    private mutating func startIdentification(now: LinkInstant) {
        channels.setStage(.identifying)
        identificationDeadline = now + configuration.stepTimeout
        for output in identification.linkUp() { roleOutput(output) }
    }

    /// What the phone sends must be in the accessory's MessagesReceivedByAccessory.
    mutating func send(_ message: ControlMessage) {
        if !SessionChannels.isAlwaysSendable(message.id) {
            guard let accessory, accessory.messagesReceived.contains(message.id) else {
                channels.emit(.problem("not sending \(Connection.name(message.id)): the accessory did not declare it in MessagesReceivedByAccessory"))
                return
            }
        }
        channels.sendOnControl(message)
    }

    // MARK: - Outputs of the parts

    private mutating func perform(_ outputs: [DeviceAuthentication.Output], now: LinkInstant) {
        for output in outputs {
            switch output {
            case .send(let message): send(message)
            case .verify(let request): channels.append(.verify(request))
            case .certificate(let summary):
                channels.emit(.accessoryCertificate(summary))
                channels.log("accessory certificate: \(summary)")
            case .succeeded(let reading):
                channels.log("authentication succeeded" + (reading.map { " (the response holds for \($0))" } ?? ""))
                startIdentification(now: now)
            case .failed(let reason):
                channels.log("authentication failed: \(reason); no identification")
                channels.setStage(.failed("authentication failed: \(reason)"))
            }
        }
    }

    private mutating func mediaOutputs(_ outputs: [PhoneMediaRole.Output]) {
        for output in outputs {
            switch output {
            case .send(let message): send(message.controlMessage)
            case .sendMessage(let message): send(message)
            case .load(let token, let request): channels.append(.load(token: token, request))
            case .perform(let command, let origin): channels.append(.perform(command, origin))
            case .transferFile(let id, let bytes, let type): startTransfer(id, bytes, type: type)
            case .pausePlayback: channels.append(.pausePlayback)
            case .connected(let number): channels.log("media connection \(number) open")
            case .disconnected(let number): channels.log("media connection \(number) closed")
            case .log(let line): channels.log(line)
            }
        }
    }

    /// The outputs of one input, ending with a request for the app's now
    /// playing while a head unit is connected. Without one to read (no
    /// app, or no head unit), loads whose time has come answer at once.
    private mutating func take(_ now: LinkInstant, readingNowPlaying: Bool = true) -> [Connection.Output] {
        if readingNowPlaying {
            if readsNowPlaying && role.isConnected {
                channels.append(.readNowPlaying)
            } else if !awaitingNowPlaying.isEmpty {
                answerAwaiting(now: now)
            }
        }
        return channels.take()
    }

    // MARK: - File transfer (artwork, playlist contents)

    private mutating func startTransfer(_ id: UInt8, _ bytes: [UInt8], type: UInt16) {
        guard channels.fileSession != nil, let link = channels.link else {
            channels.emit(.problem("file transfer \(id) not started: the link has no file-transfer session"))
            return
        }
        if type == FileTransferFileType.playlistContents,
           fileSenders.values.filter({ $0.fileType == FileTransferFileType.playlistContents }).count >= Connection.maximumOpenPlaylistTransfers {
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
            if fileSenderOrder.count > Connection.maximumOpenFileTransfers {
                let oldest = fileSenderOrder.removeFirst()
                fileSenders[oldest] = nil
                channels.emit(.problem("file transfer \(oldest) dropped: the head unit has not taken the last \(Connection.maximumOpenFileTransfers) files sent"))
            }
            channels.sendOnFileSession(setup.encoded())
        } catch {
            channels.emit(.problem("file transfer \(id) failed to start: \(error)"))
        }
    }

    mutating func handle(_ datagram: FileTransferDatagram, now: LinkInstant) throws {
        guard var sender = fileSenders[datagram.transferID] else {
            channels.emit(.problem("file-transfer datagram for unknown transfer \(datagram.transferID)"))
            return
        }
        let output = try sender.handle(.received(datagram))
        fileSenders[datagram.transferID] = sender
        for outgoing in output.datagrams { channels.sendOnFileSession(outgoing.encoded()) }
        switch output.state {
        case .finished, .cancelled:
            fileSenders[datagram.transferID] = nil
            fileSenderOrder.removeAll { $0 == datagram.transferID }
            startQueuedTransfer()
        default: break
        }
    }

    /// The oldest waiting playlist contents go out once a transfer has ended.
    private mutating func startQueuedTransfer() {
        guard !queuedFiles.isEmpty else { return }
        let next = queuedFiles.removeFirst()
        startTransfer(next.id, next.bytes, type: next.type)
    }
}
