import Foundation
import IAPSampleApp
import IAPLink
@testable import IAPRoles
import IAPWire
import Testing

/// One control message from Fixtures/media-library (README.md there).
private func vector(_ name: String) throws -> ControlMessage {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/media-library/\(name).hex")
    let hex = try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
        let next = hex.index(index, offsetBy: 2)
        bytes.append(try #require(UInt8(hex[index..<next], radix: 16)))
        index = next
    }
    return try ControlMessage(decoding: bytes)
}

private func typed(_ message: ControlMessage) throws -> MediaMessage {
    try #require(try MediaMessage(message))
}

/// A library of `count` songs over `albums` albums, and a playlist of every third song.
func makeLibrary(count: Int, albums: Int = 10, name: String = "Test") -> MediaLibrary {
    let items = (0..<count).map { index in
        MediaLibraryItem(title: "Song \(index)", artist: "Artist \(index % 7)", albumTitle: "Album \(index % albums)",
                         albumArtist: "Band \(index % albums)", genre: index % 2 == 0 ? "Jazz" : "Rock",
                         composer: "Composer \(index % 3)", durationMilliseconds: UInt32(180_000 + index), trackNumber: UInt16(index / albums + 1))
    }
    let description = MediaLibraryDescription(name: name, uniqueIdentifier: "uid-\(name)")
    let ids = MediaLibrary(description, items: items).items.map(\.persistentID)
    let folder = MediaLibraryPlaylist(name: "Folder", isFolder: true)
    return MediaLibrary(description, items: items, playlists: [
        folder, MediaLibraryPlaylist(name: "Thirds", in: folder.persistentID, items: ids.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)),
    ])
}

@Suite struct MediaLibraryCodecTests {
    @Test func informationListsEveryLibraryOfTheRepeatedGroup() throws {
        guard case .mediaLibraryInformation(let libraries) = try typed(try vector("information-two-libraries")) else {
            Issue.record("not decoded as MediaLibraryInformation")
            return
        }
        #expect(libraries == [MediaLibraryDescription(name: "iPhone", uniqueIdentifier: "LIB-0001", type: .local),
                              MediaLibraryDescription(name: "Apple Music Radio", uniqueIdentifier: "RADIO-0002", type: .appleMusicRadio)])
        // What this end sends is the same bytes.
        #expect(try MediaMessage.mediaLibraryInformation(libraries).controlMessage.encoded() == (try vector("information-two-libraries").encoded()))
    }

    @Test func aProductionHeadUnitsRequestIsReadWholeAndWrittenTheSameWay() throws {
        guard case .startMediaLibraryUpdates(let request) = try typed(try vector("start-updates-production")) else {
            Issue.record("not decoded as StartMediaLibraryUpdates")
            return
        }
        #expect(request.libraryID == "LIB-0001")
        #expect(request.lastKnownRevision == "rev-41")
        #expect(request.itemProperties == MediaLibraryUpdateRequest.itemPropertiesShown)
        #expect(request.playlistProperties == Set(0...6))
        #expect(request.wantsProgress && request.wantsHidingRemoteItems && request.wantsPlayAllSongsCapable)
        #expect(request.playlistContentTransferInfo == [0, 1, 6, 12, 14, 16, 18])
        #expect(try MediaMessage.startMediaLibraryUpdates(request).controlMessage.encoded() == (try vector("start-updates-production").encoded()))
    }

    @Test func anUpdateIsReadWithResetDeletionsPlaylistsAndFlags() throws {
        guard case .mediaLibraryUpdate(let update) = try typed(try vector("update-reset-items-playlists")) else {
            Issue.record("not decoded as MediaLibraryUpdate")
            return
        }
        #expect(update.libraryID == "LIB-0001" && update.revision == "rev-42" && update.reset)
        #expect(update.items.count == 2)
        let first = try #require(update.items.first)
        #expect(first.persistentID == 0x1122_3344_5566_7788 && first.title == "So What" && first.mediaType == .music)
        #expect(first.durationMilliseconds == 562_000 && first.albumPersistentID == 0xA1 && first.albumTitle == "Kind of Blue")
        #expect(first.trackNumber == 1 && first.trackCount == 5 && first.discNumber == 1 && first.discCount == 1)
        #expect(first.artistPersistentID == 0xB1 && first.artist == "Miles Davis" && first.albumArtist == "Miles Davis")
        #expect(first.genre == "Jazz" && first.genrePersistentID == 0xC1 && first.composer == "Miles Davis" && first.composerPersistentID == 0xD1)
        #expect(first.isPartOfCompilation == false && first.isResidentOnDevice == true && first.chapterCount == 0)
        // A type given twice: the first counts.
        #expect(update.items[1].mediaType == .podcast)
        #expect(update.playlists.map(\.playlist.persistentID) == [0xF00D, 0xBEEF])
        #expect(update.playlists[0].playlist.isFolder && update.playlists[0].contentsTransferID == nil)
        #expect(update.playlists[1].playlist.parentPersistentID == 0xF00D && update.playlists[1].contentsTransferID == 7)
        #expect(update.deletedItems == [0x55] && update.deletedPlaylists == [0x66])
        #expect(update.progress == 100 && update.isHidingRemoteItems == false && update.playAllSongsCapable == true)
    }

    @Test func everyPlayRequestIsRead() throws {
        #expect(try typed(try vector("play-items")) == .playMediaLibrary(.items([0x1122_3344_5566_7788, 0x99], startingIndex: 1, libraryID: "LIB-0001")))
        #expect(try typed(try vector("play-collection-album"))
                == .playMediaLibrary(.collection(MediaLibraryCollection(persistentID: 0xA1, type: .album), startingIndex: 0,
                                                 startingItem: 0x1122_3344_5566_7788, libraryID: "LIB-0001")))
        #expect(try typed(try vector("play-all-songs")) == .playMediaLibrary(.allSongs(startingItem: nil, libraryID: "LIB-0001")))
        #expect(try typed(try vector("play-current-selection")) == .playMediaLibrary(.currentSelection(libraryID: "LIB-0001")))
        for name in ["play-items", "play-collection-album", "play-all-songs", "play-current-selection"] {
            let message = try vector(name)
            #expect(try typed(message).controlMessage.encoded() == (try message.encoded()), "\(name) is written as read")
        }
    }

    @Test func anItemListThatIsNotWholeIdentifiersIsRefusedByName() throws {
        let message = ControlMessage(id: MessageID.playMediaLibraryItems, parameters: [.blob(0, [1, 2, 3]), .uint32(1, 0), .string(2, "L")])
        #expect(throws: WireError.self) { try MediaMessage(message) }
        do {
            _ = try MediaMessage(message)
        } catch {
            #expect(error.detail.contains("not a whole number of 8-byte identifiers"))
        }
    }

    @Test func itemsAndPlaylistsWithoutAnIdentifierAreRefused() throws {
        var parameters = ParameterList()
        parameters.appendString(0, "L")
        parameters.appendGroup(2) { $0.appendString(1, "no id") }
        #expect(throws: WireError.self) { try MediaMessage(ControlMessage(id: MessageID.mediaLibraryUpdate, parameters: parameters)) }
    }
}

@Suite struct MediaLibraryModelTests {
    @Test func identifiersComeFromContentAndStayTheSame() {
        let a = MediaLibraryItem(title: "So What", artist: "Miles Davis", albumTitle: "Kind of Blue", trackNumber: 1)
        let b = MediaLibraryItem(title: "So What", artist: "Miles Davis", albumTitle: "Kind of Blue", trackNumber: 1)
        let c = MediaLibraryItem(title: "So What", artist: "Miles Davis", albumTitle: "Kind of Blue", trackNumber: 2)
        #expect(a.persistentID == b.persistentID && a.persistentID != c.persistentID)
        // Fixed across runs and platforms: FNV-1a, not Hasher.
        #expect(ContentIdentifier.of("item", ["a"]) == ContentIdentifier.of("item", ["a"]))
        #expect(ContentIdentifier.of("item", ["ab", "c"]) != ContentIdentifier.of("item", ["a", "bc"]))
        #expect(a.albumPersistentID == c.albumPersistentID && a.artistPersistentID == c.artistPersistentID)
    }

    @Test func theSameContentTwiceGetsTwoIdentifiersInOrder() {
        let song = MediaLibraryItem(title: "Twice", artist: "A")
        let library = MediaLibrary(MediaLibraryDescription(name: "L", uniqueIdentifier: "L"), items: [song, song])
        #expect(library.items.map(\.persistentID) == [song.persistentID, song.persistentID &+ 1])
        #expect(MediaLibrary(MediaLibraryDescription(name: "L", uniqueIdentifier: "L"), items: [song, song]).revision == library.revision)
    }

    @Test func theRevisionChangesOnlyWithTheContent() {
        #expect(makeLibrary(count: 50).revision == makeLibrary(count: 50).revision)
        #expect(makeLibrary(count: 50).revision != makeLibrary(count: 51).revision)
        #expect(makeLibrary(count: 50).revision.count == 16)
        // A playlist alone changing (its name, its items) changes the revision too.
        let library = makeLibrary(count: 50)
        var renamed = library.playlists
        renamed[1].name = "Renamed"
        #expect(MediaLibrary(library.description, items: library.items, playlists: renamed).revision != library.revision)
        var shortened = library.playlists
        shortened[1].items.removeLast()
        #expect(MediaLibrary(library.description, items: library.items, playlists: shortened).revision != library.revision)
    }

    @Test func collectionsPlayInTheOrderACarPlaysThem() throws {
        let library = makeLibrary(count: 30, albums: 3)
        let album = try #require(library.items.first?.albumPersistentID)
        let inAlbum = try #require(library.items(in: MediaLibraryCollection(persistentID: album, type: .album)))
        #expect(inAlbum.map { library.item($0)?.trackNumber ?? 0 } == Array(1...10))
        let genre = try #require(library.items.first?.genrePersistentID)
        #expect(library.items(in: MediaLibraryCollection(persistentID: genre, type: .genre))?.count == 15)
        let playlist = try #require(library.playlists.last)
        #expect(library.items(in: MediaLibraryCollection(persistentID: playlist.persistentID, type: .playlist)) == playlist.items)
        #expect(library.items(in: MediaLibraryCollection(persistentID: 42, type: .composer)) == nil)
        for kind in MediaLibraryCollection.Kind.known where kind != .playlist {
            let key: KeyPath<MediaLibraryItem, UInt64?> = [\.artistPersistentID, \.albumPersistentID, \.albumArtistPersistentID, \.genrePersistentID,
                                                           \.composerPersistentID][Int(kind.rawValue) - 1]
            let id = try #require(library.items[4][keyPath: key])
            let items = try #require(library.items(in: MediaLibraryCollection(persistentID: id, type: kind)), "\(kind)")
            #expect(items.allSatisfy { library.item($0)?[keyPath: key] == id }, "\(kind)")
        }
    }
}

@Suite struct MediaLibraryServerTests {
    /// Every message of a sync, decoded.
    static func drain(_ server: inout MediaLibraryServer, budget: Int = 4096) throws -> [MediaLibraryUpdate] {
        var updates: [MediaLibraryUpdate] = []
        var transfer: UInt8 = 1
        while server.hasMessageToSend {
            let next = try #require(server.nextMessage(budget: budget) { defer { transfer &+= 1 }; return transfer })
            #expect(next.message.encodedLength <= budget || next.message.parameters.count(withID: 2) == 1, "a batch over the budget holds one item")
            guard case .mediaLibraryUpdate(let update) = try #require(try MediaMessage(next.message)) else {
                Issue.record("not an update")
                break
            }
            updates.append(update)
        }
        return updates
    }

    @Test func aFirstSyncSendsEverythingInBatchesWithProgressTo100() throws {
        let library = makeLibrary(count: 500)
        var server = MediaLibraryServer(library: library)
        #expect(server.start(MediaLibraryUpdateRequest(libraryID: library.description.uniqueIdentifier)) != .unknownLibrary)
        let updates = try Self.drain(&server)
        #expect(updates.count > 5)
        #expect(updates.first?.reset == true && updates.dropFirst().allSatisfy { !$0.reset })
        #expect(updates.allSatisfy { $0.revision == library.revision })
        let progress = updates.compactMap(\.progress)
        #expect(progress.count == updates.count && progress == progress.sorted() && progress.last == 100 && progress.dropLast().allSatisfy { $0 < 100 })
        #expect(updates.flatMap(\.items).map(\.persistentID) == library.items.map(\.persistentID))
        #expect(updates.flatMap(\.playlists).map(\.playlist.persistentID) == library.playlists.map(\.persistentID))
        // The folder has no contents to send; the playlist has a transfer.
        #expect(updates.flatMap(\.playlists).map { $0.contentsTransferID != nil } == [false, true])
        #expect(!server.hasMessageToSend)
    }

    @Test func onlyTheAskedPropertiesGo() throws {
        let library = makeLibrary(count: 3)
        var server = MediaLibraryServer(library: library)
        _ = server.start(MediaLibraryUpdateRequest(libraryID: library.description.uniqueIdentifier, itemProperties: [1]))
        let item = try #require(try Self.drain(&server).first?.items.first)
        #expect(item.title != nil && item.artist == nil && item.durationMilliseconds == nil)
    }

    @Test func theCurrentRevisionGetsAnEmptyUpdateAnOlderOneWhatChangedAnUnknownOneAReset() throws {
        let old = makeLibrary(count: 100)
        var server = MediaLibraryServer(library: old)
        let uid = old.description.uniqueIdentifier
        _ = server.start(MediaLibraryUpdateRequest(libraryID: uid, lastKnownRevision: old.revision))
        let empty = try Self.drain(&server)
        #expect(empty.count == 1 && empty[0].items.isEmpty && !empty[0].reset && empty[0].progress == 100 && empty[0].revision == old.revision)

        // Two songs change, one goes, one comes.
        var items = old.items
        items[3].title = "Changed"
        items[7].rating = 5
        items.remove(at: 10)
        items.append(MediaLibraryItem(title: "New", artist: "Someone"))
        let new = MediaLibrary(old.description, items: items, playlists: old.playlists)
        server.update(new)
        // The head unit that had the old revision: only the difference.
        server.disconnect()
        _ = server.start(MediaLibraryUpdateRequest(libraryID: uid, lastKnownRevision: old.revision))
        let incremental = try Self.drain(&server)
        #expect(!incremental.contains { $0.reset })
        #expect(Set(incremental.flatMap(\.items).map(\.persistentID)) == [items[3].persistentID, items[7].persistentID, items.last!.persistentID])
        #expect(incremental.flatMap(\.deletedItems) == [old.items[10].persistentID])
        // The playlist lost an item that is gone: it changed too.
        #expect(incremental.flatMap(\.playlists).count == (old.playlists.last!.items.contains(old.items[10].persistentID) ? 1 : 0))
        #expect(incremental.last?.revision == new.revision && incremental.last?.progress == 100)

        server.disconnect()
        _ = server.start(MediaLibraryUpdateRequest(libraryID: uid, lastKnownRevision: "no-such-revision"))
        let reset = try Self.drain(&server)
        #expect(reset.first?.reset == true && reset.flatMap(\.items).count == new.items.count)
    }

    @Test func aHeadUnitSyncedWhenTheLibraryChangesHearsTheChangeUnasked() throws {
        let old = makeLibrary(count: 20)
        var server = MediaLibraryServer(library: old)
        _ = server.start(MediaLibraryUpdateRequest(libraryID: old.description.uniqueIdentifier))
        _ = try Self.drain(&server)
        var items = old.items
        items.removeLast()
        server.update(MediaLibrary(old.description, items: items, playlists: old.playlists))
        let change = try Self.drain(&server)
        #expect(change.flatMap(\.deletedItems) == [old.items.last!.persistentID] && !change.contains { $0.reset })
    }

    @Test func revisionsOlderThanTheKeptOnesGetAReset() throws {
        var library = makeLibrary(count: 5)
        let first = library.revision
        var server = MediaLibraryServer(library: library)
        for round in 0...MediaLibraryServer.revisionsKept {
            library = MediaLibrary(library.description, items: library.items + [MediaLibraryItem(title: "Round \(round)")])
            server.update(library)
        }
        _ = server.start(MediaLibraryUpdateRequest(libraryID: library.description.uniqueIdentifier, lastKnownRevision: first))
        #expect(try Self.drain(&server).first?.reset == true)
    }

    @Test func playRequestsResolveToAQueue() throws {
        let library = makeLibrary(count: 30, albums: 3)
        let server = MediaLibraryServer(library: library)
        let uid = library.description.uniqueIdentifier
        let ids = library.items.map(\.persistentID)
        let items = try server.resolve(.items([ids[4], 999, ids[9]], startingIndex: 1, libraryID: uid)).get()
        #expect(items.items == [ids[4], ids[9]] && items.startIndex == 1)
        let all = try server.resolve(.allSongs(startingItem: ids[12], libraryID: uid)).get()
        #expect(all.items == ids && all.startIndex == 12)
        let album = try #require(library.items[0].albumPersistentID)
        let fromItem = try server.resolve(.collection(MediaLibraryCollection(persistentID: album, type: .album), startingIndex: 0, startingItem: ids[3],
                                                      libraryID: uid)).get()
        #expect(fromItem.items[fromItem.startIndex] == ids[3])
        #expect(throws: MediaLibraryServer.PlayError.self) { try server.resolve(.items([1, 2], startingIndex: 0, libraryID: uid)).get() }
        #expect(throws: MediaLibraryServer.PlayError.self) { try server.resolve(.allSongs(startingItem: nil, libraryID: "other")).get() }
        #expect(throws: MediaLibraryServer.PlayError.self) {
            try server.resolve(.collection(MediaLibraryCollection(persistentID: 1, type: .init(rawValue: 9)), startingIndex: nil, startingItem: nil, libraryID: uid)).get()
        }
    }
}

@Suite struct MediaLibraryMirrorTests {
    @Test func aMirrorFollowsResetsDeletionsAndContents() throws {
        let library = makeLibrary(count: 40)
        var server = MediaLibraryServer(library: library)
        _ = server.start(MediaLibraryUpdateRequest(libraryID: library.description.uniqueIdentifier))
        var mirror = MediaLibraryMirror(library.description)
        var announced: [(transferID: UInt8, playlistID: UInt64)] = []
        for update in try MediaLibraryServerTests.drain(&server, budget: 1024) { announced += mirror.apply(update) }
        #expect(mirror.progress == 100 && !mirror.isSynced && mirror.items.count == 40)
        let playlist = try #require(library.playlists.last)
        #expect(announced.map(\.playlistID) == [playlist.persistentID])
        var contents: [UInt8] = []
        for item in playlist.items { contents.appendBigEndian(item) }
        #expect(mirror.setContents(of: playlist.persistentID, from: contents) == nil)
        #expect(mirror.isSynced && mirror.playlists[playlist.persistentID]?.items == playlist.items)
        #expect(mirror.revision == library.revision)

        var deletion = MediaLibraryUpdate(libraryID: library.description.uniqueIdentifier, revision: "r2")
        deletion.deletedItems = [library.items[0].persistentID]
        _ = mirror.apply(deletion)
        #expect(mirror.items.count == 39 && mirror.itemOrder.first == library.items[1].persistentID && mirror.revision == "r2")
        var reset = MediaLibraryUpdate(libraryID: library.description.uniqueIdentifier, revision: "r3")
        reset.reset = true
        reset.items = [library.items[5]]
        _ = mirror.apply(reset)
        #expect(mirror.items.count == 1 && mirror.playlists.isEmpty)
        #expect(mirror.setContents(of: 1, from: [1, 2, 3]) != nil)
    }

    @Test func theViewsGroupAsACarDoes() {
        let library = makeLibrary(count: 28, albums: 4)
        var mirror = MediaLibraryMirror(library.description)
        var update = MediaLibraryUpdate(libraryID: library.description.uniqueIdentifier)
        update.items = library.items
        update.playlists = library.playlists.map { MediaLibraryPlaylistEntry($0) }
        _ = mirror.apply(update)
        #expect(mirror.albums.count == 4 && mirror.albums.allSatisfy { $0.itemCount == 7 })
        #expect(mirror.genres.map(\.name) == ["Jazz", "Rock"])
        // Album artists, as a car lists artists.
        #expect(mirror.composers.count == 3 && mirror.artists.count == 4)
        #expect(mirror.playlists(in: nil).map(\.name) == ["Folder"])
        #expect(mirror.playlists(in: library.playlists[0].persistentID).map(\.name) == ["Thirds"])
        let album = mirror.albums[0]
        #expect(mirror.songs(in: MediaLibraryCollection(persistentID: album.persistentID, type: .album)).map { $0.trackNumber ?? 0 } == Array(1...7))
    }

    /// The StartMediaLibraryUpdates a head unit sends when the phone lists `library` again.
    static func request(after role: inout HeadUnitMediaRole, _ library: MediaLibraryDescription) -> MediaLibraryUpdateRequest? {
        role.disconnect()
        _ = role.connect(now: .zero)
        for output in role.receive(.mediaLibraryInformation([library]), now: .zero) {
            if case .send(.startMediaLibraryUpdates(let request)) = output { return request }
        }
        return nil
    }

    @Test func onlyAWholeSyncIsARevisionToBuildOn() throws {
        let library = MediaLibraryDescription(name: "L", uniqueIdentifier: "L")
        var role = HeadUnitMediaRole()
        _ = role.connect(now: .zero)
        #expect(try #require(Self.request(after: &role, library)).lastKnownRevision == nil, "a first sync names no revision")
        var partial = MediaLibraryUpdate(libraryID: "L", revision: "r1")
        partial.items = [MediaLibraryItem(persistentID: 1)]
        partial.progress = 50
        _ = role.receive(.mediaLibraryUpdate(partial), now: .zero)
        #expect(try #require(Self.request(after: &role, library)).lastKnownRevision == nil, "a sync cut off at 50 % is no revision to build on")
        #expect(role.mediaLibraries["L"]?.items.isEmpty == true, "the partial copy is dropped")
        var whole = partial
        whole.progress = 100
        _ = role.receive(.mediaLibraryUpdate(whole), now: .zero)
        #expect(try #require(Self.request(after: &role, library)).lastKnownRevision == "r1")
    }

    @Test func aPhoneCannotMakeTheMirrorGrowPastItsLimit() {
        var mirror = MediaLibraryMirror(MediaLibraryDescription(name: "L", uniqueIdentifier: "L"))
        var update = MediaLibraryUpdate(libraryID: "L")
        update.items = (0..<UInt64(MediaLibraryMirror.maximumItems + 10)).map { MediaLibraryItem(persistentID: $0 + 1) }
        _ = mirror.apply(update)
        #expect(mirror.items.count == MediaLibraryMirror.maximumItems && mirror.dropped == 10)
        // Playlists' contents together are bounded too, whatever each file's size.
        var lists = MediaLibraryUpdate(libraryID: "L")
        lists.playlists = (1...3).map { MediaLibraryPlaylistEntry(MediaLibraryPlaylist(persistentID: $0, name: "P\($0)"), contentsTransferID: UInt8($0)) }
        _ = mirror.apply(lists)
        let big = [UInt8](repeating: 1, count: 8 * (MediaLibraryMirror.maximumPlaylistEntries / 2))
        #expect(mirror.setContents(of: 1, from: big) == nil && mirror.setContents(of: 2, from: big) == nil)
        #expect(mirror.setContents(of: 3, from: [UInt8](repeating: 2, count: 8))?.contains("over the limit") == true)
        #expect(mirror.playlists[3]?.items.isEmpty == true && mirror.dropped == 11)
        // Replacing a playlist's contents counts its old ones out.
        #expect(mirror.setContents(of: 2, from: big) == nil)
    }
}
