import Testing
import IAPLink
import IAPRoles
import IAPWire

/// Findings of the FuzzSession fuzz target (Fuzz/, Docs/Fuzzing.md), each
/// with its minimised input. Replay one with
/// `Fuzz/.build-fuzz/release/FuzzSession <file with the bytes>` built at the
/// commit that added it: the script format changed when the target moved to
/// the connection core.
@Suite struct SessionFuzzRegressionTests {
    /// Link up, identification and media connection exchanged, the head unit
    /// selects an item, the phone asks the app to play it, and the app
    /// answers with a page of 252 items instead of "done". The phone's
    /// RequestStatus said "the app answered <the whole page> to <the
    /// request>": over 64 KiB of text, a message that does not encode, so the
    /// head unit never got an answer. Found as "the phone sent message 0xb103
    /// that does not encode".
    static let wrongAnswerTooLongToSay: [UInt8] = [0x0A, 0x0E, 0x07, 0x04, 0x05, 0x0E, 0x09, 0x9D, 0xFF, 0xFC]

    func connectedPhone() -> PhoneMediaRole {
        var phone = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(supportedRates: [1]), offersContent: true)
        _ = phone.connect(now: .zero)
        return phone
    }

    func load(_ outputs: [PhoneMediaRole.Output]) -> UInt32? {
        outputs.lazy.compactMap { if case .load(let token, _) = $0 { token } else { nil } }.first
    }

    @Test func aWrongAnswerFromTheAppIsReportedInAMessageThatEncodes() throws {
        var phone = connectedPhone()
        let token = try #require(load(phone.receive(.playItem(requestID: 7, itemID: String(repeating: "x", count: 60_000), imageRowEntryID: nil), now: .zero)))
        let items = (0..<252).map { ContentItem(id: "i\($0)", kind: .playable, text: "") }
        let answers = sent(phone.complete(token: token, with: .page(items: items, sections: [], totalCount: 252), now: .zero))
        #expect(answers.count == 1)
        for answer in answers {
            guard case .requestStatus(7, .commandFailed, let error?) = answer else {
                Issue.record("expected a failed RequestStatus for request 7, got \(answer)")
                continue
            }
            #expect(error.contains("a page") && error.contains("play"), "\(error)")
            #expect(throws: Never.self) { try answer.controlMessage.encoded() }
        }
    }

    @Test func anAppErrorTooLongForOneMessageIsCut() throws {
        var phone = connectedPhone()
        let token = try #require(load(phone.receive(.queueRequest(requestID: 3, offset: 0, count: 10), now: .zero)))
        let answers = sent(phone.complete(token: token, with: .failed(.commandFailed, String(repeating: "é", count: 40_000)), now: .zero))
        #expect(answers.count == 1)
        for answer in answers { #expect(throws: Never.self) { try answer.controlMessage.encoded() } }
    }

    /// `02 00 0C 00 12 10 01 00 00 07 00 01 00 00`: link up, everything
    /// exchanged, then the app says it plays at 1e300 times normal speed.
    /// Turning the rate into the update's hundredths trapped ("Double value
    /// cannot be converted to Int because the result would be greater than
    /// Int.max"). The app's rate is whatever it says, infinite and NaN too.
    @Test func anyPlaybackRateFromTheAppEncodes() throws {
        for rate: Double in [1e300, .infinity, -.infinity, .nan, -1, 2] {
            let update = try wire(.nowPlayingUpdate(NowPlayingUpdate(full: NowPlayingInfo(playbackRate: rate, defaultPlaybackRate: rate, state: .playing))))
            guard case .nowPlayingUpdate(let decoded) = update else {
                Issue.record("rate \(rate): came back as \(update)")
                continue
            }
            let expected = rate > 0 ? min(rate, Double(UInt16.max) / 100) : 0
            #expect(decoded.info.playbackRate == expected, "rate \(rate)")
            #expect(decoded.info.defaultPlaybackRate == expected, "rate \(rate)")
        }
    }

    /// `02 00 0C 00 12 10 01 02 FF 40 00 00 01 00 01 00 00`: the app's title
    /// is 84,000 bytes. The update did not encode, so the head unit was never
    /// told what plays ("cannot send NowPlayingUpdate: message 0x5001 would be
    /// 84000 bytes").
    @Test func nowPlayingTextsTooLongForOneMessageAreCut() throws {
        var phone = connectedPhone()
        _ = phone.receive(.startNowPlayingUpdates(.all), now: .zero)
        let long = String(repeating: "long ", count: 16_800)
        let updates = sent(phone.setNowPlaying(NowPlayingInfo(title: long, artist: long, albumTitle: long, genre: long, state: .playing,
                                                              appName: long), now: .zero))
        #expect(updates.count == 1)
        for update in updates { #expect(throws: Never.self) { try update.controlMessage.encoded() } }
        #expect(phone.nowPlaying.title == String(long.prefix(1024)))
    }

    /// `02 02 0C 00 12 08 63 00 00 B2 A1 C3 C3 55`: a head unit that shows
    /// 255 tabs asks for them; the app answers 195 tabs of 780 characters.
    /// The BrowseResponse did not encode and the head unit heard nothing
    /// (pages of children were already checked; tabs were not).
    @Test func tabsTooLargeForOneMessageAreRefused() throws {
        var phone = connectedPhone()
        _ = phone.receive(.limits(HeadUnitLimits(maximumTabs: 255, maximumPageSize: 255)), now: .zero)
        let token = try #require(load(phone.receive(.browseRequest(requestID: 5, containerID: "", offset: 0, count: 255), now: .zero)))
        let tabs = (0..<195).map { ContentItem(id: "t\($0)", kind: .container, text: String(repeating: "x", count: 780)) }
        let answers = sent(phone.complete(token: token, with: .page(items: tabs, sections: [], totalCount: tabs.count), now: .zero))
        #expect(answers.count == 1)
        for answer in answers {
            guard case .browseResponse(let response) = answer else {
                Issue.record("expected a BrowseResponse, got \(answer)")
                continue
            }
            #expect(response.requestID == 5 && response.status == .exceedsLimits)
            #expect(throws: Never.self) { try answer.controlMessage.encoded() }
        }
    }

    /// `02 00 0C 00 12 08 00 00 00 0A A0 00 01 01 FF`: the app answers the
    /// tabs with a total count of `Int.min`; `UInt32(total)` trapped
    /// ("Negative value is not representable"). Pages of children clamped it.
    @Test func aTabsTotalOutOfRangeIsClamped() throws {
        for (total, expected) in [(Int.min, UInt32(0)), (-1, 0), (Int.max, UInt32.max)] {
            var phone = connectedPhone()
            let token = try #require(load(phone.receive(.browseRequest(requestID: 9, containerID: "", offset: 0, count: 4), now: .zero)))
            let tab = ContentItem(id: "library", kind: .container, text: "Library")
            let answers = sent(phone.complete(token: token, with: .page(items: [tab], sections: [], totalCount: total), now: .zero))
            guard answers.count == 1, case .browseResponse(let response) = answers[0] else {
                Issue.record("total \(total): expected one BrowseResponse, got \(answers)")
                continue
            }
            #expect(response.status == .success && response.totalCount == expected, "total \(total)")
        }
    }
}
