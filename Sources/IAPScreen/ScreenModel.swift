import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// What the page shows, as JSON: a snapshot of what the head-unit role knows,
/// sent to every browser whenever it changes. The page keeps no state of its
/// own beyond which screen is open.
struct ScreenModel: Encodable, Sendable {
    struct Item: Encodable, Sendable {
        var id: String
        var kind: String
        var text: String
        var detail: String?
        var image: String?
        var accessory: String
        var playing: String
        var enabled: Bool
        var section: UInt16
        var badge: String?
        var imageRow: ImageRow?
    }

    struct ImageRow: Encodable, Sendable {
        struct Entry: Encodable, Sendable {
            var id: String
            var image: String
            var selectable: Bool
        }
        var title: String
        var entries: [Entry]
    }

    struct Section: Encodable, Sendable {
        var id: UInt16
        var kind: String
        var title: String?
        var itemCount: UInt32?
    }

    struct Container: Encodable, Sendable {
        var items: [Item]
        var sections: [Section]
        var total: Int
        var loading: Bool
        var failure: String?
    }

    struct NowPlaying: Encodable, Sendable {
        var title: String?
        var artist: String?
        var album: String?
        var appName: String?
        var state: String
        /// Elapsed time when the snapshot was made; the page runs it on at `rate` while playing.
        var elapsedMilliseconds: UInt32
        var elapsedValid: Bool
        var durationMilliseconds: UInt32?
        var rate: Double
        var repeatMode: String
        var shuffleMode: String
        var queueIndex: UInt32?
        var queueCount: UInt32?
        /// The artwork's key in `/image/…`, once the file has arrived.
        var artwork: String?
        var outOfRange: [String]
    }

    /// The phone's media library (Media Library Access), the list open in it.
    struct Library: Encodable, Sendable {
        struct Row: Encodable, Sendable {
            var text: String
            var detail: String?
            /// Opening it shows another list (else opening plays it).
            var opens: Bool
            /// It can be played whole (a group, a playlist, a song).
            var playable: Bool
            var playing: Bool
        }
        var name: String
        var uid: String
        var revision: String?
        var synced: Bool
        var progress: UInt8
        var title: String
        var depth: Int
        var rows: [Row]
        /// Rows in the list; `rows` holds the first of them.
        var total: Int
    }

    struct Command: Encodable, Sendable {
        var command: String
        var enabled: Bool
    }

    /// disconnected, connecting, authenticating, identifying, identified, failed.
    var stage: String
    var stageText: String
    var appName: String?
    var hasContentTree: Bool
    var tabs: [Item]
    var maximumTabs: Int
    var containers: [String: Container]
    var nowPlaying: NowPlaying
    var radio: Bool
    var buttons: [String]
    var advertised: [Command]
    var queue: Container?
    var queueCurrentIndex: UInt32?
    var selecting: String?
    /// The newest first: each command or selection with the status that came back.
    var statuses: [String]
    /// How many statuses there have been (the page shows the newest until the user moves on), and whether the newest is a failure.
    var statusCount: Int
    var statusFailed: Bool
    /// Images whose bytes are here (`/image/ID`), and those the phone could not give.
    var images: [String]
    var missingImages: [String]
    /// Nil until the phone has listed a library.
    var library: Library?

    static func item(_ item: ContentItem) -> Item {
        Item(id: item.id, kind: item.kind == .container ? "container" : "playable", text: item.text, detail: item.detailText, image: item.imageID,
             accessory: ["none", "disclosure", "cloud"][Int(item.accessory.rawValue)],
             playing: ["none", "leading", "trailing"][Int(item.playingIndicator.rawValue)], enabled: item.isEnabled, section: item.section,
             badge: item.badge,
             imageRow: item.imageRow.map { row in
                 ImageRow(title: row.title, entries: row.entries.map { ImageRow.Entry(id: $0.id, image: $0.imageID, selectable: $0.selectable) })
             })
    }

    /// An item's title, wherever the head unit has seen it (a tab, a list, up next).
    static func title(of id: String, in role: HeadUnitMediaRole) -> String? {
        if let tab = role.tabs.first(where: { $0.id == id }) { return tab.text }
        for state in role.containers.values {
            if let item = state.items.first(where: { $0.id == id }) { return item.text }
        }
        return role.queue?.items.first { $0.id == id }?.text
    }

    static func section(_ section: ContentSection) -> Section {
        switch section.kind {
        case .plain(let title): Section(id: section.id, kind: "plain", title: title)
        case .loading: Section(id: section.id, kind: "loading")
        case .playAll(let count): Section(id: section.id, kind: "play_all", itemCount: count)
        case .empty(let text): Section(id: section.id, kind: "empty", title: text)
        case .loadFailed(let text): Section(id: section.id, kind: "load_failed", title: text)
        }
    }

    static func make(_ connection: Connection, linkUp: Bool, ended: String?, now: LinkInstant, statuses: [String], statusCount: Int, statusFailed: Bool,
                     images: [String], missingImages: [String], artwork: String?,
                     libraryBrowser: MediaLibraryBrowser = MediaLibraryBrowser(), libraryWindow: Int = ScreenLimits.libraryRows) -> ScreenModel {
        let role = connection.headUnit
        let (stage, stageText): (String, String) = {
            if let ended { return ("disconnected", ended) }
            switch connection.stage {
            case .disconnected: return linkUp ? ("connecting", "connecting") : ("connecting", "waiting for a phone")
            case .authenticating: return ("authenticating", "authenticating")
            case .identifying: return ("identifying", "identifying")
            case .identified(let name): return ("identified", "identified as \(name)")
            case .failed(let reason): return ("failed", reason)
            }
        }()
        let model = role.nowPlaying
        let info = model.info
        var containers: [String: Container] = [:]
        for (id, state) in role.containers {
            containers[id] = Container(items: state.items.map(item), sections: state.sections.map(section), total: state.totalCount,
                                       loading: state.loading, failure: state.failure)
        }
        let queue = role.queue.map { response in
            Container(items: response.items.map(item), sections: [], total: Int(response.totalCount), loading: role.isLoadingQueue,
                      failure: response.status == .success ? nil : response.error ?? "\(response.status)")
        }
        return ScreenModel(
            stage: stage, stageText: stageText, appName: role.appName, hasContentTree: role.hasContentTree,
            tabs: role.tabs.map(item), maximumTabs: role.limits.maximumTabs, containers: containers,
            nowPlaying: NowPlaying(title: info.title, artist: info.artist, album: info.albumTitle, appName: info.appName, state: "\(info.state)",
                                   elapsedMilliseconds: model.elapsed(at: now), elapsedValid: model.elapsedIsValid,
                                   durationMilliseconds: info.durationMilliseconds, rate: info.playbackRate,
                                   repeatMode: "\(info.repeatMode)", shuffleMode: ["off", "songs", "albums"][Int(info.shuffleMode.rawValue)],
                                   queueIndex: info.queueIndex, queueCount: info.queueCount, artwork: artwork,
                                   outOfRange: model.outOfRange.map(\.description)),
            radio: role.radioControls, buttons: role.buttons.map(\.description),
            advertised: role.advertised.map { Command(command: $0.kind.description, enabled: $0.enabled) },
            queue: queue, queueCurrentIndex: role.queue?.currentIndex, selecting: role.selecting, statuses: statuses,
            statusCount: statusCount, statusFailed: statusFailed,
            images: images, missingImages: missingImages,
            library: library(role, browser: libraryBrowser, window: libraryWindow))
    }

    static func library(_ role: HeadUnitMediaRole, browser: MediaLibraryBrowser, window: Int) -> Library? {
        guard let id = role.offeredLibraries.first else { return nil }
        guard let mirror = role.mediaLibraries[id], mirror.isSynced else {
            return Library(name: role.mediaLibraries[id]?.description.name ?? id, uid: id, revision: nil, synced: false,
                           progress: role.mediaLibraryProgress[id] ?? 0, title: "", depth: 0, rows: [], total: 0)
        }
        let rows = browser.rows(mirror)
        let playingID = role.nowPlaying.info.mediaLibraryID == id ? role.nowPlaying.info.itemID : nil
        return Library(name: mirror.description.name, uid: id, revision: mirror.revision, synced: true, progress: mirror.progress,
                       title: browser.title(mirror), depth: browser.depth,
                       rows: rows.prefix(window).map { row in
                           let (text, detail, opens) = MediaLibraryBrowser.text(row)
                           var playable = true, playing = false
                           switch row {
                           case .view: playable = false
                           case .playlist(let playlist): playable = !playlist.isFolder
                           case .song(let item): playing = item.persistentID == playingID
                           case .group: break
                           }
                           return Library.Row(text: text, detail: detail, opens: opens, playable: playable, playing: playing)
                       },
                       total: rows.count)
    }
}
