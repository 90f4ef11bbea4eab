import IAPRoles
import IAPWire

/// The phone's answer to a head unit that speaks only the legacy iPod
/// accessory protocol (iAP1), sans-IO: the edge hands it the payload of each
/// iAP1 frame the head unit sends, the app's answers, verification verdicts
/// and time; it answers with packets to send, loads for the app and
/// certificates and signatures to verify.
///
/// What it serves, from the same app as the iAP2 phone role:
/// - identification: IdentifyDeviceLingoes (no transaction ids), the IDPS
///   exchange (StartIDPS, SetFIDTokenValues, EndIDPS, every packet with a
///   transaction id), and the deprecated Identify; then, if the head unit
///   asks for it, authentication 2.0 (its certificate and a signed challenge,
///   checked by the edge's verifier);
/// - the device's name, versions, serial and model, remote UI mode;
/// - the Extended Interface lingo: play status, the playing queue's titles,
///   play control, shuffle and repeat, play-status notifications, and the
///   content tree read as nested playlists (containers are playlists,
///   playable items tracks, level by level, from the tabs down).
///
/// A head unit that names lingoes beyond General and Extended Interface is
/// still served those two; packets of other lingoes are ignored and logged.
/// Every request is answered on every path: with the answer, or with an
/// ACK carrying the failure (the app's error, a load that timed out).
public struct LegacyPhone: Sendable {
    /// What the phone says of itself (RequestiPodName and the like).
    public struct Identity: Hashable, Sendable {
        public var name: String
        /// Major, minor, revision.
        public var softwareVersion: [UInt8]
        public var serialNumber: String
        public var modelID: UInt32
        public var modelNumber: String

        public init(name: String = "iap-devkit phone", softwareVersion: [UInt8] = [1, 0, 0], serialNumber: String = "IAPDEVKIT0001",
                    modelID: UInt32 = 0x0001_0000, modelNumber: String = "IAPDEVKIT") {
            self.name = name
            self.softwareVersion = softwareVersion
            self.serialNumber = serialNumber
            self.modelID = modelID
            self.modelNumber = modelNumber
        }
    }

    public enum Event: Hashable, Sendable {
        /// The head unit identified: the lingoes it named, whether through
        /// IDPS (transaction ids), and whether it asked to be authenticated.
        case identified(lingoes: [UInt8], idps: Bool, authenticating: Bool)
        /// Its certificate and signature were checked (the verifier's summary),
        /// or accepted unchecked when the phone does not verify.
        case authenticated(String)
        case authenticationFailed(String)
    }

    public enum Output: Hashable, Sendable {
        /// Frame and write this packet.
        case send(IAP1Packet)
        /// Ask the app; answer with `complete`.
        case load(token: UInt32, PhoneMediaRole.LoadRequest)
        /// Run the app's handler for this command (`RemoteCommandCenter.perform`,
        /// which fails one not advertised or not enabled); answer with
        /// `performed`, giving the reply back.
        case perform(RemoteCommand, reply: Reply)
        /// Ask the edge's verifier; answer with `verified`, giving the id back.
        case verify(id: UInt32, VerificationRequest)
        case event(Event)
        case log(String)
    }

    /// Items of one level of the content tree read as records; more are
    /// not offered.
    public static let levelLimit = 500
    /// Loads waiting for the app at once; a request beyond is refused.
    public static let maximumPendingLoads = 64
    /// Requests waiting for a level of the tree to load.
    public static let maximumWaitingRequests = 16
    /// A certificate longer than this is refused ("certificate too long").
    public static let maximumCertificateLength = 8192
    /// Strings are cut to this many UTF-8 bytes (before their NUL).
    public static let maximumStringLength = 255
    /// The largest payload the phone accepts in one packet.
    public static let maximumPayloadSize: UInt16 = 0xFFF9
    /// How many log lines and events one connection gives out one by one. A
    /// head unit can repeat a request without end (identifying again and
    /// again, say); past these, reports are only counted and the count is
    /// given out each time it doubles, so the log grows with the logarithm
    /// of what the head unit sends, not with it (as Connection's
    /// `problemsReportedPerLink`). Packets, loads and verifications are
    /// never held back.
    public static let reportsPerConnection = 32
    /// How often a playing track's position is notified.
    public static let positionInterval = Duration.milliseconds(500)

    private enum Authentication: Hashable, Sendable {
        case none
        case awaitingCertificate(received: [UInt8], nextSection: UInt8)
        case verifyingCertificate([UInt8])
        case awaitingSignature(certificate: [UInt8], challenge: [UInt8], summary: String)
        case verifyingSignature(summary: String)
        case succeeded
        case failed
    }

    /// Where an answer goes: the command it answers and the transaction id to echo.
    public struct Reply: Hashable, Sendable {
        var transactionID: UInt16?
        var command: UInt16
    }

    private enum TextField: Hashable, Sendable { case title, artist, album }

    private enum Purpose: Hashable, Sendable {
        case level(path: [String])
        case play(Reply)
        case queueTitle(Reply)
        case queuePlay(Reply)
    }

    /// A request on the content tree, held until its level has loaded.
    private enum LevelRequest: Hashable, Sendable {
        case count(Category?)
        case retrieve(Category?, start: Int32, count: Int32)
        case select(Category?, index: Int32)
        case play(index: Int32)
    }

    private struct Level: Sendable {
        /// Container ids from the tabs down; empty: the tabs.
        var path: [String] = []
        var items: [ContentItem]?
        var token: UInt32?
        var waiting: [(request: LevelRequest, reply: Reply)] = []
    }

    /// The IDPS exchange in progress: what the Identify token said.
    private struct IDPS: Sendable {
        var lingoes: UInt32?
        var options: UInt32 = 0
    }

    public let identity: Identity
    public let appName: String
    public let loadTimeout: Duration
    /// Whether the head unit's certificate and signature go to the edge's
    /// verifier, and the Extended Interface waits for them to pass; when
    /// false they are acknowledged unchecked (and logged).
    public let verifies: Bool

    /// Whether the head unit's packets carry transaction ids: decided by how
    /// it identified.
    private var transactions = IAP1TransactionTracker()
    public var usesTransactionIDs: Bool { transactions.mode == .present }
    /// The lingoes the head unit identified with, as a bit mask (bit N: lingo N).
    public private(set) var lingoes: UInt32 = 0
    public private(set) var isInRemoteUIMode = false
    /// The notification mask (SetPlayStatusChangeNotification's bits).
    public private(set) var notifications: UInt32 = 0
    public private(set) var nowPlaying = NowPlayingInfo()
    private var nowPlayingAt = LinkInstant.zero
    private var idps: IDPS?
    private var authenticationRequested = false
    private var authentication = Authentication.none
    /// The id of the last verification asked for: a verdict on an earlier
    /// one (a head unit that identified again meanwhile) must never pass
    /// for the current certificate's or signature's.
    private var verification: UInt32 = 0
    /// Whether the edge's verifier is checking something for this phone: at
    /// most one verification runs at a time, whatever the head unit sends.
    private var verifying = false
    /// The latest verification asked for while another ran (it supersedes
    /// any earlier one waiting): asked for when the running one is answered.
    private var waitingVerification: VerificationRequest?
    private var nextTransactionID: UInt16 = 0
    private var level = Level()
    private var pending: [UInt32: (purpose: Purpose, deadline: LinkInstant)] = [:]
    private var nextToken: UInt32 = 1
    private var nextPositionAt: LinkInstant?
    private var lastSecondNotified: UInt32?
    private var seekingBackward = false
    /// Kinds of ignored packet already logged (once each).
    private var logged: Set<String> = []
    /// Log lines and events given out on this connection (see `reportsPerConnection`).
    private var reports = 0

    public init(appName: String, identity: Identity = Identity(), verifies: Bool, loadTimeout: Duration = .seconds(5)) {
        self.appName = appName
        self.identity = identity
        self.verifies = verifies
        self.loadTimeout = loadTimeout
    }

    // What a driver reads after every input is stored, kept current by
    // `capped` (every input ends there), not computed by a getter: called
    // from another module, a getter of this struct works on a copy of it.

    /// Whether the head unit has identified (named its lingoes).
    public private(set) var isIdentified = false

    public var isAuthenticated: Bool { authentication == .succeeded }

    /// The earliest time `tick` has something to do.
    public private(set) var nextDeadline: LinkInstant?

    private mutating func refreshReadings() {
        isIdentified = lingoes != 0
        var next = nextPositionAt
        for entry in pending.values where next.map({ entry.deadline < $0 }) ?? true { next = entry.deadline }
        nextDeadline = next
    }

    // MARK: Inputs

    /// A frame's payload (lingo, command, [transaction id,] data) from the head unit.
    public mutating func received(_ payload: [UInt8], now: LinkInstant) -> [Output] {
        capped(handle(payload, now: now))
    }

    private mutating func handle(_ payload: [UInt8], now: LinkInstant) -> [Output] {
        let packet: IAP1Packet
        do {
            // StartIDPS switches transaction ids on, IdentifyDeviceLingoes off.
            packet = try transactions.packet(fromPayload: payload)
        } catch {
            return ignore("an iAP1 packet that does not parse: \(error)", kind: "unparsable")
        }
        // Before the head unit identifies, its requests are refused as bad
        // parameters (older head units ask something first to see whether
        // anything answers).
        switch packet.lingo {
        case General.lingo: return general(packet, now: now)
        case Extended.lingo: return extended(packet, now: now)
        default: return ignore("lingo 0x\(hex(packet.lingo)) (this phone serves General and Extended Interface)", kind: "lingo \(packet.lingo)")
        }
    }

    /// What is playing, read from the app after every input: notifications
    /// for what changed go to a head unit that asked for them.
    public mutating func setNowPlaying(_ info: NowPlayingInfo, now: LinkInstant) -> [Output] {
        capped(nowPlayingChanged(info, now: now))
    }

    private mutating func nowPlayingChanged(_ info: NowPlayingInfo, now: LinkInstant) -> [Output] {
        let before = nowPlaying
        nowPlaying = info
        nowPlayingAt = now
        guard lingoes & 1 << Extended.lingo != 0, notifications != 0 else {
            nextPositionAt = nil
            return []
        }
        var outputs: [Output] = []
        if Self.trackChanged(from: before, to: info), enabled(Notification.trackIndexBit) {
            outputs.append(notify(Notification.trackIndex, u32(currentIndex)))
        }
        if before.state != info.state {
            if enabled(Notification.extendedStatusBit) { outputs.append(notify(Notification.extendedStatus, [Self.extendedStatus(info.state)])) }
            if info.state == .stopped, enabled(Notification.basicBit) { outputs.append(notify(Notification.stopped, [])) }
        }
        if before.queueCount != info.queueCount, enabled(Notification.contentsBit) {
            outputs.append(notify(Notification.contentsChanged, u32(info.queueCount ?? 0)))
        }
        if before.state != info.state || Self.trackChanged(from: before, to: info) {
            outputs += position(now: now, always: true)
        }
        schedulePosition(now: now)
        return outputs
    }

    /// The app's answer to a load.
    public mutating func complete(token: UInt32, with result: PhoneMediaRole.LoadResult, now: LinkInstant) -> [Output] {
        capped(completeLoad(token: token, with: result, now: now))
    }

    private mutating func completeLoad(token: UInt32, with result: PhoneMediaRole.LoadResult, now: LinkInstant) -> [Output] {
        guard let entry = pending.removeValue(forKey: token) else { return [] }
        switch entry.purpose {
        case .level(let path):
            guard level.path == path, level.token == token else { return [] }
            level.token = nil
            guard case .page(let items, _, _) = result else {
                return levelFailed(Self.failureText(result))
            }
            level.items = Array(items.prefix(Self.levelLimit))
            let waiting = level.waiting
            level.waiting = []
            var outputs: [Output] = []
            for (request, reply) in waiting { outputs += answer(request, reply: reply, now: now) }
            return outputs
        case .play(let reply):
            if case .done = result { return [extendedAck(.success, reply)] }
            return [extendedAck(.commandFailed, reply), .log("playing for the iAP1 head unit failed: \(Self.failureText(result))")]
        case .queueTitle(let reply):
            guard case .queue(let items, _, _) = result, let item = items.first else {
                return [extendedAck(.commandFailed, reply), .log("the playing queue's title: \(Self.failureText(result))")]
            }
            return [.send(response(Extended.lingo, reply.command + 1, string(item.text), replyingTo: reply))]
        case .queuePlay(let reply):
            guard case .queue(let items, _, _) = result, let item = items.first else {
                return [extendedAck(.commandFailed, reply), .log("the playing queue's item: \(Self.failureText(result))")]
            }
            return play(item, reply: reply, now: now)
        }
    }

    /// The edge's verifier answered the verification `id`.
    public mutating func verified(id: UInt32, _ answer: VerificationAnswer, now: LinkInstant) -> [Output] {
        capped(verdict(id: id, answer))
    }

    private mutating func verdict(id: UInt32, _ answer: VerificationAnswer) -> [Output] {
        // The verifier is free: what waited for it goes now.
        verifying = false
        var next: [Output] = []
        if let waiting = waitingVerification {
            waitingVerification = nil
            verifying = true
            next = [.verify(id: verification, waiting)]
        }
        guard id == verification else { return next + [.log("a verdict on an earlier verification was dropped")] }
        switch (authentication, answer) {
        case (.verifyingCertificate(let certificate), .certificateAccepted(let summary, let challenge)):
            authentication = .awaitingSignature(certificate: certificate, challenge: challenge, summary: summary)
            return [.send(own(General.lingo, General.ackDevAuthenticationInfo, [LegacyStatus.success.rawValue])),
                    .send(own(General.lingo, General.getDevAuthenticationSignature, challenge + [1]))]
        case (.verifyingCertificate, .certificateRejected(let reason)):
            authentication = .failed
            return [.send(own(General.lingo, General.ackDevAuthenticationInfo, [LegacyStatus.certificateInvalid.rawValue])),
                    .event(.authenticationFailed("certificate rejected: \(reason)"))]
        case (.verifyingSignature(let summary), .responseValid):
            authentication = .succeeded
            return [.send(own(General.lingo, General.ackDevAuthenticationStatus, [0x00])), .event(.authenticated(summary))]
        case (.verifyingSignature(let summary), .responseVerified(let reading)):
            authentication = .succeeded
            return [.send(own(General.lingo, General.ackDevAuthenticationStatus, [0x00])),
                    .event(.authenticated("\(summary); the signature holds for \(reading)"))]
        case (.verifyingSignature, .responseInvalid(let reason)):
            authentication = .failed
            return [.send(own(General.lingo, General.ackDevAuthenticationStatus, [0x01])), .event(.authenticationFailed("signature invalid: \(reason)"))]
        default:
            return [.log("a verification answer nothing waits for was dropped")]
        }
    }

    /// Times out loads and sends the playing track's position.
    public mutating func tick(now: LinkInstant) -> [Output] {
        var outputs: [Output] = []
        for (token, entry) in pending.sorted(by: { $0.key < $1.key }) where entry.deadline <= now {
            outputs += completeLoad(token: token, with: .failed(.timedOut, "the app did not answer within \(loadTimeout)"), now: now)
        }
        if let at = nextPositionAt, at <= now {
            outputs += position(now: now, always: false)
            schedulePosition(now: now)
        }
        return capped(outputs)
    }

    // MARK: General lingo

    private mutating func general(_ packet: IAP1Packet, now: LinkInstant) -> [Output] {
        let reply = Reply(transactionID: packet.transactionID, command: packet.command)
        let data = packet.data
        switch packet.command {
        case General.identify:
            guard let lingo = data.first, lingo < 32 else { return [generalAck(.badParameter, reply)] }
            // Deprecated; no answer. Identifying with lingo 4 enters remote UI mode at once.
            var outputs = identify(lingoes: 1 | 1 << UInt32(lingo), idps: false, authenticating: false)
            transactions = IAP1TransactionTracker(mode: .absent)
            isInRemoteUIMode = lingo == Extended.lingo
            outputs.append(.log("the iAP1 head unit identified with the deprecated Identify (lingo 0x\(hex(lingo)))"))
            return outputs
        case General.identifyDeviceLingoes:
            guard data.count >= 12 else { return [generalAck(.badParameter, reply)] }
            let named = u32(data, at: 0), options = u32(data, at: 4), deviceID = u32(data, at: 8)
            guard named & 1 != 0 else { return [generalAck(.commandFailed, reply), .log("IdentifyDeviceLingoes without the General lingo")] }
            let authenticating: Bool
            switch options & 3 {
            case 0: authenticating = false
            case 2: authenticating = true
            default: return [generalAck(.badParameter, reply), .log("IdentifyDeviceLingoes asks for deferred or reserved authentication (options 0x\(String(options, radix: 16)))")]
            }
            guard !authenticating || deviceID != 0 else {
                return [generalAck(.commandFailed, reply), .log("IdentifyDeviceLingoes asks for authentication without a device id")]
            }
            var outputs = identify(lingoes: named, idps: false, authenticating: authenticating)
            outputs.insert(generalAck(.success, reply), at: 0)
            if authenticating { outputs += startAuthentication() }
            return outputs
        case General.startIDPS:
            reset()
            idps = IDPS()
            return [generalAck(.success, reply)]
        case General.setFIDTokenValues:
            guard idps != nil else { return [generalAck(.badParameter, reply)] }
            return [.send(response(General.lingo, General.retFIDTokenValueAcks, tokenAcks(data), replyingTo: reply))]
        case General.endIDPS:
            guard let state = idps, let status = data.first else { return [generalAck(.badParameter, reply)] }
            idps = nil
            switch status {
            case 0:
                guard let named = state.lingoes, named & 1 != 0 else {
                    return [.send(response(General.lingo, General.idpsStatus, [0x02], replyingTo: reply)), .log("EndIDPS without an Identify token")]
                }
                let authenticating = state.options & 3 == 2
                var outputs: [Output] = [.send(response(General.lingo, General.idpsStatus, [0x00], replyingTo: reply))]
                outputs += identify(lingoes: named, idps: true, authenticating: authenticating)
                if authenticating { outputs += startAuthentication() }
                return outputs
            case 1: return [.send(response(General.lingo, General.idpsStatus, [0x04], replyingTo: reply))]
            case 2: return [.send(response(General.lingo, General.idpsStatus, [0x06], replyingTo: reply))]
            case 3: return [.send(response(General.lingo, General.idpsStatus, [0x07], replyingTo: reply))]
            default: return [generalAck(.badParameter, reply)]
            }
        case General.retDevAuthenticationInfo:
            return certificateSection(data, reply: reply)
        case General.retDevAuthenticationSignature:
            guard case .awaitingSignature(let certificate, let challenge, let summary) = authentication else {
                return [generalAck(.badParameter, reply)]
            }
            authentication = .verifyingSignature(summary: summary)
            return verify(.response(data, challenge: challenge, certificate: certificate))
        default:
            break
        }
        // What the phone says of itself: answered once the head unit has
        // identified, and during IDPS, as a real iPod does (a head unit asks
        // for options and the payload size between StartIDPS and EndIDPS).
        if isIdentified || idps != nil, let answer = describe(packet, reply: reply) { return answer }
        // Requests that need the head unit identified.
        guard isIdentified else { return [generalAck(.badParameter, reply)] }
        switch packet.command {
        case General.requestRemoteUIMode:
            guard servesExtended else { return [generalAck(.badParameter, reply)] }
            return [.send(response(General.lingo, General.returnRemoteUIMode, [isInRemoteUIMode ? 1 : 0], replyingTo: reply))]
        case General.enterRemoteUIMode, General.exitRemoteUIMode:
            guard servesExtended else { return [generalAck(.badParameter, reply)] }
            isInRemoteUIMode = packet.command == General.enterRemoteUIMode
            return [generalAck(.success, reply)]
        default:
            return [generalAck(.badParameter, reply), .log("General lingo command 0x\(hex(UInt8(truncatingIfNeeded: packet.command))) is not served")]
        }
    }

    /// The General lingo's questions about the phone itself (name, versions,
    /// options, payload size, preferences, notifications it can send), or
    /// nil for any other command.
    private func describe(_ packet: IAP1Packet, reply: Reply) -> [Output]? {
        let data = packet.data
        switch packet.command {
        case General.requestName:
            return [.send(response(General.lingo, General.returnName, string(identity.name), replyingTo: reply))]
        case General.requestSoftwareVersion:
            return [.send(response(General.lingo, General.returnSoftwareVersion, Array((identity.softwareVersion + [0, 0, 0]).prefix(3)), replyingTo: reply))]
        case General.requestSerialNumber:
            return [.send(response(General.lingo, General.returnSerialNumber, string(identity.serialNumber), replyingTo: reply))]
        case General.requestModelNumber:
            return [.send(response(General.lingo, General.returnModelNumber, u32(identity.modelID) + string(identity.modelNumber), replyingTo: reply))]
        case General.requestLingoProtocolVersion:
            let versions: [UInt8: [UInt8]] = [General.lingo: [1, 9], Extended.lingo: [1, 12]]
            guard let lingo = data.first, let version = versions[lingo] else { return [generalAck(.badParameter, reply)] }
            return [.send(response(General.lingo, General.returnLingoProtocolVersion, [lingo] + version, replyingTo: reply))]
        case General.requestTransportMaxPayloadSize:
            return [.send(response(General.lingo, General.returnTransportMaxPayloadSize, u16(Self.maximumPayloadSize), replyingTo: reply))]
        case General.getOptions:
            return [.send(response(General.lingo, General.returnOptions, Array(repeating: 0, count: 8), replyingTo: reply))]
        case General.getOptionsForLingo:
            // Every lingo a head unit may ask about is answered, as a real
            // iPod does: its options, none for a lingo the phone does not
            // serve. A refusal here makes a head unit give up (a Pioneer
            // AVH-4200NEX asks for lingoes 0, 2, 3, 4, 0x0A and 0x0C during IDPS).
            guard let lingo = data.first else { return [generalAck(.badParameter, reply)] }
            return [.send(response(General.lingo, General.retOptionsForLingo, [lingo] + u64(Self.options(lingo: lingo)), replyingTo: reply))]
        case General.getPreferences:
            // No video or line-out settings to keep: every class's setting is 0.
            guard let preferenceClass = data.first else { return [generalAck(.badParameter, reply)] }
            return [.send(response(General.lingo, General.retPreferences, [preferenceClass, 0], replyingTo: reply))]
        case General.getSupportedEventNotification:
            // The phone sends no iPodNotification events.
            return [.send(response(General.lingo, General.retSupportedEventNotification, u64(0), replyingTo: reply))]
        default:
            return nil
        }
    }

    /// RetiPodOptionsForLingo's bits: the Extended Interface's nested
    /// playlists (bit 2) and PlayControl (bit 6); nothing claimed for the
    /// General lingo (no video or line-out) or any lingo the phone does not serve.
    static func options(lingo: UInt8) -> UInt64 {
        lingo == Extended.lingo ? 1 << 2 | 1 << 6 : 0
    }

    private var servesExtended: Bool { lingoes & 1 << Extended.lingo != 0 }

    /// Forgets the head unit's earlier identification and everything that followed it.
    private mutating func reset() {
        nextTransactionID = 0
        lingoes = 0
        isInRemoteUIMode = false
        notifications = 0
        nextPositionAt = nil
        idps = nil
        authenticationRequested = false
        authentication = .none
        // A check still running is answered (and its verdict dropped); one
        // that waited belonged to the earlier identification.
        waitingVerification = nil
        level = Level()
        pending = [:]
    }

    private mutating func identify(lingoes named: UInt32, idps: Bool, authenticating: Bool) -> [Output] {
        reset()
        lingoes = named
        authenticationRequested = authenticating
        let list = (0..<32).filter { named & 1 << UInt32($0) != 0 }.map(UInt8.init)
        var outputs: [Output] = [.event(.identified(lingoes: list, idps: idps, authenticating: authenticating))]
        if !servesExtended { outputs.append(.log("the iAP1 head unit did not name the Extended Interface lingo: only General is served")) }
        return outputs
    }

    private mutating func startAuthentication() -> [Output] {
        authentication = .awaitingCertificate(received: [], nextSection: 0)
        return [.send(own(General.lingo, General.getDevAuthenticationInfo, []))]
    }

    /// RetDevAuthenticationInfo: version 2.0, the certificate in numbered sections.
    private mutating func certificateSection(_ data: [UInt8], reply: Reply) -> [Output] {
        guard case .awaitingCertificate(let received, let next) = authentication else { return [generalAck(.badParameter, reply)] }
        guard data.count >= 2 else { return [generalAck(.badParameter, reply)] }
        guard data[0] == 2, data[1] == 0, data.count >= 4 else {
            authentication = .failed
            return [.send(own(General.lingo, General.ackDevAuthenticationInfo, [LegacyStatus.badAuthenticationVersion.rawValue])),
                    .event(.authenticationFailed("authentication version \(data[0]).\(data[1]) is not served (2.0 is)"))]
        }
        let section = data[2], last = data[3]
        guard section == next, section <= last else { return [generalAck(.badParameter, reply)] }
        let certificate = received + data[4...]
        guard certificate.count <= Self.maximumCertificateLength else {
            authentication = .failed
            return [.send(own(General.lingo, General.ackDevAuthenticationInfo, [LegacyStatus.badParameter.rawValue])),
                    .event(.authenticationFailed("a certificate over \(Self.maximumCertificateLength) bytes"))]
        }
        guard section == last else {
            authentication = .awaitingCertificate(received: certificate, nextSection: next + 1)
            return [generalAck(.success, reply)]
        }
        guard verifies else {
            authentication = .succeeded
            return [.send(own(General.lingo, General.ackDevAuthenticationInfo, [LegacyStatus.success.rawValue])),
                    .send(own(General.lingo, General.ackDevAuthenticationStatus, [0x00])),
                    .event(.authenticated("not checked: this phone does not verify accessories (\(certificate.count)-byte certificate)"))]
        }
        authentication = .verifyingCertificate(certificate)
        return verify(.certificate(certificate))
    }

    /// RetFIDTokenValueACKs for SetFIDTokenValues: each token accepted,
    /// refused as malformed, or named unsupported; the Identify token kept.
    private mutating func tokenAcks(_ data: [UInt8]) -> [UInt8] {
        guard let count = data.first else { return [0] }
        var acks: [UInt8] = []
        var acknowledged: UInt8 = 0
        var index = 1
        for _ in 0..<count {
            guard index < data.count else { break }
            let length = Int(data[index])
            guard length >= 2, index + 1 + length <= data.count else { break }
            let type = data[index + 1], subtype = data[index + 2]
            let body = Array(data[(index + 3)..<(index + 1 + length)])
            index += 1 + length
            var status: UInt8 = 0x00
            var extra: [UInt8] = []
            switch (type, subtype) {
            case (0x00, 0x00):
                // Identify: lingo count, lingo ids, options, device id.
                if let n = body.first, body.count >= 1 + Int(n) + 8 {
                    var named: UInt32 = 0
                    for lingo in body[1..<(1 + Int(n))] where lingo < 32 { named |= 1 << UInt32(lingo) }
                    idps?.lingoes = named
                    idps?.options = u32(body, at: 1 + Int(n))
                } else {
                    status = 0x01
                }
            case (0x00, 0x02), (0x00, 0x03), (0x00, 0x04):
                // AccInfo, iPodPreference and EAProtocol echo their first byte.
                extra = [body.first ?? 0]
            case (0x00, 0x01), (0x00, 0x05), (0x00, 0x07), (0x00, 0x08), (0x00, 0x0E), (0x00, 0x0F), (0x01, 0x00):
                break
            default:
                status = 0x03
            }
            acks += [UInt8(3 + extra.count), type, subtype, status] + extra
            acknowledged += 1
        }
        return [acknowledged] + acks
    }

    // MARK: Extended Interface lingo

    private mutating func extended(_ packet: IAP1Packet, now: LinkInstant) -> [Output] {
        let reply = Reply(transactionID: packet.transactionID, command: packet.command)
        let data = packet.data
        guard servesExtended else { return [extendedAck(.badParameter, reply)] }
        // A phone that verifies accessories (authentication on) serves no
        // media to a head unit that has not authenticated, as iAP2 does: every
        // Extended Interface command waits for a successful authentication
        // and, after a rejected certificate or signature, stays refused. One
        // that does not verifies still refuses what a real iPod serves only to
        // an authenticated accessory (0x003B on).
        if verifies || packet.command >= Extended.firstAuthenticatedCommand, !isAuthenticated {
            return [extendedAck(.notAuthenticated, reply)]
        }
        switch packet.command {
        case Extended.getChapterInfo:
            return [send(Extended.returnChapterInfo, u32(UInt32.max) + u32(0), reply)]
        case Extended.requestProtocolVersion:
            return [send(Extended.returnProtocolVersion, [1, 12], reply)]
        case Extended.requestName:
            return [send(Extended.returnName, string(identity.name), reply)]
        case Extended.resetDBSelection:
            level = Level()
            return [extendedAck(.success, reply)]
        case Extended.selectDBRecord, Extended.selectSortDBRecord:
            guard data.count >= 5 else { return [extendedAck(.badParameter, reply)] }
            let category = Category(rawValue: data[0]), index = Int32(bitPattern: u32(data, at: 1))
            if index == -1, category == .playlist || category == .nestedPlaylist {
                // Up a level, as Menu does; at the top it stays there.
                if !level.path.isEmpty { level = Level(path: level.path.dropLast()) }
                return [extendedAck(.success, reply)]
            }
            return onLevel(.select(category, index: index), reply: reply, now: now)
        case Extended.getNumberCategorizedDBRecords:
            guard data.count >= 1 else { return [extendedAck(.badParameter, reply)] }
            return onLevel(.count(Category(rawValue: data[0])), reply: reply, now: now)
        case Extended.retrieveCategorizedDatabaseRecords:
            guard data.count >= 9 else { return [extendedAck(.badParameter, reply)] }
            return onLevel(.retrieve(Category(rawValue: data[0]), start: Int32(bitPattern: u32(data, at: 1)), count: Int32(bitPattern: u32(data, at: 5))),
                           reply: reply, now: now)
        case Extended.playCurrentSelection:
            guard data.count >= 4 else { return [extendedAck(.badParameter, reply)] }
            return onLevel(.play(index: Int32(bitPattern: u32(data, at: 0))), reply: reply, now: now)
        case Extended.getPlayStatus:
            let state: UInt8
            switch nowPlaying.state {
            case .playing: state = 1
            case .paused, .interrupted: state = 2
            case .stopped, .unknown: state = 0
            }
            let playing = state != 0 && nowPlaying.title != nil
            let elapsed = playing ? NowPlayingModel.extrapolate(nowPlaying, from: nowPlayingAt, to: now) : 0
            return [send(Extended.returnPlayStatus, u32(playing ? nowPlaying.durationMilliseconds ?? 0 : 0) + u32(elapsed) + [playing ? state : 0], reply)]
        case Extended.getCurrentPlayingTrackIndex:
            return [send(Extended.returnCurrentPlayingTrackIndex, u32(currentIndex), reply)]
        case Extended.getNumPlayingTracks:
            return [send(Extended.returnNumPlayingTracks, u32(playingTrackCount), reply)]
        case Extended.getIndexedPlayingTrackTitle, Extended.getIndexedPlayingTrackArtist, Extended.getIndexedPlayingTrackAlbum:
            guard data.count >= 4 else { return [extendedAck(.badParameter, reply)] }
            let field: TextField = packet.command == Extended.getIndexedPlayingTrackTitle ? .title
                : packet.command == Extended.getIndexedPlayingTrackArtist ? .artist : .album
            return indexedTrack(field, index: u32(data, at: 0), reply: reply, now: now)
        case Extended.setPlayStatusChangeNotification:
            switch data.count {
            case 1: notifications = data[0] == 0 ? 0 : Notification.oneByteEnable
            case 4...: notifications = u32(data, at: 0)
            default: return [extendedAck(.badParameter, reply)]
            }
            schedulePosition(now: now)
            return [extendedAck(.success, reply)]
        case Extended.playControl:
            guard let code = data.first else { return [extendedAck(.badParameter, reply)] }
            return playControl(code, reply: reply)
        case Extended.getShuffle:
            return [send(Extended.returnShuffle, [nowPlaying.shuffleMode.rawValue], reply)]
        case Extended.setShuffle:
            guard let raw = data.first, let mode = ShuffleMode(rawValue: raw) else { return [extendedAck(.badParameter, reply)] }
            return [.perform(.changeShuffleMode(mode), reply: reply)]
        case Extended.getRepeat:
            return [send(Extended.returnRepeat, [nowPlaying.repeatMode.rawValue], reply)]
        case Extended.setRepeat:
            guard let raw = data.first, let mode = RepeatMode(rawValue: raw) else { return [extendedAck(.badParameter, reply)] }
            return [.perform(.changeRepeatMode(mode), reply: reply)]
        case Extended.setCurrentPlayingTrack:
            guard data.count >= 4 else { return [extendedAck(.badParameter, reply)] }
            let index = u32(data, at: 0)
            guard nowPlaying.title != nil, nowPlaying.state != .stopped, index < playingTrackCount else { return [extendedAck(.badParameter, reply)] }
            return startLoad(.queuePlay(reply), .queue(offset: Int(index), count: 1), reply: reply, now: now)
        case Extended.resetDBSelectionHierarchy:
            guard data.first == 1 else { return [extendedAck(.badParameter, reply)] }
            level = Level()
            return [extendedAck(.success, reply)]
        default:
            return [extendedAck(.badParameter, reply), .log("Extended Interface command 0x\(String(packet.command, radix: 16)) is not served")]
        }
    }

    private func playControl(_ code: UInt8, reply: Reply) -> [Output] {
        let command: RemoteCommand
        switch code {
        case 0x01: command = .togglePlayPause
        case 0x02: command = .stop
        case 0x03, 0x08: command = .nextTrack
        case 0x04, 0x09: command = .previousTrack
        case 0x05: command = .seekForward(begin: true)
        case 0x06: command = .seekBackward(begin: true)
        case 0x07: command = seekingBackward ? .seekBackward(begin: false) : .seekForward(begin: false)
        case 0x0A, 0x0E: command = .play
        case 0x0B: command = .pause
        case 0x0C, 0x0D: return [extendedAck(.commandFailed, reply)]  // no chapters
        default: return [extendedAck(.badParameter, reply)]
        }
        return [.perform(command, reply: reply)]
    }

    /// The app ran (or could not run) a command asked for with `.perform`:
    /// its acknowledgement.
    public mutating func performed(_ status: RequestStatus, reply: Reply) -> [Output] {
        capped([extendedAck(Self.status(status), reply)])
    }

    // MARK: The playing queue

    /// The index of the playing track in the queue; -1 when nothing plays.
    private var currentIndex: UInt32 {
        guard nowPlaying.title != nil, nowPlaying.state != .stopped, nowPlaying.state != .unknown else { return UInt32.max }
        return nowPlaying.queueIndex ?? 0
    }

    private var playingTrackCount: UInt32 {
        guard nowPlaying.title != nil else { return 0 }
        // The app's index may be anything, the last value included.
        let (afterIndex, overflow) = (nowPlaying.queueIndex ?? 0).addingReportingOverflow(1)
        return max(nowPlaying.queueCount ?? 1, overflow ? .max : afterIndex)
    }

    private mutating func indexedTrack(_ field: TextField, index: UInt32, reply: Reply, now: LinkInstant) -> [Output] {
        guard index < playingTrackCount else { return [extendedAck(.badParameter, reply)] }
        if index == currentIndex {
            let text: String? = switch field {
            case .title: nowPlaying.title
            case .artist: nowPlaying.artist
            case .album: nowPlaying.albumTitle
            }
            return [send(reply.command + 1, string(text ?? ""), reply)]
        }
        // The queue's items carry a title only.
        guard field == .title else { return [send(reply.command + 1, string(""), reply)] }
        return startLoad(.queueTitle(reply), .queue(offset: Int(index), count: 1), reply: reply, now: now)
    }

    // MARK: The content tree as nested playlists

    private mutating func onLevel(_ request: LevelRequest, reply: Reply, now: LinkInstant) -> [Output] {
        if level.items != nil { return answer(request, reply: reply, now: now) }
        guard level.waiting.count < Self.maximumWaitingRequests else {
            return [extendedAck(.commandFailed, reply), .log("\(Self.maximumWaitingRequests) requests already wait for the content tree")]
        }
        level.waiting.append((request, reply))
        guard level.token == nil else { return [] }
        guard pending.count < Self.maximumPendingLoads else { return levelFailed("\(Self.maximumPendingLoads) loads already wait for the app") }
        let token = takeToken()
        level.token = token
        pending[token] = (.level(path: level.path), now + loadTimeout)
        let request: PhoneMediaRole.LoadRequest = level.path.last.map { .children(containerID: $0, offset: 0, count: Self.levelLimit) } ?? .tabs
        return [.load(token: token, request)]
    }

    private mutating func levelFailed(_ reason: String) -> [Output] {
        let waiting = level.waiting
        level.waiting = []
        level.token = nil
        return waiting.map { extendedAck(.commandFailed, $0.reply) } + [.log("the content tree for the iAP1 head unit: \(reason)")]
    }

    /// The records of a category at the current level.
    private func records(_ category: Category?) -> [ContentItem] {
        guard let items = level.items, let category else { return [] }
        switch category {
        case .playlist, .nestedPlaylist: return items.filter { $0.kind == .container && $0.isEnabled && $0.imageRow == nil }
        case .track: return items.filter { $0.kind == .playable && $0.isEnabled && $0.imageRow == nil }
        }
    }

    private mutating func answer(_ request: LevelRequest, reply: Reply, now: LinkInstant) -> [Output] {
        switch request {
        case .count(let category):
            return [send(Extended.returnNumberCategorizedDBRecords, u32(UInt32(records(category).count)), reply)]
        case .retrieve(let category, let start, let count):
            let list = records(category)
            guard start >= 0, count >= -1, Int(start) < list.count else { return [extendedAck(.badParameter, reply)] }
            let end = count == -1 ? list.count : min(list.count, Int(start) + Int(count))
            // Records are the answer; asking for none is still answered.
            guard end > Int(start) else { return [extendedAck(.success, reply)] }
            return (Int(start)..<end).map { index in
                send(Extended.returnCategorizedDatabaseRecord, u32(UInt32(index)) + string(list[index].text), reply)
            }
        case .select(let category, let index):
            guard let category else { return [extendedAck(.badParameter, reply)] }
            let list = records(category)
            switch category {
            case .playlist, .nestedPlaylist:
                guard index >= 0, Int(index) < list.count else { return [extendedAck(.badParameter, reply)] }
                level = Level(path: level.path + [list[Int(index)].id])
                return [extendedAck(.success, reply)]
            case .track:
                guard index >= 0, Int(index) < list.count else { return [extendedAck(.badParameter, reply)] }
                return play(list[Int(index)], reply: reply, now: now)
            }
        case .play(let index):
            let list = records(.track)
            let position = index == -1 ? 0 : Int(index)
            guard position >= 0, position < list.count else { return [extendedAck(.badParameter, reply)] }
            return play(list[position], reply: reply, now: now)
        }
    }

    private mutating func play(_ item: ContentItem, reply: Reply, now: LinkInstant) -> [Output] {
        startLoad(.play(reply), .play(itemID: item.id, imageRowEntryID: nil), reply: reply, now: now)
    }

    private mutating func startLoad(_ purpose: Purpose, _ request: PhoneMediaRole.LoadRequest, reply: Reply, now: LinkInstant) -> [Output] {
        guard pending.count < Self.maximumPendingLoads else {
            return [extendedAck(.commandFailed, reply), .log("\(Self.maximumPendingLoads) loads already wait for the app")]
        }
        let token = takeToken()
        pending[token] = (purpose, now + loadTimeout)
        return [.load(token: token, request)]
    }

    private mutating func takeToken() -> UInt32 {
        defer { nextToken &+= 1 }
        return nextToken
    }

    // MARK: Notifications

    private func enabled(_ bit: UInt32) -> Bool { notifications & bit != 0 }

    private mutating func notify(_ type: UInt8, _ data: [UInt8]) -> Output {
        .send(own(Extended.lingo, Extended.playStatusChangeNotification, [type] + data))
    }

    /// The playing track's position, in milliseconds and (when its second
    /// changed, or `always`) in seconds, as enabled.
    private mutating func position(now: LinkInstant, always: Bool) -> [Output] {
        guard nowPlaying.title != nil else { return [] }
        let elapsed = NowPlayingModel.extrapolate(nowPlaying, from: nowPlayingAt, to: now)
        var outputs: [Output] = []
        if enabled(Notification.trackMillisecondsBit) { outputs.append(notify(Notification.trackPositionMilliseconds, u32(elapsed))) }
        let second = elapsed / 1000
        if enabled(Notification.trackSecondsBit), always || lastSecondNotified != second {
            lastSecondNotified = second
            outputs.append(notify(Notification.trackPositionSeconds, u32(second)))
        }
        return outputs
    }

    private mutating func schedulePosition(now: LinkInstant) {
        let wanted = enabled(Notification.trackMillisecondsBit) || enabled(Notification.trackSecondsBit)
        guard wanted, servesExtended, nowPlaying.state == .playing, nowPlaying.title != nil else {
            nextPositionAt = nil
            return
        }
        if nextPositionAt.map({ $0 <= now }) ?? true { nextPositionAt = now + Self.positionInterval }
    }

    private static func trackChanged(from before: NowPlayingInfo, to after: NowPlayingInfo) -> Bool {
        before.itemID != after.itemID || before.title != after.title || before.queueIndex != after.queueIndex
    }

    private static func extendedStatus(_ state: NowPlayingInfo.PlaybackState) -> UInt8 {
        switch state {
        case .playing: 0x0A
        case .paused, .interrupted: 0x0B
        case .stopped, .unknown: 0x02
        }
    }

    // MARK: Packets

    /// An answer: it echoes the request's transaction id.
    private func response(_ lingo: UInt8, _ command: UInt16, _ data: [UInt8], replyingTo reply: Reply) -> IAP1Packet {
        IAP1Packet(lingo: lingo, command: command, transactionID: usesTransactionIDs ? reply.transactionID ?? 0 : nil, data: data)
    }

    private func send(_ command: UInt16, _ data: [UInt8], _ reply: Reply) -> Output {
        .send(response(Extended.lingo, command, data, replyingTo: reply))
    }

    /// A packet the phone starts: its own next transaction id, when they are used.
    private mutating func own(_ lingo: UInt8, _ command: UInt16, _ data: [UInt8]) -> IAP1Packet {
        var transactionID: UInt16?
        if usesTransactionIDs {
            nextTransactionID &+= 1
            transactionID = nextTransactionID
        }
        return IAP1Packet(lingo: lingo, command: command, transactionID: transactionID, data: data)
    }

    /// Asks the verifier, or, while it checks something else, keeps the
    /// request (the latest only) until it answers: a head unit that sends
    /// certificate after certificate starts one check at a time.
    private mutating func verify(_ request: VerificationRequest) -> [Output] {
        verification &+= 1
        guard !verifying else {
            waitingVerification = request
            return []
        }
        verifying = true
        return [.verify(id: verification, request)]
    }

    private func generalAck(_ status: LegacyStatus, _ reply: Reply) -> Output {
        .send(response(General.lingo, General.ack, [status.rawValue, UInt8(truncatingIfNeeded: reply.command)], replyingTo: reply))
    }

    private func extendedAck(_ status: LegacyStatus, _ reply: Reply) -> Output {
        .send(response(Extended.lingo, Extended.ack, [status.rawValue] + u16(reply.command), replyingTo: reply))
    }

    /// `outputs` with log lines and events past `reportsPerConnection` left
    /// out, counted, and their count given at each power of two.
    private mutating func capped(_ outputs: [Output]) -> [Output] {
        defer { refreshReadings() }
        var kept: [Output] = []
        kept.reserveCapacity(outputs.count)
        for output in outputs {
            switch output {
            case .log, .event:
                reports += 1
                guard reports > Self.reportsPerConnection else {
                    kept.append(output)
                    continue
                }
                // Powers of two past the budget: 64, 128, 256…
                if reports & (reports - 1) == 0 {
                    kept.append(.log("\(reports) log lines and events for this iAP1 head unit so far; past the first \(Self.reportsPerConnection) they are counted, not given one by one"))
                }
            case .send, .load, .verify, .perform:
                kept.append(output)
            }
        }
        return kept
    }

    private mutating func ignore(_ what: String, kind: String) -> [Output] {
        guard logged.insert(kind).inserted else { return [] }
        return [.log("ignored \(what) (logged once)")]
    }

    private static func status(_ status: RequestStatus) -> LegacyStatus { status == .success ? .success : .commandFailed }

    private static func failureText(_ result: PhoneMediaRole.LoadResult) -> String {
        if case .failed(let status, let reason) = result { return "\(status): \(reason)" }
        return "an answer of the wrong kind"
    }
}

/// A UTF-8 string cut at a character boundary to `LegacyPhone.maximumStringLength`
/// bytes, without NULs, and NUL-terminated.
func string(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    for character in text {
        let encoded = Array(String(character).utf8).filter { $0 != 0 }
        guard bytes.count + encoded.count <= LegacyPhone.maximumStringLength else { break }
        bytes += encoded
    }
    return bytes + [0]
}

func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }
func u32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)] }
func u64(_ value: UInt64) -> [UInt8] { u32(UInt32(value >> 32)) + u32(UInt32(truncatingIfNeeded: value)) }

/// The big-endian 32-bit value at `offset` (the caller checked the length).
func u32(_ bytes: [UInt8], at offset: Int) -> UInt32 {
    bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | UInt32($1) }
}

func hex(_ byte: UInt8) -> String { String(byte, radix: 16, uppercase: true) }
