import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire
import Testing

/// SetNowPlayingInformation with a queue index: the phone plays the queue's
/// item at that index (the app names it, then plays it in place), nothing
/// when there is none, and a seek in the same message still seeks.
@Suite struct QueueIndexTests {
    static func loads(_ outputs: [PhoneMediaRole.Output]) -> [(UInt32, PhoneMediaRole.LoadRequest)] {
        outputs.compactMap { if case .load(let token, let request) = $0 { (token, request) } else { nil } }
    }

    @Test func aQueueIndexPlaysTheQueuesItemThere() throws {
        let app = SampleApp()
        var phone = PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true)
        _ = phone.connect(now: .zero)
        // Something plays, so there is a queue: the first album.
        let play = try #require(Self.loads(phone.receive(.playItem(requestID: 1, itemID: "kind-of-blue:1", imageRowEntryID: nil), now: .zero)).first)
        _ = phone.complete(token: play.0, with: app.load(play.1, now: .zero).0, now: .zero)
        #expect(app.nowPlaying(at: .zero).queueIndex == 0)

        let named = try #require(Self.loads(phone.receive(.setNowPlayingInformation(elapsedMilliseconds: nil, queueIndex: 2), now: .zero)).first)
        guard case .queue(2, 1) = named.1 else {
            Issue.record("the queue's item at 2 was not asked for: \(named.1)")
            return
        }
        let item = try #require(Self.loads(phone.complete(token: named.0, with: app.load(named.1, now: .zero).0, now: .zero)).first)
        guard case .play(let itemID, nil) = item.1 else {
            Issue.record("the item was not played: \(item.1)")
            return
        }
        let outputs = phone.complete(token: item.0, with: app.load(item.1, now: .zero).0, now: .zero)
        #expect(app.nowPlaying(at: .zero).queueIndex == 2)
        #expect(app.nowPlaying(at: .zero).title == app.library.albums[0].tracks[2].title)
        #expect(itemID == app.library.albums[0].tracks[2].id)
        // Nobody waits for an answer: nothing is sent, it is said.
        #expect(outputs.allSatisfy { if case .send = $0 { false } else { true } })
    }

    @Test func anIndexPastTheQueueAndAFailingAppAreOnlySaid() throws {
        var phone = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(), offersContent: true)
        _ = phone.connect(now: .zero)
        let past = try #require(Self.loads(phone.receive(.setNowPlayingInformation(elapsedMilliseconds: nil, queueIndex: 9), now: .zero)).first)
        let empty = phone.complete(token: past.0, with: .queue(items: [], totalCount: 3, currentIndex: 0), now: .zero)
        #expect(empty.count == 1 && empty.allSatisfy { if case .log = $0 { true } else { false } })
        let failing = try #require(Self.loads(phone.receive(.setNowPlayingInformation(elapsedMilliseconds: nil, queueIndex: 1), now: .zero)).first)
        let failed = phone.complete(token: failing.0, with: .failed(.commandFailed, "offline"), now: .zero)
        #expect(failed.count == 1 && failed.allSatisfy { if case .log = $0 { true } else { false } })
    }

    @Test func aSeekAloneStillSeeks() {
        var commands = RemoteCommandCenter()
        commands.register(.changePlaybackPosition) { command in command == .changePlaybackPosition(milliseconds: 61_000) ? .success : .commandFailed }
        var phone = PhoneMediaRole(appName: "Test", commands: commands, offersContent: true)
        _ = phone.connect(now: .zero)
        let asked = phone.receive(.setNowPlayingInformation(elapsedMilliseconds: 61_000, queueIndex: nil), now: .zero)
        #expect(asked == [.perform(.changePlaybackPosition(milliseconds: 61_000), .setNowPlayingInformation)])
        let outputs = phone.receiveRunningCommands(.setNowPlayingInformation(elapsedMilliseconds: 61_000, queueIndex: nil), now: .zero)
        #expect(Self.loads(outputs).isEmpty)
        #expect(outputs.contains { if case .log(let line) = $0 { line.hasSuffix("success") } else { false } })
    }
}
