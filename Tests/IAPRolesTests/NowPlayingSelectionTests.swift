import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// StartNowPlayingUpdates names the attributes the head unit wants, each
/// group listing ids as header-only parameters (IAP-FACTS.md); the phone
/// sends those and no others.
@Suite struct NowPlayingSelectionTests {
    static func start(media: [UInt16]?, playback: [UInt16]?) throws -> MediaMessage {
        let message = ControlMessage(id: MessageID.startNowPlayingUpdates, capacity: 64) { parameters in
            if let media { parameters.appendGroup(ParameterID.NowPlayingUpdate.mediaItemAttributes) { for id in media { $0.appendEmpty(id) } } }
            if let playback { parameters.appendGroup(ParameterID.NowPlayingUpdate.playbackAttributes) { for id in playback { $0.appendEmpty(id) } } }
        }
        return try #require(try MediaMessage(ControlMessage(decoding: message.encoded())))
    }

    /// The ids each group of the phone's NowPlayingUpdate carries, as sent on the wire.
    static func carried(_ outputs: [PhoneMediaRole.Output]) throws -> (media: [UInt16]?, playback: [UInt16]?) {
        let messages = sent(outputs)
        try #require(messages.count == 1, "\(messages)")
        let message = try ControlMessage(decoding: messages[0].controlMessage.encoded())
        #expect(message.id == MessageID.nowPlayingUpdate)
        let media = try message.parameter(ParameterID.NowPlayingUpdate.mediaItemAttributes)?.group().map(\.id)
        let playback = try message.parameter(ParameterID.NowPlayingUpdate.playbackAttributes)?.group().map(\.id)
        return (media, playback)
    }

    static func playing() -> NowPlayingInfo {
        NowPlayingInfo(itemID: 7, title: "Song", artist: "Artist", albumTitle: "Album", genre: "Genre", releaseDate: "2024",
                       durationMilliseconds: 180_000, elapsedMilliseconds: 1000, playbackRate: 1, queueIndex: 2, queueCount: 9,
                       state: .playing, appName: "App")
    }

    @Test func theStartMessageNamesTheWantedAttributes() throws {
        let message = try Self.start(media: [ParameterID.MediaItem.title, ParameterID.MediaItem.artist],
                                     playback: [ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds])
        guard case .startNowPlayingUpdates(let selection) = message else {
            Issue.record("decoded as \(message)")
            return
        }
        #expect(selection.mediaItem == [ParameterID.MediaItem.title, ParameterID.MediaItem.artist])
        #expect(selection.playback == [ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds])
        // And it survives the head unit's encoding.
        #expect(try wire(message) == message)
    }

    @Test func thePhoneSendsOnlyWhatWasAskedFor() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.setNowPlaying(Self.playing(), now: t0)
        let start = try Self.start(media: [ParameterID.MediaItem.title, ParameterID.MediaItem.artist],
                                   playback: [ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds])
        let first = try Self.carried(phone.receive(start, now: t0))
        #expect(first.media == [ParameterID.MediaItem.title, ParameterID.MediaItem.artist])
        #expect(first.playback == [ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds])
        // Later updates keep to the same selection.
        var next = Self.playing()
        next.itemID = 8
        next.title = "Next"
        let later = try Self.carried(phone.setNowPlaying(next, now: at(500)))
        #expect(later.media == [ParameterID.MediaItem.title, ParameterID.MediaItem.artist])
        #expect(later.playback == [ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds])
    }

    @Test func onlyPlaybackAttributesMeanNoMediaItemGroup() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.setNowPlaying(Self.playing(), now: t0)
        let carried = try Self.carried(phone.receive(try Self.start(media: nil, playback: [ParameterID.Playback.shuffleMode]), now: t0))
        #expect(carried.media == nil, "a media item group the head unit did not ask for would read as 'no item'")
        #expect(carried.playback == [ParameterID.Playback.shuffleMode])
    }

    /// A head unit that subscribes without naming anything gets everything
    /// the phone has.
    @Test func aStartWithoutListsGetsEverything() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.setNowPlaying(Self.playing(), now: t0)
        let start = MediaMessage.startNowPlayingUpdates(.all)
        let bare = try #require(try MediaMessage(ControlMessage(decoding: ControlMessage(id: MessageID.startNowPlayingUpdates).encoded())))
        #expect(bare == start)
        let carried = try Self.carried(phone.receive(bare, now: t0))
        #expect(carried.media?.contains(ParameterID.MediaItem.title) == true)
        #expect(carried.playback?.contains(ParameterID.Playback.devKitPlaybackState) == true)
    }
}
