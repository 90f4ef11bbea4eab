import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// A stand-in for the edge's cryptography: the "signature" of a challenge is
/// the challenge reversed. It tests the session's sequence, not cryptography
/// (IAPAuthenticationTests does that with real keys).
struct FakeCrypto {
    var certificate: [UInt8] = Array("test accessory certificate".utf8)
    var signsCorrectly = true
    var rejectsCertificate: String?
    /// The reading a valid response is reported under, as RSA's verifier does.
    var reading: String?

    func answer(_ request: AuthenticatorRequest) -> AuthenticatorAnswer {
        switch request {
        case .certificate: .certificate(certificate)
        case .response(let challenge): .response(signsCorrectly ? challenge.reversed() : challenge)
        }
    }

    func check(_ request: VerificationRequest) -> VerificationAnswer {
        switch request {
        case .certificate(let bytes):
            if let rejectsCertificate { return .certificateRejected(rejectsCertificate) }
            return .certificateAccepted(summary: "subject \(String(decoding: bytes, as: UTF8.self))", challenge: Array(0..<32))
        case .response(let response, let challenge, _):
            guard response == challenge.reversed() else { return .responseInvalid("the signature does not match the challenge") }
            return reading.map { .responseVerified(reading: $0) } ?? .responseValid
        }
    }
}

/// Two connection cores over two link ends in one process, in virtual time,
/// with the edge played by `FakeCrypto` and the sample app.
struct SessionHarness {
    var accessoryLink: LinkEnd
    var deviceLink: LinkEnd
    var phone: Connection
    var headUnit: Connection
    var crypto = FakeCrypto()
    /// Whether the head unit's authenticator answers at all.
    var authenticatorAnswers = true
    /// The app's answers come back after the delay it states has passed
    /// (a loaded machine): each is completed at once.
    var appAnswersLate = false
    let app = SampleApp()
    var now = LinkInstant.zero
    /// Control messages in the order each end sent them.
    var phoneSent: [UInt16] = []
    var headUnitSent: [UInt16] = []
    var phoneEvents: [Connection.Event] = []
    var headUnitEvents: [Connection.Event] = []
    private var wire: [(toDevice: Bool, bytes: [UInt8])] = []
    private var decoders = [ControlMessageDecoder(), ControlMessageDecoder()]

    /// `playing`: the phone publishes what the sample app plays (with its artwork).
    init(phone: Connection.Configuration = .init(role: .device), headUnit: Connection.Configuration = .init(role: .accessory),
         playing: Bool = false) {
        accessoryLink = LinkEnd(configuration: LinkConfiguration(role: .accessory, skipDetect: true, keepAliveInterval: nil, silenceLimit: nil))
        deviceLink = LinkEnd(configuration: LinkConfiguration(role: .device, keepAliveInterval: nil, silenceLimit: nil))
        self.phone = Connection(phone, phone: PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true),
                                readsNowPlaying: playing)
        self.headUnit = Connection(headUnit)
    }

    mutating func start() {
        link(deviceLink.start(now: now), device: true)
        link(accessoryLink.start(now: now), device: false)
        pump()
    }

    /// Runs virtual time forward to `duration` from now, handling every deadline.
    mutating func run(for duration: Duration) {
        let end = now + duration
        while true {
            let deadlines = [accessoryLink.nextDeadline, deviceLink.nextDeadline, phone.nextDeadline, headUnit.nextDeadline].compactMap { $0 }
            guard let next = deadlines.min(), next <= end else { break }
            now = max(now, next)
            link(deviceLink.tick(now: now), device: true)
            link(accessoryLink.tick(now: now), device: false)
            session(phone.tick(now: now), phone: true)
            session(headUnit.tick(now: now), phone: false)
            pump()
        }
        now = end
    }

    mutating func headUnitDoes(_ action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) {
        session(headUnit.headUnitDoes(now: now, action), phone: false)
        pump()
    }

    private mutating func pump() {
        while !wire.isEmpty {
            let (toDevice, bytes) = wire.removeFirst()
            if toDevice { link(deviceLink.receive(bytes, now: now), device: true) } else { link(accessoryLink.receive(bytes, now: now), device: false) }
        }
    }

    private mutating func link(_ actions: [LinkAction], device: Bool) {
        for action in actions {
            switch action {
            case .send(let bytes): wire.append((!device, bytes))
            case .deliver(let session, let bytes):
                if device {
                    link(deviceLink.consumed(bytes.count, now: now), device: true)
                    self.session(phone.received(session: session, bytes, now: now), phone: true)
                } else {
                    link(accessoryLink.consumed(bytes.count, now: now), device: false)
                    self.session(headUnit.received(session: session, bytes, now: now), phone: false)
                }
            case .event(.up(let negotiated)):
                if device { session(phone.linkUp(negotiated, now: now), phone: true) } else { session(headUnit.linkUp(negotiated, now: now), phone: false) }
            case .event(.down), .event(.failed):
                if device { session(phone.linkDown(now: now), phone: true) } else { session(headUnit.linkDown(now: now), phone: false) }
            case .event:
                break
            }
        }
    }

    private mutating func session(_ outputs: [Connection.Output], phone isPhone: Bool) {
        for output in outputs {
            switch output {
            case .send(let session, let bytes):
                if session == 1 { record(bytes, fromPhone: isPhone) }
                let actions = (try? (isPhone ? deviceLink.send(bytes, session: session, now: now) : accessoryLink.send(bytes, session: session, now: now))) ?? []
                link(actions, device: isPhone)
            case .event(let event):
                if isPhone { phoneEvents.append(event) } else { headUnitEvents.append(event) }
            case .authenticator(let request):
                if authenticatorAnswers { session(headUnit.authenticatorAnswered(crypto.answer(request), now: now), phone: false) }
            case .verify(let request):
                session(phone.verified(crypto.check(request), now: now), phone: true)
            case .load(let token, let request):
                app.setTime(now)
                let (result, delay) = app.load(request, now: now)
                session(phone.complete(token: token, with: result, at: appAnswersLate ? now : now + delay, now: now), phone: true)
            case .pausePlayback:
                app.pause(at: now)
            case .perform(let command, let origin):
                app.setTime(now)
                let status = phone.phone.commands.perform(command)
                session(phone.performed(command, for: origin, status: status, now: now), phone: true)
            case .readNowPlaying:
                session(phone.setNowPlaying(app.nowPlaying(at: now), now: now), phone: true)
            }
        }
    }

    private mutating func record(_ bytes: [UInt8], fromPhone: Bool) {
        let index = fromPhone ? 0 : 1
        decoders[index].append(bytes)
        while let event = decoders[index].next() {
            if case .message(let message, _) = event {
                if fromPhone { phoneSent.append(message.id) } else { headUnitSent.append(message.id) }
            }
        }
    }
}

func stages(_ events: [Connection.Event]) -> [Connection.Stage] {
    events.compactMap { if case .stage(let stage) = $0 { stage } else { nil } }
}

func problems(_ events: [Connection.Event]) -> [String] {
    events.compactMap { if case .problem(let problem) = $0 { problem } else { nil } }
}

@Suite struct ConnectionTests {
    @Test func theWholeSessionRunsInOrder() {
        var harness = SessionHarness()
        harness.start()
        harness.run(for: .seconds(2))
        // Authentication, then identification, then media: the phone's first messages.
        #expect(Array(harness.phoneSent.prefix(5)) == [0xAA00, 0xAA02, 0xAA05, 0x1D00, 0x1D02], "\(harness.phoneSent.map { String($0, radix: 16) })")
        #expect(Array(harness.headUnitSent.prefix(3)) == [0xAA01, 0xAA03, 0x1D01])
        #expect(stages(harness.phoneEvents) == [.authenticating, .identifying, .identified("iap-devkit head unit")])
        #expect(stages(harness.headUnitEvents) == [.authenticating, .identifying, .identified("iap-devkit head unit")])
        #expect(harness.phoneEvents.contains(.accessoryCertificate("subject test accessory certificate")))
        // The head unit browses: the root tabs arrived.
        #expect(!harness.headUnit.headUnit.tabs.isEmpty)
        #expect(problems(harness.phoneEvents).isEmpty, "\(problems(harness.phoneEvents))")
        #expect(problems(harness.headUnitEvents).isEmpty, "\(problems(harness.headUnitEvents))")
    }

    @Test func aTamperedSignatureEndsInAuthenticationFailedWithoutIdentification() {
        var harness = SessionHarness()
        harness.crypto.signsCorrectly = false
        harness.start()
        harness.run(for: .seconds(2))
        #expect(harness.phoneSent == [0xAA00, 0xAA02, 0xAA04])
        #expect(!harness.phoneSent.contains(0x1D00))
        guard case .failed(let reason)? = stages(harness.phoneEvents).last else {
            Issue.record("the phone did not fail: \(stages(harness.phoneEvents))")
            return
        }
        #expect(reason.contains("does not verify"))
        if case .failed? = stages(harness.headUnitEvents).last {} else { Issue.record("the head unit did not hear of the failure: \(stages(harness.headUnitEvents))") }
    }

    @Test func aCertificateTheEdgeRejectsEndsAuthentication() {
        var harness = SessionHarness()
        harness.crypto.rejectsCertificate = "not DER"
        harness.start()
        harness.run(for: .seconds(2))
        #expect(harness.phoneSent == [0xAA00, 0xAA04])
        #expect(stages(harness.phoneEvents).last == .failed("authentication failed: the accessory certificate cannot be used: not DER"))
    }

    @Test func anAuthenticatorThatNeverAnswersTimesOut() {
        var harness = SessionHarness()
        harness.authenticatorAnswers = false
        harness.start()
        harness.run(for: .seconds(9))
        #expect(harness.phoneSent == [0xAA00])
        harness.run(for: .seconds(2))
        #expect(harness.phoneSent == [0xAA00, 0xAA04])
        guard case .failed(let reason)? = stages(harness.phoneEvents).last else {
            Issue.record("no failure after the step timeout: \(stages(harness.phoneEvents))")
            return
        }
        #expect(reason.contains("waiting for AuthenticationCertificate"))
    }

    @Test func theReadingThatHeldIsLogged() {
        var harness = SessionHarness()
        harness.crypto.reading = "the challenge as the SHA-1 digest"
        harness.start()
        harness.run(for: .seconds(2))
        #expect(harness.phoneEvents.contains(.log("authentication succeeded (the response holds for the challenge as the SHA-1 digest)")),
                "\(harness.phoneEvents)")
        #expect(stages(harness.phoneEvents).last == .identified("iap-devkit head unit"))
    }

    @Test func authenticationOffIdentifiesAtOnceAndSaysSo() {
        var harness = SessionHarness(phone: .init(role: .device, authentication: .off))
        harness.start()
        harness.run(for: .seconds(2))
        #expect(harness.phoneSent.first == 0x1D00)
        #expect(harness.phoneEvents.contains { if case .log(let line) = $0 { line.contains("authentication is off") } else { false } })
        #expect(harness.headUnit.isMediaConnected)
    }

    @Test func thePhoneSendsOnlyWhatTheAccessoryDeclaredItCanReceive() {
        var identity = AccessoryIdentity.devKitHeadUnit
        let withheld = MediaMessage.phoneSends.first { $0 != MessageID.nowPlayingUpdate } ?? 0
        identity.messagesReceived.removeAll { $0 == withheld }
        var harness = SessionHarness(headUnit: .init(role: .accessory, identity: identity))
        harness.start()
        harness.run(for: .seconds(2))
        #expect(!harness.phoneSent.contains(withheld))
        let name = MessageCatalog.name(of: withheld) ?? "?"
        #expect(problems(harness.phoneEvents).contains { $0.contains("not sending \(name)") }, "\(problems(harness.phoneEvents))")
    }

    @Test func aHeadUnitThatHearsNothingAfterLinkUpSaysSo() {
        // Two accessory-minded cores: neither starts authentication.
        var harness = SessionHarness()
        harness.phone = Connection(.init(role: .accessory))
        harness.start()
        harness.run(for: .seconds(9))
        #expect(problems(harness.headUnitEvents).isEmpty)
        harness.run(for: .seconds(2))
        #expect(problems(harness.headUnitEvents).contains { $0.contains("has not started authentication or identification") })
    }
}
