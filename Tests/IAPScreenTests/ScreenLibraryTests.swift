import Foundation
import IAPLink
import IAPRoles
@testable import IAPScreen
import Testing
import IAPWire

/// The screen's Library tab: the list the head unit has open in the phone's
/// media library, moved and played from by the page's actions.
@Suite struct ScreenLibraryTests {
    static let now = LinkInstant.milliseconds(1)

    /// A head unit whose phone offered one library of 3 albums × 4 songs, synced.
    static func headUnit() -> HeadUnitMediaRole {
        var role = HeadUnitMediaRole()
        _ = role.connect(now: now)
        let library = MediaLibraryDescription(name: "Phone", uniqueIdentifier: "lib-1")
        _ = role.receive(.mediaLibraryInformation([library]), now: now)
        var update = MediaLibraryUpdate(libraryID: "lib-1", revision: "r1")
        update.reset = true
        update.items = (0..<12).map { MediaLibraryItem(title: "Song \($0)", artist: "Band \($0 % 3)", albumTitle: "Album \($0 % 3)", trackNumber: UInt16($0 / 3 + 1)) }
        update.progress = 100
        _ = role.receive(.mediaLibraryUpdate(update), now: now)
        return role
    }

    func decode(_ json: String) throws -> ScreenAction { try JSONDecoder().decode(ScreenAction.self, from: Data(json.utf8)) }

    @Test func theLibraryActionsDecode() throws {
        #expect(try decode(#"{"action":"library"}"#) == .library)
        #expect(try decode(#"{"action":"library_open","index":2}"#) == .libraryOpen(2))
        #expect(try decode(#"{"action":"library_play","index":1}"#) == .libraryPlay(1))
        #expect(try decode(#"{"action":"library_back"}"#) == .libraryBack)
        #expect(try decode(#"{"action":"library_more"}"#) == .libraryMore)
        #expect(throws: (any Error).self) { try decode(#"{"action":"library_open"}"#) }
    }

    @Test func thePageWalksArtistsAlbumsSongsAndPlays() throws {
        let role = Self.headUnit()
        var browser = MediaLibraryBrowser()
        var window = ScreenLimits.libraryRows
        let menu = try #require(ScreenModel.library(role, browser: browser, window: window))
        #expect(menu.synced && menu.title == "Phone" && menu.rows.map(\.text) == ["Artists", "Albums", "Songs", "Genres", "Composers", "Playlists"])
        _ = ScreenAction.libraryOpen(1).performLibrary(&browser, window: &window, role: role)
        let artists = try #require(ScreenModel.library(role, browser: browser, window: window))
        #expect(artists.title == "Artists" && artists.depth == 1 && artists.rows.map(\.text) == ["Band 0", "Band 1", "Band 2"])
        _ = ScreenAction.libraryOpen(2).performLibrary(&browser, window: &window, role: role)
        _ = ScreenAction.libraryOpen(1).performLibrary(&browser, window: &window, role: role)
        let songs = try #require(ScreenModel.library(role, browser: browser, window: window))
        #expect(songs.title == "Album 1" && songs.rows.map(\.text) == ["Song 1", "Song 4", "Song 7", "Song 10"] && songs.rows.allSatisfy { !$0.opens })
        let played = try #require(ScreenAction.libraryOpen(2).performLibrary(&browser, window: &window, role: role))
        guard case .send(.playMediaLibrary(.collection(let collection, let index, let item, "lib-1")))? = played.outputs.first else {
            Issue.record("opening a song did not play its album from it: \(played.outputs)")
            return
        }
        #expect(collection.type == .album && index == 1 && item == role.mediaLibraries["lib-1"]?.songs.first { $0.title == "Song 4" }?.persistentID)
        _ = ScreenAction.libraryBack.performLibrary(&browser, window: &window, role: role)
        #expect(ScreenModel.library(role, browser: browser, window: window)?.title == "Band 1")
        let mistake = try #require(ScreenAction.libraryOpen(9).performLibrary(&browser, window: &window, role: role))
        #expect(mistake.problem?.contains("no row 9") == true)
    }

    @Test func aLongListIsSentInWindows() throws {
        var role = Self.headUnit()
        var update = MediaLibraryUpdate(libraryID: "lib-1", revision: "r2")
        update.items = (0..<450).map { MediaLibraryItem(title: "More \($0)") }
        update.progress = 100
        _ = role.receive(.mediaLibraryUpdate(update), now: Self.now)
        var browser = MediaLibraryBrowser()
        var window = ScreenLimits.libraryRows
        _ = ScreenAction.libraryOpen(3).performLibrary(&browser, window: &window, role: role)
        let first = try #require(ScreenModel.library(role, browser: browser, window: window))
        #expect(first.rows.count == ScreenLimits.libraryRows && first.total == 462)
        _ = ScreenAction.libraryMore.performLibrary(&browser, window: &window, role: role)
        #expect(ScreenModel.library(role, browser: browser, window: window)?.rows.count == 2 * ScreenLimits.libraryRows)
    }

    @Test func aLibraryStillSyncingSaysHowFar() {
        var role = HeadUnitMediaRole()
        _ = role.connect(now: Self.now)
        _ = role.receive(.mediaLibraryInformation([MediaLibraryDescription(name: "Phone", uniqueIdentifier: "lib-1")]), now: Self.now)
        var update = MediaLibraryUpdate(libraryID: "lib-1", revision: "r1")
        update.progress = 40
        _ = role.receive(.mediaLibraryUpdate(update), now: Self.now)
        let model = ScreenModel.library(role, browser: MediaLibraryBrowser(), window: ScreenLimits.libraryRows)
        #expect(model?.synced == false && model?.progress == 40)
        #expect(ScreenModel.library(HeadUnitMediaRole(), browser: MediaLibraryBrowser(), window: 1) == nil)
    }
}
