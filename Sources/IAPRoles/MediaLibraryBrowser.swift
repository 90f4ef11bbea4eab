/// A head unit's way through the phone's media library (Media Library
/// Access), as a car offers it, shared by the shell (`lib`, `lplay`) and the
/// screen's Library tab: a menu of artists, albums, songs, genres, composers and
/// playlists; an artist opens on its albums, an album or any other group on
/// its songs, a folder on its playlists. Playing a song plays the list it is
/// in from there; playing a group plays the whole group (PlayMediaLibrary…).
public struct MediaLibraryBrowser: Sendable {
    public enum View: Hashable, Sendable {
        case menu
        case artists, albums, songs, genres, composers
        case playlists(folder: UInt64?)
        case albumsBy(artist: UInt64)
        case songsIn(MediaLibraryCollection)
    }

    public enum Row: Sendable {
        case view(String, View)
        case group(MediaLibraryMirror.Group, MediaLibraryCollection.Kind)
        case playlist(MediaLibraryPlaylist)
        case song(MediaLibraryItem)
    }

    public private(set) var view = View.menu
    private var back: [View] = []

    public init() {}

    /// How deep the view is (0: the menu).
    public var depth: Int { back.count }

    /// The view's title, as a car's list header shows it.
    public func title(_ library: MediaLibraryMirror) -> String {
        switch view {
        case .menu: library.description.name
        case .artists: "Artists"
        case .albums: "Albums"
        case .songs: "Songs"
        case .genres: "Genres"
        case .composers: "Composers"
        case .playlists(let folder): folder.flatMap { library.playlists[$0]?.name } ?? "Playlists"
        case .albumsBy(let artist): library.artists.first { $0.persistentID == artist }?.name ?? "Albums"
        case .songsIn(let collection):
            collection.type == .playlist ? library.playlists[collection.persistentID]?.name ?? "Playlist"
                : [library.albums, library.genres, library.composers, library.artists].joined().first { $0.persistentID == collection.persistentID }?.name ?? "Songs"
        }
    }

    /// A row as text, and its detail (an album's artist, a song's artist).
    public static func text(_ row: Row) -> (text: String, detail: String?, opens: Bool) {
        switch row {
        case .view(let title, _): (title, nil, true)
        case .group(let group, _): (group.name, [group.detail, "\(group.itemCount) song\(group.itemCount == 1 ? "" : "s")"].compactMap { $0 }.joined(separator: " · "), true)
        case .playlist(let playlist): (playlist.name ?? "?", playlist.isFolder ? nil : "\(playlist.items.count) song\(playlist.items.count == 1 ? "" : "s")", true)
        case .song(let item): (item.title ?? "?", item.artist, false)
        }
    }

    public static let menu: [Row] = [
        .view("Artists", .artists), .view("Albums", .albums), .view("Songs", .songs), .view("Genres", .genres),
        .view("Composers", .composers), .view("Playlists", .playlists(folder: nil)),
    ]

    /// The library shown: the first one the phone offered.
    public static func library(_ role: HeadUnitMediaRole) -> MediaLibraryMirror? { role.offeredLibraries.first.flatMap { role.mediaLibraries[$0] } }

    public func rows(_ library: MediaLibraryMirror) -> [Row] {
        switch view {
        case .menu: Self.menu
        case .artists: library.artists.map { .group($0, .albumArtist) }
        case .albums: library.albums.map { .group($0, .album) }
        case .songs: library.songs.map { .song($0) }
        case .genres: library.genres.map { .group($0, .genre) }
        case .composers: library.composers.map { .group($0, .composer) }
        case .playlists(let folder): library.playlists(in: folder).map { .playlist($0) }
        case .albumsBy(let artist): library.albums(byArtist: artist).map { .group($0, .album) }
        case .songsIn(let collection): library.songs(in: collection).map { .song($0) }
        }
    }

    /// The listing, or why there is none yet.
    public func listing(_ role: HeadUnitMediaRole) -> [String] {
        guard let library = Self.library(role) else {
            return [role.mediaLibraryInformationReceived ? "(the phone offers no media library)" : "(no media library yet: the phone has not answered)"]
        }
        guard library.isSynced else { return ["(\(library.description.name) is syncing: \(library.progress) %)"] }
        var lines = view == .menu
            ? ["library \(library.description.name) (\(library.description.uniqueIdentifier)) revision \(library.revision ?? "none"): "
               + "\(library.items.count) items, \(library.playlists.count) playlists"]
            : []
        let rows = rows(library)
        if rows.isEmpty { lines.append("(empty)") }
        for (index, row) in rows.enumerated() {
            let text = switch row {
            case .view(let title, _): "\(title) ›"
            case .group(let group, let kind): "\(group.name)\(group.detail.map { " — \($0)" } ?? "") (\(group.itemCount) song\(group.itemCount == 1 ? "" : "s"))\(kind == .album ? "" : " ›")"
            case .playlist(let playlist): "\(playlist.name ?? "?")\(playlist.isFolder ? " ›" : " (\(playlist.items.count) song\(playlist.items.count == 1 ? "" : "s"))")"
            case .song(let item): "\(item.title ?? "?") — \(item.artist ?? "?")"
            }
            lines.append("  \(index + 1). \(text)")
        }
        return lines
    }

    public enum Step: Hashable, Sendable {
        case opened
        case play(MediaLibraryPlayRequest)
        case mistake(String)
    }

    /// `lib N`: opens row N, or plays it when it is a song. `lib ..` goes
    /// up, `lib` alone shows the menu.
    public mutating func open(_ argument: String, role: HeadUnitMediaRole) -> Step {
        switch argument {
        case "": view = .menu; back = []; return .opened
        case "..": view = back.popLast() ?? .menu; return .opened
        default: break
        }
        guard let library = Self.library(role), library.isSynced else { return .mistake("the media library is not synced yet; `lib` says how far it is") }
        let rows = rows(library)
        guard let number = Int(argument), rows.indices.contains(number - 1) else { return .mistake("no row \(argument) in the library listing") }
        let next: View
        switch rows[number - 1] {
        case .view(_, let view): next = view
        case .group(let group, let kind): next = kind == .albumArtist ? .albumsBy(artist: group.persistentID) : .songsIn(MediaLibraryCollection(persistentID: group.persistentID, type: kind))
        case .playlist(let playlist):
            next = playlist.isFolder ? .playlists(folder: playlist.persistentID)
                : .songsIn(MediaLibraryCollection(persistentID: playlist.persistentID, type: .playlist))
        case .song: return play(argument, role: role)
        }
        back.append(view)
        view = next
        return .opened
    }

    /// `lplay N`: plays row N: a song from where it is in the list shown, a
    /// group or playlist whole.
    public func play(_ argument: String, role: HeadUnitMediaRole) -> Step {
        guard let library = Self.library(role), library.isSynced else { return .mistake("the media library is not synced yet") }
        let rows = rows(library)
        guard let number = Int(argument), rows.indices.contains(number - 1) else { return .mistake("no row \(argument) in the library listing") }
        let uid = library.description.uniqueIdentifier
        switch rows[number - 1] {
        case .view(let title, _): return .mistake("\(title) is a menu entry; `lib \(number)` opens it")
        case .group(let group, let kind):
            return .play(.collection(MediaLibraryCollection(persistentID: group.persistentID, type: kind), startingIndex: 0, startingItem: nil, libraryID: uid))
        case .playlist(let playlist):
            guard !playlist.isFolder else { return .mistake("\(playlist.name ?? "this") is a folder; `lib \(number)` opens it") }
            return .play(.collection(MediaLibraryCollection(persistentID: playlist.persistentID, type: .playlist), startingIndex: 0, startingItem: nil, libraryID: uid))
        case .song(let item):
            // The list shown, from the song chosen; a collection when the list is one.
            if case .songsIn(let collection) = view {
                return .play(.collection(collection, startingIndex: UInt32(number - 1), startingItem: item.persistentID, libraryID: uid))
            }
            if view == .songs { return .play(.allSongs(startingItem: item.persistentID, libraryID: uid)) }
            return .play(.items([item.persistentID], startingIndex: 0, libraryID: uid))
        }
    }
}
