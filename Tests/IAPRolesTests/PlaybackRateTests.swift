import Testing
import IAPLink
import IAPRoles
import IAPWire

/// The position moves while playing even when nobody gave a rate (DOMAIN:
/// progress comes from elapsed time, rate and the time of the update).
@Suite struct PlaybackRateTests {
    @Test func aRateLeftOutFollowsTheState() {
        #expect(NowPlayingInfo(title: "So What", state: .playing).playbackRate == 1)
        #expect(NowPlayingInfo(title: "So What", state: .paused).playbackRate == 0)
        #expect(NowPlayingInfo(title: "So What", playbackRate: 0, state: .playing).playbackRate == 0, "stalled: a rate given is kept")
        #expect(NowPlayingInfo(title: "So What", playbackRate: 2, state: .playing).playbackRate == 2)
    }

    @Test func thePhoneMovesThePositionOfAnAppThatOnlySaysPlaying() {
        var phone = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(supportedRates: [1]), offersContent: true)
        _ = phone.connect(now: t0)
        _ = phone.setNowPlaying(NowPlayingInfo(title: "So What", durationMilliseconds: 300_000, elapsedMilliseconds: 1_000, state: .playing), now: t0)
        #expect(phone.elapsed(at: .milliseconds(5_000)) == 6_000)
    }

    /// A NowPlayingUpdate with only these playback attributes, through the wire.
    static func update(status: UInt8, elapsed: UInt32, speed: UInt16? = nil) throws -> NowPlayingUpdate {
        var playback: [Parameter] = [.integer(ParameterID.Playback.status, status),
                                     .integer(ParameterID.Playback.elapsedTimeInMilliseconds, elapsed)]
        if let speed { playback.append(.integer(ParameterID.Playback.speed, speed)) }
        let message = ControlMessage(id: MessageID.nowPlayingUpdate, parameters: [try .group(ParameterID.NowPlayingUpdate.playbackAttributes, playback)])
        guard case .nowPlayingUpdate(let update)? = try MediaMessage(try ControlMessage(decoding: message.encoded())) else {
            Issue.record("not decoded as a NowPlayingUpdate")
            return NowPlayingUpdate(full: NowPlayingInfo())
        }
        return update
    }

    @Test func theHeadUnitMovesThePositionOfAPhoneThatSendsNoSpeed() throws {
        var model = NowPlayingModel()
        model.apply(try Self.update(status: 1, elapsed: 10_000), at: t0)
        #expect(!model.rateReceived)
        #expect(model.elapsed(at: .milliseconds(3_000)) == 13_000)
        // Paused: it stands still.
        model.apply(try Self.update(status: 2, elapsed: 13_000), at: .milliseconds(3_000))
        #expect(model.elapsed(at: .milliseconds(9_000)) == 13_000)
    }

    @Test func aSpeedOnceSentIsKeptAndZeroStandsStill() throws {
        var model = NowPlayingModel()
        model.apply(try Self.update(status: 1, elapsed: 0, speed: 200), at: t0)
        #expect(model.elapsed(at: .milliseconds(1_000)) == 2_000)
        // Stalled while playing: speed 0 holds the position.
        model.apply(try Self.update(status: 1, elapsed: 2_000, speed: 0), at: .milliseconds(1_000))
        #expect(model.rateReceived)
        #expect(model.elapsed(at: .milliseconds(4_000)) == 2_000)
        // A later update without speed keeps the last one sent.
        model.apply(try Self.update(status: 1, elapsed: 2_000), at: .milliseconds(4_000))
        #expect(model.elapsed(at: .milliseconds(6_000)) == 2_000)
    }
}
