import IAPConformance
import IAPDemo
import IAPEndpointCore
import IAPLink
import IAPRoles
import Testing

/// A media library synced through two endpoint cores in virtual time: the
/// phone makes its messages only as the link takes them, and playlists'
/// contents go a few transfers at a time.
@Suite struct LibrarySyncTests {
    /// The sample app's library grown to `items` songs and `playlists` playlists (same library id).
    static func grown(_ library: MediaLibrary, items: Int, playlists: Int) -> MediaLibrary {
        let songs = library.items + (0..<items).map { MediaLibraryItem(title: "Extra \($0)", artist: "Band \($0 % 9)", albumTitle: "Extra \($0 % 40)",
                                                                        trackNumber: UInt16($0 / 40 + 1)) }
        let settled = MediaLibrary(library.description, items: songs).items.map(\.persistentID)
        let lists = (0..<playlists).map { index in
            MediaLibraryPlaylist(name: "List \(index)", items: settled.enumerated().filter { $0.offset % (index + 2) == 0 }.map(\.element))
        }
        return MediaLibrary(library.description, items: songs, playlists: library.playlists + lists)
    }

    static func connected() throws -> MediaSimulator {
        var sim = MediaSimulator()
        let connected = sim.connect(within: .seconds(10))
        try #require(connected)
        let uid = try #require(sim.phone.mediaLibrary.library?.description.uniqueIdentifier)
        let synced = sim.run(for: .seconds(10)) { $0.headUnit.mediaLibraries[uid]?.isSynced == true }
        try #require(synced)
        return sim
    }

    @Test func aLargeLibraryIsNeverWrittenOutAheadOfTheLink() throws {
        var sim = try Self.connected()
        let big = Self.grown(try #require(sim.phone.mediaLibrary.library), items: 3000, playlists: 0)
        sim.phoneDoes("grows its library") { phone, _, _ in phone.updateLibrary(big) }
        var mostWaiting = 0
        let synced = sim.run(for: .seconds(120)) { sim in
            mostWaiting = max(mostWaiting, sim.phoneCore.waiting.messages)
            return sim.headUnit.mediaLibraries[big.description.uniqueIdentifier]?.revision == big.revision
                && sim.headUnit.mediaLibraries[big.description.uniqueIdentifier]?.isSynced == true
        }
        #expect(synced, "the grown library did not sync")
        #expect(sim.headUnit.mediaLibraries[big.description.uniqueIdentifier]?.items.count == big.items.count)
        // At most the one message the link's queue had no room for waits.
        #expect(mostWaiting <= 1, "\(mostWaiting) messages waited for room on the link")
    }

    @Test func everyPlaylistsContentsArriveAFewTransfersAtATime() throws {
        var sim = try Self.connected()
        let many = Self.grown(try #require(sim.phone.mediaLibrary.library), items: 200, playlists: 12)
        sim.phoneDoes("adds twelve playlists") { phone, _, _ in phone.updateLibrary(many) }
        let uid = many.description.uniqueIdentifier
        let synced = sim.run(for: .seconds(60)) { $0.headUnit.mediaLibraries[uid]?.revision == many.revision && $0.headUnit.mediaLibraries[uid]?.isSynced == true }
        #expect(synced)
        let copy = try #require(sim.headUnit.mediaLibraries[uid])
        for playlist in many.playlists {
            #expect(copy.playlists[playlist.persistentID]?.items == playlist.items, "\(playlist.name ?? "?")")
        }
        #expect(!sim.headUnitSessionEvents.contains { if case .problem(let text) = $0 { text.contains("did not arrive") } else { false } })
    }
}
