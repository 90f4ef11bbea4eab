import Foundation
import IAPAuthentication
import IAPKit
import IAPTransport
import Synchronization
import Testing

/// A phone app with a media library and no content tree: its plays come
/// through `playLibraryItems`.
struct LibraryApp: ContentDataSource {
    let playing: NowPlayingCenter
    let library: MediaLibrary

    func tabs() async throws -> [ContentItem] { [] }
    func children(of containerID: String, offset: Int, count: Int) async throws -> ContentPage { throw ContentError(.noSuchContent, "no tree") }
    func play(_ itemID: String, imageRowEntryID: String?) async throws { throw ContentError(.noSuchContent, "no tree") }

    func playLibraryItems(_ items: [UInt64], startIndex: Int) async throws {
        guard let item = library.item(items[startIndex]) else { throw ContentError(.noSuchContent, "no such item") }
        playing.info = NowPlayingInfo(itemID: item.persistentID, title: item.title, artist: item.artist, state: .playing,
                                      mediaLibraryID: library.description.uniqueIdentifier)
    }
}

@Suite struct MediaLibraryKitTests {
    static let library: MediaLibrary = {
        let items = (1...40).map { MediaLibraryItem(title: "Track \($0)", artist: "Band", albumTitle: "Album \($0 % 4)", trackNumber: UInt16($0)) }
        return MediaLibrary(MediaLibraryDescription(name: "Kit", uniqueIdentifier: "kit-library"), items: items)
    }()

    @Test func aHeadUnitSyncsThePhonesLibraryAndPlaysFromIt() async throws {
        let center = NowPlayingCenter()
        let phone = Phone(appName: "Kit", content: LibraryApp(playing: center, library: Self.library), nowPlaying: center, library: Self.library)
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let serving = Task { try await phone.serve(over: b) }
        let headUnit = try await HeadUnit.connect(over: a, configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral(), connectTimeout: .seconds(20)))
        let libraries = try await headUnit.mediaLibraries()
        #expect(libraries.map(\.description.uniqueIdentifier) == ["kit-library"])
        #expect(libraries.first?.songs.map(\.persistentID) == Self.library.items.map(\.persistentID))
        #expect(libraries.first?.albums.count == 4)
        let wanted = Self.library.items[6]
        try await headUnit.play(.items([wanted.persistentID], startingIndex: 0, libraryID: "kit-library"))
        for await event in headUnit.events {
            if case .nowPlaying(let info) = event, info.itemID == wanted.persistentID { break }
        }
        #expect(headUnit.nowPlaying.title == "Track 7" && headUnit.nowPlaying.mediaLibraryID == "kit-library")
        await headUnit.close()
        _ = try await serving.value
    }

    @Test func aHeadUnitGivenTheLibraryItKeptIsSentNothingNew() async throws {
        let center = NowPlayingCenter()
        let phone = Phone(appName: "Kit", content: LibraryApp(playing: center, library: Self.library), nowPlaying: center, library: Self.library)
        let first = try await Self.sync(phone, configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral(), connectTimeout: .seconds(20)))
        #expect(first.resets == 1)
        // Kept (as JSON, as an app would) and given back: no reset, the same copy.
        let kept = try JSONDecoder().decode(MediaLibraryMirror.self, from: try JSONEncoder().encode(first))
        let again = try await Self.sync(phone, configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral(), connectTimeout: .seconds(20),
                                                                  mediaLibraries: [kept]))
        #expect(again.resets == kept.resets && again.itemOrder == first.itemOrder && again.revision == Self.library.revision)
    }

    static func sync(_ phone: Phone, configuration: HeadUnit.Configuration) async throws -> MediaLibraryMirror {
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let serving = Task { try await phone.serve(over: b) }
        let headUnit = try await HeadUnit.connect(over: a, configuration: configuration)
        let libraries = try await headUnit.mediaLibraries()
        await headUnit.close()
        _ = try await serving.value
        return try #require(libraries.first)
    }

    @Test func aPhoneWithoutALibrarySaysSo() async throws {
        try await withPair { headUnit, _, _ in
            await #expect(throws: HeadUnitError.noMediaLibrary) { try await headUnit.mediaLibraries() }
        }
    }
}
