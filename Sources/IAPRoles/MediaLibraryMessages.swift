import IAPWire

// Media Library Access messages (0x4C00...0x4C09), typed. Receiving accepts
// what any source sends (members in any order, unknown members skipped, a
// media type given more than once); sending follows the facts sheet's
// table (../shared/MEDIA-LIBRARY-FACTS.md §2).

/// StartMediaLibraryUpdates: which library, from which revision, and what
/// the head unit wants of each item and playlist.
public struct MediaLibraryUpdateRequest: Hashable, Sendable {
    public var libraryID: String
    /// The revision the head unit kept from an earlier sync; nil for a first sync.
    public var lastKnownRevision: String?
    /// `ParameterID.MediaItem` ids wanted; the persistent identifier is always sent.
    public var itemProperties: Set<UInt16>
    /// `ParameterID.MediaPlaylist` ids wanted; the persistent identifier is always sent.
    public var playlistProperties: Set<UInt16>
    public var wantsProgress: Bool
    public var wantsHidingRemoteItems: Bool
    public var wantsPlayAllSongsCapable: Bool
    /// Item properties wanted with playlist contents (MediaPlaylistContentTransferInfoRequest); nil: not asked.
    public var playlistContentTransferInfo: Set<UInt16>?

    /// What this project's head unit asks for: every item property the
    /// facts name that a car shows (as the production head-unit stack
    /// does: 0-19, 25, 27), every playlist property but the content
    /// transfer format, progress, hiding remote items, play all songs.
    public static let itemPropertiesShown: Set<UInt16> = Set(0...19).union([25, 27])
    public static let playlistPropertiesShown: Set<UInt16> = Set(0...6)

    public init(libraryID: String, lastKnownRevision: String? = nil, itemProperties: Set<UInt16> = itemPropertiesShown,
                playlistProperties: Set<UInt16> = playlistPropertiesShown, wantsProgress: Bool = true, wantsHidingRemoteItems: Bool = true,
                wantsPlayAllSongsCapable: Bool = true, playlistContentTransferInfo: Set<UInt16>? = nil) {
        self.libraryID = libraryID
        self.lastKnownRevision = lastKnownRevision
        self.itemProperties = itemProperties
        self.playlistProperties = playlistProperties
        self.wantsProgress = wantsProgress
        self.wantsHidingRemoteItems = wantsHidingRemoteItems
        self.wantsPlayAllSongsCapable = wantsPlayAllSongsCapable
        self.playlistContentTransferInfo = playlistContentTransferInfo
    }
}

/// A playlist as one MediaLibraryUpdate carries it: its contents come over
/// the file-transfer session with `contentsTransferID`.
public struct MediaLibraryPlaylistEntry: Hashable, Sendable {
    public var playlist: MediaLibraryPlaylist
    public var contentsTransferID: UInt8?

    public init(_ playlist: MediaLibraryPlaylist, contentsTransferID: UInt8? = nil) {
        self.playlist = playlist
        self.contentsTransferID = contentsTransferID
    }
}

/// One MediaLibraryUpdate, as received. (The phone writes its batches with
/// `MediaLibraryUpdateWriter`, which never holds more than one message.)
public struct MediaLibraryUpdate: Hashable, Sendable {
    public var libraryID: String
    public var revision: String?
    public var items: [MediaLibraryItem] = []
    public var playlists: [MediaLibraryPlaylistEntry] = []
    public var deletedItems: [UInt64] = []
    public var deletedPlaylists: [UInt64] = []
    /// Drop everything kept for this library before applying the rest.
    public var reset = false
    /// Percent of the sync done; 100 ends the first sync.
    public var progress: UInt8?
    public var isHidingRemoteItems: Bool?
    public var playAllSongsCapable: Bool?

    public init(libraryID: String, revision: String? = nil) {
        self.libraryID = libraryID
        self.revision = revision
    }

    /// Every part of this update, written as one message.
    public var controlMessage: ControlMessage {
        var writer = MediaLibraryUpdateWriter(libraryID: libraryID, revision: revision, reset: reset)
        for item in items { writer.append(item, properties: nil) }
        for entry in playlists { writer.append(entry, properties: nil) }
        for id in deletedItems { writer.appendDeletedItem(id) }
        for id in deletedPlaylists { writer.appendDeletedPlaylist(id) }
        return writer.finish(progress: progress, isHidingRemoteItems: isHidingRemoteItems, playAllSongsCapable: playAllSongsCapable)
    }
}

/// Writes one MediaLibraryUpdate in place, part by part, saying what each
/// part costs before it is added so a batch can stop at a size.
public struct MediaLibraryUpdateWriter: Sendable {
    private var parameters = ParameterList()

    public init(libraryID: String, revision: String?, reset: Bool) {
        parameters.reserveCapacity(bytes: 4096)
        parameters.appendString(ParameterID.MediaLibraryUpdate.uniqueIdentifier, libraryID)
        if let revision { parameters.appendString(ParameterID.MediaLibraryUpdate.revision, revision) }
        if reset { parameters.appendEmpty(ParameterID.MediaLibraryUpdate.reset) }
    }

    /// The message's size so far, its 6-byte header included.
    public var encodedLength: Int { ControlMessage.headerLength + parameters.encodedLength }

    /// Room the trailing progress and flags take (at most).
    public static let trailerLength = 3 * 5

    /// Appends an item with `properties` (nil: every property it has). A
    /// text is cut to `maximumTextLength` bytes so that any one item fits a message.
    public mutating func append(_ item: MediaLibraryItem, properties: Set<UInt16>?) {
        parameters.appendGroup(ParameterID.MediaLibraryUpdate.mediaItem) { group in
            Self.appendMembers(of: item, properties: properties, to: &group)
        }
    }

    /// The bytes `append(item, properties:)` adds.
    public static func encodedLength(of item: MediaLibraryItem, properties: Set<UInt16>?) -> Int {
        var group = ParameterList()
        appendMembers(of: item, properties: properties, to: &group)
        return 4 + group.encodedLength
    }

    public mutating func append(_ entry: MediaLibraryPlaylistEntry, properties: Set<UInt16>?) {
        let playlist = entry.playlist
        func wanted(_ id: UInt16) -> Bool { properties?.contains(id) ?? true }
        parameters.appendGroup(ParameterID.MediaLibraryUpdate.mediaPlaylist) { group in
            group.appendInteger(ParameterID.MediaPlaylist.persistentIdentifier, playlist.persistentID)
            if wanted(ParameterID.MediaPlaylist.name), let name = playlist.name { group.appendString(ParameterID.MediaPlaylist.name, Self.cut(name)) }
            if wanted(ParameterID.MediaPlaylist.parentPersistentIdentifier), let parent = playlist.parentPersistentID {
                group.appendInteger(ParameterID.MediaPlaylist.parentPersistentIdentifier, parent)
            }
            if wanted(ParameterID.MediaPlaylist.isGeniusMix), let genius = playlist.isGeniusMix { group.appendBool(ParameterID.MediaPlaylist.isGeniusMix, genius) }
            if wanted(ParameterID.MediaPlaylist.isFolder) { group.appendBool(ParameterID.MediaPlaylist.isFolder, playlist.isFolder) }
            if let transfer = entry.contentsTransferID { group.appendInteger(ParameterID.MediaPlaylist.contentsFileTransferIdentifier, transfer) }
            if wanted(ParameterID.MediaPlaylist.isAppleMusicRadioStation), let radio = playlist.isAppleMusicRadioStation {
                group.appendBool(ParameterID.MediaPlaylist.isAppleMusicRadioStation, radio)
            }
        }
    }

    /// At most what `append(entry, properties:)` adds.
    public static func encodedLength(of playlist: MediaLibraryPlaylist) -> Int {
        4 + 12 + (playlist.name.map { 4 + min($0.utf8.count, maximumTextLength) + 1 } ?? 0) + 12 + 5 + 5 + 5 + 5
    }

    public mutating func appendDeletedItem(_ id: UInt64) { parameters.appendInteger(ParameterID.MediaLibraryUpdate.deletedItem, id) }
    public mutating func appendDeletedPlaylist(_ id: UInt64) { parameters.appendInteger(ParameterID.MediaLibraryUpdate.deletedPlaylist, id) }

    public consuming func finish(progress: UInt8?, isHidingRemoteItems: Bool?, playAllSongsCapable: Bool?) -> ControlMessage {
        if let progress { parameters.appendInteger(ParameterID.MediaLibraryUpdate.progress, progress) }
        if let isHidingRemoteItems { parameters.appendBool(ParameterID.MediaLibraryUpdate.isHidingRemoteItems, isHidingRemoteItems) }
        if let playAllSongsCapable { parameters.appendBool(ParameterID.MediaLibraryUpdate.playAllSongsCapable, playAllSongsCapable) }
        return ControlMessage(id: MessageID.mediaLibraryUpdate, parameters: parameters)
    }

    /// Longest text an item or playlist carries (a title, a name).
    public static let maximumTextLength = 1024

    static func cut(_ text: String) -> String {
        text.utf8.count <= maximumTextLength ? text : String(decoding: text.utf8.prefix(maximumTextLength), as: UTF8.self)
    }

    static func appendMembers(of item: MediaLibraryItem, properties: Set<UInt16>?, to group: inout ParameterList) {
        typealias ID = ParameterID.MediaItem
        func wanted(_ id: UInt16) -> Bool { properties?.contains(id) ?? true }
        func text(_ id: UInt16, _ value: String?) { if wanted(id), let value { group.appendString(id, cut(value)) } }
        func number<T: FixedWidthInteger>(_ id: UInt16, _ value: T?) { if wanted(id), let value { group.appendInteger(id, value) } }
        func flag(_ id: UInt16, _ value: Bool?) { if wanted(id), let value { group.appendBool(id, value) } }
        group.appendInteger(ID.persistentIdentifier, item.persistentID)
        text(ID.title, item.title)
        number(ID.mediaType, item.mediaType?.rawValue)
        number(ID.rating, item.rating)
        number(ID.playbackDurationInMilliseconds, item.durationMilliseconds)
        number(ID.albumPersistentIdentifier, item.albumPersistentID)
        text(ID.albumTitle, item.albumTitle)
        number(ID.albumTrackNumber, item.trackNumber)
        number(ID.albumTrackCount, item.trackCount)
        number(ID.albumDiscNumber, item.discNumber)
        number(ID.albumDiscCount, item.discCount)
        number(ID.artistPersistentIdentifier, item.artistPersistentID)
        text(ID.artist, item.artist)
        number(ID.albumArtistPersistentIdentifier, item.albumArtistPersistentID)
        text(ID.albumArtist, item.albumArtist)
        number(ID.genrePersistentIdentifier, item.genrePersistentID)
        text(ID.genre, item.genre)
        number(ID.composerPersistentIdentifier, item.composerPersistentID)
        text(ID.composer, item.composer)
        flag(ID.isPartOfCompilation, item.isPartOfCompilation)
        flag(ID.isResidentOnDevice, item.isResidentOnDevice)
        number(ID.chapterCount, item.chapterCount)
    }
}

/// The four ways a head unit asks the phone to play from its library.
public enum MediaLibraryPlayRequest: Hashable, Sendable {
    /// PlayMediaLibraryCurrentSelection: play what the phone has selected.
    case currentSelection(libraryID: String)
    /// PlayMediaLibraryItems: these items as the queue, from `startingIndex`.
    case items([UInt64], startingIndex: UInt32, libraryID: String)
    /// PlayMediaLibraryCollection: a playlist, artist, album, album artist,
    /// genre or composer, from an index or an item.
    case collection(MediaLibraryCollection, startingIndex: UInt32?, startingItem: UInt64?, libraryID: String)
    /// PlayMediaLibrarySpecial with AllSongs: every song, from an item.
    case allSongs(startingItem: UInt64?, libraryID: String)

    public var libraryID: String {
        switch self {
        case .currentSelection(let id), .items(_, _, let id), .collection(_, _, _, let id), .allSongs(_, let id): id
        }
    }

    var messageID: UInt16 {
        switch self {
        case .currentSelection: MessageID.playMediaLibraryCurrentSelection
        case .items: MessageID.playMediaLibraryItems
        case .collection: MessageID.playMediaLibraryCollection
        case .allSongs: MessageID.playMediaLibrarySpecial
        }
    }

    /// The most items one PlayMediaLibraryItems can name (its list is one parameter).
    public static let maximumItems = (0xFFFF - 64) / 8

    var controlMessage: ControlMessage {
        switch self {
        case .currentSelection(let library):
            return ControlMessage(id: messageID, capacity: 8 + library.utf8.count) { parameters in
                parameters.appendString(ParameterID.MediaLibraryNamed.uniqueIdentifier, library)
            }
        case .items(let items, let start, let library):
            return ControlMessage(id: messageID, capacity: 32 + 8 * items.count + library.utf8.count) { parameters in
                var blob: [UInt8] = []
                blob.reserveCapacity(8 * min(items.count, Self.maximumItems))
                for item in items.prefix(Self.maximumItems) { blob.appendBigEndian(item) }
                parameters.appendBlob(ParameterID.PlayMediaLibraryItems.itemPersistentIdentifiers, blob)
                parameters.appendInteger(ParameterID.PlayMediaLibraryItems.startingIndex, start)
                parameters.appendString(ParameterID.PlayMediaLibraryItems.uniqueIdentifier, library)
            }
        case .collection(let collection, let index, let item, let library):
            return ControlMessage(id: messageID, capacity: 48 + library.utf8.count) { parameters in
                parameters.appendInteger(ParameterID.PlayMediaLibraryCollection.collectionPersistentIdentifier, collection.persistentID)
                parameters.appendInteger(ParameterID.PlayMediaLibraryCollection.collectionType, collection.type.rawValue)
                if let index { parameters.appendInteger(ParameterID.PlayMediaLibraryCollection.startingIndex, index) }
                parameters.appendString(ParameterID.PlayMediaLibraryCollection.uniqueIdentifier, library)
                if let item { parameters.appendInteger(ParameterID.PlayMediaLibraryCollection.startingItemPersistentIdentifier, item) }
            }
        case .allSongs(let item, let library):
            return ControlMessage(id: messageID, capacity: 32 + library.utf8.count) { parameters in
                parameters.appendString(ParameterID.PlayMediaLibrarySpecial.uniqueIdentifier, library)
                parameters.appendEmpty(ParameterID.PlayMediaLibrarySpecial.allSongs)
                if let item { parameters.appendInteger(ParameterID.PlayMediaLibrarySpecial.startingItemPersistentIdentifier, item) }
            }
        }
    }
}

// MARK: Encoding and decoding

enum MediaLibraryCodec {
    static func information(_ libraries: [MediaLibraryDescription]) -> ControlMessage {
        ControlMessage(id: MessageID.mediaLibraryInformation, capacity: 16 + libraries.count * 64) { parameters in
            for library in libraries {
                parameters.appendGroup(ParameterID.MediaLibraryInformation.library) { group in
                    group.appendString(ParameterID.MediaLibraryInformation.name, library.name)
                    group.appendString(ParameterID.MediaLibraryInformation.uniqueIdentifier, library.uniqueIdentifier)
                    group.appendInteger(ParameterID.MediaLibraryInformation.type, library.type.rawValue)
                }
            }
        }
    }

    static func information(_ message: ControlMessage) throws(WireError) -> [MediaLibraryDescription] {
        try MessageReader(message).all(ParameterID.MediaLibraryInformation.library) { parameter throws(WireError) in
            let reader = MessageReader(group: try parameter.group())
            return MediaLibraryDescription(name: try reader.optionalString(ParameterID.MediaLibraryInformation.name) ?? "",
                                           uniqueIdentifier: try reader.string(ParameterID.MediaLibraryInformation.uniqueIdentifier),
                                           type: MediaLibraryType(rawValue: try reader.optionalU8(ParameterID.MediaLibraryInformation.type) ?? 0))
        }
    }

    static func updateRequest(_ request: MediaLibraryUpdateRequest) -> ControlMessage {
        typealias ID = ParameterID.StartMediaLibraryUpdates
        return ControlMessage(id: MessageID.startMediaLibraryUpdates, capacity: 64 + 4 * (request.itemProperties.count + request.playlistProperties.count)) { parameters in
            parameters.appendString(ID.uniqueIdentifier, request.libraryID)
            if let revision = request.lastKnownRevision { parameters.appendString(ID.lastKnownRevision, revision) }
            parameters.appendGroup(ID.mediaItemProperties) { group in for id in request.itemProperties.sorted() { group.appendEmpty(id) } }
            parameters.appendGroup(ID.mediaPlaylistProperties) { group in for id in request.playlistProperties.sorted() { group.appendEmpty(id) } }
            if request.wantsProgress { parameters.appendEmpty(ID.updateProgress) }
            if request.wantsHidingRemoteItems { parameters.appendEmpty(ID.isHidingRemoteItems) }
            if request.wantsPlayAllSongsCapable { parameters.appendEmpty(ID.playAllSongsCapable) }
            if let info = request.playlistContentTransferInfo {
                parameters.appendGroup(ID.playlistContentTransferInfoRequest) { group in for id in info.sorted() { group.appendEmpty(id) } }
            }
        }
    }

    /// A request without a property group wants every property.
    static func updateRequest(_ message: ControlMessage) throws(WireError) -> MediaLibraryUpdateRequest {
        typealias ID = ParameterID.StartMediaLibraryUpdates
        let reader = MessageReader(message)
        func ids(_ group: UInt16) throws(WireError) -> Set<UInt16>? {
            guard let parameter = message.parameter(group) else { return nil }
            return Set(try parameter.group().map(\.id))
        }
        return MediaLibraryUpdateRequest(
            libraryID: try reader.string(ID.uniqueIdentifier), lastKnownRevision: try reader.optionalString(ID.lastKnownRevision),
            itemProperties: try ids(ID.mediaItemProperties) ?? Set(0...27), playlistProperties: try ids(ID.mediaPlaylistProperties) ?? Set(0...7),
            wantsProgress: message.parameter(ID.updateProgress) != nil, wantsHidingRemoteItems: message.parameter(ID.isHidingRemoteItems) != nil,
            wantsPlayAllSongsCapable: message.parameter(ID.playAllSongsCapable) != nil,
            playlistContentTransferInfo: try ids(ID.playlistContentTransferInfoRequest))
    }

    static func update(_ message: ControlMessage) throws(WireError) -> MediaLibraryUpdate {
        typealias ID = ParameterID.MediaLibraryUpdate
        let reader = MessageReader(message)
        var update = MediaLibraryUpdate(libraryID: try reader.string(ID.uniqueIdentifier), revision: try reader.optionalString(ID.revision))
        update.items.reserveCapacity(message.parameters.count(withID: ID.mediaItem))
        for parameter in message.parameters {
            switch parameter.id {
            case ID.mediaItem: update.items.append(try item(parameter))
            case ID.mediaPlaylist: update.playlists.append(try playlist(parameter))
            case ID.deletedItem: update.deletedItems.append(try parameter.integer(as: UInt64.self))
            case ID.deletedPlaylist: update.deletedPlaylists.append(try parameter.integer(as: UInt64.self))
            case ID.reset: update.reset = true
            case ID.progress: update.progress = try parameter.integer(as: UInt8.self)
            case ID.isHidingRemoteItems: update.isHidingRemoteItems = try parameter.bool()
            case ID.playAllSongsCapable: update.playAllSongsCapable = try parameter.bool()
            default: break
            }
        }
        return update
    }

    static func item(_ parameter: Parameter) throws(WireError) -> MediaLibraryItem {
        typealias ID = ParameterID.MediaItem
        let members = try parameter.group()
        guard let pid = members.first(withID: ID.persistentIdentifier) else {
            throw WireError(.truncated, "a MediaItem lacks its persistent identifier (member 0)")
        }
        var item = MediaLibraryItem(persistentID: try pid.integer(as: UInt64.self))
        for member in members {
            switch member.id {
            case ID.title: item.title = try member.string()
            // A type may come more than once: the first this end knows counts.
            case ID.mediaType: if item.mediaType == nil { item.mediaType = MediaLibraryItem.MediaType(rawValue: try member.integer(as: UInt8.self)) }
            case ID.rating: item.rating = try member.integer(as: UInt8.self)
            case ID.playbackDurationInMilliseconds: item.durationMilliseconds = try member.integer(as: UInt32.self)
            case ID.albumPersistentIdentifier: item.albumPersistentID = try member.integer(as: UInt64.self)
            case ID.albumTitle: item.albumTitle = try member.string()
            case ID.albumTrackNumber: item.trackNumber = try member.integer(as: UInt16.self)
            case ID.albumTrackCount: item.trackCount = try member.integer(as: UInt16.self)
            case ID.albumDiscNumber: item.discNumber = try member.integer(as: UInt16.self)
            case ID.albumDiscCount: item.discCount = try member.integer(as: UInt16.self)
            case ID.artistPersistentIdentifier: item.artistPersistentID = try member.integer(as: UInt64.self)
            case ID.artist: item.artist = try member.string()
            case ID.albumArtistPersistentIdentifier: item.albumArtistPersistentID = try member.integer(as: UInt64.self)
            case ID.albumArtist: item.albumArtist = try member.string()
            case ID.genrePersistentIdentifier: item.genrePersistentID = try member.integer(as: UInt64.self)
            case ID.genre: item.genre = try member.string()
            case ID.composerPersistentIdentifier: item.composerPersistentID = try member.integer(as: UInt64.self)
            case ID.composer: item.composer = try member.string()
            case ID.isPartOfCompilation: item.isPartOfCompilation = try member.bool()
            case ID.isResidentOnDevice: item.isResidentOnDevice = try member.bool()
            case ID.chapterCount: item.chapterCount = try member.integer(as: UInt16.self)
            default: break
            }
        }
        return item
    }

    static func playlist(_ parameter: Parameter) throws(WireError) -> MediaLibraryPlaylistEntry {
        typealias ID = ParameterID.MediaPlaylist
        let members = try parameter.group()
        guard let pid = members.first(withID: ID.persistentIdentifier) else {
            throw WireError(.truncated, "a MediaPlaylist lacks its persistent identifier (member 0)")
        }
        var entry = MediaLibraryPlaylistEntry(MediaLibraryPlaylist(persistentID: try pid.integer(as: UInt64.self), name: nil))
        for member in members {
            switch member.id {
            case ID.name: entry.playlist.name = try member.string()
            case ID.parentPersistentIdentifier:
                let parent = try member.integer(as: UInt64.self)
                entry.playlist.parentPersistentID = parent == 0 ? nil : parent
            case ID.isGeniusMix: entry.playlist.isGeniusMix = try member.bool()
            case ID.isFolder: entry.playlist.isFolder = try member.bool()
            case ID.contentsFileTransferIdentifier: entry.contentsTransferID = try member.integer(as: UInt8.self)
            case ID.isAppleMusicRadioStation: entry.playlist.isAppleMusicRadioStation = try member.bool()
            default: break
            }
        }
        return entry
    }

    static func playRequest(_ message: ControlMessage) throws(WireError) -> MediaLibraryPlayRequest {
        let reader = MessageReader(message)
        switch message.id {
        case MessageID.playMediaLibraryCurrentSelection:
            return .currentSelection(libraryID: try reader.string(ParameterID.MediaLibraryNamed.uniqueIdentifier))
        case MessageID.playMediaLibraryItems:
            typealias ID = ParameterID.PlayMediaLibraryItems
            guard let list = message.parameter(ID.itemPersistentIdentifiers) else {
                throw WireError(.truncated, "PlayMediaLibraryItems lacks its item list (parameter 0)")
            }
            let bytes = list.data
            guard bytes.count % 8 == 0 else {
                throw WireError(.badValue, "PlayMediaLibraryItems' item list is \(bytes.count) bytes, not a whole number of 8-byte identifiers")
            }
            let items = stride(from: 0, to: bytes.count, by: 8).map { start in bytes[start..<start + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) } }
            return .items(items, startingIndex: try reader.optionalU32(ID.startingIndex) ?? 0, libraryID: try reader.string(ID.uniqueIdentifier))
        case MessageID.playMediaLibraryCollection:
            typealias ID = ParameterID.PlayMediaLibraryCollection
            return .collection(MediaLibraryCollection(persistentID: try reader.u64(ID.collectionPersistentIdentifier),
                                                      type: .init(rawValue: try reader.u8(ID.collectionType))),
                               startingIndex: try reader.optionalU32(ID.startingIndex), startingItem: try reader.optionalU64(ID.startingItemPersistentIdentifier),
                               libraryID: try reader.string(ID.uniqueIdentifier))
        default:
            typealias ID = ParameterID.PlayMediaLibrarySpecial
            guard message.parameter(ID.allSongs) != nil else {
                throw WireError(.badValue, "PlayMediaLibrarySpecial names no special collection (AllSongs, parameter 1, is the one known)")
            }
            return .allSongs(startingItem: try reader.optionalU64(ID.startingItemPersistentIdentifier), libraryID: try reader.string(ID.uniqueIdentifier))
        }
    }
}

extension MessageReader {
    func optionalU8(_ id: UInt16) throws(WireError) -> UInt8? { try parameters.first(withID: id)?.integer(as: UInt8.self) }
    func optionalU32(_ id: UInt16) throws(WireError) -> UInt32? { try parameters.first(withID: id)?.integer(as: UInt32.self) }
    func optionalU64(_ id: UInt16) throws(WireError) -> UInt64? { try parameters.first(withID: id)?.integer(as: UInt64.self) }
}
