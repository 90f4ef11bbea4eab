import IAPWire

// The media library as Media Library Access carries it (0x4C00...0x4C09,
// ../shared/MEDIA-LIBRARY-FACTS.md): items and playlists named by 64-bit
// persistent identifiers, and the library by a unique identifier string.

/// What kind of library a phone offers (MediaLibraryType). Values no source
/// defines (1, above 2) are kept as they came.
public struct MediaLibraryType: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// The phone's own music.
    public static let local = MediaLibraryType(rawValue: 0)
    public static let appleMusicRadio = MediaLibraryType(rawValue: 2)

    public var description: String {
        switch rawValue {
        case 0: "local device library"
        case 2: "Apple Music Radio"
        default: "library type \(rawValue)"
        }
    }
}

/// One library as MediaLibraryInformation lists it.
public struct MediaLibraryDescription: Hashable, Sendable, Codable {
    public var name: String
    public var uniqueIdentifier: String
    public var type: MediaLibraryType

    public init(name: String, uniqueIdentifier: String, type: MediaLibraryType = .local) {
        self.name = name
        self.uniqueIdentifier = uniqueIdentifier
        self.type = type
    }
}

/// One song (or podcast episode, audiobook) of a library: the MediaItem
/// group. Everything but the persistent identifier is optional on the wire:
/// a head unit gets the properties it asked for, and a phone may leave any
/// out.
public struct MediaLibraryItem: Hashable, Sendable, Codable {
    public enum MediaType: UInt8, Hashable, Sendable, Codable, CaseIterable {
        case music = 0, podcast = 1, audiobook = 2, iTunesU = 3
    }

    public var persistentID: UInt64
    public var title: String?
    public var mediaType: MediaType?
    public var rating: UInt8?
    public var durationMilliseconds: UInt32?
    public var albumPersistentID: UInt64?
    public var albumTitle: String?
    public var trackNumber: UInt16?
    public var trackCount: UInt16?
    public var discNumber: UInt16?
    public var discCount: UInt16?
    public var artistPersistentID: UInt64?
    public var artist: String?
    public var albumArtistPersistentID: UInt64?
    public var albumArtist: String?
    public var genrePersistentID: UInt64?
    public var genre: String?
    public var composerPersistentID: UInt64?
    public var composer: String?
    public var isPartOfCompilation: Bool?
    public var isResidentOnDevice: Bool?
    public var chapterCount: UInt16?

    public init(persistentID: UInt64) { self.persistentID = persistentID }

    /// An item whose persistent identifiers (its own, its album's, artist's,
    /// album artist's, genre's and composer's) are derived from its content,
    /// so they are the same on every connection and after every restart.
    /// Two items with the same content get the same identifier:
    /// `MediaLibrary` tells them apart by their order.
    public init(title: String, artist: String? = nil, albumTitle: String? = nil, albumArtist: String? = nil, genre: String? = nil,
                composer: String? = nil, durationMilliseconds: UInt32? = nil, trackNumber: UInt16? = nil, trackCount: UInt16? = nil,
                discNumber: UInt16? = nil, discCount: UInt16? = nil, mediaType: MediaType = .music) {
        self.init(persistentID: 0)
        self.title = title
        self.artist = artist
        self.albumTitle = albumTitle
        self.albumArtist = albumArtist
        self.genre = genre
        self.composer = composer
        self.durationMilliseconds = durationMilliseconds
        self.trackNumber = trackNumber
        self.trackCount = trackCount
        self.discNumber = discNumber
        self.discCount = discCount
        self.mediaType = mediaType
        isResidentOnDevice = true
        artistPersistentID = artist.map { ContentIdentifier.of("artist", [$0]) }
        albumArtistPersistentID = (albumArtist ?? artist).map { ContentIdentifier.of("artist", [$0]) }
        albumPersistentID = albumTitle.map { ContentIdentifier.of("album", [$0, albumArtist ?? artist ?? ""]) }
        genrePersistentID = genre.map { ContentIdentifier.of("genre", [$0]) }
        composerPersistentID = composer.map { ContentIdentifier.of("composer", [$0]) }
        persistentID = ContentIdentifier.of("item", [
            title, artist ?? "", albumTitle ?? "", albumArtist ?? "", discNumber.map { "\($0)" } ?? "", trackNumber.map { "\($0)" } ?? "",
            durationMilliseconds.map { "\($0)" } ?? "", "\(mediaType.rawValue)",
        ])
    }

    /// The album artist as a car shows it: the album artist, else the artist.
    public var shownAlbumArtist: String? { albumArtist ?? artist }
}

/// A playlist or a folder of playlists: the MediaPlaylist group, with the
/// contents that arrive over the file-transfer session.
public struct MediaLibraryPlaylist: Hashable, Sendable, Codable {
    public var persistentID: UInt64
    public var name: String?
    /// The folder this playlist is in; nil at the top.
    public var parentPersistentID: UInt64?
    public var isFolder: Bool
    public var isGeniusMix: Bool?
    public var isAppleMusicRadioStation: Bool?
    /// The items, in playlist order (empty for a folder).
    public var items: [UInt64]

    public init(persistentID: UInt64, name: String?, parentPersistentID: UInt64? = nil, isFolder: Bool = false, isGeniusMix: Bool? = nil,
                isAppleMusicRadioStation: Bool? = nil, items: [UInt64] = []) {
        self.persistentID = persistentID
        self.name = name
        self.parentPersistentID = parentPersistentID
        self.isFolder = isFolder
        self.isGeniusMix = isGeniusMix
        self.isAppleMusicRadioStation = isAppleMusicRadioStation
        self.items = items
    }

    /// A playlist whose identifier is derived from its name and the folder
    /// it is in (stable across connections and restarts).
    public init(name: String, in folder: UInt64? = nil, isFolder: Bool = false, items: [UInt64] = []) {
        self.init(persistentID: ContentIdentifier.of(isFolder ? "folder" : "playlist", [name, folder.map { "\($0)" } ?? ""]),
                  name: name, parentPersistentID: folder, isFolder: isFolder, items: items)
    }
}

/// Identifiers and revisions derived from content: 64-bit FNV-1a over the
/// fields, each ended by a 0xFF byte (which UTF-8 never contains), so
/// ("ab", "c") and ("a", "bc") differ. Deterministic on every platform and
/// run, unlike `Hasher`; not cryptographic, and not meant to be.
public enum ContentIdentifier {
    static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    static let prime: UInt64 = 0x0000_0100_0000_01B3

    public static func of(_ kind: String, _ fields: [String]) -> UInt64 {
        var digest = Digest()
        digest.add(kind)
        for field in fields { digest.add(field) }
        // 0 reads as "no identifier" in some head units: never hand it out.
        return digest.value == 0 ? 1 : digest.value
    }

    /// A running FNV-1a digest.
    struct Digest {
        private(set) var value = ContentIdentifier.offsetBasis

        mutating func add(_ text: String) {
            for byte in text.utf8 { addByte(byte) }
            addByte(0xFF)
        }

        mutating func addByte(_ byte: UInt8) {
            value ^= UInt64(byte)
            value &*= ContentIdentifier.prime
        }

        mutating func add(_ number: UInt64) {
            for shift in stride(from: 56, through: 0, by: -8) { addByte(UInt8(truncatingIfNeeded: number >> UInt64(shift))) }
        }

        mutating func add(_ number: UInt64?) {
            if let number { add(number) } else { addByte(0xFE) }
        }

        mutating func add(_ text: String?) {
            if let text { add(text) } else { addByte(0xFE) }
        }
    }
}

/// A library a phone serves: its description, items and playlists, each
/// identifier unique, and a revision derived from the content (the same
/// content gives the same revision, on every run; any change gives another).
public struct MediaLibrary: Hashable, Sendable {
    public let description: MediaLibraryDescription
    public let items: [MediaLibraryItem]
    public let playlists: [MediaLibraryPlaylist]
    public let revision: String
    /// A digest of each item's and each playlist's content, by identifier:
    /// what an incremental update compares.
    let itemDigests: [UInt64: UInt64]
    let playlistDigests: [UInt64: UInt64]
    /// Where each item is in `items`.
    let itemIndex: [UInt64: Int]

    /// Items whose identifier an earlier item already has (the same content
    /// twice) are given the next free one, in order, so identifiers stay
    /// unique and stable. Playlists keep their identifiers; a playlist's
    /// items that are not in the library are dropped from it.
    public init(_ description: MediaLibraryDescription, items: [MediaLibraryItem], playlists: [MediaLibraryPlaylist] = []) {
        self.description = description
        var unique: [MediaLibraryItem] = []
        unique.reserveCapacity(items.count)
        var index: [UInt64: Int] = [:]
        index.reserveCapacity(items.count)
        var digests: [UInt64: UInt64] = [:]
        digests.reserveCapacity(items.count)
        var revision = ContentIdentifier.Digest()
        revision.add(description.name)
        revision.add(description.uniqueIdentifier)
        for var item in items {
            while index[item.persistentID] != nil || item.persistentID == 0 { item.persistentID &+= 1 }
            index[item.persistentID] = unique.count
            let digest = Self.digest(of: item)
            digests[item.persistentID] = digest
            revision.add(item.persistentID)
            revision.add(digest)
            unique.append(item)
        }
        var playlistDigests: [UInt64: UInt64] = [:]
        var kept: [MediaLibraryPlaylist] = []
        for var playlist in playlists where playlistDigests[playlist.persistentID] == nil {
            playlist.items.removeAll { index[$0] == nil }
            let digest = Self.digest(of: playlist)
            playlistDigests[playlist.persistentID] = digest
            revision.add(playlist.persistentID)
            revision.add(digest)
            kept.append(playlist)
        }
        self.items = unique
        self.playlists = kept
        itemIndex = index
        itemDigests = digests
        self.playlistDigests = playlistDigests
        self.revision = String(revision.value, radix: 16, uppercase: false).leftPadded(to: 16)
    }

    public func item(_ persistentID: UInt64) -> MediaLibraryItem? { itemIndex[persistentID].map { items[$0] } }

    static func digest(of item: MediaLibraryItem) -> UInt64 {
        var digest = ContentIdentifier.Digest()
        digest.add(item.title)
        digest.add(item.mediaType.map { UInt64($0.rawValue) })
        digest.add(item.rating.map(UInt64.init))
        digest.add(item.durationMilliseconds.map(UInt64.init))
        digest.add(item.albumPersistentID)
        digest.add(item.albumTitle)
        digest.add(item.trackNumber.map(UInt64.init))
        digest.add(item.trackCount.map(UInt64.init))
        digest.add(item.discNumber.map(UInt64.init))
        digest.add(item.discCount.map(UInt64.init))
        digest.add(item.artistPersistentID)
        digest.add(item.artist)
        digest.add(item.albumArtistPersistentID)
        digest.add(item.albumArtist)
        digest.add(item.genrePersistentID)
        digest.add(item.genre)
        digest.add(item.composerPersistentID)
        digest.add(item.composer)
        digest.add(item.isPartOfCompilation.map { $0 ? UInt64(1) : 0 })
        digest.add(item.isResidentOnDevice.map { $0 ? UInt64(1) : 0 })
        digest.add(item.chapterCount.map(UInt64.init))
        return digest.value
    }

    static func digest(of playlist: MediaLibraryPlaylist) -> UInt64 {
        var digest = ContentIdentifier.Digest()
        digest.add(playlist.name)
        digest.add(playlist.parentPersistentID)
        digest.add(UInt64(playlist.isFolder ? 1 : 0))
        digest.add(playlist.isGeniusMix.map { $0 ? UInt64(1) : 0 })
        digest.add(playlist.isAppleMusicRadioStation.map { $0 ? UInt64(1) : 0 })
        digest.add(UInt64(playlist.items.count))
        for item in playlist.items { digest.add(item) }
        return digest.value
    }

    /// The items a collection holds, in the order a car plays them: a
    /// playlist in its order; an album by disc and track; an artist, album
    /// artist, genre or composer album by album (albums in library order),
    /// each by disc and track. Nil when no such collection exists.
    public func items(in collection: MediaLibraryCollection) -> [UInt64]? {
        if collection.type == .playlist {
            return playlists.first { $0.persistentID == collection.persistentID && !$0.isFolder }?.items
        }
        let key: KeyPath<MediaLibraryItem, UInt64?>
        switch collection.type {
        case .artist: key = \.artistPersistentID
        case .album: key = \.albumPersistentID
        case .albumArtist: key = \.albumArtistPersistentID
        case .genre: key = \.genrePersistentID
        case .composer: key = \.composerPersistentID
        default: return nil
        }
        var albumOrder: [UInt64: Int] = [:]
        var members: [(album: Int, disc: UInt16, track: UInt16, position: Int, id: UInt64)] = []
        for (position, item) in items.enumerated() where item[keyPath: key] == collection.persistentID {
            let album = item.albumPersistentID ?? 0
            if albumOrder[album] == nil { albumOrder[album] = albumOrder.count }
            members.append((albumOrder[album]!, item.discNumber ?? 0, item.trackNumber ?? 0, position, item.persistentID))
        }
        guard !members.isEmpty else { return nil }
        members.sort { ($0.album, $0.disc, $0.track, $0.position) < ($1.album, $1.disc, $1.track, $1.position) }
        return members.map(\.id)
    }
}

/// A collection PlayMediaLibraryCollection names.
public struct MediaLibraryCollection: Hashable, Sendable, Codable {
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        public var rawValue: UInt8
        public init(rawValue: UInt8) { self.rawValue = rawValue }
        public static let playlist = Kind(rawValue: 0)
        public static let artist = Kind(rawValue: 1)
        public static let album = Kind(rawValue: 2)
        public static let albumArtist = Kind(rawValue: 3)
        public static let genre = Kind(rawValue: 4)
        public static let composer = Kind(rawValue: 5)
        public static let known: [Kind] = [.playlist, .artist, .album, .albumArtist, .genre, .composer]

        public var description: String {
            MessageCatalog.message(MessageID.playMediaLibraryCollection)?.parameter(ParameterID.PlayMediaLibraryCollection.collectionType)?
                .values[UInt64(rawValue)] ?? "collection type \(rawValue)"
        }
    }

    public var persistentID: UInt64
    public var type: Kind

    public init(persistentID: UInt64, type: Kind) {
        self.persistentID = persistentID
        self.type = type
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
