// Fuzz entry point for the session level: two connection cores
// (IAPSession.Connection), a phone and a head unit, driven the way every
// runner drives them, with nothing between them but the script.
//
// The script decides what each core hears on its link sessions (what the
// other core sent, delivered whole, dropped, duplicated, split, cut short or
// with a byte changed; raw bytes; messages built from input bytes), link up
// and down, the edge's authentication answers, the head-unit user's
// actions, the phone app's answers and what it plays, and time, with ticks
// at the cores' deadlines. See Docs/Fuzzing.md for the invariants.
import FuzzSupport
import IAPDemo
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

enum Side: Int, CustomStringConvertible {
    case phone = 0, headUnit = 1
    var other: Side { self == .phone ? .headUnit : .phone }
    var description: String { self == .phone ? "phone" : "head unit" }
}

/// The edge's cryptography, faked: the accessory's certificate is a fixed
/// string and its signature of a challenge the challenge reversed. The
/// session's sequence is under test here, not cryptography (the real keys
/// cost milliseconds an execution; IAPAuthenticationTests covers them).
enum FakeCrypto {
    static let certificate = Array("fuzz accessory certificate".utf8)
    static let challenge = [UInt8](0..<32)

    static func sign(_ challenge: [UInt8]) -> [UInt8] { challenge.reversed() }

    static func verify(_ request: VerificationRequest) -> VerificationAnswer {
        switch request {
        case .certificate(let bytes):
            return bytes == certificate ? .certificateAccepted(summary: "fuzz accessory", challenge: challenge)
                : .certificateRejected("not the fuzz accessory's certificate")
        case .response(let response, let challenge, _):
            return response == sign(challenge) ? .responseValid : .responseInvalid("not the challenge reversed")
        }
    }

    static func answer(_ request: AuthenticatorRequest) -> AuthenticatorAnswer {
        switch request {
        case .certificate: return .certificate(certificate)
        case .response(let challenge): return .response(sign(challenge))
        }
    }
}

/// A link both ends could have negotiated; the script varies its sessions
/// and packet length (NegotiatedLink has no public initialiser).
let standardLink: NegotiatedLink = {
    let proposal = LinkParameters().synchronization
    guard case .success(let answer) = LinkNegotiation.answer(to: proposal, limits: LinkParameters()),
          case .success(let link) = LinkNegotiation.accept(answer: answer.answer, proposal: proposal) else {
        broken("the default link parameters do not negotiate")
    }
    return link
}()

func name(_ id: UInt16) -> String { MessageCatalog.name(of: id) ?? "message 0x" + String(id, radix: 16, uppercase: true) }

/// Bounds on what this harness keeps between steps; beyond them the oldest
/// is dropped, as a link with a full send queue or an edge that never
/// answers would.
enum Bound {
    static let outbox = 256
    static let edgeRequests = 16
    static let loads = 128
    static let knownIDs = 64
    static let opened = 256
    /// Ticks in one step of time, and messages and answers in one exchange.
    static let ticks = 10_000
    static let exchange = 10_000
    /// Parameters one message can carry (4 bytes each at least): the items of
    /// a BrowseResponse, the out-of-range values of a NowPlayingUpdate.
    static let parametersPerMessage = ControlMessage.maximumLength / Parameter.headerLength
}

struct SessionPair {
    let app = SampleApp()
    /// The phone (index 0) and the head unit (index 1).
    var cores: [Connection]
    var now = LinkInstant.milliseconds(1)
    var links: [NegotiatedLink?] = [nil, nil]
    /// Each core's stage as its events told it, so every send is checked
    /// against the stage it was made in.
    var stages: [Connection.Stage] = [.disconnected, .disconnected]
    /// What each core sent (by session), not yet delivered to the other.
    var outbox: [[(session: UInt8, bytes: [UInt8])]] = [[], []]
    var authenticatorRequests: [AuthenticatorRequest] = []
    var verificationRequests: [VerificationRequest] = []
    /// Loads the app has not answered yet, oldest first.
    var loads: [(token: UInt32, request: PhoneMediaRole.LoadRequest)] = []
    var tokens: Set<UInt32> = []
    /// Loads of the phone's current media connection and when the phone
    /// stops waiting for each (its timeout, or the app's answer).
    var waiting: [UInt32: LinkInstant] = [:]
    /// Head unit, since its media role last connected: containers the user
    /// opened, browses and commands it was asked for.
    var opened: Set<String> = []
    var browses = 0
    var commands = 0
    var knownIDs: [String]

    init(_ script: inout Script) {
        let setup = script.byte()
        let more = script.byte()
        let stepTimeouts: [Duration] = [.seconds(10), .seconds(1), .milliseconds(100), .seconds(30)]
        let stepTimeout = stepTimeouts[Int(setup >> 2 & 3)]
        let short = setup & 0x80 != 0
        var identity = AccessoryIdentity.devKitHeadUnit
        switch setup >> 4 & 7 {
        case 4: identity.messagesReceived.removeAll { $0 == MessageID.browseResponse }
        case 5: identity.messagesReceived = []
        case 6: identity.messagesSent.removeAll { $0 == MessageID.browseRequest || $0 == MessageID.playItemRequest }
        case 7: identity.messagesReceived += [MessageID.startNowPlayingUpdates, 0xFEFF]
        default: break
        }
        let limits: [HeadUnitLimits] = [.audioApps, HeadUnitLimits(maximumTabs: 1, maximumPageSize: 1, maximumImageRowImages: 0, imageScale: 0),
                                        HeadUnitLimits(maximumTabs: 255, maximumPageSize: 255, maximumImageRowImages: 255, imageScale: 3), .audioApps]
        let app = self.app
        let phone = PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: more & 4 == 0,
                                   loadTimeout: short ? .milliseconds(200) : .seconds(5))
        let phoneConfiguration = Connection.Configuration(role: .device, authentication: setup & 1 == 0 ? .required : .off, stepTimeout: stepTimeout)
        let headUnitConfiguration = Connection.Configuration(role: .accessory, stepTimeout: stepTimeout, identity: identity)
        let headUnit = HeadUnitMediaRole(limits: limits[Int(more & 3)], requestTimeout: short ? .milliseconds(300) : .seconds(8))
        cores = [Connection(phoneConfiguration, phone: phone, readsNowPlaying: setup & 2 != 0), Connection(headUnitConfiguration, headUnit: headUnit)]
        let albums = app.library.albums.prefix(2)
        knownIDs = ["", "library", "radio", "recent", "podcasts", "covers"] + albums.map { "album:" + $0.id } + albums.map(\.imageID)
            + albums.compactMap { $0.tracks.first?.id } + ["art:animated"]
    }

    var phone: Connection { cores[0] }
    var headUnit: Connection { cores[1] }

    // MARK: What the cores say

    mutating func handle(_ outputs: [Connection.Output], from side: Side) {
        for output in outputs {
            switch output {
            case .send(let session, let bytes): sent(bytes, on: session, from: side)
            case .event(let event): happened(event, at: side)
            case .authenticator(let request):
                require(side == .headUnit, "the phone asked for an authenticator")
                authenticatorRequests.append(request)
                if authenticatorRequests.count > Bound.edgeRequests { authenticatorRequests.removeFirst() }
            case .verify(let request):
                require(side == .phone, "the head unit asked for a verification")
                verificationRequests.append(request)
                if verificationRequests.count > Bound.edgeRequests { verificationRequests.removeFirst() }
            case .load(let token, let request):
                require(side == .phone, "the head unit asked for a load")
                require(stages[0].isIdentified, "the phone asked the app for a load while \(stages[0])")
                require(tokens.insert(token).inserted, "the phone handed out load token \(token) twice")
                loads.append((token, request))
                if loads.count > Bound.loads { loads.removeFirst() }
                waiting = waiting.filter { $0.value > now }
                waiting[token] = now + phone.phone.loadTimeout
                require(waiting.count <= PhoneMediaRole.maximumPendingRequests, "the phone waits for \(waiting.count) loads at once")
            case .pausePlayback:
                require(side == .phone, "the head unit asked to pause playback")
                app.pause(at: now)
            case .perform(let command, let origin):
                // The edge runs the handler at once, as every driver does.
                require(side == .phone, "the head unit asked to run a command")
                app.setTime(now)
                handle(cores[0].performed(command, for: origin, status: phone.phone.commands.perform(command), now: now), from: .phone)
            case .readNowPlaying:
                require(side == .phone, "the head unit asked for now playing")
                handle(cores[0].setNowPlaying(app.nowPlaying(at: now), now: now), from: .phone)
            }
        }
        require(stages[side.rawValue] == cores[side.rawValue].stage,
                "the \(side)'s stage is \(cores[side.rawValue].stage), its events said \(stages[side.rawValue])")
    }

    mutating func happened(_ event: Connection.Event, at side: Side) {
        switch event {
        case .stage(let stage):
            checkTransition(from: stages[side.rawValue], to: stage, at: side)
            stages[side.rawValue] = stage
            switch (side, stage) {
            case (.phone, .identified), (.phone, .disconnected):
                waiting = [:]
            case (.headUnit, .identified), (.headUnit, .disconnected):
                opened = []
                browses = 0
                commands = 0
            default: break
            }
        case .problem(let problem):
            // Sends refused for the declared lists or a missing link are the core's
            // rules; a message it built that does not encode is a bug.
            require(!(problem.hasPrefix("cannot send") && !problem.hasSuffix("the link is not up")), "the \(side): \(problem)")
            require(!problem.contains("failed to start"), "the \(side): \(problem)")
        case .media(.appInformation(_, true)):
            browses += 1
        case .media(.tabs(let items)):
            remember(items)
        case .media(.page(let container)):
            remember(headUnit.headUnit.containers[container]?.items ?? [])
        case .fileReceived(let id, let bytes):
            require(side == .headUnit, "the phone received a file")
            require(bytes.count <= FileTransferReceiver.Limits().maximumFileSize, "file \(id) of \(bytes.count) bytes is over the receiver's limit")
        default:
            break
        }
    }

    /// The phone's stages run in order (failed and identified end a link);
    /// the head unit follows the device, so only its start is checked.
    func checkTransition(from old: Connection.Stage, to new: Connection.Stage, at side: Side) {
        let allowed: Bool
        switch (side, new) {
        case (_, .disconnected): allowed = true
        case (_, .authenticating): allowed = old == .disconnected
        case (.phone, .identifying):
            allowed = old == .authenticating || (old == .disconnected && phone.configuration.authentication == .off)
        case (.phone, .identified): allowed = old == .identifying
        case (.phone, .failed): allowed = old == .authenticating || old == .identifying
        case (.headUnit, _): allowed = true
        }
        require(allowed, "the \(side) went from \(old) to \(new)")
    }

    mutating func sent(_ bytes: [UInt8], on session: UInt8, from side: Side) {
        guard let link = links[side.rawValue] else { broken("the \(side) sent \(bytes.count) bytes on session \(session) with no link up") }
        guard let descriptor = link.session(session) else { broken("the \(side) sent on session \(session), which its link does not have") }
        switch descriptor.type {
        case .control:
            require(session == link.sessions.first { $0.type == .control }?.id, "the \(side) sent on a second control session \(session)")
            let message: ControlMessage
            do {
                message = try ControlMessage(decoding: bytes)
            } catch {
                broken("the \(side) sent bytes that are not one control message (\(error)): \(hexString(bytes.prefix(64)))")
            }
            require((try? message.encoded()) == bytes, "the \(side)'s \(name(message.id)) does not re-encode to the bytes sent")
            checkAllowed(message.id, from: side)
            checkRoundTrip(message)
        case .fileTransfer:
            require(!bytes.isEmpty && bytes.count <= link.maximumPayload,
                    "the \(side) sent a \(bytes.count)-byte datagram; the link carries 1 to \(link.maximumPayload)")
            let datagram: FileTransferDatagram
            do {
                datagram = try FileTransferDatagram(decoding: bytes)
            } catch {
                broken("the \(side) sent a file-transfer datagram that does not decode (\(error))")
            }
            require(datagram.encoded() == bytes, "the \(side)'s file-transfer datagram does not re-encode to the bytes sent")
        default:
            broken("the \(side) sent on \(descriptor.type) session \(session)")
        }
        outbox[side.rawValue].append((session, bytes))
        if outbox[side.rawValue].count > Bound.outbox { outbox[side.rawValue].removeFirst() }
    }

    /// What each end may send at each stage. Pings are answered at any stage.
    func checkAllowed(_ id: UInt16, from side: Side) {
        guard !DiagnosticPing.requestIDs.contains(id) else { return }
        let stage = stages[side.rawValue]
        switch side {
        case .phone:
            if MessageID.authentication.contains(id) {
                let own = [MessageID.requestAuthenticationCertificate, MessageID.requestAuthenticationChallengeResponse,
                           MessageID.authenticationFailed, MessageID.authenticationSucceeded]
                require(own.contains(id), "the phone sent the accessory's \(name(id))")
                require(stage == .authenticating, "the phone sent \(name(id)) while \(stage)")
            } else if MessageID.identification.contains(id) {
                let own = [MessageID.startIdentification, MessageID.identificationAccepted, MessageID.identificationRejected]
                require(own.contains(id), "the phone sent the accessory's \(name(id))")
                require(stage == .identifying, "the phone sent \(name(id)) while \(stage)")
            } else {
                require(stage.isIdentified, "the phone sent \(name(id)) while \(stage)")
                let declared = phone.accessory?.messagesReceived ?? []
                require(declared.contains(id), "the phone sent \(name(id)); the accessory declared it receives only \(declared.map(name))")
            }
        case .headUnit:
            if MessageID.authentication.contains(id) {
                require(id == MessageID.authenticationCertificate || id == MessageID.authenticationResponse, "the head unit sent the device's \(name(id))")
            } else if MessageID.identification.contains(id) {
                require(id == MessageID.identificationInformation, "the head unit sent the device's \(name(id))")
            } else {
                require(stage.isIdentified, "the head unit sent \(name(id)) while \(stage)")
                require(headUnit.configuration.identity.messagesSent.contains(id), "the head unit sent \(name(id)), which it did not declare")
            }
        }
    }

    /// A media message that decodes must come out the same after encoding
    /// and decoding again. Not NowPlayingUpdate: decoding drops out-of-range
    /// values and maps the status and the dev-kit state onto one state, so
    /// its round trip is not exact by design.
    func checkRoundTrip(_ message: ControlMessage) {
        guard let typed = (try? MediaMessage(message)) ?? nil else { return }
        if case .nowPlayingUpdate = typed { return }
        guard let bytes = try? typed.controlMessage.encoded() else { broken("decoded \(typed) does not encode again") }
        let decoded: MediaMessage?
        do {
            decoded = try MediaMessage(ControlMessage(decoding: bytes))
        } catch {
            broken("\(typed) re-encoded does not decode: \(error)")
        }
        require(decoded == typed, "media message round trip differs: \(typed) became \(String(describing: decoded))")
    }

    mutating func remember(_ items: [ContentItem]) {
        for item in items.prefix(8) where !knownIDs.contains(item.id) {
            knownIDs.append(item.id)
            if let image = item.imageID { knownIDs.append(image) }
        }
        if knownIDs.count > Bound.knownIDs { knownIDs.removeFirst(knownIDs.count - Bound.knownIDs) }
    }

    // MARK: Invariants after every step

    func check() {
        require(phone.stage.isIdentified == phone.phone.isConnected,
                "the phone's stage is \(phone.stage) and its media role is \(phone.phone.isConnected ? "" : "not ")connected")
        let role = headUnit.headUnit
        for container in role.containers.keys {
            require(container.isEmpty || opened.contains(container), "the head unit keeps container \"\(container)\" it was not asked to open")
        }
        let items = role.containers.values.reduce(0) { $0 + $1.items.count }
        require(items <= browses * Bound.parametersPerMessage, "the head unit keeps \(items) items from \(browses) browses")
        require(role.tabs.count <= role.limits.maximumTabs, "the head unit shows \(role.tabs.count) tabs, over its limit")
        require(role.commandLog.count <= commands, "the head unit logs \(role.commandLog.count) command statuses for \(commands) commands")
        // Each attribute keeps the values of one update at most.
        require(role.nowPlaying.outOfRange.count <= 5 * Bound.parametersPerMessage, "the head unit keeps \(role.nowPlaying.outOfRange.count) out-of-range values")
    }

    // MARK: Time

    mutating func advance(by duration: Duration) {
        let target = now + duration
        var ticks = 0
        while let due = [phone.nextDeadline, headUnit.nextDeadline].compactMap({ $0 }).min(), due <= target {
            now = max(now, due)
            app.setTime(now)
            for side in [Side.phone, .headUnit] {
                handle(cores[side.rawValue].tick(now: now), from: side)
                if let deadline = cores[side.rawValue].nextDeadline {
                    require(deadline > now, "the \(side)'s next deadline \(deadline) is not after a tick at \(now)")
                }
            }
            ticks += 1
            require(ticks <= Bound.ticks, "more than \(Bound.ticks) ticks in one step of time")
        }
        now = target
        app.setTime(now)
    }
}

extension Connection.Stage {
    var isIdentified: Bool {
        if case .identified = self { return true }
        return false
    }
}

// MARK: - Script

extension Script {
    mutating func string(_ known: [String]) -> String {
        let choice = byte()
        if choice < 0xC0, !known.isEmpty { return known[Int(choice) % known.count] }
        return String(decoding: take(Int(choice & 0x3F)), as: UTF8.self)
    }

    /// Text from the app: short, or up to 330 KB.
    mutating func text() -> String {
        let choice = byte()
        if choice == 0xFF { return String(repeating: "long ", count: 400 + Int(u16())) }
        return String(decoding: take(Int(choice & 0x3F)), as: UTF8.self)
    }

    mutating func small() -> UInt32 {
        let choice = byte()
        return choice < 0xF0 ? UInt32(choice & 0x3F) : u32()
    }

    /// A count or index from the app: small, or any Int.
    mutating func count() -> Int {
        switch byte() {
        case 0xFE: return .max
        case 0xFF: return .min
        case let choice where choice >= 0xF0: return Int(Int32(bitPattern: u32()))
        case let choice: return Int(choice & 0x3F)
        }
    }

    mutating func status() -> RequestStatus { RequestStatus(rawValue: byte() % 8) ?? .commandFailed }

    mutating func rate() -> Double {
        let rates: [Double] = [0, 1, 1.25, 2, 0.5, -1, 1e9, 1e300, .infinity, -.infinity, .nan]
        let choice = Int(byte())
        return choice < rates.count ? rates[choice] : Double(u32()) / 100
    }
}

extension SessionPair {
    func controlSession(_ side: Side) -> UInt8 { links[side.rawValue]?.sessions.first { $0.type == .control }?.id ?? 1 }
    func fileSession(_ side: Side) -> UInt8 { links[side.rawValue]?.sessions.first { $0.type == .fileTransfer }?.id ?? 2 }

    mutating func deliver(_ bytes: [UInt8], on session: UInt8, to side: Side) {
        handle(cores[side.rawValue].received(session: session, bytes, now: now), from: side)
    }

    mutating func deliverMessage(_ message: ControlMessage, to side: Side) {
        if let bytes = try? message.encoded() { deliver(bytes, on: controlSession(side), to: side) }
    }

    /// The next thing the other core sent reaches `side`, perhaps damaged.
    mutating func deliverNext(to side: Side, _ script: inout Script) {
        guard !outbox[side.other.rawValue].isEmpty else { return }
        var (session, bytes) = outbox[side.other.rawValue].removeFirst()
        switch script.byte() % 8 {
        case 1: return
        case 2: deliver(bytes, on: session, to: side)
        case 3: if !bytes.isEmpty { bytes[Int(script.byte()) % bytes.count] ^= script.byte() | 1 }
        case 4:
            let cut = bytes.isEmpty ? 0 : Int(script.byte()) % bytes.count
            deliver(Array(bytes[..<cut]), on: session, to: side)
            bytes = Array(bytes[cut...])
        case 5: bytes = Array(bytes.prefix(Int(script.byte()) % max(1, bytes.count)))
        default: break
        }
        deliver(bytes, on: session, to: side)
    }

    /// Link up at one end or both, with the standard sessions or others.
    mutating func linkUp(_ script: inout Script) {
        let which = script.byte()
        var link = standardLink
        switch which >> 2 & 7 {
        case 4: link.sessions = [LinkSessionDescriptor(id: 1, type: .control)]
        case 5: link.sessions = [LinkSessionDescriptor(id: 2, type: .fileTransfer), LinkSessionDescriptor(id: 3, type: .externalAccessory)]
        case 6: link.sessions = []
        case 7:
            // Any types, under ids as negotiation allows them: unique and not 0.
            let types: [SessionType] = [.control, .fileTransfer, .externalAccessory]
            link.sessions = []
            for _ in 0..<Int(script.byte() % 5) {
                let id = 1 + script.byte() % 8
                let type = script.pick(types)
                if link.session(id) == nil { link.sessions.append(LinkSessionDescriptor(id: id, type: type)) }
            }
        default: break
        }
        if which & 0x80 != 0 { link.sendPacketLength = LinkSynchronization.minimumPacketLength + Int(script.byte()) }
        for side in sides(which) {
            links[side.rawValue] = link
            handle(cores[side.rawValue].linkUp(link, now: now), from: side)
        }
    }

    /// Link down at one end or both; what was in flight is lost.
    mutating func linkDown(_ which: UInt8) {
        for side in sides(which) {
            links[side.rawValue] = nil
            handle(cores[side.rawValue].linkDown(now: now), from: side)
        }
        outbox = [[], []]
    }

    func sides(_ which: UInt8) -> [Side] {
        switch which & 3 {
        case 1: return [.phone]
        case 2: return [.headUnit]
        default: return [.phone, .headUnit]
        }
    }

    // MARK: Messages built from input bytes

    mutating func parameters(_ script: inout Script, depth: Int = 0) -> [Parameter] {
        var parameters: [Parameter] = []
        for _ in 0..<Int(script.byte() % 6) {
            let id = UInt16(script.byte() % 32)
            switch script.byte() % 5 {
            case 0: parameters.append(.uint32(id, script.small()))
            case 1: parameters.append(.string(id, script.string(knownIDs)))
            case 2 where depth < 3:
                if let group = try? Parameter.group(id, self.parameters(&script, depth: depth + 1)) { parameters.append(group) }
            case 3: parameters.append(.uint8(id, script.byte()))
            default: parameters.append(.blob(id, script.take(Int(script.byte() % 24))))
            }
        }
        return parameters
    }

    mutating func command(_ script: inout Script) -> RemoteCommand {
        let choice = script.byte()
        let commands: [RemoteCommand] = [
            .play, .pause, .stop, .togglePlayPause, .nextTrack, .previousTrack, .changePlaybackPosition(milliseconds: script.small() &* 1000),
            .seekForward(begin: choice & 0x80 != 0), .seekBackward(begin: choice & 0x80 != 0), .skipForward(milliseconds: script.small()),
            .skipBackward(milliseconds: script.small()), .changeRepeatMode(RepeatMode.allCases[Int(choice >> 5) % RepeatMode.allCases.count]),
            .changeShuffleMode(ShuffleMode.allCases[Int(choice >> 5) % ShuffleMode.allCases.count]), .changePlaybackRate,
            .like(choice & 0x80 != 0), .dislike(choice & 0x80 != 0), .bookmark(choice & 0x80 != 0),
        ]
        return commands[Int(choice) % commands.count]
    }

    mutating func items(_ script: inout Script) -> [ContentItem] {
        let count = Int(script.byte())
        return (0..<(count < 0xF0 ? count % 8 : count)).map { _ in
            let kind: ContentItem.Kind = script.byte() & 1 == 0 ? .container : .playable
            return ContentItem(id: script.string(knownIDs), kind: kind, text: script.text(), imageID: script.byte() & 1 == 0 ? nil : script.string(knownIDs))
        }
    }

    mutating func nowPlayingInfo(_ script: inout Script) -> NowPlayingInfo {
        let flags = script.byte()
        return NowPlayingInfo(
            itemID: flags & 1 == 0 ? nil : UInt64(script.u32()), title: flags & 2 == 0 ? nil : script.text(),
            durationMilliseconds: flags & 4 == 0 ? nil : script.small() &* 997, artworkTransferID: flags & 8 == 0 ? nil : script.byte(),
            elapsedMilliseconds: script.small() &* 1009, playbackRate: script.rate(), defaultPlaybackRate: script.rate(),
            queueIndex: flags & 16 == 0 ? nil : script.small(), queueCount: flags & 16 == 0 ? nil : script.small(),
            state: NowPlayingInfo.PlaybackState(rawValue: script.byte() % 5) ?? .unknown,
            repeatMode: RepeatMode(rawValue: script.byte() % 3) ?? .off, shuffleMode: ShuffleMode(rawValue: script.byte() % 3) ?? .off,
            appName: flags & 32 == 0 ? nil : script.text())
    }

    /// A media message as the head unit could send it.
    mutating func headUnitMessage(_ script: inout Script) -> MediaMessage {
        switch script.byte() % 12 {
        case 0: return .browseRequest(requestID: script.small(), containerID: script.string(knownIDs), offset: script.small(), count: UInt16(truncatingIfNeeded: script.small()))
        case 1: return .playItem(requestID: script.small(), itemID: script.string(knownIDs), imageRowEntryID: script.byte() & 1 == 0 ? nil : script.string(knownIDs))
        case 2: return .remoteCommand(requestID: script.small(), command(&script))
        case 3: return .limits(HeadUnitLimits(maximumTabs: Int(script.byte()), maximumPageSize: Int(script.byte()), maximumImageRowImages: Int(script.byte() % 10), imageScale: Int(script.byte() % 5)))
        case 4: return .queueRequest(requestID: script.small(), offset: script.small(), count: UInt16(truncatingIfNeeded: script.small()))
        case 5: return .imageRequest(requestID: script.small(), imageID: script.string(knownIDs), scale: script.byte() % 5)
        case 6:
            // Everything, or the attributes a mask picks, plus one id of any value.
            let mask = UInt32(script.byte()) | UInt32(script.byte()) << 8 | UInt32(script.byte()) << 16
            guard mask != 0 else { return .startNowPlayingUpdates(.all) }
            let media = NowPlayingSelection.all.mediaItem.sorted().enumerated().filter { mask >> $0.offset & 1 != 0 }.map(\.element)
            let playback = NowPlayingSelection.all.playback.sorted().enumerated().filter { mask >> ($0.offset + 8) & 1 != 0 }.map(\.element)
            return .startNowPlayingUpdates(NowPlayingSelection(mediaItem: Set(media + [script.u16()]), playback: Set(playback)))
        case 7: return .stopNowPlayingUpdates
        case 8: return .setNowPlayingInformation(elapsedMilliseconds: script.byte() & 1 == 0 ? nil : script.small() &* 997, queueIndex: script.byte() & 1 == 0 ? nil : script.small())
        case 9:
            let descriptor = script.byte() & 1 == 0 ? HIDRemote.reportDescriptor : script.take(Int(script.byte()))
            return .startHID(StartHIDMessage(componentIdentifier: UInt16(script.byte() % 12), vendorIdentifier: 0x1209, productIdentifier: 1, reportDescriptor: descriptor))
        case 10: return .accessoryHIDReport(AccessoryHIDReportMessage(componentIdentifier: UInt16(script.byte() % 12), report: script.take(Int(script.byte() % 5))))
        default: return .stopHID(StopHIDMessage(componentIdentifier: UInt16(script.byte() % 12)))
        }
    }

    /// A media message as the phone could send it.
    mutating func phoneMessage(_ script: inout Script) -> MediaMessage {
        switch script.byte() % 8 {
        case 0:
            return .browseResponse(BrowseResponse(requestID: script.small(), status: script.status(), totalCount: script.small(), offset: script.small(),
                                                  items: items(&script), sections: [ContentSection(id: UInt16(script.byte() % 3), kind: .loading)]))
        case 1: return .requestStatus(requestID: script.small(), script.status(), error: script.byte() & 1 == 0 ? nil : script.text())
        case 2:
            let mask = script.u32()
            return .advertisedCommands(RemoteCommand.Kind.allCases.filter { mask >> $0.rawValue & 1 != 0 }.map { AdvertisedCommand($0, enabled: mask >> 31 == 0) })
        case 3: return .appInformation(name: script.text(), hasContentTree: script.byte() & 1 == 0)
        case 4:
            return .queueResponse(QueueResponse(requestID: script.small(), status: script.status(), totalCount: script.small(), offset: script.small(),
                                                currentIndex: script.small(), items: items(&script)))
        case 5: return .imageResponse(requestID: script.small(), script.status(), transferID: script.byte() & 1 == 0 ? nil : script.byte(), error: nil)
        default: return .nowPlayingUpdate(NowPlayingUpdate(full: nowPlayingInfo(&script)))
        }
    }

    /// An authentication or identification message, as the other end (or
    /// one pretending to be it) would send it.
    mutating func sessionMessage(for side: Side, _ script: inout Script) -> ControlMessage {
        let choice = script.byte()
        switch (side, choice % 8) {
        case (.phone, 0): return ControlMessage(id: MessageID.authenticationCertificate, parameters: [.blob(0, FakeCrypto.certificate)])
        case (.phone, 1): return ControlMessage(id: MessageID.authenticationCertificate, parameters: [.blob(0, script.take(Int(script.byte() % 48)))])
        case (.phone, 2): return ControlMessage(id: MessageID.authenticationResponse, parameters: [.blob(0, FakeCrypto.sign(FakeCrypto.challenge))])
        case (.phone, 3): return ControlMessage(id: MessageID.authenticationResponse, parameters: [.blob(0, script.take(Int(script.byte() % 48)))])
        case (.phone, 4): return headUnit.configuration.identity.message
        case (.phone, 5):
            // An identity declaring what the input says it sends and receives.
            var identity = AccessoryIdentity.devKitHeadUnit
            let received = script.u16()
            let sent = script.u16()
            identity.messagesReceived = (MediaMessage.phoneSends + [MessageID.startNowPlayingUpdates, 0xFEFF, script.u16()]).enumerated()
                .filter { received >> $0.offset & 1 != 0 }.map(\.element)
            identity.messagesSent = (MediaMessage.headUnitSends + [MessageID.nowPlayingUpdate, script.u16()]).enumerated()
                .filter { sent >> $0.offset & 1 != 0 }.map(\.element)
            return identity.message
        case (.phone, 6):
            return ControlMessage(id: choice & 0x80 == 0 ? MessageID.cancelIdentification : MessageID.identificationInformationUpdate, parameters: parameters(&script))
        case (.headUnit, 0): return ControlMessage(id: MessageID.requestAuthenticationCertificate)
        case (.headUnit, 1):
            let challenge = choice & 0x80 == 0 ? FakeCrypto.challenge : script.take(Int(script.byte() % 80))
            return ControlMessage(id: MessageID.requestAuthenticationChallengeResponse, parameters: [.blob(0, challenge)])
        case (.headUnit, 2): return ControlMessage(id: MessageID.authenticationSucceeded)
        case (.headUnit, 3): return ControlMessage(id: MessageID.authenticationFailed)
        case (.headUnit, 4): return ControlMessage(id: MessageID.startIdentification)
        case (.headUnit, 5): return ControlMessage(id: MessageID.identificationAccepted)
        case (.headUnit, 6): return ControlMessage(id: MessageID.identificationRejected, parameters: parameters(&script))
        default: return ControlMessage(id: script.pick(MessageID.authentication), parameters: parameters(&script))
        }
    }

    // MARK: The edge

    /// The head-unit user acts on the media role.
    mutating func userAction(_ script: inout Script) {
        let choice = script.byte()
        let action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]
        switch choice % 9 {
        case 0:
            browses += 1
            action = { role, now in role.openRoot(now: now) }
        case 1:
            let id = script.string(knownIDs)
            guard opened.count < Bound.opened || opened.contains(id) else { return }
            opened.insert(id)
            browses += 1
            action = { role, now in role.open(id, now: now) }
        case 2:
            let id = script.string(Array(opened).sorted())
            browses += 1
            action = { role, now in role.loadMore(id, now: now) }
        case 3:
            let id = script.string(Array(opened).sorted() + [""])
            browses += 1
            action = { role, now in role.retry(id, now: now) }
        case 4:
            let id = script.string(knownIDs)
            let entry = choice & 0x80 != 0 ? script.string(knownIDs) : nil
            action = { role, now in role.select(id, imageRowEntryID: entry, now: now) }
        case 5:
            let command = command(&script)
            commands += 1
            action = { role, now in role.send(command, now: now) }
        case 6:
            let more = choice & 0x80 != 0
            action = { role, now in more ? role.loadMoreQueue(now: now) : role.requestQueue(now: now) }
        case 7:
            let id = script.string(knownIDs)
            action = { role, now in role.requestImage(id, now: now) }
        default:
            let button = HIDRemote.Button.allCases[Int(choice >> 4) % HIDRemote.Button.allCases.count]
            action = { role, _ in role.press(button) }
        }
        handle(cores[1].headUnitDoes(now: now, action), from: .headUnit)
    }

    /// The app answers a load: rightly, late, with a failure or the wrong
    /// kind of result, or never.
    mutating func appAnswer(_ script: inout Script) {
        guard !loads.isEmpty else { return }
        let choice = script.byte()
        let (token, request): (UInt32, PhoneMediaRole.LoadRequest)
        if choice & 0x0F == 0x0F {
            // A token the phone never handed out.
            (token, request) = (script.u32(), .tabs)
        } else {
            (token, request) = loads.remove(at: Int(script.byte()) % loads.count)
        }
        app.setTime(now)
        var at = now
        let result: PhoneMediaRole.LoadResult
        switch choice >> 4 {
        case 6:
            let (right, delay) = app.load(request, now: now)
            result = right
            at = now + delay + .milliseconds(Int64(script.byte()) * 50)
        case 7: result = .failed(script.status(), script.text())
        case 8: result = .done
        case 9: result = .image(script.byte() & 1 == 0 ? Array("GIF89a".utf8) + script.take(4) : script.take(Int(script.u16() % 5000)))
        case 10:
            let count = Int(script.byte())
            let text = Int(script.byte()) * 4
            let items = (0..<count).map { ContentItem(id: "i\($0)", kind: .playable, text: String(repeating: "x", count: text)) }
            result = .page(items: items, sections: [], totalCount: script.count())
        case 11: result = .queue(items: items(&script), totalCount: script.count(), currentIndex: script.count())
        case 12: return  // never
        default: result = app.load(request, now: now).0
        }
        if let until = waiting[token] { waiting[token] = min(until, at) }
        handle(cores[0].complete(token: token, with: result, at: at, now: now), from: .phone)
    }

    /// The accessory's authenticator answers its oldest request.
    mutating func authenticatorAnswer(_ script: inout Script) {
        guard !authenticatorRequests.isEmpty else { return }
        let request = authenticatorRequests.removeFirst()
        let answer: AuthenticatorAnswer
        switch (script.byte() % 8, request) {
        case (4, .certificate): answer = .certificate(Array("not a certificate".utf8))
        case (4, .response(let challenge)): answer = .response(challenge)
        case (5, _): answer = .certificate(script.take(Int(script.byte() % 64)))
        case (6, _): answer = .failed("the coprocessor does not answer")
        case (7, _): return  // never
        default: answer = FakeCrypto.answer(request)
        }
        handle(cores[1].authenticatorAnswered(answer, now: now), from: .headUnit)
    }

    /// The device's verifier answers its oldest request.
    mutating func verifierAnswer(_ script: inout Script) {
        guard !verificationRequests.isEmpty else { return }
        let request = verificationRequests.removeFirst()
        let answer: VerificationAnswer
        switch (script.byte() % 8, request) {
        case (4, .certificate): answer = .certificateRejected("expired")
        case (4, .response): answer = .responseInvalid("bad signature")
        case (5, .certificate): answer = .certificateAccepted(summary: script.string([]), challenge: script.take(Int(script.byte() % 80)))
        case (5, .response): answer = .responseValid
        case (6, .certificate): answer = .responseValid
        case (6, .response): answer = .certificateAccepted(summary: "", challenge: FakeCrypto.challenge)
        case (7, _): return  // never
        default: answer = FakeCrypto.verify(request)
        }
        handle(cores[0].verified(answer, now: now), from: .phone)
    }

    /// The phone app changes what it plays or the commands it offers.
    mutating func appChange(_ script: inout Script) {
        app.setTime(now)
        let choice = script.byte()
        switch choice % 4 {
        case 0:
            _ = app.perform(command(&script))
            handle(cores[0].setNowPlaying(app.nowPlaying(at: now), now: now), from: .phone)
        case 1:
            // Artwork named by one of the app's image ids (a still one, the animated one, or none it has).
            var info = nowPlayingInfo(&script)
            if choice & 0x80 != 0 { info.artworkImageID = script.string(knownIDs) }
            handle(cores[0].setNowPlaying(info, now: now), from: .phone)
        case 2:
            let kind = RemoteCommand.Kind.allCases[Int(script.byte()) % RemoteCommand.Kind.allCases.count]
            handle(cores[0].phoneDoes(now: now) { role, _ in
                role.updateCommands { center in
                    switch choice >> 2 & 3 {
                    case 0: center.withdraw(kind)
                    case 1: center.register(kind) { _ in .success }
                    default: center.setEnabled(kind, choice & 0x80 != 0)
                    }
                }
            }, from: .phone)
        default:
            let side: Side = choice & 0x80 == 0 ? .phone : .headUnit
            let ping = DiagnosticPing.request(sequence: script.u32(), size: Int(script.byte()))
            handle(cores[side.rawValue].send(ping, now: now), from: side)
        }
    }

    /// Everything honest until nothing is left: the edge answers rightly at
    /// once and every message arrives intact.
    mutating func exchange() {
        var rounds = 0
        while true {
            rounds += 1
            require(rounds <= Bound.exchange, "the cores keep answering each other: more than \(Bound.exchange) rounds in one exchange")
            if !authenticatorRequests.isEmpty {
                handle(cores[1].authenticatorAnswered(FakeCrypto.answer(authenticatorRequests.removeFirst()), now: now), from: .headUnit)
            } else if !verificationRequests.isEmpty {
                handle(cores[0].verified(FakeCrypto.verify(verificationRequests.removeFirst()), now: now), from: .phone)
            } else if !loads.isEmpty {
                let (token, request) = loads.removeFirst()
                app.setTime(now)
                waiting[token] = nil
                handle(cores[0].complete(token: token, with: app.load(request, now: now).0, at: now, now: now), from: .phone)
            } else if let side = [Side.phone, .headUnit].first(where: { !outbox[$0.other.rawValue].isEmpty }) {
                let (session, bytes) = outbox[side.other.rawValue].removeFirst()
                deliver(bytes, on: session, to: side)
            } else {
                break
            }
        }
    }

    mutating func step(_ script: inout Script) {
        let op = script.byte()
        let side: Side = op & 0x80 == 0 ? .phone : .headUnit
        switch (op & 0x7F) % 20 {
        case 0, 1, 2, 3: deliverNext(to: side, &script)
        case 4:
            let session = script.pick([controlSession(side), fileSession(side), script.byte() % 8])
            deliver(script.take(Int(script.byte() % 64)), on: session, to: side)
        case 5:
            let ids: [UInt16] = MediaMessage.phoneSends + MediaMessage.headUnitSends + MessageID.authentication
                + [0x1D00, 0x1D01, 0x1D02, 0x1D03, 0x1D05, 0x1D06, 0xFE00, 0xFE01, 0xFEFE]
            let choice = script.byte()
            let id = choice < 0xF0 ? ids[Int(choice) % ids.count] : script.u16()
            let message = ControlMessage(id: id, parameters: parameters(&script))
            checkRoundTrip(message)
            deliverMessage(message, to: side)
        case 6: deliverMessage((side == .phone ? headUnitMessage(&script) : phoneMessage(&script)).controlMessage, to: side)
        case 7: deliverMessage(sessionMessage(for: side, &script), to: side)
        case 8, 9: userAction(&script)
        case 10: appAnswer(&script)
        case 11: if side == .phone { verifierAnswer(&script) } else { authenticatorAnswer(&script) }
        case 12: linkUp(&script)
        case 13: linkDown(script.byte())
        case 14, 15:
            let units: [Int64] = [1, 10, 100, 1000, 5000, 9000, 60_000, 0]
            let choice = script.byte()
            advance(by: .milliseconds(units[Int(choice & 7)] * Int64(1 + (choice >> 3 & 7))))
        case 16, 17: appChange(&script)
        default: exchange()
        }
        check()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var script = Script(Array(UnsafeRawBufferPointer(start: start, count: count)))
    var pair = SessionPair(&script)
    var steps = 0
    while !script.atEnd && steps < 2000 {
        steps += 1
        pair.step(&script)
    }
    return 0
}
