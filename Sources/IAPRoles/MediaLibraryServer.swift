import IAPWire

/// The phone's side of Media Library Access, sans-IO: it lists its library,
/// streams it to a head unit that asks (the whole of it, what changed since
/// a revision the head unit kept, or nothing when that revision is current)
/// and resolves the head unit's play requests to a queue of items.
///
/// Streaming is pulled, one message at a time, by whoever has room to send
/// (`nextMessage`): a library of any size is never written out ahead, so
/// the phone holds the library and one message, not a copy of the library
/// as messages.
public struct MediaLibraryServer: Sendable {
    /// An earlier revision, as digests: enough to tell what changed since.
    struct Snapshot: Sendable {
        var revision: String
        var items: [UInt64: UInt64]
        var playlists: [UInt64: UInt64]
    }

    /// What one sync still has to send.
    struct Sync: Sendable {
        enum Items: Sendable {
            case all(Int)
            case some([Int])
        }
        var request: MediaLibraryUpdateRequest
        var revision: String
        var reset: Bool
        var items: Items
        var itemCursor = 0
        var playlists: [Int]
        var playlistCursor = 0
        var deletedItems: [UInt64]
        var deletedPlaylists: [UInt64]
        var deleteCursor = 0
        /// Whether the message saying 100 % has gone.
        var finished = false
        var sentParts = 0

        var itemCount: Int {
            switch items {
            case .all(let count): count
            case .some(let indices): indices.count
            }
        }
        var totalParts: Int { itemCount + playlists.count + deletedItems.count + deletedPlaylists.count }
    }

    public private(set) var library: MediaLibrary?
    /// Earlier revisions, newest first.
    private var history: [Snapshot] = []
    /// Syncs of the connected head unit, by library identifier.
    private var syncs: [String: Sync] = [:]

    /// Earlier revisions kept for incremental updates; a head unit that
    /// names an older one gets a reset and the whole library.
    public static let revisionsKept = 4

    public init(library: MediaLibrary? = nil) { self.library = library }

    public var libraries: [MediaLibraryDescription] { library.map { [$0.description] } ?? [] }

    /// Whether a sync has a message to send.
    public var hasMessageToSend: Bool { syncs.values.contains { !$0.finished } }

    /// The connection ended: syncs stop (the library and its history stay).
    public mutating func disconnect() { syncs = [:] }

    public enum StartResult: Hashable, Sendable {
        case started(revision: String, kind: String)
        case unknownLibrary
    }

    /// StartMediaLibraryUpdates: plans the sync.
    public mutating func start(_ request: MediaLibraryUpdateRequest) -> StartResult {
        guard let library, library.description.uniqueIdentifier == request.libraryID else { return .unknownLibrary }
        let sync = plan(from: request.lastKnownRevision, to: library, request: request)
        syncs[request.libraryID] = sync
        let kind = switch (sync.reset, sync.totalParts) {
        case (true, _): "the whole library (\(library.items.count) items, \(library.playlists.count) playlists)"
        case (false, 0): "nothing: the head unit has revision \(library.revision)"
        case (false, _): "\(sync.totalParts) changes since revision \(request.lastKnownRevision ?? "")"
        }
        return .started(revision: library.revision, kind: kind)
    }

    /// StopMediaLibraryUpdates: no more updates for that library on this connection.
    public mutating func stop(_ libraryID: String) { syncs[libraryID] = nil }

    /// The app's library changed: it becomes the one served, the old
    /// revision joins the history, and every head unit syncing gets what
    /// changed, after what it is still being sent.
    public mutating func update(_ new: MediaLibrary) {
        if let old = library, old.revision != new.revision {
            history.removeAll { $0.revision == old.revision || $0.revision == new.revision }
            history.insert(Snapshot(revision: old.revision, items: old.itemDigests, playlists: old.playlistDigests), at: 0)
            if history.count > Self.revisionsKept { history.removeLast(history.count - Self.revisionsKept) }
        }
        library = new
        for (id, sync) in syncs {
            guard id == new.description.uniqueIdentifier, sync.revision != new.revision else {
                if id != new.description.uniqueIdentifier { syncs[id] = nil }
                continue
            }
            // What was not yet sent is sent from the new content: planned from the revision being sent.
            syncs[id] = plan(from: sync.finished ? sync.revision : nil, to: new, request: sync.request)
        }
    }

    private func plan(from revision: String?, to library: MediaLibrary, request: MediaLibraryUpdateRequest) -> Sync {
        if let revision, revision == library.revision {
            return Sync(request: request, revision: library.revision, reset: false, items: .some([]), playlists: [], deletedItems: [], deletedPlaylists: [])
        }
        if let revision, let old = history.first(where: { $0.revision == revision }) {
            var changedItems: [Int] = []
            for (index, item) in library.items.enumerated() where old.items[item.persistentID] != library.itemDigests[item.persistentID] {
                changedItems.append(index)
            }
            let changedPlaylists = library.playlists.indices.filter {
                old.playlists[library.playlists[$0].persistentID] != library.playlistDigests[library.playlists[$0].persistentID]
            }
            return Sync(request: request, revision: library.revision, reset: false, items: .some(changedItems), playlists: changedPlaylists,
                        deletedItems: old.items.keys.filter { library.itemDigests[$0] == nil }.sorted(),
                        deletedPlaylists: old.playlists.keys.filter { library.playlistDigests[$0] == nil }.sorted())
        }
        return Sync(request: request, revision: library.revision, reset: true, items: .all(library.items.count),
                    playlists: Array(library.playlists.indices), deletedItems: [], deletedPlaylists: [])
    }

    /// A playlist's contents to send over the file-transfer session, with
    /// the transfer id the message names.
    public struct PlaylistContents: Hashable, Sendable {
        public var transferID: UInt8
        public var playlistID: UInt64
        /// Big-endian u64 item identifiers, in playlist order.
        public var bytes: [UInt8]
    }

    /// The next MediaLibraryUpdate of a sync, at most `budget` bytes (an
    /// item larger than that goes alone), and the contents of the playlists
    /// it names, each with a transfer id from `transferID`. Items go first,
    /// then playlists (which name items), then deletions; the last message
    /// says 100 %. Progress and the revision are in every message.
    public mutating func nextMessage(budget: Int, transferID: () -> UInt8) -> (message: ControlMessage, contents: [PlaylistContents])? {
        // Taken out while it changes (a copy left in the table would copy its lists each message).
        guard let library, let id = syncs.first(where: { !$0.value.finished })?.key, var sync = syncs.removeValue(forKey: id) else { return nil }
        defer { syncs[id] = sync }
        var writer = MediaLibraryUpdateWriter(libraryID: id, revision: sync.revision, reset: sync.reset && sync.sentParts == 0)
        let limit = max(budget, 256) - MediaLibraryUpdateWriter.trailerLength
        var contents: [PlaylistContents] = []
        var parts = 0
        while sync.itemCursor < sync.itemCount {
            let index: Int
            switch sync.items {
            case .all: index = sync.itemCursor
            case .some(let indices): index = indices[sync.itemCursor]
            }
            let item = library.items[index]
            let cost = MediaLibraryUpdateWriter.encodedLength(of: item, properties: sync.request.itemProperties)
            guard parts == 0 || writer.encodedLength + cost <= limit else { break }
            writer.append(item, properties: sync.request.itemProperties)
            sync.itemCursor += 1
            parts += 1
        }
        while sync.itemCursor == sync.itemCount, sync.playlistCursor < sync.playlists.count {
            let playlist = library.playlists[sync.playlists[sync.playlistCursor]]
            guard parts == 0 || writer.encodedLength + MediaLibraryUpdateWriter.encodedLength(of: playlist) <= limit else { break }
            var entry = MediaLibraryPlaylistEntry(playlist)
            if !playlist.isFolder {
                entry.contentsTransferID = transferID()
                var bytes: [UInt8] = []
                bytes.reserveCapacity(playlist.items.count * 8)
                for item in playlist.items { bytes.appendBigEndian(item) }
                contents.append(PlaylistContents(transferID: entry.contentsTransferID!, playlistID: playlist.persistentID, bytes: bytes))
            }
            writer.append(entry, properties: sync.request.playlistProperties)
            sync.playlistCursor += 1
            parts += 1
        }
        let deletes = sync.deletedItems.count + sync.deletedPlaylists.count
        while sync.itemCursor == sync.itemCount, sync.playlistCursor == sync.playlists.count, sync.deleteCursor < deletes {
            guard parts == 0 || writer.encodedLength + 12 <= limit else { break }
            if sync.deleteCursor < sync.deletedItems.count {
                writer.appendDeletedItem(sync.deletedItems[sync.deleteCursor])
            } else {
                writer.appendDeletedPlaylist(sync.deletedPlaylists[sync.deleteCursor - sync.deletedItems.count])
            }
            sync.deleteCursor += 1
            parts += 1
        }
        sync.sentParts += parts
        let done = sync.sentParts >= sync.totalParts
        sync.finished = done
        let progress = done ? 100 : UInt8(min(99, sync.sentParts * 100 / max(1, sync.totalParts)))
        // Sent whether or not the head unit asked: a head unit that did not
        // ignores it, and one that counts on it (as the production stack
        // does) is never left waiting for 100.
        let message = writer.finish(progress: progress, isHidingRemoteItems: sync.request.wantsHidingRemoteItems ? false : nil,
                                    playAllSongsCapable: sync.request.wantsPlayAllSongsCapable ? true : nil)
        return (message, contents)
    }

    /// The queue a play request names, and where in it to start; nil with
    /// the reason when the library has no such thing.
    public func resolve(_ request: MediaLibraryPlayRequest) -> Result<(items: [UInt64], startIndex: Int), PlayError> {
        guard let library, library.description.uniqueIdentifier == request.libraryID else {
            return .failure(PlayError("no library \(request.libraryID) on this phone"))
        }
        switch request {
        case .currentSelection:
            return .success(([], 0))
        case .items(let items, let start, _):
            let known = items.filter { library.itemIndex[$0] != nil }
            guard !known.isEmpty else { return .failure(PlayError("none of the \(items.count) items named is in the library")) }
            // The starting item keeps its place if it is known; else the first known one after it.
            let startID = items.indices.contains(Int(start)) ? items[Int(start)...].first { library.itemIndex[$0] != nil } : nil
            return .success((known, startID.flatMap { known.firstIndex(of: $0) } ?? 0))
        case .collection(let collection, let index, let item, _):
            guard let items = library.items(in: collection) else {
                return .failure(PlayError("no \(collection.type) 0x\(String(collection.persistentID, radix: 16)) in the library"))
            }
            guard !items.isEmpty else { return .failure(PlayError("\(collection.type) 0x\(String(collection.persistentID, radix: 16)) is empty")) }
            return .success((items, Self.start(in: items, index: index, item: item)))
        case .allSongs(let item, _):
            let items = library.items.map(\.persistentID)
            guard !items.isEmpty else { return .failure(PlayError("the library has no songs")) }
            return .success((items, Self.start(in: items, index: nil, item: item)))
        }
    }

    static func start(in items: [UInt64], index: UInt32?, item: UInt64?) -> Int {
        if let item, let position = items.firstIndex(of: item) { return position }
        if let index, Int(index) < items.count { return Int(index) }
        return 0
    }

    public struct PlayError: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}
