import IAPRoles
@testable import IAPScreen
import IAPSession
import Testing

/// Images reach the screen as files that may come before or after the
/// message naming them; either order shows the image under its id.
@Suite struct ScreenImagesTests {
    let cover: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]

    static func nowPlaying(artwork transferID: UInt8?) -> Connection.Event {
        .media(.nowPlaying(NowPlayingInfo(title: "So What", artworkTransferID: transferID, state: .playing)))
    }

    @Test func artworkWhoseFileComesBeforeTheUpdateIsShown() {
        var images = ScreenImages()
        images.take(.fileReceived(transferID: 9, bytes: cover), nowPlayingArtwork: nil)
        #expect(images.artwork(9) == nil)
        images.take(Self.nowPlaying(artwork: 9), nowPlayingArtwork: 9)
        #expect(images.artwork(9) == "artwork:9")
        #expect(images.bytes("artwork:9") == cover)
    }

    @Test func artworkWhoseFileComesAfterTheUpdateIsShown() {
        var images = ScreenImages()
        images.take(Self.nowPlaying(artwork: 4), nowPlayingArtwork: 4)
        #expect(images.artwork(4) == nil)
        images.take(.fileReceived(transferID: 4, bytes: cover), nowPlayingArtwork: 4)
        #expect(images.artwork(4) == "artwork:4")
        #expect(images.artwork(5) == nil)
        #expect(images.artwork(nil) == nil)
    }

    @Test func browseImagesArriveInEitherOrder() {
        var images = ScreenImages()
        images.take(.media(.image(imageID: "art:a", .success, transferID: 1)), nowPlayingArtwork: nil)
        images.take(.fileReceived(transferID: 1, bytes: [1]), nowPlayingArtwork: nil)
        images.take(.fileReceived(transferID: 2, bytes: [2]), nowPlayingArtwork: nil)
        #expect(images.bytes("art:b") == nil)
        images.take(.media(.image(imageID: "art:b", .success, transferID: 2)), nowPlayingArtwork: nil)
        #expect(images.bytes("art:a") == [1] && images.bytes("art:b") == [2])
        images.take(.media(.image(imageID: "art:c", .noSuchContent, transferID: nil)), nowPlayingArtwork: nil)
        #expect(images.missing == ["art:c"])
        #expect(images.stored.map(\.id) == ["art:a", "art:b"])
    }

    @Test func storedImagesAndUnclaimedFilesAreBounded() {
        var images = ScreenImages()
        for index in 0..<(ScreenImages.limit + 10) {
            images.take(.media(.image(imageID: "art:\(index)", .success, transferID: UInt8(index))), nowPlayingArtwork: nil)
            images.take(.fileReceived(transferID: UInt8(index), bytes: [UInt8(index)]), nowPlayingArtwork: nil)
        }
        #expect(images.stored.count == ScreenImages.limit)
        #expect(images.bytes("art:0") == nil && images.bytes("art:\(ScreenImages.limit + 9)") == [UInt8(ScreenImages.limit + 9)])

        // Files nothing names: only the first `limit` are held for a later answer.
        var unnamed = ScreenImages()
        for transferID in 0...UInt8(ScreenImages.limit) {
            unnamed.take(.fileReceived(transferID: transferID, bytes: [transferID]), nowPlayingArtwork: nil)
        }
        unnamed.take(.media(.image(imageID: "first", .success, transferID: 0)), nowPlayingArtwork: nil)
        unnamed.take(.media(.image(imageID: "over", .success, transferID: UInt8(ScreenImages.limit))), nowPlayingArtwork: nil)
        #expect(unnamed.bytes("first") == [0])
        #expect(unnamed.bytes("over") == nil)
    }
}
