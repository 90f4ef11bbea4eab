import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// Now-playing values a peer may send out of range are reported as such and
/// never shown as if valid ("stopped, 4294967 s").
@Suite struct NowPlayingRangeTests {
    /// A NowPlayingUpdate built parameter by parameter, as a hostile phone may send it.
    static func update(media: [Parameter]? = nil, playback: [Parameter]) throws -> NowPlayingUpdate {
        var groups: [Parameter] = []
        if let media { groups.append(try .group(ParameterID.NowPlayingUpdate.mediaItemAttributes, media)) }
        groups.append(try .group(ParameterID.NowPlayingUpdate.playbackAttributes, playback))
        let message = ControlMessage(id: MessageID.nowPlayingUpdate, parameters: groups)
        let decoded = try #require(try MediaMessage(try ControlMessage(decoding: message.encoded())))
        guard case .nowPlayingUpdate(let update) = decoded else {
            Issue.record("decoded as \(decoded)")
            return NowPlayingUpdate(full: NowPlayingInfo())
        }
        return update
    }

    /// A head unit shown a valid track first (shuffle items, repeat all, playing at 10 s of 300 s).
    static func headUnit() -> HeadUnitMediaRole {
        var headUnit = HeadUnitMediaRole()
        _ = headUnit.connect(now: t0)
        let valid = NowPlayingInfo(title: "So What", durationMilliseconds: 300_000, elapsedMilliseconds: 10_000, playbackRate: 1,
                                   state: .playing, repeatMode: .all, shuffleMode: .items)
        _ = headUnit.receive(.nowPlayingUpdate(NowPlayingUpdate(full: valid)), now: t0)
        return headUnit
    }

    static func text(_ headUnit: HeadUnitMediaRole, _ outputs: [HeadUnitMediaRole.Output], now: LinkInstant) -> String {
        let events = outputs.compactMap { if case .event(let event) = $0 { event } else { nil } }
        return events.map { MediaEventText.describe($0, headUnit: headUnit, now: now) }.joined(separator: "\n")
            + "\n" + MediaEventText.nowPlayingLine(headUnit, now: now)
    }

    @Test func playbackStatusOutOfRangeIsUnknownNotStopped() throws {
        var headUnit = Self.headUnit()
        let outputs = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.status, 9)])), now: at(1000))
        #expect(headUnit.nowPlaying.info.state == .unknown)
        #expect(headUnit.nowPlaying.outOfRange == [OutOfRangeValue(.playbackStatus, value: 9)])
        let text = Self.text(headUnit, outputs, now: at(1000))
        #expect(!text.contains("stopped"), "\(text)")
        #expect(text.contains("playback status 9 out of range"), "\(text)")
        // The extended state does not override an out-of-range status.
        _ = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.status, 200), .uint8(ParameterID.Playback.devKitPlaybackState, 3)])), now: at(1100))
        #expect(headUnit.nowPlaying.info.state == .unknown)
        // A valid status clears the report.
        _ = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.status, 2)])), now: at(1200))
        #expect(headUnit.nowPlaying.info.state == .paused)
        #expect(headUnit.nowPlaying.outOfRange.isEmpty)
    }

    @Test func extendedStateOutOfRangeIsReportedAndNotApplied() throws {
        var headUnit = Self.headUnit()
        _ = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.status, 1), .uint8(ParameterID.Playback.devKitPlaybackState, 42)])), now: at(1000))
        #expect(headUnit.nowPlaying.info.state == .playing)
        #expect(headUnit.nowPlaying.outOfRange == [OutOfRangeValue(.playbackState, value: 42)])
    }

    @Test func modesOutOfRangeAreReportedNotShownAsOff() throws {
        var headUnit = Self.headUnit()
        let outputs = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.shuffleMode, 7), .uint8(ParameterID.Playback.repeatMode, 5)])), now: at(1000))
        #expect(headUnit.nowPlaying.outOfRange == [OutOfRangeValue(.shuffleMode, value: 7), OutOfRangeValue(.repeatMode, value: 5)])
        // Not stored as off.
        #expect(headUnit.nowPlaying.info.shuffleMode == .items)
        #expect(headUnit.nowPlaying.info.repeatMode == .all)
        let text = Self.text(headUnit, outputs, now: at(1000))
        #expect(text.contains("shuffle ?") && text.contains("repeat ?"), "\(text)")
        #expect(text.contains("shuffle mode 7 out of range") && text.contains("repeat mode 5 out of range"), "\(text)")
        _ = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.shuffleMode, 0)])), now: at(1100))
        #expect(headUnit.nowPlaying.info.shuffleMode == .off)
        #expect(headUnit.nowPlaying.outOfRange == [OutOfRangeValue(.repeatMode, value: 5)])
    }

    @Test func elapsedTimeOutOfRangeIsNeverShown() throws {
        var headUnit = Self.headUnit()
        let outputs = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint8(ParameterID.Playback.status, 0), .uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 0xFFFF_FFFF)])), now: at(2000))
        #expect(!headUnit.nowPlaying.elapsedIsValid)
        #expect(headUnit.nowPlaying.outOfRange.map(\.attribute) == [.elapsedTime])
        #expect(headUnit.nowPlaying.outOfRange.first?.value == 0xFFFF_FFFF)
        // The position kept is the last valid one carried on (10 s + 2 s playing).
        #expect(headUnit.nowPlaying.elapsed(at: at(2000)) == 12_000)
        let text = Self.text(headUnit, outputs, now: at(2000))
        #expect(!text.contains("4294967 s") && !text.contains("71582:47"), "\(text)")
        #expect(text.contains("elapsed time 4294967295 ms out of range"), "\(text)")
        // Past the duration is out of range too; a valid position clears it.
        _ = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 300_001)])), now: at(2100))
        #expect(!headUnit.nowPlaying.elapsedIsValid)
        _ = headUnit.receive(.nowPlayingUpdate(try Self.update(playback: [.uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 300_000)])), now: at(2200))
        #expect(headUnit.nowPlaying.elapsedIsValid)
        #expect(headUnit.nowPlaying.elapsed(at: at(2200)) == 300_000)
        // Without a duration, a wrapped negative value is out of range.
        var model = NowPlayingModel()
        model.apply(try Self.update(media: [.string(ParameterID.MediaItem.title, "Live")], playback: [.uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 0x8000_0000)]), at: t0)
        #expect(!model.elapsedIsValid)
        model.apply(try Self.update(media: [.string(ParameterID.MediaItem.title, "Live")], playback: [.uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 0x7FFF_FFFF)]), at: t0)
        #expect(model.elapsedIsValid)
    }

    /// Mutation (e) of issue 8: an update without a shuffle (or repeat)
    /// attribute must keep the stored one.
    @Test func anUpdateWithoutModesKeepsTheStoredModes() throws {
        var model = NowPlayingModel()
        model.apply(NowPlayingUpdate(full: NowPlayingInfo(title: "T", state: .playing, repeatMode: .one, shuffleMode: .collections)), at: t0)
        model.apply(try Self.update(playback: [.uint8(ParameterID.Playback.status, 2), .uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 5000)]), at: at(1))
        #expect(model.info.shuffleMode == .collections)
        #expect(model.info.repeatMode == .one)
        #expect(model.info.state == .paused)
        #expect(model.info.elapsedMilliseconds == 5000)
    }
}
