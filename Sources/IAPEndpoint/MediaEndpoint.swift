#if canImport(Glibc)
import Glibc
#endif
import IAPLink
import IAPRoles
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

/// One link end over a real transport with the roles on top, in real time.
/// Everything that happens (link events, the app's answers, timer ticks,
/// shell lines) is serialised through one stream and handled in order by
/// `run`, so the sans-IO roles are only ever touched from one task.
public final class MediaEndpoint: @unchecked Sendable {
    public enum Input: Sendable {
        case link(LinkDriverEvent)
        case loaded(token: UInt32, PhoneMediaRole.LoadResult)
        case tick
        case shell(String?)
        case outgoing(ControlMessage)
    }

    public let kind: EndKind
    public let driver: LinkDriver
    public let inputs: AsyncStream<Input>
    private let feed: AsyncStream<Input>.Continuation
    private let log: @Sendable (String) -> Void

    // Touched only from `run`.
    private var channel = ControlChannel()
    private var controlSession: UInt8?
    private var fileSession: UInt8?
    public private(set) var everUp = false
    /// Why the link last went down or the transport closed, nil while it has not.
    public private(set) var endReason: String?
    private var phoneIdentification = PhoneIdentificationRole()
    private var headIdentification = HeadUnitIdentificationRole()
    public let app: SampleApp
    public private(set) var phone: PhoneMediaRole
    public private(set) var headUnit = HeadUnitMediaRole()
    private var mediaConnected = false
    private var fileReceiver = FileTransferReceiver()
    private var fileSenders: [UInt8: FileTransferSender] = [:]
    private var shell: HeadUnitShell?
    private var shellLines: [String] = []
    private var shellEnded = false
    /// Messages from outside that came before the first link up.
    private var heldOutgoing: [ControlMessage] = []
    /// Called for every message no role consumed (ping answers).
    public var onMessage: (@Sendable (ControlMessage) -> Void)?
    /// Whether to stop, checked after every input.
    public var stopWhen: (@Sendable (MediaEndpoint) -> Bool)?

    public init(kind: EndKind, transport: Transport, shell: Bool = false, library: SampleLibrary = .standard,
         log: @escaping @Sendable (String) -> Void) {
        self.kind = kind
        app = SampleApp(library: library)
        self.log = log
        driver = LinkDriver(configuration: LinkConfiguration(role: kind.linkRole), transport: transport)
        (inputs, feed) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        phone = PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true)
        headIdentification.subscribesToNowPlaying = false
        if shell { self.shell = HeadUnitShell() }
    }

    public var nowPlayingUpdates: Int { headUnit.nowPlaying.updates }
    public var shellFinished: Bool { shellEnded && shellLines.isEmpty && headUnit.nextDeadline == nil }

    /// Starts the transport, the event forwarding and the ticker.
    public func start() throws(TransportError) {
        try driver.start()
        let events = driver.events
        let feed = self.feed
        Task {
            for await event in events { feed.yield(.link(event)) }
            feed.finish()
        }
        Task {
            // Ends with the endpoint's inputs (a server runs one per connection).
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(50))
                if case .terminated = feed.yield(.tick) { return }
            }
        }
    }

    /// Lines for the shell (a script on standard input, or a person).
    public func feedShell(_ line: String?) { feed.yield(.shell(line)) }

    /// Sends a message on the control session from another task (the ping
    /// loop); it goes out in order with everything else.
    public func sendFromOutside(_ message: ControlMessage) { feed.yield(.outgoing(message)) }

    /// Handles inputs until the link's events end or `stopWhen` says so.
    public func run() async {
        for await input in inputs {
            await handle(input)
            if stopWhen?(self) == true { return }
        }
    }

    private func now() -> LinkInstant { MonotonicClock.now() }

    private func handle(_ input: Input) async {
        switch input {
        case .link(let event): await linkEvent(event)
        case .loaded(let token, let result):
            app.setTime(now())
            await perform(phone.complete(token: token, with: result, now: now()))
            await syncNowPlaying()
        case .tick:
            if mediaConnected {
                await perform(phone.tick(now: now()))
                await perform(headUnit.tick(now: now()))
                if kind == .phone { await syncNowPlaying() }
            }
            await runShell()
        case .shell(let line):
            if let line { shellLines.append(line) } else { shellEnded = true }
            await runShell()
        case .outgoing(let message):
            // A caller may see the driver up before this task has handled
            // link up: hold its messages (a bounded few) until then.
            if !everUp && heldOutgoing.count < 64 {
                heldOutgoing.append(message)
            } else {
                await send(message)
            }
        }
    }

    private func linkEvent(_ event: LinkDriverEvent) async {
        switch event {
        case .link(.up(let link)):
            everUp = true
            controlSession = link.sessions.first { $0.type == .control }?.id
            fileSession = link.sessions.first { $0.type == .fileTransfer }?.id
            channel.reset()
            fileReceiver = FileTransferReceiver()
            fileSenders = [:]
            log("link up: sending up to \(link.sendWindow) packets of \(link.sendPacketLength) bytes, "
                + (link.zeroAck ? "zero-ACK" : "retransmit after \(link.retransmitTimeout), at most \(link.maximumRetransmissions) times")
                + "; sessions " + link.sessions.map { "\($0.id) \($0.type.name)" }.joined(separator: ", "))
            if kind == .phone { await perform(phoneIdentification.linkUp()) }
            let held = heldOutgoing
            heldOutgoing = []
            for message in held { await send(message) }
        case .link(.down(let reason)):
            log("link down: \(reason)")
            endReason = "link down: \(reason)"
            await disconnected()
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
            defer { driver.consumed(bytes.count) }
            if session == fileSession {
                await fileData(bytes)
                return
            }
            guard session == controlSession else {
                log("\(bytes.count) bytes on session \(session)")
                return
            }
            let (inputs, replies) = channel.receive(bytes)
            for reply in replies { await send(reply) }
            for input in inputs {
                switch input {
                case .problem(let problem): log("control session: \(problem)")
                case .message(let message): await received(message)
                }
            }
        case .transportClosed(let reason):
            log("transport closed: \(reason)")
            endReason = endReason ?? "transport closed: \(reason)"
            await disconnected()
        }
    }

    private func disconnected() async {
        controlSession = nil
        channel.reset()
        if kind == .phone {
            await perform(phoneIdentification.linkDown())
            if mediaConnected {
                let outputs = phone.disconnect(now: now())
                if outputs.contains(.pausePlayback) { app.pause(at: now()) }
                await perform(outputs.filter { $0 != .pausePlayback })
            }
        } else if kind == .headUnit {
            headIdentification.linkDown()
            headUnit.disconnect()
        }
        mediaConnected = false
    }

    private func received(_ message: ControlMessage) async {
        onMessage?(message)
        switch kind {
        case .phone:
            let identification = (0x1D00...0x1D06).contains(message.id)
            if identification || !mediaConnected {
                await perform(phoneIdentification.received(message))
                if case .identified = phoneIdentification.state, !mediaConnected {
                    mediaConnected = true
                    app.setTime(now())
                    await perform(phone.connect(now: now()))
                    await syncNowPlaying()
                }
                return
            }
            guard case .identified(let identity) = phoneIdentification.state, identity.messagesSent.contains(message.id) else {
                log("error: the accessory sent \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))"), which it did not declare; ignored")
                return
            }
            await media(message) { endpoint, typed in
                endpoint.app.setTime(endpoint.now())
                await endpoint.perform(endpoint.phone.receive(typed, now: endpoint.now()))
                await endpoint.syncNowPlaying()
            }
        case .headUnit:
            if (0x1D00...0x1D06).contains(message.id) {
                await perform(headIdentification.received(message))
                if message.id == MessageID.identificationAccepted {
                    mediaConnected = true
                    await perform(headUnit.connect(now: now()))
                }
                return
            }
            await media(message) { endpoint, typed in await endpoint.perform(endpoint.headUnit.receive(typed, now: endpoint.now())) }
        case .responder, .pinger:
            break
        }
    }

    private func media(_ message: ControlMessage, _ body: (MediaEndpoint, MediaMessage) async -> Void) async {
        do {
            guard let typed = try MediaMessage(message) else {
                log("received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))")")
                return
            }
            await body(self, typed)
        } catch {
            log("malformed \(MessageCatalog.name(of: message.id) ?? "message"): \(error.detail)")
        }
    }

    private func syncNowPlaying() async {
        guard kind == .phone, mediaConnected else { return }
        await perform(phone.setNowPlaying(app.nowPlaying(at: now()), now: now()))
    }

    // MARK: Outputs

    private func perform(_ outputs: [RoleOutput]) async {
        for output in outputs {
            switch output {
            case .send(let message): await send(message)
            case .log(let line): log(line)
            }
        }
    }

    private func perform(_ outputs: [PhoneMediaRole.Output]) async {
        for output in outputs {
            switch output {
            case .send(let message): await send(message.controlMessage)
            case .load(let token, let request):
                app.setTime(now())
                let (result, delay) = app.load(request, now: now())
                let feed = self.feed
                Task {
                    if delay > .zero { try? await Task.sleep(for: delay) }
                    feed.yield(.loaded(token: token, result))
                }
            case .transferFile(let id, let bytes):
                await startTransfer(id, bytes)
            case .pausePlayback: app.pause(at: now())
            case .connected(let number): log("media connection \(number) open")
            case .disconnected(let number): log("media connection \(number) closed")
            case .log(let line): log(line)
            }
        }
    }

    private func perform(_ outputs: [HeadUnitMediaRole.Output]) async {
        for output in outputs {
            switch output {
            case .send(let message): await send(message.controlMessage)
            case .event(let event):
                log(MediaEventText.describe(event, headUnit: headUnit, now: now()))
                // Browsing starts from the root as soon as the phone says it has a tree.
                if case .appInformation(_, true) = event { await perform(headUnit.openRoot(now: now())) }
            }
        }
    }

    public func send(_ message: ControlMessage) async {
        guard let session = controlSession else {
            log("cannot send \(MessageCatalog.name(of: message.id) ?? "a message"): the link is not up")
            return
        }
        do {
            try await driver.send(try message.encoded(), session: session)
        } catch {
            log("cannot send \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))"): \(error)")
        }
    }

    // MARK: File transfer (images)

    private func startTransfer(_ id: UInt8, _ bytes: [UInt8]) async {
        guard let session = fileSession, let link = driver.negotiated else { return }
        do {
            var sender = try FileTransferSender(transferID: id, file: bytes, maximumDataPerDatagram: link.maximumPayload - FileTransferSender.datagramHeaderSize)
            let setup = try sender.start()
            fileSenders[id] = sender
            try await driver.send(setup.encoded(), session: session)
        } catch {
            log("file transfer \(id) failed to start: \(error)")
        }
    }

    private func fileData(_ bytes: [UInt8]) async {
        guard let session = fileSession else { return }
        do {
            let datagram = try FileTransferDatagram(decoding: bytes)
            if kind == .phone, var sender = fileSenders[datagram.transferID] {
                let output = try sender.handle(.received(datagram))
                fileSenders[datagram.transferID] = sender
                for outgoing in output.datagrams { try await driver.send(outgoing.encoded(), session: session) }
                if case .finished = output.state { fileSenders[datagram.transferID] = nil }
            } else {
                for output in try fileReceiver.receive(datagram) {
                    switch output {
                    case .send(let answer): try await driver.send(answer.encoded(), session: session)
                    case .completed(let id, let file, _): log("file transfer \(id): \(file.count) bytes received")
                    case .cancelled(let id, let reason): log("file transfer \(id) cancelled: \(reason)")
                    case .paused(let id): log("file transfer \(id) paused")
                    }
                }
            }
        } catch {
            log("file-transfer session: \(error)")
        }
    }

    // MARK: Shell

    private func runShell() async {
        guard var current = shell, mediaConnected, headUnit.appName != nil else { return }
        // A script waits for the answers to one line before the next.
        while !shellLines.isEmpty, headUnit.nextDeadline == nil {
            let line = shellLines.removeFirst()
            let (outputs, text) = current.execute(line, role: &headUnit, now: now())
            for printed in text { log(printed) }
            shell = current
            await perform(outputs)
            current = shell ?? current
            if current.quit { shellEnded = true; shellLines.removeAll() }
        }
        shell = current
        if let watch = current.watchUntil, now() < watch, current.lastWatch.map({ now().nanoseconds - $0.nanoseconds >= 1_000_000_000 }) ?? true {
            shell?.lastWatch = now()
            log(MediaEventText.nowPlayingLine(headUnit, now: now()))
        }
    }

    public var shellQuit: Bool { shell?.quit ?? false }
}
