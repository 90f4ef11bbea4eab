import IAPLink
import IAPRoles
import IAPWire

/// The head unit's end of a `Connection` (the link's accessory): it
/// authenticates when the device asks, identifies, then browses and
/// controls the phone's media; files (artwork, playlist contents) arrive
/// over the file-transfer session.
struct HeadUnitConnection: SessionEnd, Sendable {
    /// What the head unit does with a message from the device.
    private enum Route {
        case authentication, identification, media
        case refused(String)
    }

    let configuration: Connection.Configuration
    var channels = SessionChannels()
    private(set) var role: HeadUnitMediaRole
    private var authentication = AccessoryAuthentication()
    private var identification: HeadUnitIdentificationRole
    /// When it reports that the device has not started anything.
    private var stallDeadline: LinkInstant?
    private var fileReceiver = FileTransferReceiver()
    /// Whether it may send more than authentication messages on this link:
    /// the device sent AuthenticationSucceeded, or skipped authentication
    /// by starting identification.
    private var clearedToSend = false
    /// Messages asked for before it was cleared to send, oldest first;
    /// sent once it is, dropped if the link ends or authentication fails.
    private var heldUntilAuthenticated: [ControlMessage] = []

    init(_ configuration: Connection.Configuration, role: HeadUnitMediaRole) {
        self.configuration = configuration
        self.role = role
        identification = HeadUnitIdentificationRole(identity: configuration.identity)
    }

    var nextDeadline: LinkInstant? {
        let next = earliest(channels.control.deadline, stallDeadline)
        return channels.isMediaConnected ? earliest(next, role.nextDeadline) : next
    }

    // MARK: - Link

    mutating func linkUp(_ link: NegotiatedLink, now: LinkInstant) -> [Connection.Output] {
        endLink()
        channels.up(link)
        clearedToSend = false
        heldUntilAuthenticated = []
        fileReceiver = FileTransferReceiver()
        channels.setStage(.authenticating)
        stallDeadline = now + configuration.stepTimeout
        return channels.take()
    }

    mutating func linkDown() -> [Connection.Output] {
        endLink()
        return channels.take()
    }

    private mutating func endLink() {
        guard channels.down() else { return }
        dropHeld(because: "the link ended before authentication succeeded")
        clearedToSend = false
        authentication.reset()
        stallDeadline = nil
        identification.linkDown()
        role.disconnect()
        channels.setStage(.disconnected)
    }

    mutating func received(session: UInt8, _ bytes: [UInt8], now: LinkInstant) -> [Connection.Output] {
        deliver(session: session, bytes, now: now)
        return channels.take()
    }

    mutating func tick(now: LinkInstant) -> [Connection.Output] {
        controlInputs(channels.control.expire(now: now), now: now)
        if let deadline = stallDeadline, now >= deadline {
            stallDeadline = nil
            channels.emit(.problem("the device has not started authentication or identification \(configuration.stepTimeout) after link up; still waiting"))
        }
        if channels.isMediaConnected { mediaOutputs(role.tick(now: now), now: now) }
        return channels.take()
    }

    // MARK: - Answers from the edge and actions

    mutating func authenticatorAnswered(_ answer: AuthenticatorAnswer) -> [Connection.Output] {
        perform(authentication.answered(answer))
        return channels.take()
    }

    mutating func does(now: LinkInstant, _ action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) -> [Connection.Output] {
        guard channels.isMediaConnected else {
            channels.emit(.problem("not identified yet: the head unit cannot browse or send commands"))
            return channels.take()
        }
        mediaOutputs(action(&role, now), now: now)
        return channels.take()
    }

    mutating func sendFromOutside(_ message: ControlMessage) -> [Connection.Output] {
        send(message)
        return channels.take()
    }

    // MARK: - Messages

    /// Authentication and identification messages are taken at every
    /// stage (the device leads both); media messages once identification
    /// was accepted, and only those this head unit declared it receives.
    private func route(_ id: UInt16) -> Route {
        if MessageID.authentication.contains(id) { return .authentication }
        if MessageID.identification.contains(id) { return .identification }
        guard channels.isMediaConnected else {
            return .refused("the device sent \(Connection.name(id)) before identification was accepted; ignored")
        }
        guard identification.identity.messagesReceived.contains(id) else {
            return .refused("the device sent \(Connection.name(id)), which this head unit did not declare in MessagesReceivedByAccessory; ignored")
        }
        return .media
    }

    mutating func handle(_ message: ControlMessage, now: LinkInstant) {
        switch route(message.id) {
        case .refused(let reason): channels.emit(.problem(reason))
        case .authentication:
            stallDeadline = nil
            perform(authentication.received(message))
        case .identification:
            stallDeadline = nil
            if message.id == MessageID.startIdentification {
                // A device that starts identification has skipped (or finished) authentication.
                clearToSend()
                channels.setStage(.identifying)
            }
            for output in identification.received(message) { roleOutput(output) }
            if message.id == MessageID.identificationAccepted {
                channels.setStage(.identified(configuration.identity.name))
                mediaOutputs(role.connect(now: now), now: now)
            }
        case .media:
            do {
                guard let typed = try channels.typed(message) else { return }
                mediaOutputs(role.receive(typed, now: now), now: now)
            } catch {
                channels.emit(.problem("malformed \(Connection.name(message.id)): \(error.detail)"))
            }
        }
    }

    /// What the head unit sends must be in its own MessagesSentByAccessory.
    ///
    /// It sends nothing but authentication messages until it is cleared
    /// to (AuthenticationSucceeded, or the device starting identification
    /// without it): a device ignores anything else before, so what comes
    /// earlier waits, in order, and goes out then.
    mutating func send(_ message: ControlMessage) {
        if !clearedToSend, !MessageID.authentication.contains(message.id) {
            guard channels.controlSession != nil else {
                channels.emit(.problem("cannot send \(Connection.name(message.id)): the link is not up"))
                return
            }
            guard heldUntilAuthenticated.count < Connection.maximumHeldUntilAuthenticated else {
                channels.emit(.problem("not sending \(Connection.name(message.id)): authentication has not succeeded yet and \(Connection.maximumHeldUntilAuthenticated) messages already wait for it"))
                return
            }
            heldUntilAuthenticated.append(message)
            return
        }
        if !SessionChannels.isAlwaysSendable(message.id) {
            guard identification.identity.messagesSent.contains(message.id) else {
                channels.emit(.problem("not sending \(Connection.name(message.id)): this head unit did not declare it in MessagesSentByAccessory"))
                return
            }
        }
        channels.sendOnControl(message)
    }

    /// From now on it may send anything; what waited goes out, in order.
    private mutating func clearToSend() {
        guard !clearedToSend else { return }
        clearedToSend = true
        let held = heldUntilAuthenticated
        heldUntilAuthenticated = []
        for message in held { send(message) }
    }

    /// What waited for authentication is not sent.
    private mutating func dropHeld(because reason: String) {
        guard !heldUntilAuthenticated.isEmpty else { return }
        let names = heldUntilAuthenticated.map { Connection.name($0.id) }.joined(separator: ", ")
        heldUntilAuthenticated = []
        channels.emit(.problem("not sent, \(reason): \(names)"))
    }

    // MARK: - Outputs of the parts

    private mutating func perform(_ outputs: [AccessoryAuthentication.Output]) {
        for output in outputs {
            switch output {
            case .send(let message): send(message)
            case .authenticator(let request): channels.append(.authenticator(request))
            case .succeeded:
                channels.log("authentication succeeded")
                clearToSend()
            case .failed(let reason):
                channels.log("authentication failed: \(reason)")
                dropHeld(because: "authentication failed")
                channels.setStage(.failed("authentication failed: \(reason)"))
            case .problem(let problem): channels.emit(.problem(problem))
            }
        }
    }

    private mutating func mediaOutputs(_ outputs: [HeadUnitMediaRole.Output], now: LinkInstant) {
        for output in outputs {
            switch output {
            case .send(let message): send(message.controlMessage)
            case .event(let event):
                channels.emit(.media(event))
                // Browsing starts from the root as soon as the phone says it has
                // a tree, if the phone sent its command set first; a head unit
                // never asks for a tree offered before the commands.
                if case .appInformation(_, true) = event {
                    if role.hasCommandSet {
                        mediaOutputs(role.openRoot(now: now), now: now)
                    } else {
                        channels.emit(.problem("the phone offered its content tree before its command set: a head unit does not browse it (send AdvertisedCommands first)"))
                    }
                }
            }
        }
    }

    // MARK: - File transfer (artwork, playlist contents)

    mutating func handle(_ datagram: FileTransferDatagram, now: LinkInstant) throws {
        for output in try fileReceiver.receive(datagram) {
            switch output {
            case .send(let answer): channels.sendOnFileSession(answer.encoded())
            case .completed(let id, let file, _):
                channels.log("file transfer \(id): \(file.count) bytes received")
                if role.isLibraryTransfer(id) {
                    mediaOutputs(role.libraryContentsReceived(transferID: id, bytes: file), now: now)
                } else {
                    role.keepUnclaimedFile(transferID: id, bytes: file)
                    channels.emit(.fileReceived(transferID: id, bytes: file))
                }
            case .cancelled(let id, let reason):
                channels.log("file transfer \(id) cancelled: \(reason)")
                mediaOutputs(role.libraryContentsFailed(transferID: id, reason: "\(reason)"), now: now)
            case .paused(let id): channels.log("file transfer \(id) paused")
            }
        }
    }
}
