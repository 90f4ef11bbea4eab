import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// The phone role sends now-playing artwork unasked: it asks the app for the
/// item's image at the head unit's scale, then names the transfer in an
/// update and sends the file.
@Suite struct NowPlayingArtworkRoleTests {
    static let png = SampleLibrary.standard.image("art:kind-of-blue", scale: 1) ?? []
    static let playing = NowPlayingInfo(itemID: 7, title: "So What", artworkImageID: "art:kind-of-blue", state: .playing)

    static func transfers(_ outputs: [PhoneMediaRole.Output]) -> [(UInt8, [UInt8])] {
        outputs.compactMap { if case .transferFile(let id, let bytes, _) = $0 { (id, bytes) } else { nil } }
    }

    static func logs(_ outputs: [PhoneMediaRole.Output]) -> [String] {
        outputs.compactMap { if case .log(let line) = $0 { line } else { nil } }
    }

    static func updates(_ outputs: [PhoneMediaRole.Output]) throws -> [NowPlayingUpdate] {
        try sent(outputs).compactMap { message in
            if case .nowPlayingUpdate(let update) = try wire(message) { update } else { nil }
        }
    }

    /// A phone connected to a head unit of `scale` that subscribed to `selection`.
    static func subscribedPhone(scale: Int = 2, selection: NowPlayingSelection = .all) throws -> PhoneMediaRole {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        _ = phone.receive(try wire(.limits(HeadUnitLimits(imageScale: scale))), now: t0)
        _ = phone.receive(try wire(.startNowPlayingUpdates(selection)), now: t0)
        return phone
    }

    @Test func theArtworkIsAskedForAtTheHeadUnitsScaleThenNamedAndSent() throws {
        var phone = try Self.subscribedPhone(scale: 3)
        let outputs = phone.setNowPlaying(Self.playing, now: at(1))
        // The update goes at once, without artwork yet; the app is asked for it.
        let first = try #require(try Self.updates(outputs).first)
        #expect(first.info.title == "So What" && first.info.artworkTransferID == nil)
        let (token, load) = try #require(loads(outputs).first)
        #expect(load == .image(id: "art:kind-of-blue", scale: 3))

        let answered = phone.complete(token: token, with: .image(Self.png), now: at(2))
        let update = try #require(try Self.updates(answered).first)
        let transfer = try #require(update.info.artworkTransferID)
        // The media item goes whole (a group replaces the item), the playback attributes not at all.
        #expect(update.applied(to: NowPlayingInfo()).title == "So What")
        #expect(update.applied(to: NowPlayingInfo(elapsedMilliseconds: 4321)).elapsedMilliseconds == 4321)
        let files = Self.transfers(answered)
        #expect(files.count == 1 && files.first?.0 == transfer && files.first?.1 == Self.png)
        // The update comes before the file, so the head unit knows what the file is.
        let updateIndex = answered.firstIndex { if case .send = $0 { true } else { false } }
        let fileIndex = answered.firstIndex { if case .transferFile = $0 { true } else { false } }
        #expect(updateIndex != nil && fileIndex != nil && updateIndex! < fileIndex!)

        // Nothing changed: nothing is sent or loaded again.
        #expect(phone.setNowPlaying(Self.playing, now: at(3)).isEmpty)
    }

    @Test func aHeadUnitThatDidNotAskForArtworkGetsNone() throws {
        var selection = NowPlayingSelection.all
        selection.mediaItem.remove(ParameterID.MediaItem.artworkFileTransferIdentifier)
        var phone = try Self.subscribedPhone(selection: selection)
        let outputs = phone.setNowPlaying(Self.playing, now: at(1))
        #expect(loads(outputs).isEmpty)
        #expect(try Self.updates(outputs).count == 1)
    }

    @Test func animatedArtworkIsNotSent() throws {
        var phone = try Self.subscribedPhone()
        let (token, _) = try #require(loads(phone.setNowPlaying(Self.playing, now: at(1))).first)
        let answered = phone.complete(token: token, with: .image(Array("GIF89a".utf8) + [1, 0, 1, 0]), now: at(2))
        #expect(Self.transfers(answered).isEmpty)
        #expect(try Self.updates(answered).isEmpty)
        #expect(Self.logs(answered).contains { $0.contains("animated") }, "\(answered)")
    }

    @Test func artworkTheAppFailsOrNeverSendsIsReportedNotAnswered() throws {
        var phone = try Self.subscribedPhone()
        let (token, _) = try #require(loads(phone.setNowPlaying(Self.playing, now: at(1))).first)
        let failed = phone.complete(token: token, with: .failed(.noSuchContent, "no such image"), now: at(2))
        // Nobody asked: no response message goes to the head unit, only a log line.
        #expect(sent(failed).isEmpty)
        #expect(Self.logs(failed).contains { $0.contains("art:kind-of-blue") && $0.contains("no such image") }, "\(failed)")

        var slow = try Self.subscribedPhone()
        _ = slow.setNowPlaying(Self.playing, now: at(1))
        let expired = slow.tick(now: at(1) + slow.loadTimeout)
        #expect(sent(expired).isEmpty)
        #expect(Self.logs(expired).contains { $0.contains("art:kind-of-blue") }, "\(expired)")
    }

    @Test func artworkThatArrivesAfterTheItemChangedIsNotSent() throws {
        var phone = try Self.subscribedPhone()
        let (token, _) = try #require(loads(phone.setNowPlaying(Self.playing, now: at(1))).first)
        var next = Self.playing
        next.title = "Take Five"
        next.artworkImageID = "art:time-out"
        let changed = phone.setNowPlaying(next, now: at(2))
        #expect(loads(changed).first?.1 == .image(id: "art:time-out", scale: 2))
        let late = phone.complete(token: token, with: .image(Self.png), now: at(3))
        #expect(Self.transfers(late).isEmpty)
        #expect(try Self.updates(late).isEmpty)
    }

    /// The app's image id is the phone's business; it never goes on the wire.
    @Test func theImageIDStaysOnThePhone() throws {
        var phone = try Self.subscribedPhone()
        let outputs = phone.setNowPlaying(Self.playing, now: at(1))
        #expect(!sent(outputs).isEmpty)
        for case .send(let message) in outputs {
            guard case .nowPlayingUpdate(let update) = message else { continue }
            #expect(update.info.artworkImageID == nil)
        }
    }
}
