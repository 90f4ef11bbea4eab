import IAPWire

/// The head unit's copy of one phone library, kept from MediaLibraryUpdate
/// messages and playlist contents: resets clear it, deletions remove,
/// items and playlists replace what had their identifier. Bounded: a phone
/// cannot make it hold more than `maximumItems` items and
/// `maximumPlaylists` playlists (what is over is counted, not kept).
public struct MediaLibraryMirror: Hashable, Sendable, Codable {
    public var description: MediaLibraryDescription
    /// The revision of the last update applied (what a later sync names).
    public private(set) var revision: String?
    /// Percent of the first sync done, as the phone last said.
    public private(set) var progress: UInt8 = 0
    public private(set) var items: [UInt64: MediaLibraryItem] = [:]
    public private(set) var playlists: [UInt64: MediaLibraryPlaylist] = [:]
    /// Items in the order the phone sent them (the library's order).
    public private(set) var itemOrder: [UInt64] = []
    public private(set) var playlistOrder: [UInt64] = []
    public private(set) var isHidingRemoteItems: Bool?
    public private(set) var playAllSongsCapable: Bool?
    /// Playlists whose contents were announced and have not arrived.
    public private(set) var awaitingContents: Set<UInt64> = []
    /// Items and playlists dropped because a limit was reached.
    public private(set) var dropped = 0
    /// MediaLibraryReset flags applied.
    public private(set) var resets = 0
    /// Item ids in all playlists together.
    public private(set) var playlistEntries = 0

    public static let maximumItems = 250_000
    public static let maximumPlaylists = 10_000
    /// Item ids in all playlists together (each playlist's file is bounded
    /// by the file-transfer receiver, but not their number times that).
    public static let maximumPlaylistEntries = 2_000_000

    public init(_ description: MediaLibraryDescription) { self.description = description }

    /// Synced: the phone said 100 % and every playlist's contents arrived.
    public var isSynced: Bool { progress >= 100 && awaitingContents.isEmpty }

    /// Applies one update; the transfer ids it announces for playlist
    /// contents, each with its playlist.
    public mutating func apply(_ update: MediaLibraryUpdate) -> [(transferID: UInt8, playlistID: UInt64)] {
        if update.reset {
            resets += 1
            items = [:]
            playlists = [:]
            playlistEntries = 0
            itemOrder = []
            playlistOrder = []
            awaitingContents = []
        }
        if !update.deletedItems.isEmpty {
            let deleted = Set(update.deletedItems)
            for id in deleted { items[id] = nil }
            itemOrder.removeAll { deleted.contains($0) }
        }
        if !update.deletedPlaylists.isEmpty {
            let deleted = Set(update.deletedPlaylists)
            for id in deleted {
                playlistEntries -= playlists.removeValue(forKey: id)?.items.count ?? 0
                awaitingContents.remove(id)
            }
            playlistOrder.removeAll { deleted.contains($0) }
        }
        for item in update.items {
            if items[item.persistentID] == nil {
                guard items.count < Self.maximumItems else {
                    dropped += 1
                    continue
                }
                itemOrder.append(item.persistentID)
            }
            items[item.persistentID] = item
        }
        var transfers: [(UInt8, UInt64)] = []
        for entry in update.playlists {
            var playlist = entry.playlist
            if let old = playlists[playlist.persistentID] {
                // Contents come by file transfer: until new ones do, the old stand.
                playlist.items = old.items
            } else {
                guard playlists.count < Self.maximumPlaylists, playlistEntries + playlist.items.count <= Self.maximumPlaylistEntries else {
                    dropped += 1
                    continue
                }
                playlistOrder.append(playlist.persistentID)
                playlistEntries += playlist.items.count
            }
            playlists[playlist.persistentID] = playlist
            if let transfer = entry.contentsTransferID {
                awaitingContents.insert(playlist.persistentID)
                transfers.append((transfer, playlist.persistentID))
            }
        }
        if let revision = update.revision { self.revision = revision }
        if let progress = update.progress { self.progress = min(progress, 100) }
        if let hiding = update.isHidingRemoteItems { isHidingRemoteItems = hiding }
        if let playAll = update.playAllSongsCapable { playAllSongsCapable = playAll }
        return transfers
    }

    /// A playlist's contents arrived: big-endian u64 ids, 8 bytes each. A
    /// file that is not a whole number of ids is refused (nil, the reason).
    public mutating func setContents(of playlistID: UInt64, from bytes: [UInt8]) -> String? {
        awaitingContents.remove(playlistID)
        guard bytes.count % 8 == 0 else { return "playlist contents of \(bytes.count) bytes are not a whole number of 8-byte identifiers" }
        guard let playlist = playlists[playlistID] else { return "contents for playlist 0x\(String(playlistID, radix: 16)), which was deleted meanwhile" }
        let entries = playlistEntries - playlist.items.count + bytes.count / 8
        guard entries <= Self.maximumPlaylistEntries else {
            dropped += 1
            return "contents of playlist 0x\(String(playlistID, radix: 16)) not kept: playlists would hold \(entries) entries, over the limit of \(Self.maximumPlaylistEntries)"
        }
        playlists[playlistID]?.items = stride(from: 0, to: bytes.count, by: 8).map { start in
            bytes[start..<start + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        }
        playlistEntries = entries
        return nil
    }

    /// The contents of a playlist will not come (the transfer failed).
    public mutating func contentsFailed(for playlistID: UInt64) { awaitingContents.remove(playlistID) }

    /// The connection ended before announced contents came.
    public mutating func abandonContents() {
        // Without them the copy is not whole: the next sync starts over.
        if !awaitingContents.isEmpty { progress = 0 }
        awaitingContents = []
    }

    // MARK: Views, as a car offers them

    /// An artist, album, genre or composer as a row: its identifier and name.
    public struct Group: Hashable, Sendable {
        public var persistentID: UInt64
        public var name: String
        /// For an album: its album artist.
        public var detail: String?
        public var itemCount: Int
    }

    /// Items in library order.
    public var songs: [MediaLibraryItem] { itemOrder.compactMap { items[$0] } }

    /// Album artists (else artists), by name.
    public var artists: [Group] { groups(\.albumArtistPersistentID, name: { $0.shownAlbumArtist }) }
    public var albums: [Group] { groups(\.albumPersistentID, name: { $0.albumTitle }, detail: { $0.shownAlbumArtist }) }
    public var genres: [Group] { groups(\.genrePersistentID, name: { $0.genre }) }
    public var composers: [Group] { groups(\.composerPersistentID, name: { $0.composer }) }

    /// The albums of an (album) artist.
    public func albums(byArtist artistID: UInt64) -> [Group] {
        groups(\.albumPersistentID, name: { $0.albumTitle }, detail: { $0.shownAlbumArtist }, where: { $0.albumArtistPersistentID == artistID })
    }

    /// The songs of an album by disc and track; of another group in album order.
    public func songs(in collection: MediaLibraryCollection) -> [MediaLibraryItem] {
        if collection.type == .playlist { return playlists[collection.persistentID]?.items.compactMap { items[$0] } ?? [] }
        let key: KeyPath<MediaLibraryItem, UInt64?> = switch collection.type {
        case .artist: \.artistPersistentID
        case .album: \.albumPersistentID
        case .genre: \.genrePersistentID
        case .composer: \.composerPersistentID
        default: \.albumArtistPersistentID
        }
        return songs.filter { $0[keyPath: key] == collection.persistentID }.sorted {
            ($0.albumTitle ?? "", $0.discNumber ?? 0, $0.trackNumber ?? 0) < ($1.albumTitle ?? "", $1.discNumber ?? 0, $1.trackNumber ?? 0)
        }
    }

    /// Playlists and folders directly in a folder (nil: the top), folders first, by name.
    public func playlists(in folder: UInt64?) -> [MediaLibraryPlaylist] {
        playlistOrder.compactMap { playlists[$0] }.filter { $0.parentPersistentID == folder }
            .sorted { ($0.isFolder ? 0 : 1, $0.name ?? "") < ($1.isFolder ? 0 : 1, $1.name ?? "") }
    }

    private func groups(_ key: KeyPath<MediaLibraryItem, UInt64?>, name: (MediaLibraryItem) -> String?, detail: (MediaLibraryItem) -> String? = { _ in nil },
                        where include: (MediaLibraryItem) -> Bool = { _ in true }) -> [Group] {
        var found: [UInt64: Group] = [:]
        for id in itemOrder {
            guard let item = items[id], include(item), let group = item[keyPath: key], let title = name(item) else { continue }
            found[group, default: Group(persistentID: group, name: title, detail: detail(item), itemCount: 0)].itemCount += 1
        }
        return found.values.sorted { ($0.name, $0.persistentID) < ($1.name, $1.persistentID) }
    }
}
