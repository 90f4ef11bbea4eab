import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// One test (or more) per item of DOMAIN.md, each failing if the behaviour
/// were missing. Roles are driven directly: messages go through their wire
/// encoding so that the message layer is exercised too.
func wire(_ message: MediaMessage) throws -> MediaMessage {
    let decoded = try ControlMessage(decoding: try message.controlMessage.encoded())
    return try #require(try MediaMessage(decoded))
}

func sent(_ outputs: [PhoneMediaRole.Output]) -> [MediaMessage] {
    outputs.compactMap { if case .send(let message) = $0 { message } else { nil } }
}

func sent(_ outputs: [HeadUnitMediaRole.Output]) -> [MediaMessage] {
    outputs.compactMap { if case .send(let message) = $0 { message } else { nil } }
}

func loads(_ outputs: [PhoneMediaRole.Output]) -> [(UInt32, PhoneMediaRole.LoadRequest)] {
    outputs.compactMap { if case .load(let token, let request) = $0 { (token, request) } else { nil } }
}

extension PhoneMediaRole {
    /// `receive`, with each command the role asks for run at once by its
    /// handler and answered, as every driver does.
    mutating func receiveRunningCommands(_ message: MediaMessage, now: LinkInstant) -> [Output] {
        receive(message, now: now).flatMap { output -> [Output] in
            guard case .perform(let command, let origin) = output else { return [output] }
            return performed(command, for: origin, status: commands.perform(command), now: now)
        }
    }
}

let t0 = LinkInstant.zero
func at(_ milliseconds: Int64) -> LinkInstant { .milliseconds(milliseconds) }

func makePhone(_ app: SampleApp = SampleApp(), offersContent: Bool = true, timeout: Duration = .seconds(5)) -> PhoneMediaRole {
    PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: offersContent, loadTimeout: timeout)
}

@Suite struct LifecycleTests {
    @Test func connectAndDisconnectAreReportedOncePerConnection() {
        var phone = makePhone()
        let first = phone.connect(now: t0)
        #expect(first.filter { if case .connected = $0 { true } else { false } } == [.connected(connection: 1)])
        #expect(phone.disconnect(now: at(10)).contains(.disconnected(connection: 1)))
        #expect(phone.disconnect(now: at(20)).isEmpty, "a second disconnect signal must not report again")
        #expect(phone.connect(now: at(30)).contains(.connected(connection: 2)))
    }

    @Test func perConnectionStateIsReleasedAtDisconnect() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.receive(try wire(.limits(HeadUnitLimits(maximumTabs: 3, maximumPageSize: 10, maximumImageRowImages: 2, imageScale: 3))), now: t0)
        _ = phone.receive(try wire(.startNowPlayingUpdates(.all)), now: t0)
        #expect(phone.isSubscribed && phone.limits?.maximumTabs == 3)
        _ = phone.disconnect(now: at(1))
        _ = phone.connect(now: at(2))
        #expect(!phone.isSubscribed, "the subscription leaked into the next connection")
        #expect(phone.limits == .audioApps, "the previous head unit's limits leaked into the next connection")
    }

    @Test func playbackPausesOnDisconnect() {
        let app = SampleApp()
        var phone = makePhone(app)
        _ = phone.connect(now: t0)
        _ = phone.setNowPlaying(NowPlayingInfo(title: "Song", elapsedMilliseconds: 1000, playbackRate: 1, state: .playing), now: t0)
        let outputs = phone.disconnect(now: at(5000))
        #expect(outputs.contains(.pausePlayback))
        #expect(phone.nowPlaying.state == .paused)
        #expect(phone.nowPlaying.elapsedMilliseconds == 6000)
        #expect(phone.nowPlaying.playbackRate == 0)
    }

    @Test func commandsAreAdvertisedBeforeContentIsOffered() {
        var phone = makePhone()
        let messages = sent(phone.connect(now: t0))
        let commandsIndex = messages.firstIndex { if case .advertisedCommands = $0 { true } else { false } }
        let contentIndex = messages.firstIndex { if case .appInformation(_, true) = $0 { true } else { false } }
        #expect(commandsIndex != nil && contentIndex != nil)
        #expect(commandsIndex! < contentIndex!)
    }
}

@Suite struct BrowsingTests {
    @Test func childrenAreLoadedOnlyWhenOpenedAndAlwaysAnswered() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        // Nothing is loaded until the head unit asks.
        var headUnit = HeadUnitMediaRole()
        let connectMessages = sent(headUnit.connect(now: t0))
        #expect(!connectMessages.contains { if case .browseRequest = $0 { true } else { false } })
        let open = sent(headUnit.open("album:kind-of-blue", now: t0))
        #expect(headUnit.containers["album:kind-of-blue"]?.loading == true)
        let request = try wire(try #require(open.first))
        let outputs = phone.receive(request, now: t0)
        let (token, load) = try #require(loads(outputs).first)
        #expect(load == .children(containerID: "album:kind-of-blue", offset: 0, count: 50))
        // Success.
        let (result, _) = SampleApp().load(load, now: t0)
        let answer = try wire(try #require(sent(phone.complete(token: token, with: result, now: at(5))).first))
        _ = headUnit.receive(answer, now: at(6))
        #expect(headUnit.containers["album:kind-of-blue"]?.items.count == 6)
        #expect(headUnit.containers["album:kind-of-blue"]?.isComplete == true)
    }

    @Test func aSlowDataSourceIsAnsweredWithTimedOut() throws {
        var phone = makePhone(timeout: .milliseconds(500))
        _ = phone.connect(now: t0)
        let outputs = phone.receive(.browseRequest(requestID: 7, containerID: "podcasts", offset: 0, count: 10), now: t0)
        let (token, _) = try #require(loads(outputs).first)
        #expect(phone.nextDeadline == at(500))
        let expired = sent(phone.tick(now: at(500)))
        guard case .browseResponse(let response)? = expired.first else {
            Issue.record("no answer on timeout")
            return
        }
        #expect(response.requestID == 7 && response.status == .timedOut)
        // The app's late answer is dropped: the request was answered once.
        #expect(phone.complete(token: token, with: .page(items: [], sections: [], totalCount: 0), now: at(600)).isEmpty)
    }

    @Test func failureAndEmptyAreAnswersToo() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        let first = loads(phone.receive(.browseRequest(requestID: 1, containerID: "x", offset: 0, count: 10), now: t0))[0].0
        let failed = sent(phone.complete(token: first, with: .failed(.noSuchContent, "gone"), now: t0))
        #expect(failed == [.browseResponse(BrowseResponse(requestID: 1, status: .noSuchContent, error: "gone"))])
        let second = loads(phone.receive(.browseRequest(requestID: 2, containerID: "y", offset: 0, count: 10), now: t0))[0].0
        let empty = sent(phone.complete(token: second, with: .page(items: [], sections: [ContentSection(id: 0, kind: .empty(text: "Nothing here"))], totalCount: 0), now: t0))
        #expect(empty == [.browseResponse(BrowseResponse(requestID: 2, status: .success, items: [], sections: [ContentSection(id: 0, kind: .empty(text: "Nothing here"))]))])
    }

    @Test func moreThanFourTabsIsAnErrorNotATruncation() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        let token = loads(phone.receive(.browseRequest(requestID: 3, containerID: "", offset: 0, count: 4), now: t0))[0].0
        let five = (1...5).map { ContentItem(id: "t\($0)", kind: .container, text: "Tab \($0)") }
        let answer = sent(phone.complete(token: token, with: .page(items: five, sections: [], totalCount: 5), now: t0))
        guard case .browseResponse(let response)? = answer.first else { Issue.record("no answer"); return }
        #expect(response.status == .exceedsLimits && response.items.isEmpty)
        #expect(response.error?.contains("5 tabs") == true)
        // A head unit given five tabs by a misbehaving phone shows an error, not four tabs.
        var headUnit = HeadUnitMediaRole()
        _ = headUnit.connect(now: t0)
        let request = sent(headUnit.openRoot(now: t0))[0]
        guard case .browseRequest(let id, _, _, _) = request else {
            Issue.record("expected a browse request, got \(request)")
            return
        }
        let events = headUnit.receive(.browseResponse(BrowseResponse(requestID: id, status: .success, totalCount: 5, items: five)), now: t0)
        #expect(headUnit.tabs.isEmpty)
        #expect(events.contains { if case .event(.browseFailed("", .exceedsLimits, _)) = $0 { true } else { false } })
    }

    /// DOMAIN: audio apps may show at most 4 tabs, whatever a head unit
    /// states; both ends hold to it.
    @Test func aHeadUnitStatingEightTabsStillGetsAtMostFour() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.receive(.limits(HeadUnitLimits(maximumTabs: 8)), now: t0)
        let token = loads(phone.receive(.browseRequest(requestID: 4, containerID: "", offset: 0, count: 8), now: t0))[0].0
        let five = (1...5).map { ContentItem(id: "t\($0)", kind: .container, text: "Tab \($0)") }
        let answer = sent(phone.complete(token: token, with: .page(items: five, sections: [], totalCount: 5), now: t0))
        guard case .browseResponse(let response)? = answer.first else { Issue.record("no answer"); return }
        #expect(response.status == .exceedsLimits)
        #expect(response.error?.contains("at most 4") == true, "\(response.error ?? "")")
        var headUnit = HeadUnitMediaRole(limits: HeadUnitLimits(maximumTabs: 8))
        _ = headUnit.connect(now: t0)
        guard case .browseRequest(let id, _, _, let count)? = sent(headUnit.openRoot(now: t0)).first else {
            Issue.record("expected a browse request")
            return
        }
        #expect(count == 4)
        let events = headUnit.receive(.browseResponse(BrowseResponse(requestID: id, status: .success, totalCount: 5, items: five)), now: t0)
        #expect(headUnit.tabs.isEmpty)
        #expect(events.contains { if case .event(.browseFailed("", .exceedsLimits, _)) = $0 { true } else { false } })
    }

    /// Rows using every field of an item between them.
    static let everyItemField: [ContentItem] = {
        let row = ContentItem.ImageRow(title: "Covers", entries: [.init(id: "c1", imageID: "i1"), .init(id: "c2", imageID: "i2", selectable: false)])
        return [
            ContentItem(id: "a", kind: .container, text: "Albums", detailText: "12 albums", imageID: "img", accessory: .cloud, badge: "NEW"),
            ContentItem(id: "b", kind: .playable, text: "Track", detailText: "3:05", playingIndicator: .trailing, appValue: [1, 2, 3], section: 1),
            ContentItem(id: "c", kind: .playable, text: "Loading…", isEnabled: false),
            ContentItem(id: "d", kind: .container, text: "Covers", imageRow: row),
        ]
    }()

    /// One section of every kind, a plain one with and without a title.
    static let everySectionKind = [ContentSection(id: 0, kind: .loading), ContentSection(id: 1, kind: .playAll(itemCount: 12)),
                                   ContentSection(id: 2, kind: .empty(text: "Nothing played yet")), ContentSection(id: 3, kind: .loadFailed(text: "Tap to retry")),
                                   ContentSection(id: 4, kind: .plain(title: "Albums")), ContentSection(id: 5, kind: .plain(title: nil))]

    @Test func everyItemFieldSurvivesTheWire() throws {
        let response = BrowseResponse(requestID: 9, status: .success, totalCount: 40, offset: 20, items: Self.everyItemField, sections: Self.everySectionKind)
        #expect(try wire(.browseResponse(response)) == .browseResponse(response))
        // Containers get the disclosure indicator by default.
        #expect(ContentItem(id: "x", kind: .container, text: "X").accessory == .disclosureIndicator)
    }

    @Test func pagesFollowOffsetAndTotal() throws {
        var headUnit = HeadUnitMediaRole(limits: HeadUnitLimits(maximumPageSize: 2))
        _ = headUnit.connect(now: t0)
        var phone = PhoneMediaRole(appName: "x", commands: SampleApp().commandCenter(), offersContent: true)
        _ = phone.connect(now: t0)
        _ = phone.receive(.limits(headUnit.limits), now: t0)
        let app = SampleApp()
        func roundTrip(_ outputs: [HeadUnitMediaRole.Output]) throws {
            for message in sent(outputs) {
                for (token, load) in loads(phone.receive(try wire(message), now: t0)) {
                    for answer in sent(phone.complete(token: token, with: app.load(load, now: t0).0, now: t0)) {
                        _ = headUnit.receive(try wire(answer), now: t0)
                    }
                }
            }
        }
        try roundTrip(headUnit.open("album:kind-of-blue", now: t0))
        #expect(headUnit.containers["album:kind-of-blue"]?.items.count == 2)
        #expect(headUnit.containers["album:kind-of-blue"]?.totalCount == 6)
        try roundTrip(headUnit.loadMore("album:kind-of-blue", now: t0))
        try roundTrip(headUnit.loadMore("album:kind-of-blue", now: t0))
        #expect(headUnit.containers["album:kind-of-blue"]?.items.map(\.id) == ["playall:kind-of-blue"] + (1...5).map { "kind-of-blue:\($0)" })
        #expect(headUnit.containers["album:kind-of-blue"]?.isComplete == true)
        // Asking for more than the stated page size is refused, not cut.
        let refused = sent(phone.receive(.browseRequest(requestID: 99, containerID: "library", offset: 0, count: 3), now: t0))
        guard case .browseResponse(let response)? = refused.first else { Issue.record("no refusal"); return }
        #expect(response.status == .exceedsLimits)
    }

    @Test func imageRowsBeyondTheStatedLimitAreRefused() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.receive(.limits(HeadUnitLimits(maximumImageRowImages: 2)), now: t0)
        let token = loads(phone.receive(.browseRequest(requestID: 4, containerID: "library", offset: 0, count: 10), now: t0))[0].0
        let (result, _) = SampleApp().load(.children(containerID: "library", offset: 0, count: 10), now: t0)
        guard case .browseResponse(let response)? = sent(phone.complete(token: token, with: result, now: t0)).first else {
            Issue.record("no browse response to the completed load")
            return
        }
        #expect(response.status == .exceedsLimits)
        #expect(response.error?.contains("3 images") == true)
    }

    /// The phone's check that a page fits one message is exact, for every
    /// field of an item and every kind of section: a page whose message is
    /// 65,535 bytes goes out whole, one a byte longer is refused (browse
    /// pages and queue pages alike).
    @Test func aPageFillingOneMessageExactlyIsSentAndOneByteMoreIsRefused() throws {
        let fields = Self.everyItemField
        let sections = Self.everySectionKind
        // The last row's title is `bytes` bytes of UTF-8, two-byte characters and all.
        func page(_ bytes: Int) -> [ContentItem] {
            fields + [ContentItem(id: "long", kind: .playable, text: String(repeating: "é", count: bytes / 2) + String(repeating: "x", count: bytes % 2))]
        }
        func browsed(_ items: [ContentItem]) throws -> BrowseResponse? {
            var phone = makePhone()
            _ = phone.connect(now: t0)
            let token = try #require(loads(phone.receive(.browseRequest(requestID: 7, containerID: "album", offset: 0, count: 10), now: t0)).first).0
            guard case .browseResponse(let response)? = sent(phone.complete(token: token, with: .page(items: items, sections: sections, totalCount: items.count), now: t0)).first else { return nil }
            return response
        }
        func queued(_ items: [ContentItem]) throws -> QueueResponse? {
            var phone = makePhone()
            _ = phone.connect(now: t0)
            let token = try #require(loads(phone.receive(.queueRequest(requestID: 8, offset: 0, count: 10), now: t0)).first).0
            guard case .queueResponse(let response)? = sent(phone.complete(token: token, with: .queue(items: items, totalCount: items.count, currentIndex: 1), now: t0)).first else { return nil }
            return response
        }
        let browseRoom = ControlMessage.maximumLength
            - MediaMessage.browseResponse(BrowseResponse(requestID: 7, status: .success, totalCount: 5, items: page(0), sections: sections)).controlMessage.encodedLength
        let fits = try #require(try browsed(page(browseRoom)))
        #expect(fits.status == .success && fits.items == page(browseRoom) && fits.sections == sections)
        #expect(MediaMessage.browseResponse(fits).controlMessage.encodedLength == ControlMessage.maximumLength)
        #expect(try wire(.browseResponse(fits)) == .browseResponse(fits))
        let over = try #require(try browsed(page(browseRoom + 1)))
        #expect(over.status == .exceedsLimits && over.items.isEmpty)
        #expect(over.error?.contains("does not fit in one message") == true, "\(over.error ?? "no error")")

        let queueRoom = ControlMessage.maximumLength
            - MediaMessage.queueResponse(QueueResponse(requestID: 8, status: .success, totalCount: 5, currentIndex: 1, items: page(0))).controlMessage.encodedLength
        let queue = try #require(try queued(page(queueRoom)))
        #expect(queue.status == .success && queue.items == page(queueRoom))
        #expect(try wire(.queueResponse(queue)) == .queueResponse(queue))
        let longQueue = try #require(try queued(page(queueRoom + 1)))
        #expect(longQueue.status == .exceedsLimits && longQueue.items.isEmpty)
    }

    @Test func selectionShowsASpinnerUntilCompletedOnEveryPath() throws {
        var headUnit = HeadUnitMediaRole(requestTimeout: .seconds(2))
        _ = headUnit.connect(now: t0)
        guard case .playItem(let id, _, _)? = sent(headUnit.select("kind-of-blue:3", now: t0)).first else {
            Issue.record("selecting a playable row sent no play request")
            return
        }
        #expect(headUnit.selecting == "kind-of-blue:3")
        _ = headUnit.receive(.requestStatus(requestID: id, .noSuchContent, error: "gone"), now: at(10))
        #expect(headUnit.selecting == nil)
        // And when the phone never answers.
        _ = headUnit.select("kind-of-blue:4", now: at(20))
        let timedOut = headUnit.tick(now: at(2020))
        #expect(headUnit.selecting == nil)
        #expect(timedOut.contains(.event(.selection(itemID: "kind-of-blue:4", .timedOut))))
    }

    @Test func aFailedLoadCanBeRetried() throws {
        var headUnit = HeadUnitMediaRole()
        _ = headUnit.connect(now: t0)
        guard case .browseRequest(let id, _, _, _)? = sent(headUnit.open("podcasts", now: t0)).first else {
            Issue.record("opening a container sent no browse request")
            return
        }
        _ = headUnit.receive(.browseResponse(BrowseResponse(requestID: id, status: .commandFailed, error: "offline")), now: at(1))
        #expect(headUnit.containers["podcasts"]?.failure == "offline")
        #expect(headUnit.containers["podcasts"]?.loading == false)
        let retry = sent(headUnit.retry("podcasts", now: at(2)))
        #expect(retry.count == 1)
        #expect(headUnit.containers["podcasts"]?.loading == true && headUnit.containers["podcasts"]?.failure == nil)
    }

    @Test func animatedImagesAreRefusedAndScaleIsHonoured() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        let app = SampleApp()
        let gifToken = loads(phone.receive(.imageRequest(requestID: 1, imageID: "art:animated", scale: 2), now: t0))[0]
        let refused = sent(phone.complete(token: gifToken.0, with: app.load(gifToken.1, now: t0).0, now: t0))
        #expect(refused == [.imageResponse(requestID: 1, .commandFailed, transferID: nil, error: "animated images (GIF) are not allowed")])
        let pngToken = loads(phone.receive(.imageRequest(requestID: 2, imageID: "art:kind-of-blue", scale: 3), now: t0))[0]
        #expect(pngToken.1 == .image(id: "art:kind-of-blue", scale: 3))
        let outputs = phone.complete(token: pngToken.0, with: app.load(pngToken.1, now: t0).0, now: t0)
        guard case .transferFile(_, let bytes, _)? = outputs.last else { Issue.record("no file transfer"); return }
        // Width in the PNG header follows the scale (60 points x 3).
        #expect(Array(bytes[16..<20]) == [0, 0, 0, 180])
    }
}

@Suite struct NowPlayingTests {
    @Test func everyPublishedFieldSurvivesTheWire() throws {
        let info = NowPlayingInfo(itemID: 9, title: "T", artist: "A", albumTitle: "Al", genre: "G", releaseDate: "1959-08-17",
                                  durationMilliseconds: 300_000, artworkTransferID: 4, elapsedMilliseconds: 1234, playbackRate: 1.5,
                                  defaultPlaybackRate: 1.5, queueIndex: 2, queueCount: 9, state: .interrupted, repeatMode: .one,
                                  shuffleMode: .collections, appName: "App")
        guard case .nowPlayingUpdate(let update) = try wire(.nowPlayingUpdate(NowPlayingUpdate(full: info))) else {
            Issue.record("the now-playing update did not decode as one")
            return
        }
        #expect(update.applied(to: NowPlayingInfo()) == info)
        for state in [NowPlayingInfo.PlaybackState.unknown, .playing, .paused, .stopped, .interrupted] {
            var copy = info
            copy.state = state
            guard case .nowPlayingUpdate(let back) = try wire(.nowPlayingUpdate(NowPlayingUpdate(full: copy))) else {
                Issue.record("the now-playing update for \(state) did not decode as one")
                return
            }
            #expect(back.applied(to: NowPlayingInfo()).state == state)
        }
    }

    @Test func elapsedTimeIsInferredForAnyMoment() throws {
        var model = NowPlayingModel()
        model.apply(NowPlayingUpdate(full: NowPlayingInfo(durationMilliseconds: 10_000, elapsedMilliseconds: 1000, playbackRate: 2, state: .playing)), at: at(100))
        #expect(model.elapsed(at: at(100)) == 1000)
        #expect(model.elapsed(at: at(1100)) == 3000)
        #expect(model.elapsed(at: at(60_000)) == 10_000, "elapsed never passes the duration")
        model.apply(NowPlayingUpdate(full: NowPlayingInfo(elapsedMilliseconds: 5000, playbackRate: 0, state: .paused)), at: at(2000))
        #expect(model.elapsed(at: at(9000)) == 5000)
    }

    @Test func updatesOnlyOnMeaningfulChangesNeverAsAClockTick() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        var info = NowPlayingInfo(itemID: 1, title: "A", durationMilliseconds: 600_000, elapsedMilliseconds: 0, playbackRate: 1, state: .playing)
        _ = phone.setNowPlaying(info, now: t0)
        #expect(sent(phone.receive(.startNowPlayingUpdates(.all), now: t0)).count == 1)
        // Time passes as predicted: no update.
        for second in 1...30 {
            info.elapsedMilliseconds = UInt32(second * 1000)
            #expect(phone.setNowPlaying(info, now: at(Int64(second) * 1000)).isEmpty, "update sent as a clock tick at \(second) s")
        }
        // Pause, resume, seek, rate change, track change, stop: each one update.
        info.state = .paused
        #expect(sent(phone.setNowPlaying(info, now: at(30_000))).count == 1)
        #expect(phone.nowPlaying.playbackRate == 0, "rate must be 0 while not playing")
        info.state = .playing
        info.playbackRate = 1
        #expect(sent(phone.setNowPlaying(info, now: at(31_000))).count == 1)
        info.elapsedMilliseconds = 200_000
        #expect(sent(phone.setNowPlaying(info, now: at(31_500))).count == 1, "a seek must be sent")
        info.playbackRate = 2
        #expect(sent(phone.setNowPlaying(info, now: at(31_500))).count == 1)
        info.itemID = 2
        info.title = "B"
        info.elapsedMilliseconds = 0
        #expect(sent(phone.setNowPlaying(info, now: at(32_000))).count == 1)
        info.state = .stopped
        #expect(sent(phone.setNowPlaying(info, now: at(33_000))).count == 1)
    }

    @Test func theNowPlayingScreenIsConfiguredAtConnect() {
        var headUnit = HeadUnitMediaRole()
        let messages = sent(headUnit.connect(now: t0))
        #expect(messages.contains(.startNowPlayingUpdates(.all)))
        #expect(messages.contains(.startMediaLibraryInformation))
        // The extension's limits only once the phone shows it speaks the extension.
        #expect(!messages.contains { if case .limits = $0 { true } else { false } })
        let answer = sent(headUnit.receive(.appInformation(name: "App", hasContentTree: true), now: t0))
        #expect(answer.first.map { if case .limits = $0 { true } else { false } } == true)
        // As a phone sends them: the commands first, then the app. The limits go once, at the first.
        var second = HeadUnitMediaRole()
        _ = second.connect(now: t0)
        let limits = sent(second.receive(.advertisedCommands([AdvertisedCommand(.play)]), now: t0))
            + sent(second.receive(.appInformation(name: "App", hasContentTree: true), now: t0))
        #expect(limits.filter { if case .limits = $0 { true } else { false } }.count == 1)
    }

    @Test func aPhoneThatSpeaksOnlyStandardIAP2GetsCommandsAsRemotePresses() {
        var headUnit = HeadUnitMediaRole()
        _ = headUnit.connect(now: t0)
        let outputs = headUnit.send(.nextTrack, now: t0)
        #expect(sent(outputs).allSatisfy { if case .accessoryHIDReport = $0 { true } else { false } } && sent(outputs).count == 2)
        #expect(outputs.last == .event(.commandStatus(.nextTrack, .success)))
        #expect(headUnit.send(.changeRepeatMode(.all), now: t0) == [.event(.commandStatus(.changeRepeatMode(.all), .commandFailed))])
        #expect(headUnit.nextDeadline == nil, "a press waits for no answer")
    }

    @Test func upNextMayHoldItemsOutsideTheBrowseTree() throws {
        let app = SampleApp()
        app.setTime(t0)
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: t0)
        guard case .queue(let items, let total, let current) = app.load(.queue(offset: 0, count: 20), now: t0).0 else {
            Issue.record("the app did not answer a queue load with a queue")
            return
        }
        #expect(total == 6 && current == 0)
        #expect(items.last?.id == "interlude")
        #expect(app.library.track("interlude")?.inBrowseTree == false)
        // Picked from up next, it plays where it is in the queue, which stays.
        #expect(app.load(.play(itemID: "interlude", imageRowEntryID: nil), now: at(10)).0 == .done)
        #expect(app.nowPlaying(at: at(10)).title == "Station interlude")
        #expect(app.snapshot.index == 5 && app.snapshot.queue.count == 6)
        // So does an item of the tree that the queue holds.
        #expect(app.load(.play(itemID: "kind-of-blue:3", imageRowEntryID: nil), now: at(20)).0 == .done)
        #expect(app.snapshot.index == 2 && app.snapshot.queue.count == 6)
        // The interlude cannot be played from nowhere: outside a queue it is not in the tree.
        let fresh = SampleApp()
        #expect(fresh.load(.play(itemID: "interlude", imageRowEntryID: nil), now: t0).0 == .failed(.noSuchContent, "no playable item interlude"))
    }

    @Test func theAppNameIsShown() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        guard case .nowPlayingUpdate(let update) = try wire(sent(phone.receive(.startNowPlayingUpdates(.all), now: t0))[0]) else {
            Issue.record("subscribing sent no now-playing update first")
            return
        }
        #expect(update.applied(to: NowPlayingInfo()).appName == "iap-devkit Music")
    }
}

@Suite struct RemoteCommandTests {
    static let all: [RemoteCommand] = [
        .play, .pause, .stop, .togglePlayPause, .nextTrack, .previousTrack, .changePlaybackPosition(milliseconds: 61_000),
        .seekForward(begin: true), .seekForward(begin: false), .seekBackward(begin: true), .skipForward(milliseconds: 15_000),
        .skipBackward(milliseconds: 15_000), .changeRepeatMode(.one), .changeRepeatMode(.all), .changeShuffleMode(.collections),
        .changePlaybackRate, .like(true), .dislike(false), .bookmark(true),
    ]

    @Test func everyCommandCarriesItsValueAcrossTheWire() throws {
        for command in Self.all {
            #expect(try wire(.remoteCommand(requestID: 5, command)) == .remoteCommand(requestID: 5, command))
        }
        #expect(Set(Self.all.map(\.kind)) == Set(RemoteCommand.Kind.allCases))
    }

    @Test func everyCommandIsAnsweredWithAStatus() throws {
        let app = SampleApp()
        var phone = makePhone(app)
        _ = phone.connect(now: t0)
        // No item yet: commands that need one say so.
        #expect(sent(phone.receiveRunningCommands(.remoteCommand(requestID: 1, .pause), now: t0)) == [.requestStatus(requestID: 1, .noActionableNowPlayingItem, error: nil)])
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: t0)
        #expect(sent(phone.receiveRunningCommands(.remoteCommand(requestID: 2, .pause), now: t0)) == [.requestStatus(requestID: 2, .success, error: nil)])
        // A command not registered fails rather than being ignored.
        #expect(sent(phone.receiveRunningCommands(.remoteCommand(requestID: 3, .like(true)), now: t0)) == [.requestStatus(requestID: 3, .commandFailed, error: nil)])
        for status in RequestStatus.allCases {
            #expect(try wire(.requestStatus(requestID: 4, status, error: "x")) == .requestStatus(requestID: 4, status, error: "x"))
        }
    }

    @Test func modeCommandsApplyTheValueGivenNeverToggle() throws {
        let app = SampleApp()
        var phone = makePhone(app)
        _ = phone.connect(now: t0)
        // A legacy head unit sends "change shuffle mode" once right after connecting: apply it as given.
        _ = phone.receiveRunningCommands(.remoteCommand(requestID: 1, .changeShuffleMode(.off)), now: t0)
        #expect(app.snapshot.shuffleMode == .off)
        _ = phone.receiveRunningCommands(.remoteCommand(requestID: 2, .changeShuffleMode(.items)), now: t0)
        _ = phone.receiveRunningCommands(.remoteCommand(requestID: 3, .changeShuffleMode(.items)), now: t0)
        #expect(app.snapshot.shuffleMode == .items, "the same value twice must not toggle")
        _ = phone.receiveRunningCommands(.remoteCommand(requestID: 4, .changeRepeatMode(.one)), now: t0)
        _ = phone.receiveRunningCommands(.remoteCommand(requestID: 5, .changeRepeatMode(.one)), now: t0)
        #expect(app.snapshot.repeatMode == .one)
    }

    @Test func radioControlsFollowTheAdvertisedSetNotTheEnabledFlag() throws {
        let app = SampleApp()
        var phone = makePhone(app)
        var headUnit = HeadUnitMediaRole()
        func deliver(_ outputs: [PhoneMediaRole.Output]) throws {
            for message in sent(outputs) { _ = headUnit.receive(try wire(message), now: t0) }
        }
        try deliver(phone.connect(now: t0))
        #expect(!headUnit.radioControls)
        #expect(headUnit.buttons.contains(.previousTrack))
        try deliver(phone.updateCommands { app.registerFeedback(&$0) })
        #expect(headUnit.radioControls)
        #expect(!headUnit.buttons.contains(.previousTrack), "radio controls have no previous-track button")
        try deliver(phone.updateCommands { center in for kind in [RemoteCommand.Kind.like, .dislike, .bookmark] { center.setEnabled(kind, false) } })
        #expect(headUnit.radioControls, "disabling alone must not switch back")
        try deliver(phone.updateCommands { center in for kind in [RemoteCommand.Kind.like, .dislike, .bookmark] { center.withdraw(kind) } })
        #expect(!headUnit.radioControls)
        #expect(headUnit.buttons.contains(.previousTrack))
    }

    @Test func theRateButtonStepsAndWrapsFromFastestToSlowest() throws {
        let app = SampleApp(supportedRates: [1.0, 1.5, 2.0])
        var phone = makePhone(app)
        _ = phone.connect(now: t0)
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: t0)
        var rates: [Double] = []
        for request in 1...4 as ClosedRange<UInt32> {
            _ = phone.receiveRunningCommands(.remoteCommand(requestID: request, .changePlaybackRate), now: t0)
            rates.append(app.snapshot.rate)
        }
        #expect(rates == [1.5, 2.0, 1.0, 1.5])
        #expect(RemoteCommandCenter(supportedRates: [2, 0.5, 1]).nextRate(after: 2) == 0.5)
    }

    @Test func stopReleasesTheQueuePauseKeepsIt() {
        let app = SampleApp()
        app.setTime(t0)
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: t0)
        #expect(app.perform(.pause) == .success)
        #expect(app.snapshot.queue.count == 6)
        #expect(app.perform(.stop) == .success)
        #expect(app.snapshot.queue.isEmpty)
        #expect(app.perform(.play) == .noActionableNowPlayingItem)
    }

    @Test func headUnitCommandsTimeOutAndSayStatus() {
        var headUnit = HeadUnitMediaRole(requestTimeout: .seconds(1))
        _ = headUnit.connect(now: t0)
        _ = headUnit.receive(.appInformation(name: "App", hasContentTree: false), now: t0)
        guard case .remoteCommand(let id, _)? = sent(headUnit.send(.nextTrack, now: t0)).first else {
            Issue.record("a command sent no remote-command message")
            return
        }
        #expect(headUnit.receive(.requestStatus(requestID: id, .deviceNotFound, error: nil), now: at(5)) == [.event(.commandStatus(.nextTrack, .deviceNotFound))])
        _ = headUnit.send(.play, now: at(10))
        #expect(headUnit.tick(now: at(1010)) == [.event(.commandStatus(.play, .timedOut))])
    }
}

@Suite struct MediaEdgeCaseTests {
    @Test func aTitleDoesNotOutliveItsTrack() throws {
        var model = NowPlayingModel()
        model.apply(NowPlayingUpdate(full: NowPlayingInfo(title: "Old", durationMilliseconds: 1000, state: .playing)), at: t0)
        guard case .nowPlayingUpdate(let stopped) = try wire(.nowPlayingUpdate(NowPlayingUpdate(full: NowPlayingInfo(state: .stopped)))) else {
            Issue.record("the stopped update did not decode as one")
            return
        }
        model.apply(stopped, at: at(1))
        #expect(model.info.title == nil && model.info.durationMilliseconds == nil)
        // A playback-only update keeps the item.
        model.apply(NowPlayingUpdate(full: NowPlayingInfo(title: "New", state: .playing)), at: at(2))
        let playbackOnly = ControlMessage(id: MessageID.nowPlayingUpdate, parameters: [
            try .group(ParameterID.NowPlayingUpdate.playbackAttributes, [.uint8(ParameterID.Playback.status, 2)]),
        ])
        guard case .nowPlayingUpdate(let paused)? = try MediaMessage(playbackOnly) else {
            Issue.record("the playback-only update did not decode as one")
            return
        }
        model.apply(paused, at: at(3))
        #expect(model.info.title == "New" && model.info.state == .paused)
    }

    @Test func radioControlsNeedAnEnabledFeedbackCommandToStart() {
        var headUnit = HeadUnitMediaRole()
        _ = headUnit.connect(now: t0)
        _ = headUnit.receive(.advertisedCommands([AdvertisedCommand(.play), AdvertisedCommand(.like, enabled: false)]), now: t0)
        #expect(!headUnit.radioControls, "a feedback command advertised disabled from the start does not switch")
        _ = headUnit.receive(.advertisedCommands([AdvertisedCommand(.play), AdvertisedCommand(.like)]), now: t0)
        #expect(headUnit.radioControls)
        _ = headUnit.receive(.advertisedCommands([AdvertisedCommand(.play), AdvertisedCommand(.like, enabled: false)]), now: t0)
        #expect(headUnit.radioControls, "disabling keeps radio controls")
        _ = headUnit.receive(.advertisedCommands([AdvertisedCommand(.play)]), now: t0)
        #expect(!headUnit.radioControls)
    }

    @Test func likeAndDislikeAreDifferentThings() {
        let app = SampleApp()
        app.setTime(t0)
        _ = app.load(.play(itemID: "kind-of-blue:2", imageRowEntryID: nil), now: t0)
        #expect(app.perform(.dislike(true)) == .success)
        #expect(app.snapshot.disliked == ["kind-of-blue:2"] && app.snapshot.liked.isEmpty)
    }

    @Test func queuePagesAreBoundedLikeBrowsePages() {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.receive(.limits(HeadUnitLimits(maximumPageSize: 5)), now: t0)
        guard case .queueResponse(let response)? = sent(phone.receive(.queueRequest(requestID: 1, offset: 0, count: 6), now: t0)).first else {
            Issue.record("no refusal")
            return
        }
        #expect(response.status == .exceedsLimits && response.error?.contains("6") == true)
        #expect(sent(phone.receive(.imageRequest(requestID: 2, imageID: "x", scale: 9), now: t0)).first == .imageResponse(requestID: 2, .commandFailed, transferID: nil, error: "image scale 9 is not 1, 2 or 3"))
    }
}

@Suite struct HostilePeerTests {
    @Test func aFloodOfRequestsIsRefusedNotQueued() {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        var refused = 0
        for id in 1...500 as ClosedRange<UInt32> {
            for case .send(.browseResponse(let response)) in phone.receive(.browseRequest(requestID: id, containerID: "library", offset: 0, count: 10), now: t0) {
                if response.status == .exceedsLimits { refused += 1 }
            }
        }
        #expect(refused == 500 - PhoneMediaRole.maximumPendingRequests)
    }

    @Test func hidComponentsAndUsagesAreBounded() throws {
        var interpreter = HIDRemoteInterpreter()
        for id in 0..<20 as Range<UInt16> {
            _ = interpreter.receive(StartHIDMessage(componentIdentifier: id, vendorIdentifier: 1, productIdentifier: 1,
                                                   reportDescriptor: HIDRemote.reportDescriptor).message)
        }
        #expect(interpreter.componentIdentifiers.count == HIDRemoteInterpreter.maximumComponents)
        // Usage Minimum 0, Usage Maximum 0xFFFF, repeated: refused, not expanded.
        var descriptor: [UInt8] = [0x05, 0x0C, 0x09, 0x01, 0xA1, 0x01]
        for _ in 0..<10 { descriptor += [0x19, 0x00, 0x2A, 0xFF, 0x0F] }
        descriptor += [0x15, 0x00, 0x25, 0x01, 0x75, 0x01, 0x95, 0x10, 0x81, 0x02, 0xC0]
        #expect(throws: WireError.self) { try HIDInputLayout(descriptor: descriptor) }
    }

    @Test func randomBytesNeverCrashTheStack() throws {
        var generator = SystemRandomNumberGenerator()
        var phone = makePhone()
        var headUnit = HeadUnitMediaRole()
        _ = phone.connect(now: t0)
        _ = headUnit.connect(now: t0)
        var channel = ControlChannel()
        var link = LinkEnd(configuration: LinkConfiguration(role: .device))
        _ = link.start(now: t0)
        for round in 0..<300 {
            // Random bytes at the link, and random well-framed messages at the roles.
            let junk = (0..<Int.random(in: 1...200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            _ = link.receive(junk, now: at(Int64(round)))
            _ = link.tick(now: at(Int64(round) + 1))
            let id = [UInt16(0xB100), 0xB101, 0xB102, 0xB103, 0xB110, 0xB112, 0xB113, 0xB114, 0xB120, 0xB121, 0xB130, 0xB131, 0x5000, 0x5001, 0x6800, 0x6802].randomElement(using: &generator)!
            let parameters = (0..<Int.random(in: 0...8, using: &generator)).map { _ in
                Parameter(id: UInt16.random(in: 0...12, using: &generator), data: (0..<Int.random(in: 0...12, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) })
            }
            let bytes = try ControlMessage(id: id, parameters: parameters).encoded()
            for case .message(let message) in channel.receive(bytes).inputs {
                guard let typed = try? MediaMessage(message) else { continue }
                _ = phone.receive(typed, now: at(Int64(round)))
                _ = headUnit.receive(typed, now: at(Int64(round)))
            }
        }
        _ = phone.tick(now: at(10_000))
        _ = headUnit.tick(now: at(10_000))
        #expect(phone.isConnected)
    }
}
