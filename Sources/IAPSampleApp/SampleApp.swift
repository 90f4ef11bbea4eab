import IAPEndpointCore
import IAPLink
import IAPRoles
import IAPWire
import Synchronization

/// A track of the sample library.
public struct SampleTrack: Hashable, Sendable, Codable {
    public var id: String
    public var persistentID: UInt64
    public var title: String
    public var artist: String
    public var album: String
    public var genre: String
    public var durationMilliseconds: UInt32
    public var inBrowseTree: Bool

    public init(id: String, persistentID: UInt64, title: String, artist: String, album: String, genre: String,
                durationMilliseconds: UInt32, inBrowseTree: Bool = true) {
        self.id = id
        self.persistentID = persistentID
        self.title = title
        self.artist = artist
        self.album = album
        self.genre = genre
        self.durationMilliseconds = durationMilliseconds
        self.inBrowseTree = inBrowseTree
    }

}

/// The built-in library `iapctl demo` and `iapctl phone` serve: four tabs,
/// albums with a "play all" section, radio stations, a "recently played"
/// list that starts with a disabled placeholder, and a podcasts tab whose
/// first load fails as it would on a weak network (the retry works).
public struct SampleLibrary: Hashable, Sendable, Codable {
    public struct Album: Hashable, Sendable, Codable {
        public var id: String
        public var title: String
        public var artist: String
        public var imageID: String
        public var tracks: [SampleTrack]

        public init(id: String, title: String, artist: String, imageID: String, tracks: [SampleTrack]) {
            self.id = id
            self.title = title
            self.artist = artist
            self.imageID = imageID
            self.tracks = tracks
        }
    }

    public var albums: [Album]
    public var stations: [SampleTrack]
    public var podcasts: [SampleTrack]
    /// An item the queue holds that is not in the browse tree.
    public var interlude: SampleTrack

    public static let standard: SampleLibrary = {
        func album(_ id: String, _ title: String, _ artist: String, _ genre: String, _ tracks: [(String, UInt32)], base: UInt64) -> Album {
            Album(id: id, title: title, artist: artist, imageID: "art:\(id)", tracks: tracks.enumerated().map { index, track in
                SampleTrack(id: "\(id):\(index + 1)", persistentID: base + UInt64(index), title: track.0, artist: artist, album: title,
                            genre: genre, durationMilliseconds: track.1)
            })
        }
        return SampleLibrary(
            albums: [
                album("kind-of-blue", "Kind of Blue", "Miles Davis", "Jazz", [("So What", 562_000), ("Freddie Freeloader", 589_000),
                      ("Blue in Green", 337_000), ("All Blues", 694_000), ("Flamenco Sketches", 566_000)], base: 0x4B4F_4200),
                album("blue-train", "Blue Train", "John Coltrane", "Jazz", [("Blue Train", 643_000), ("Moment's Notice", 551_000),
                      ("Locomotion", 434_000), ("I'm Old Fashioned", 478_000), ("Lazy Bird", 421_000)], base: 0x4254_0000),
                album("time-out", "Time Out", "The Dave Brubeck Quartet", "Jazz", [("Blue Rondo à la Turk", 404_000),
                      ("Strange Meadow Lark", 442_000), ("Take Five", 324_000), ("Three to Get Ready", 324_000)], base: 0x544F_0000),
            ],
            stations: [
                SampleTrack(id: "station:jazz", persistentID: 0x5354_0001, title: "Jazz Radio", artist: "Live", album: "Radio", genre: "Jazz", durationMilliseconds: 0),
                SampleTrack(id: "station:news", persistentID: 0x5354_0002, title: "News Radio", artist: "Live", album: "Radio", genre: "News", durationMilliseconds: 0),
            ],
            podcasts: [
                SampleTrack(id: "podcast:1", persistentID: 0x5043_0001, title: "Episode 1: Modal jazz", artist: "Jazz History", album: "Podcasts", genre: "Podcast", durationMilliseconds: 1_800_000),
            ],
            interlude: SampleTrack(id: "interlude", persistentID: 0x494E_0001, title: "Station interlude", artist: "iap-devkit",
                                   album: "Up next", genre: "Spoken", durationMilliseconds: 15_000, inBrowseTree: false))
    }()

    public init(albums: [Album], stations: [SampleTrack], podcasts: [SampleTrack], interlude: SampleTrack) {
        self.albums = albums
        self.stations = stations
        self.podcasts = podcasts
        self.interlude = interlude
    }

    /// Every way this library breaks what the roles rely on, in words
    /// (duplicate ids, empty titles), checked when a library file is loaded.
    public var problems: [String] {
        var problems: [String] = []
        var seen = Set<String>()
        for track in albums.flatMap(\.tracks) + stations + podcasts + [interlude] where !seen.insert(track.id).inserted {
            problems.append("track id \"\(track.id)\" is used twice")
        }
        for album in albums {
            if album.id.isEmpty || album.title.isEmpty { problems.append("an album needs an id and a title") }
            if album.tracks.isEmpty { problems.append("album \"\(album.id)\" has no tracks") }
        }
        if Set(albums.map(\.id)).count != albums.count { problems.append("album ids are not unique") }
        return problems
    }

    /// The same albums and podcasts as a media library (Media Library
    /// Access): items with identifiers derived from their content, a
    /// top-level playlist and a folder holding another; the library's
    /// identifier is derived from `name`. Also each track's item
    /// identifier, by track id: the content tree and the library are two
    /// views of these tracks.
    public func mediaLibrary(named name: String) -> (library: MediaLibrary, itemIDs: [String: UInt64]) {
        var tracks: [SampleTrack] = []
        var items: [MediaLibraryItem] = []
        for album in albums {
            for (index, track) in album.tracks.enumerated() {
                tracks.append(track)
                items.append(MediaLibraryItem(title: track.title, artist: track.artist, albumTitle: album.title, albumArtist: album.artist, genre: track.genre,
                                              durationMilliseconds: track.durationMilliseconds == 0 ? nil : track.durationMilliseconds,
                                              trackNumber: UInt16(clamping: index + 1), trackCount: UInt16(clamping: album.tracks.count), discNumber: 1, discCount: 1))
            }
        }
        for podcast in podcasts {
            tracks.append(podcast)
            items.append(MediaLibraryItem(title: podcast.title, artist: podcast.artist, albumTitle: podcast.album, genre: podcast.genre,
                                          durationMilliseconds: podcast.durationMilliseconds, mediaType: .podcast))
        }
        let description = MediaLibraryDescription(name: name, uniqueIdentifier: "iap-devkit:" + String(ContentIdentifier.of("library", [name]), radix: 16))
        // Identifiers as the library settles them (content twice gets the next free one).
        let settled = MediaLibrary(description, items: items).items.map(\.persistentID)
        var itemIDs: [String: UInt64] = [:]
        for (track, id) in zip(tracks, settled) { itemIDs[track.id] = id }
        let firstTracks = albums.compactMap { $0.tracks.first.flatMap { itemIDs[$0.id] } }
        let blue = tracks.filter { $0.title.contains("Blue") }.compactMap { itemIDs[$0.id] }
        let mixes = MediaLibraryPlaylist(name: "Mixes", isFolder: true)
        let playlists = [
            MediaLibraryPlaylist(name: "Album openers", items: firstTracks),
            mixes,
            MediaLibraryPlaylist(name: "Blue", in: mixes.persistentID, items: blue),
        ]
        return (MediaLibrary(description, items: items, playlists: playlists), itemIDs)
    }

    public func album(_ id: String) -> Album? { albums.first { $0.id == id } }
    public func track(_ id: String) -> SampleTrack? {
        (albums.flatMap(\.tracks) + stations + podcasts + [interlude]).first { $0.id == id }
    }

    /// Artwork: a PNG per album, a square of one colour (the album's own)
    /// whose side follows the scale asked for: 60, 120 or 180 pixels.
    public func image(_ id: String, scale: Int) -> [UInt8]? {
        if id == "art:animated" { return Array("GIF89a".utf8) + [1, 0, 1, 0, 0, 0, 0] }
        guard let index = albums.firstIndex(where: { $0.imageID == id }) else { return nil }
        let colours: [[UInt8]] = [[0x1F, 0x4E, 0x79], [0x7A, 0x2E, 0x2E], [0x2E, 0x6B, 0x3F], [0x6B, 0x4F, 0x1D]]
        return SolidPNG.make(side: 60 * max(1, min(3, scale)), colour: colours[index % colours.count])
    }
}

/// A PNG of one colour: a one-entry palette, one bit per pixel, the rows
/// stored uncompressed (deflate's stored blocks), so a browser shows it.
enum SolidPNG {
    static func make(side: Int, colour: [UInt8]) -> [UInt8] {
        let rowBytes = 1 + (side + 7) / 8                 // the filter byte, then the pixels
        let raw = [UInt8](repeating: 0, count: rowBytes * side)
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let length = min(65_535, raw.count - offset)
            let final: UInt8 = offset + length == raw.count ? 1 : 0
            zlib += [final, UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8((~length >> 8) & 0xFF)]
            zlib += raw[offset..<offset + length]
            offset += length
        } while offset < raw.count
        zlib += bigEndian(adler32(raw))
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", bigEndian(UInt32(side)) + bigEndian(UInt32(side)) + [1, 3, 0, 0, 0])
        png += chunk("PLTE", colour)
        png += chunk("IDAT", zlib)
        png += chunk("IEND", [])
        return png
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + typed + bigEndian(crc32(typed))
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    /// CRC-32 (IEEE, reflected), a byte at a time from a table: artwork is
    /// made for every image request.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = crcTable[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return ~crc
    }

    static let crcTable: [UInt32] = (0..<256).map { index in
        var crc = UInt32(index)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}

/// The sample app behind the phone role: a player over the sample library.
/// Commands arrive through the command center's handlers, which may run at
/// any time, so the state sits behind a lock; time comes in as arguments
/// (`setTime`) so that simulations stay deterministic.
public final class SampleApp: Sendable {
    public struct State: Hashable, Sendable {
        public var queue: [SampleTrack] = []
        public var index = 0
        public var playback = NowPlayingInfo.PlaybackState.stopped
        public var elapsedBase: UInt32 = 0
        public var since = LinkInstant.zero
        public var rate: Double = 1
        public var repeatMode = RepeatMode.off
        public var shuffleMode = ShuffleMode.off
        public var liked: Set<String> = []
        public var disliked: Set<String> = []
        public var bookmarked: Set<String> = []
        public var recentlyPlayed: [SampleTrack] = []
        public var podcastAttempts = 0
    }

    public let library: SampleLibrary
    public let appName: String
    private let state = Mutex(State())
    private let clock = Mutex(LinkInstant.zero)
    public let supportedRates: [Double]
    /// The tracks as a media library (Media Library Access).
    public let mediaLibrary: MediaLibrary?
    /// Each library track's item identifier, by track id, and back.
    private let libraryItemIDs: [String: UInt64]
    private let libraryTracks: [UInt64: SampleTrack]

    public init(library: SampleLibrary = .standard, appName: String = "iap-devkit Music", supportedRates: [Double] = [1.0, 1.25, 1.5, 2.0]) {
        self.library = library
        self.appName = appName
        self.supportedRates = supportedRates
        let served = Self.mediaLibrary(of: library, named: appName)
        // A library without albums or podcasts (only radio) offers no media library.
        mediaLibrary = served.library.items.isEmpty ? nil : served.library
        libraryItemIDs = served.itemIDs
        libraryTracks = served.tracks
    }

    public var snapshot: State { state.withLock { $0 } }

    /// The last library built, kept: a phone serving one connection after
    /// another makes an app per connection, and a large library is built
    /// once, not per connection (nor held twice).
    private typealias Built = (library: MediaLibrary, itemIDs: [String: UInt64], tracks: [UInt64: SampleTrack])
    private static let lastBuilt = Mutex<(library: SampleLibrary, name: String, built: Built)?>(nil)

    private static func mediaLibrary(of library: SampleLibrary, named name: String) -> Built {
        if let last = lastBuilt.withLock({ $0 }), last.name == name, last.library == library { return last.built }
        let served = library.mediaLibrary(named: name)
        var tracks: [UInt64: SampleTrack] = [:]
        tracks.reserveCapacity(served.itemIDs.count)
        for track in library.albums.flatMap(\.tracks) + library.podcasts { if let id = served.itemIDs[track.id] { tracks[id] = track } }
        let built = (served.library, served.itemIDs, tracks)
        lastBuilt.withLock { $0 = (library, name, built) }
        return built
    }

    /// The time handlers act at.
    public func setTime(_ now: LinkInstant) { clock.withLock { $0 = now } }

    /// What is playing at `now`.
    public func nowPlaying(at now: LinkInstant) -> NowPlayingInfo {
        state.withLock { current in
            guard current.queue.indices.contains(current.index) else {
                return NowPlayingInfo(state: current.playback == .playing ? .stopped : current.playback, repeatMode: current.repeatMode,
                                      shuffleMode: current.shuffleMode, appName: appName)
            }
            let track = current.queue[current.index]
            let libraryItem = libraryItemIDs[track.id]
            return NowPlayingInfo(
                itemID: libraryItem ?? track.persistentID, title: track.title, artist: track.artist, albumTitle: track.album, genre: track.genre,
                durationMilliseconds: track.durationMilliseconds == 0 ? nil : track.durationMilliseconds,
                artworkImageID: library.albums.first { $0.title == track.album && $0.tracks.contains(track) }?.imageID,
                elapsedMilliseconds: Self.elapsed(current, at: now), playbackRate: current.playback == .playing ? current.rate : 0,
                defaultPlaybackRate: current.rate, queueIndex: UInt32(current.index), queueCount: UInt32(current.queue.count),
                state: current.playback, repeatMode: current.repeatMode, shuffleMode: current.shuffleMode, appName: appName,
                mediaLibraryID: libraryItem == nil ? nil : mediaLibrary?.description.uniqueIdentifier)
        }
    }

    static func elapsed(_ state: State, at now: LinkInstant) -> UInt32 {
        guard state.playback == .playing, now > state.since else { return state.elapsedBase }
        let advanced = Double(now.nanoseconds - state.since.nanoseconds) / 1e6 * state.rate
        return UInt32(min(Double(UInt32.max), Double(state.elapsedBase) + advanced))
    }

    /// The command center with a handler for every command this app supports.
    public func commandCenter() -> RemoteCommandCenter {
        var center = RemoteCommandCenter(supportedRates: supportedRates)
        // Not seek forward/backward: this player does not scan, so it does not
        // offer them (the head unit's skip buttons move by 15 s instead).
        let kinds: [RemoteCommand.Kind] = [.play, .pause, .stop, .togglePlayPause, .nextTrack, .previousTrack, .changePlaybackPosition,
                                           .skipForward, .skipBackward, .changeRepeatMode, .changeShuffleMode, .changePlaybackRate]
        for kind in kinds { center.register(kind) { [self] command in perform(command) } }
        return center
    }

    /// The handlers for like, dislike and bookmark (registering them puts
    /// the head unit in radio controls).
    public func registerFeedback(_ center: inout RemoteCommandCenter, _ kinds: [RemoteCommand.Kind] = [.like, .dislike, .bookmark]) {
        for kind in kinds { center.register(kind) { [self] command in perform(command) } }
    }

    /// Runs one command against the player.
    public func perform(_ command: RemoteCommand) -> RequestStatus {
        let now = clock.withLock { $0 }
        return state.withLock { current -> RequestStatus in
            func freeze() {
                current.elapsedBase = Self.elapsed(current, at: now)
                current.since = now
            }
            let hasItem = current.queue.indices.contains(current.index)
            switch command {
            case .play:
                guard hasItem else { return .noActionableNowPlayingItem }
                freeze()
                current.playback = .playing
            case .pause:
                guard hasItem else { return .noActionableNowPlayingItem }
                freeze()
                current.playback = .paused
            case .togglePlayPause:
                guard hasItem else { return .noActionableNowPlayingItem }
                freeze()
                current.playback = current.playback == .playing ? .paused : .playing
            case .stop:
                // Stop releases the queue; pause keeps it.
                current.queue = []
                current.index = 0
                current.elapsedBase = 0
                current.since = now
                current.playback = .stopped
            case .nextTrack, .previousTrack:
                guard hasItem else { return .noActionableNowPlayingItem }
                let step = command == .nextTrack ? 1 : -1
                var next = current.index + step
                if !current.queue.indices.contains(next) {
                    guard current.repeatMode == .all else { return .noSuchContent }
                    next = step > 0 ? 0 : current.queue.count - 1
                }
                current.index = next
                current.elapsedBase = 0
                current.since = now
            case .changePlaybackPosition(let milliseconds):
                guard hasItem else { return .noActionableNowPlayingItem }
                let duration = current.queue[current.index].durationMilliseconds
                guard duration == 0 || milliseconds <= duration else { return .commandFailed }
                current.elapsedBase = milliseconds
                current.since = now
            case .skipForward(let milliseconds), .skipBackward(let milliseconds):
                guard hasItem else { return .noActionableNowPlayingItem }
                freeze()
                let delta = Int(milliseconds) * (command.kind == .skipForward ? 1 : -1)
                let duration = Int(current.queue[current.index].durationMilliseconds)
                current.elapsedBase = UInt32(max(0, min(duration == 0 ? Int(UInt32.max) : duration, Int(current.elapsedBase) + delta)))
            case .seekForward, .seekBackward:
                // Never registered (see commandCenter): a player that does not scan fails them.
                return .commandFailed
            case .changeRepeatMode(let mode):
                current.repeatMode = mode
            case .changeShuffleMode(let mode):
                // Apply the value given; never toggle our own idea of it.
                current.shuffleMode = mode
            case .changePlaybackRate:
                freeze()
                let center = RemoteCommandCenter(supportedRates: supportedRates)
                current.rate = center.nextRate(after: current.rate)
            case .like(let active):
                guard hasItem else { return .noActionableNowPlayingItem }
                let id = current.queue[current.index].id
                if active { current.liked.insert(id) } else { current.liked.remove(id) }
            case .dislike(let active):
                guard hasItem else { return .noActionableNowPlayingItem }
                let id = current.queue[current.index].id
                if active { current.disliked.insert(id) } else { current.disliked.remove(id) }
            case .bookmark(let active):
                guard hasItem else { return .noActionableNowPlayingItem }
                let id = current.queue[current.index].id
                if active { current.bookmarked.insert(id) } else { current.bookmarked.remove(id) }
            }
            return .success
        }
    }

    /// Pauses (the head unit went away).
    public func pause(at now: LinkInstant) {
        state.withLock { current in
            guard current.playback == .playing else { return }
            current.elapsedBase = Self.elapsed(current, at: now)
            current.since = now
            current.playback = .paused
        }
    }

    /// The app's answer to a load, and how long it takes: the sample answers
    /// local content at once and podcasts after 300 ms, failing the first
    /// time as a weak network would.
    public func load(_ request: PhoneMediaRole.LoadRequest, now: LinkInstant) -> (PhoneMediaRole.LoadResult, after: Duration) {
        switch request {
        case .tabs:
            let tabs = [
                ContentItem(id: "library", kind: .container, text: "Library", imageID: "icon:library"),
                ContentItem(id: "radio", kind: .container, text: "Radio", imageID: "icon:radio", badge: "LIVE"),
                ContentItem(id: "recent", kind: .container, text: "Recently Played", imageID: "icon:recent"),
                ContentItem(id: "podcasts", kind: .container, text: "Podcasts", imageID: "icon:podcasts"),
            ]
            return (.page(items: tabs, sections: [], totalCount: tabs.count), .zero)
        case .children(let container, let offset, let count):
            return (children(container, offset: offset, count: count), container == "podcasts" ? .milliseconds(300) : .zero)
        case .play(let itemID, let entry):
            return (play(itemID, entry: entry, now: now), .milliseconds(20))
        case .queue(let offset, let count):
            return state.withLock { current in
                let items = current.queue.enumerated().dropFirst(offset).prefix(count).map { index, track in
                    ContentItem(id: track.id, kind: .playable, text: track.title, detailText: track.artist,
                                playingIndicator: index == current.index ? .leading : .none)
                }
                return (.queue(items: items, totalCount: current.queue.count, currentIndex: current.index), .zero)
            }
        case .image(let id, let scale):
            guard let bytes = library.image(id, scale: scale) else { return (.failed(.noSuchContent, "no image \(id)"), .zero) }
            return (.image(bytes), .zero)
        case .playLibraryItems(_, let items, let start):
            let queue = items.compactMap { libraryTracks[$0] }
            guard !queue.isEmpty else { return (.failed(.noSuchContent, "none of the \(items.count) items is a track of this app"), .zero) }
            let startID = items.indices.contains(start) ? items[start] : nil
            play(queue, from: startID.flatMap { libraryTracks[$0] }.flatMap { queue.firstIndex(of: $0) } ?? 0, now: now)
            return (.done, .milliseconds(20))
        case .playLibraryCurrentSelection:
            let resumed = state.withLock { current -> Bool in
                guard current.queue.indices.contains(current.index) else { return false }
                if current.playback != .playing {
                    current.since = now
                    current.playback = .playing
                }
                return true
            }
            if !resumed, let first = library.albums.first { play(first.tracks, from: 0, now: now) }
            return (.done, .milliseconds(20))
        }
    }

    private func children(_ container: String, offset: Int, count: Int) -> PhoneMediaRole.LoadResult {
        func page(_ items: [ContentItem], sections: [ContentSection] = []) -> PhoneMediaRole.LoadResult {
            .page(items: Array(items.dropFirst(offset).prefix(count)), sections: sections, totalCount: items.count)
        }
        func row(_ track: SampleTrack, section: UInt16 = 0) -> ContentItem {
            let seconds = track.durationMilliseconds / 1000
            let detail = track.durationMilliseconds == 0 ? track.artist : "\(track.artist) · \(seconds / 60):\(seconds % 60 < 10 ? "0" : "")\(seconds % 60)"
            let playing = state.withLock { $0.queue.indices.contains($0.index) && $0.queue[$0.index].id == track.id && $0.playback == .playing }
            return ContentItem(id: track.id, kind: .playable, text: track.title, detailText: detail,
                               playingIndicator: playing ? .trailing : .none, section: section)
        }
        switch container {
        case "library":
            let albums = library.albums.map { ContentItem(id: "album:\($0.id)", kind: .container, text: $0.title, detailText: $0.artist, imageID: $0.imageID) }
            let covers = ContentItem(id: "covers", kind: .container, text: "Covers", imageRow: .init(title: "Covers", entries: library.albums.map {
                .init(id: "cover:\($0.id)", imageID: $0.imageID)
            }))
            return page([covers] + albums)
        case "radio":
            return page(library.stations.map { row($0) })
        case "recent":
            let recent = state.withLock { $0.recentlyPlayed }
            if recent.isEmpty {
                return page([ContentItem(id: "placeholder", kind: .playable, text: "Nothing played yet", isEnabled: false)],
                            sections: [ContentSection(id: 0, kind: .empty(text: "Nothing played yet"))])
            }
            return page(recent.map { row($0) })
        case "podcasts":
            let attempt = state.withLock { current -> Int in
                current.podcastAttempts += 1
                return current.podcastAttempts
            }
            if attempt == 1 { return .failed(.commandFailed, "the network is unreachable; tap to retry") }
            return page(library.podcasts.map { row($0) })
        default:
            guard container.hasPrefix("album:"), let album = library.album(String(container.dropFirst("album:".count))) else {
                return .failed(.noSuchContent, "no container \(container)")
            }
            let playAll = ContentItem(id: "playall:\(album.id)", kind: .playable, text: "Play all (\(album.tracks.count) items)", section: 0)
            return page([playAll] + album.tracks.map { row($0, section: 1) },
                        sections: [ContentSection(id: 0, kind: .playAll(itemCount: UInt32(album.tracks.count))),
                                   ContentSection(id: 1, kind: .plain(title: album.title))])
        }
    }

    private func play(_ itemID: String, entry: String?, now: LinkInstant) -> PhoneMediaRole.LoadResult {
        // An item of the current queue ("up next", which may hold items
        // outside the browse tree) plays from where it is in that queue.
        let jumped = state.withLock { current -> Bool in
            guard entry == nil, let index = current.queue.firstIndex(where: { $0.id == itemID }) else { return false }
            current.index = index
            current.elapsedBase = 0
            current.since = now
            current.playback = .playing
            return true
        }
        if jumped { return .done }
        var queue: [SampleTrack]
        var index = 0
        if itemID.hasPrefix("playall:"), let album = library.album(String(itemID.dropFirst("playall:".count))) {
            queue = album.tracks
        } else if itemID == "covers", let entry, entry.hasPrefix("cover:"), let album = library.album(String(entry.dropFirst("cover:".count))) {
            queue = album.tracks
        } else if let track = library.track(itemID), track.inBrowseTree {
            if let album = library.albums.first(where: { $0.tracks.contains(track) }) {
                queue = album.tracks
                index = album.tracks.firstIndex(of: track) ?? 0
            } else {
                queue = [track]
            }
        } else {
            return .failed(.noSuchContent, "no playable item \(itemID)")
        }
        // "Up next" ends with an interlude that is not in the browse tree.
        queue.append(library.interlude)
        play(queue, from: index, now: now)
        return .done
    }

    /// Plays `queue` from `index` and notes the track as recently played.
    private func play(_ queue: [SampleTrack], from index: Int, now: LinkInstant) {
        state.withLock { current in
            current.queue = queue
            current.index = index
            current.elapsedBase = 0
            current.since = now
            current.playback = .playing
            let track = queue[index]
            current.recentlyPlayed.removeAll { $0.id == track.id }
            current.recentlyPlayed.insert(track, at: 0)
        }
    }
}

extension SampleApp: MediaApp {}
