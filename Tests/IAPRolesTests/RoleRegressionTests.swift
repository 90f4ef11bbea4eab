import Testing
import IAPLink
import IAPRoles
import IAPWire

/// Issue 8: behaviours whose removal the suite did not notice. Each test
/// fails when its behaviour is taken out.
@Suite struct IdentificationParameterTests {
    /// MessagesSentByAccessory (6), MessagesReceivedFromDevice (7),
    /// PowerProvidingCapability (8), MaximumCurrentDrawnFromDevice (9): each
    /// is required; an identification without it is refused and names it.
    @Test(arguments: [ParameterID.IdentificationInformation.messagesSentByAccessory, ParameterID.IdentificationInformation.messagesReceivedFromDevice,
                      ParameterID.IdentificationInformation.powerProvidingCapability, ParameterID.IdentificationInformation.maximumCurrentDrawnFromDevice])
    func missingParameterIsRefusedAndNamed(_ id: UInt16) throws {
        var message = AccessoryIdentity.devKitHeadUnit.message
        #expect(message.parameter(id) != nil, "the fixture identity lacks parameter \(id)")
        message.parameters.removeAll { $0.id == id }
        guard case .failure(let problems) = AccessoryIdentity.validate(message) else {
            Issue.record("identification without parameter \(id) was accepted")
            return
        }
        #expect(problems.problems.map(\.parameter) == [id])
        #expect(problems.problems.first?.issue == "missing")
        #expect(problems.rejection.parameters.map(\.id) == [id])
        // The phone role refuses it too and stays unidentified.
        var phone = PhoneIdentificationRole()
        _ = phone.linkUp()
        let outputs = phone.received(message)
        guard case .send(let rejection)? = outputs.first else {
            Issue.record("no rejection sent for a missing parameter \(id)")
            return
        }
        #expect(rejection.id == 0x1D03)
        #expect(rejection.parameters.map(\.id) == [id])
        #expect(phone.state == .awaitingIdentification)
    }
}

@Suite struct PhoneNowPlayingCenterTests {
    /// `setNowPlaying` fills in the app's name when the app gives none, and
    /// keeps one the app gives.
    @Test func setNowPlayingFillsInTheAppName() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.receive(.startNowPlayingUpdates(.all), now: t0)
        let outputs = phone.setNowPlaying(NowPlayingInfo(itemID: 3, title: "Freddie Freeloader", state: .playing), now: at(10))
        #expect(phone.nowPlaying.appName == "iap-devkit Music")
        guard case .nowPlayingUpdate(let update)? = try sent(outputs).first.map(wire) else {
            Issue.record("no update sent for a new track: \(outputs)")
            return
        }
        #expect(update.applied(to: NowPlayingInfo()).appName == "iap-devkit Music")
        _ = phone.setNowPlaying(NowPlayingInfo(itemID: 4, title: "Radio", state: .playing, appName: "Other App"), now: at(20))
        #expect(phone.nowPlaying.appName == "Other App")
    }
}

@Suite struct ImageScaleTests {
    /// The head unit asks for images at its own scale, whatever it is.
    @Test(arguments: [1, 2, 3])
    func headUnitAsksAtItsOwnScale(_ scale: Int) {
        var headUnit = HeadUnitMediaRole(limits: HeadUnitLimits(imageScale: scale))
        _ = headUnit.connect(now: t0)
        let requests = sent(headUnit.requestImage("art:kind-of-blue", now: t0))
        #expect(requests.count == 1)
        guard case .imageRequest(_, let image, let asked)? = requests.first else {
            Issue.record("no image request: \(requests)")
            return
        }
        #expect(image == "art:kind-of-blue")
        #expect(Int(asked) == scale)
    }
}

@Suite struct PlayRequestAnswerTests {
    /// A play request whose content load fails is answered with the app's error.
    @Test func failedLoadIsAnswered() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        let outputs = phone.receive(.playItem(requestID: 21, itemID: "gone", imageRowEntryID: nil), now: t0)
        let (token, request) = try #require(loads(outputs).first)
        #expect(request == .play(itemID: "gone", imageRowEntryID: nil))
        let answer = sent(phone.complete(token: token, with: .failed(.noSuchContent, "not in the library"), now: at(5)))
        #expect(answer == [.requestStatus(requestID: 21, .noSuchContent, error: "not in the library")])
        #expect(phone.nextDeadline == nil)
    }

    /// A play request the app does not answer in time is answered with timed_out.
    @Test func timedOutLoadIsAnswered() throws {
        var phone = makePhone(timeout: .seconds(2))
        _ = phone.connect(now: t0)
        let outputs = phone.receive(.playItem(requestID: 22, itemID: "slow", imageRowEntryID: nil), now: t0)
        let (token, _) = try #require(loads(outputs).first)
        #expect(sent(phone.tick(now: at(1999))).isEmpty)
        let answer = sent(phone.tick(now: at(2000)))
        guard case .requestStatus(22, .timedOut, let error)? = answer.first, answer.count == 1 else {
            Issue.record("a timed-out play request was not answered once with timed_out: \(answer)")
            return
        }
        #expect(error?.contains("did not answer") == true)
        // The late answer is dropped: answered once.
        #expect(phone.complete(token: token, with: .done, now: at(2500)).isEmpty)
    }
}
