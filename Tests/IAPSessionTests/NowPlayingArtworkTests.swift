import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// Now-playing artwork reaches the head unit without being asked for: the
/// phone names a file transfer in the update and sends the app's image, at
/// the head unit's scale, over the file-transfer session.
@Suite struct NowPlayingArtworkTests {
    static func files(_ events: [Connection.Event]) -> [(UInt8, [UInt8])] {
        events.compactMap { if case .fileReceived(let id, let bytes) = $0 { (id, bytes) } else { nil } }
    }

    /// A play the app answers after its stated delay has passed (a loaded
    /// machine; the lab's role switch): what it started playing still goes
    /// out before the answer, so a head unit that asks what plays when it
    /// hears the answer hears the new track.
    @Test func whatAPlayStartedGoesOutBeforeItsAnswerWhenTheAppAnswersLate() {
        var harness = SessionHarness(playing: true)
        harness.appAnswersLate = true
        harness.start()
        harness.run(for: .seconds(2))
        let before = harness.phoneSent.count
        harness.headUnitDoes { $0.select("kind-of-blue:3", now: $1) }
        let sent = Array(harness.phoneSent.dropFirst(before))
        guard let update = sent.firstIndex(of: MessageID.nowPlayingUpdate), let status = sent.firstIndex(of: 0xB103) else {
            Issue.record("the phone sent \(sent.map { String($0, radix: 16) }), not both NowPlayingUpdate and RequestStatus")
            return
        }
        #expect(update < status, "the phone sent \(sent.map { String($0, radix: 16) })")
        #expect(harness.headUnit.headUnit.nowPlaying.info.title == "Blue in Green")
    }

    /// The edge runs a command's handler and hands the status back; the
    /// status goes out after the now-playing update the command caused, so
    /// a head unit that asks what plays when it hears the status hears the
    /// new state.
    @Test func aCommandsStatusFollowsTheUpdateItCaused() {
        var harness = SessionHarness(playing: true)
        harness.start()
        harness.run(for: .seconds(2))
        harness.headUnitDoes { $0.select("kind-of-blue:3", now: $1) }
        harness.run(for: .seconds(1))
        let before = harness.phoneSent.count
        harness.headUnitDoes { $0.send(.pause, now: $1) }
        let sent = Array(harness.phoneSent.dropFirst(before))
        guard let update = sent.firstIndex(of: MessageID.nowPlayingUpdate), let status = sent.firstIndex(of: 0xB103) else {
            Issue.record("the phone sent \(sent.map { String($0, radix: 16) }), not both NowPlayingUpdate and RequestStatus")
            return
        }
        #expect(update < status, "the phone sent \(sent.map { String($0, radix: 16) })")
        #expect(harness.headUnit.headUnit.nowPlaying.info.state == .paused)
        #expect(harness.app.snapshot.playback == .paused)
    }

    @Test func thePlayingAlbumsArtworkArrivesWithNowPlaying() {
        var harness = SessionHarness(playing: true)
        harness.start()
        harness.run(for: .seconds(2))
        harness.headUnitDoes { $0.select("kind-of-blue:2", now: $1) }
        harness.run(for: .seconds(1))
        let info = harness.headUnit.headUnit.nowPlaying.info
        #expect(info.title == "Freddie Freeloader")
        guard let transfer = info.artworkTransferID else {
            Issue.record("now playing names no artwork transfer: \(info)")
            return
        }
        let expected = harness.app.library.image("art:kind-of-blue", scale: HeadUnitLimits.audioApps.imageScale)
        #expect(Self.files(harness.headUnitEvents).contains { $0.0 == transfer && $0.1 == expected },
                "files \(Self.files(harness.headUnitEvents).map(\.0)), transfer \(transfer)")
        #expect(problems(harness.phoneEvents).isEmpty, "\(problems(harness.phoneEvents))")
        #expect(problems(harness.headUnitEvents).isEmpty, "\(problems(harness.headUnitEvents))")

        // The next track of the same album: the artwork is not sent again.
        let sentBefore = Self.files(harness.headUnitEvents).count
        harness.headUnitDoes { $0.send(.nextTrack, now: $1) }
        harness.run(for: .seconds(1))
        #expect(harness.headUnit.headUnit.nowPlaying.info.title == "Blue in Green")
        #expect(harness.headUnit.headUnit.nowPlaying.info.artworkTransferID == transfer)
        #expect(Self.files(harness.headUnitEvents).count == sentBefore)

        // Another album: new artwork, under a new transfer.
        harness.headUnitDoes { $0.select("blue-train:1", now: $1) }
        harness.run(for: .seconds(1))
        let other = harness.headUnit.headUnit.nowPlaying.info.artworkTransferID
        #expect(other != nil && other != transfer)
        let blueTrain = harness.app.library.image("art:blue-train", scale: HeadUnitLimits.audioApps.imageScale)
        #expect(Self.files(harness.headUnitEvents).contains { $0.0 == other && $0.1 == blueTrain })
    }

    @Test func anItemWithoutArtworkNamesNoTransfer() {
        var harness = SessionHarness(playing: true)
        harness.start()
        harness.run(for: .seconds(2))
        harness.headUnitDoes { $0.select("kind-of-blue:1", now: $1) }
        harness.run(for: .seconds(1))
        #expect(harness.headUnit.headUnit.nowPlaying.info.artworkTransferID != nil)
        // A radio station has no artwork: the album's must not stay on screen.
        harness.headUnitDoes { $0.select("station:jazz", now: $1) }
        harness.run(for: .seconds(1))
        #expect(harness.headUnit.headUnit.nowPlaying.info.title == "Jazz Radio")
        #expect(harness.headUnit.headUnit.nowPlaying.info.artworkTransferID == nil)
    }
}

/// A head unit browses a content tree only after the phone's command set,
/// as in the field (a tree offered first is never asked for).
@Suite struct CommandSetOrderTests {
    /// A head unit core identified with a phone that sends whatever the test gives it.
    static func identifiedHeadUnit() throws -> Connection {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        var headUnit = Connection(.init(role: .accessory))
        _ = headUnit.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
        _ = headUnit.received(session: 1, try ControlMessage(id: MessageID.startIdentification).encoded(), now: .milliseconds(1))
        _ = headUnit.received(session: 1, try ControlMessage(id: MessageID.identificationAccepted).encoded(), now: .milliseconds(2))
        guard case .identified = headUnit.stage else {
            Issue.record("the head unit is not identified: \(headUnit.stage)")
            return headUnit
        }
        return headUnit
    }

    static func browses(_ outputs: [Connection.Output]) -> [MediaMessage] {
        outputs.compactMap { output -> MediaMessage? in
            guard case .send(1, let bytes) = output, let message = try? MediaMessage(try ControlMessage(decoding: bytes)),
                  case .browseRequest = message else { return nil }
            return message
        }
    }

    @Test func aTreeOfferedAfterTheCommandsIsBrowsed() throws {
        var headUnit = try Self.identifiedHeadUnit()
        _ = headUnit.received(session: 1, try MediaMessage.advertisedCommands([AdvertisedCommand(.play, enabled: true)]).controlMessage.encoded(),
                              now: .milliseconds(3))
        let outputs = headUnit.received(session: 1, try MediaMessage.appInformation(name: "App", hasContentTree: true).controlMessage.encoded(),
                                        now: .milliseconds(4))
        #expect(Self.browses(outputs).count == 1)
    }

    @Test func aTreeOfferedBeforeTheCommandsIsNotBrowsedAndTheProblemIsNamed() throws {
        var headUnit = try Self.identifiedHeadUnit()
        var outputs = headUnit.received(session: 1, try MediaMessage.appInformation(name: "App", hasContentTree: true).controlMessage.encoded(),
                                        now: .milliseconds(3))
        outputs += headUnit.received(session: 1, try MediaMessage.advertisedCommands([AdvertisedCommand(.play, enabled: true)]).controlMessage.encoded(),
                                     now: .milliseconds(4))
        #expect(Self.browses(outputs).isEmpty)
        let problems = outputs.compactMap { if case .event(.problem(let text)) = $0 { text } else { nil } }
        #expect(problems.contains { $0.contains("before its command set") }, "\(problems)")
    }
}

/// Artwork travels over the file-transfer session: a link without one
/// offers none, and nothing is asked of the app for it.
@Suite struct ArtworkWithoutFileSessionTests {
    /// A phone serving the sample app, playing an album with artwork, and
    /// the app (to answer the phone's `.readNowPlaying`).
    static func identifiedPhone(sessions: [LinkSessionDescriptor]) throws -> (Connection, SampleApp) {
        let limits = LinkParameters(sessions: sessions)
        let proposal = limits.synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: limits).get()
        let app = SampleApp()
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: .zero)
        var phone = Connection(.init(role: .device, authentication: .off),
                               phone: PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true),
                               readsNowPlaying: true)
        _ = phone.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
        _ = phone.received(session: 1, try AccessoryIdentity.devKitHeadUnit.message.encoded(), now: .zero)
        return (phone, app)
    }

    /// The subscription's outputs, and those of the now playing it asks for.
    static func subscribed(_ phone: inout Connection, app: SampleApp) throws -> [Connection.Output] {
        let subscribe = try MediaMessage.startNowPlayingUpdates(.all).controlMessage.encoded()
        let now = LinkInstant.milliseconds(1)
        let outputs = phone.received(session: 1, subscribe, now: now)
        #expect(outputs.contains(.readNowPlaying), "\(outputs)")
        return outputs + phone.setNowPlaying(app.nowPlaying(at: now), now: now)
    }

    static func imageLoads(_ outputs: [Connection.Output]) -> [PhoneMediaRole.LoadRequest] {
        outputs.compactMap { if case .load(_, let request) = $0, case .image = request { request } else { nil } }
    }

    /// An edge that never answers `.readNowPlaying` cannot make the phone
    /// hold every command's status: past the bound they go out without it.
    @Test func statusesWaitingForNowPlayingAreBounded() throws {
        var (phone, _) = try Self.identifiedPhone(sessions: LinkParameters.standardSessions)
        var statuses = 0
        for id in 1...(Connection.maximumAwaitingNowPlaying + 1) {
            for case .send(1, _) in phone.performed(.pause, for: .remoteCommand(requestID: UInt32(id)), status: .success, now: .milliseconds(2)) {
                statuses += 1
            }
        }
        #expect(statuses == Connection.maximumAwaitingNowPlaying)
    }

    @Test func aLinkWithoutAFileSessionGetsNoArtwork() throws {
        var (without, app) = try Self.identifiedPhone(sessions: [.init(id: 1, type: .control)])
        let outputs = try Self.subscribed(&without, app: app)
        #expect(Self.imageLoads(outputs).isEmpty, "\(outputs)")
        #expect(!outputs.contains { if case .event(.problem) = $0 { true } else { false } }, "\(outputs)")

        var (with, sameApp) = try Self.identifiedPhone(sessions: LinkParameters.standardSessions)
        #expect(Self.imageLoads(try Self.subscribed(&with, app: sameApp)) == [.image(id: "art:kind-of-blue", scale: 2)])
    }
}
