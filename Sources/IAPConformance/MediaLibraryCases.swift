import IAPDemo
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// Media Library Access at both ends, in virtual time: the sample app's
/// library synced by the head unit, kept across a reconnection, brought
/// forward by an incremental update or a reset, and played from.
extension ConformanceCase {
    static let mediaLibraryCases: [ConformanceCase] = [mediaLibrarySync, mediaLibraryReconnect, mediaLibraryIncremental, mediaLibraryReset, mediaLibraryPlay]

    static let mediaLibrarySync = ConformanceCase(name: "media-library-sync", purpose: "the head unit syncs the phone's library to 100 %, every item and playlist (contents by file transfer) as the phone has it") { s in
        guard var sim = s.syncedLibrarySession() else { return }
        s.expectMirror(sim, matches: sim.phone.mediaLibrary.library, "after the first sync")
        let updates = (sim.sentMessageIDs[.device] ?? []).filter { $0 == MessageID.mediaLibraryUpdate }.count
        s.note("\(sim.headUnit.mediaLibraries.first?.value.items.count ?? 0) items and \(sim.headUnit.mediaLibraries.first?.value.playlists.count ?? 0) playlists in \(updates) updates")
        sim.run(for: .milliseconds(100))
        s.session = sim
    }

    static let mediaLibraryReconnect = ConformanceCase(name: "media-library-reconnect", purpose: "a phone that comes back is asked from the revision kept: an empty update, the same identifiers") { s in
        guard var sim = s.syncedLibrarySession(), let library = sim.phone.mediaLibrary.library else { return }
        let before = sim.headUnit.mediaLibraries[library.description.uniqueIdentifier]?.itemOrder
        let sentBefore = sim.sentMessageIDs[.device] ?? []
        sim.unplug()
        guard s.reconnectAndSync(&sim) else { return }
        let after = Array((sim.sentMessageIDs[.device] ?? []).dropFirst(sentBefore.count))
        let updates = after.filter { $0 == MessageID.mediaLibraryUpdate }.count
        s.expect(updates == 1, "the phone sent \(updates) MediaLibraryUpdate messages to a head unit at its current revision; expected one, empty")
        s.expect(sim.headUnit.mediaLibraries[library.description.uniqueIdentifier]?.itemOrder == before, "the identifiers changed across the reconnection")
        // Identifiers and revision come from the content: a fresh app has the same.
        s.expect(SampleApp().mediaLibrary?.revision == library.revision, "a new app with the same content has another revision")
        s.expectMirror(sim, matches: library, "after reconnecting")
        s.session = sim
    }

    static let mediaLibraryIncremental = ConformanceCase(name: "media-library-incremental", purpose: "changes while connected and while away arrive as incremental updates (no reset), applied to the kept library") { s in
        guard var sim = s.syncedLibrarySession(), let old = sim.phone.mediaLibrary.library else { return }
        // While connected: one song retitled.
        var items = old.items
        items[0].title = "So What (live)"
        let live = MediaLibrary(old.description, items: items, playlists: old.playlists)
        sim.phoneDoes("retitles a song") { phone, _, _ in phone.updateLibrary(live) }
        _ = sim.run(for: .seconds(2)) { $0.headUnit.mediaLibraries[old.description.uniqueIdentifier]?.revision == live.revision }
        s.expectMirror(sim, matches: live, "after a change while connected")
        // While away: a song removed and one added.
        sim.unplug()
        items.remove(at: 2)
        items.append(MediaLibraryItem(title: "Naima", artist: "John Coltrane", albumTitle: "Giant Steps", durationMilliseconds: 261_000))
        let changed = MediaLibrary(old.description, items: items, playlists: old.playlists)
        sim.phoneDoes("removes a song and adds one") { phone, _, _ in phone.updateLibrary(changed) }
        let resetsBefore = s.resets(sim)
        guard s.reconnectAndSync(&sim, to: changed.revision) else { return }
        s.expect(s.resets(sim) == resetsBefore, "the phone reset the library where an incremental update would do")
        s.expectMirror(sim, matches: changed, "after an incremental update")
        s.session = sim
    }

    static let mediaLibraryReset = ConformanceCase(name: "media-library-reset", purpose: "a revision the phone no longer knows gets a reset and the whole library, which replaces what was kept") { s in
        guard var sim = s.syncedLibrarySession(), var library = sim.phone.mediaLibrary.library else { return }
        sim.unplug()
        // More changes than the phone keeps revisions for.
        for round in 0...MediaLibraryServer.revisionsKept {
            library = MediaLibrary(library.description, items: Array(library.items.dropFirst()) + [MediaLibraryItem(title: "Take \(round)", artist: "Quartet")],
                                   playlists: library.playlists)
        }
        let final = library
        sim.phoneDoes("changes its library \(MediaLibraryServer.revisionsKept + 1) times") { phone, _, _ in
            var outputs: [PhoneMediaRole.Output] = []
            var step = phone.mediaLibrary.library!
            for round in 0...MediaLibraryServer.revisionsKept {
                step = MediaLibrary(step.description, items: Array(step.items.dropFirst()) + [MediaLibraryItem(title: "Take \(round)", artist: "Quartet")],
                                    playlists: step.playlists)
                outputs += phone.updateLibrary(step)
            }
            return outputs
        }
        let resetsBefore = s.resets(sim)
        guard s.reconnectAndSync(&sim, to: final.revision) else { return }
        s.expect(s.resets(sim) > resetsBefore, "no MediaLibraryReset for a revision the phone no longer keeps")
        s.expectMirror(sim, matches: final, "after a reset")
        s.session = sim
    }

    static let mediaLibraryPlay = ConformanceCase(name: "media-library-play", purpose: "PlayMediaLibraryItems, Collection (an album) and Special (all songs) start playback; now playing names the item and the library") { s in
        guard var sim = s.syncedLibrarySession(), let library = sim.phone.mediaLibrary.library else { return }
        let uid = library.description.uniqueIdentifier
        let second = library.items[1]
        let album = library.items[5]
        let plays: [(String, MediaLibraryPlayRequest, UInt64)] = [
            ("PlayMediaLibraryItems", .items([second.persistentID], startingIndex: 0, libraryID: uid), second.persistentID),
            ("PlayMediaLibraryCollection (album)", .collection(MediaLibraryCollection(persistentID: album.albumPersistentID ?? 0, type: .album),
                                                               startingIndex: nil, startingItem: album.persistentID, libraryID: uid), album.persistentID),
            ("PlayMediaLibrarySpecial (all songs)", .allSongs(startingItem: nil, libraryID: uid), library.items[0].persistentID),
        ]
        for (name, request, expected) in plays {
            sim.headUnitDoes("sends \(name)") { role, _ in role.playFromLibrary(request) }
            let named = sim.run(for: .seconds(2)) { $0.headUnit.nowPlaying.info.itemID == expected && $0.headUnit.nowPlaying.info.state == .playing }
            s.expect(named, "\(name): now playing did not name 0x\(String(expected, radix: 16)) within 2 s (it names \(sim.headUnit.nowPlaying.info.itemID.map { String($0, radix: 16) } ?? "nothing"))")
            s.expect(sim.headUnit.nowPlaying.info.mediaLibraryID == uid, "\(name): now playing does not name the library \(uid)")
        }
        s.note("now playing: \(sim.headUnit.nowPlaying.info.title ?? "?")")
        s.session = sim
    }
}

extension Scenario {
    /// A session connected and its library synced, or nil (the failure said).
    mutating func syncedLibrarySession() -> MediaSimulator? {
        var sim = startSession()
        guard sim.connect(within: .seconds(10)) else {
            expect(false, "the session did not connect within 10 s")
            return nil
        }
        guard let library = sim.phone.mediaLibrary.library else {
            expect(false, "the phone serves no media library")
            return nil
        }
        let synced = sim.run(for: .seconds(10)) { $0.headUnit.mediaLibraries[library.description.uniqueIdentifier]?.isSynced == true }
        expect(synced, "the head unit did not sync the library within 10 s (progress \(sim.headUnit.mediaLibraries[library.description.uniqueIdentifier]?.progress ?? 0) %)")
        return synced ? sim : nil
    }

    /// Plugs back in and runs until the library is synced again (at `revision`, if given).
    mutating func reconnectAndSync(_ sim: inout MediaSimulator, to revision: String? = nil) -> Bool {
        // At least one update of this connection: a copy synced on the last one is not proof.
        let updates = { (sim: MediaSimulator) in (sim.sentMessageIDs[.device] ?? []).filter { $0 == MessageID.mediaLibraryUpdate }.count }
        let before = updates(sim)
        guard sim.connect(within: .seconds(10)), let uid = sim.phone.mediaLibrary.library?.description.uniqueIdentifier else {
            expect(false, "the session did not reconnect within 10 s")
            return false
        }
        let synced = sim.run(for: .seconds(10)) { sim in
            updates(sim) > before && sim.headUnit.mediaLibraries[uid]?.isSynced == true
                && (revision == nil || sim.headUnit.mediaLibraries[uid]?.revision == revision)
        }
        expect(synced, "the library did not sync again within 10 s of reconnecting")
        return synced
    }

    /// MediaLibraryReset flags the head unit has applied to the sample library so far.
    func resets(_ sim: MediaSimulator) -> Int {
        sim.phone.mediaLibrary.library.flatMap { sim.headUnit.mediaLibraries[$0.description.uniqueIdentifier]?.resets } ?? 0
    }

    /// The head unit's copy holds what `library` holds: the same items (by
    /// identifier, with their titles), the same playlists with the same contents.
    mutating func expectMirror(_ sim: MediaSimulator, matches library: MediaLibrary?, _ when: String) {
        guard let library, let mirror = sim.headUnit.mediaLibraries[library.description.uniqueIdentifier] else {
            expect(false, "\(when): the head unit keeps no copy of the library")
            return
        }
        expect(mirror.revision == library.revision, "\(when): the head unit is at revision \(mirror.revision ?? "none"), the phone at \(library.revision)")
        expect(mirror.itemOrder.sorted() == library.items.map(\.persistentID).sorted(), "\(when): the head unit has \(mirror.items.count) items, the phone \(library.items.count)")
        let titles = library.items.filter { mirror.items[$0.persistentID]?.title != $0.title }.map { $0.title ?? "?" }
        expect(titles.isEmpty, "\(when): titles differ: \(titles.prefix(3))")
        for playlist in library.playlists {
            expect(mirror.playlists[playlist.persistentID]?.items == playlist.items,
                   "\(when): playlist \(playlist.name ?? "?") holds \(mirror.playlists[playlist.persistentID]?.items.count ?? 0) items, the phone's \(playlist.items.count)")
        }
    }
}
