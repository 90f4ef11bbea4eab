import IAPWire

/// The status every request of the media extension is answered with.
public enum RequestStatus: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case success = 0
    case noSuchContent = 1
    case noActionableNowPlayingItem = 2
    case deviceNotFound = 3
    case commandFailed = 4
    /// The phone's data source did not answer in time.
    case timedOut = 5
    /// The answer would exceed a limit the head unit stated.
    case exceedsLimits = 6

    public var description: String { MessageCatalog.requestStatuses[UInt64(rawValue)] ?? "status \(rawValue)" }
}

public enum RepeatMode: UInt8, Hashable, Sendable, CaseIterable { case off = 0, one = 1, all = 2 }
/// Off, items (songs), collections (albums): iAP2's shuffle values.
public enum ShuffleMode: UInt8, Hashable, Sendable, CaseIterable { case off = 0, items = 1, collections = 2 }

/// A remote command as the head unit sends it. Commands that set a mode
/// carry the new value: the phone applies it and never toggles its own idea
/// of the state.
public enum RemoteCommand: Hashable, Sendable {
    case play, pause, stop, togglePlayPause, nextTrack, previousTrack
    case changePlaybackPosition(milliseconds: UInt32)
    case seekForward(begin: Bool), seekBackward(begin: Bool)
    case skipForward(milliseconds: UInt32), skipBackward(milliseconds: UInt32)
    case changeRepeatMode(RepeatMode), changeShuffleMode(ShuffleMode)
    /// The rate button only says "pressed"; the phone steps through its rates.
    case changePlaybackRate
    case like(Bool), dislike(Bool), bookmark(Bool)

    public var kind: Kind {
        switch self {
        case .play: .play
        case .pause: .pause
        case .stop: .stop
        case .togglePlayPause: .togglePlayPause
        case .nextTrack: .nextTrack
        case .previousTrack: .previousTrack
        case .changePlaybackPosition: .changePlaybackPosition
        case .seekForward: .seekForward
        case .seekBackward: .seekBackward
        case .skipForward: .skipForward
        case .skipBackward: .skipBackward
        case .changeRepeatMode: .changeRepeatMode
        case .changeShuffleMode: .changeShuffleMode
        case .changePlaybackRate: .changePlaybackRate
        case .like: .like
        case .dislike: .dislike
        case .bookmark: .bookmark
        }
    }

    /// Command identifiers on the wire (the catalog names them).
    public enum Kind: UInt8, Hashable, Sendable, CaseIterable, Comparable, CustomStringConvertible {
        case play = 0, pause, stop, togglePlayPause, nextTrack, previousTrack, changePlaybackPosition
        case seekForward, seekBackward, skipForward, skipBackward, changeRepeatMode, changeShuffleMode
        case changePlaybackRate, like, dislike, bookmark

        public static func < (lhs: Kind, rhs: Kind) -> Bool { lhs.rawValue < rhs.rawValue }
        public var description: String { MessageCatalog.commandKinds[UInt64(rawValue)] ?? "command \(rawValue)" }
        /// Advertising any of these switches the head unit to radio controls.
        public var isRadioFeedback: Bool { self == .like || self == .dislike || self == .bookmark }
    }
}

/// One entry of the command set the phone advertises.
public struct AdvertisedCommand: Hashable, Sendable {
    public var kind: RemoteCommand.Kind
    public var enabled: Bool
    public init(_ kind: RemoteCommand.Kind, enabled: Bool = true) {
        self.kind = kind
        self.enabled = enabled
    }
}

/// A row of the content tree as the head unit draws it.
public struct ContentItem: Hashable, Sendable {
    public enum Kind: UInt8, Hashable, Sendable { case container = 0, playable = 1 }
    public enum Accessory: UInt8, Hashable, Sendable { case none = 0, disclosureIndicator = 1, cloud = 2 }
    public enum PlayingIndicator: UInt8, Hashable, Sendable { case none = 0, leading = 1, trailing = 2 }

    /// A title with several separately selectable images.
    public struct ImageRow: Hashable, Sendable {
        public struct Entry: Hashable, Sendable {
            public var id: String
            public var imageID: String
            public var selectable: Bool
            public init(id: String, imageID: String, selectable: Bool = true) {
                self.id = id
                self.imageID = imageID
                self.selectable = selectable
            }
        }
        public var title: String
        public var entries: [Entry]
        public init(title: String, entries: [Entry]) {
            self.title = title
            self.entries = entries
        }
    }

    public var id: String
    public var kind: Kind
    public var text: String
    /// When absent the row shrinks, so apps fill it (e.g. with a duration).
    public var detailText: String?
    public var imageID: String?
    public var accessory: Accessory
    public var playingIndicator: PlayingIndicator
    /// Disabled rows ("Loading…", "Nothing played yet") are shown but not selectable.
    public var isEnabled: Bool
    public var appValue: [UInt8]?
    public var imageRow: ImageRow?
    public var section: UInt16
    /// Tabs only.
    public var badge: String?

    public init(id: String, kind: Kind, text: String, detailText: String? = nil, imageID: String? = nil,
                accessory: Accessory? = nil, playingIndicator: PlayingIndicator = .none, isEnabled: Bool = true,
                appValue: [UInt8]? = nil, imageRow: ImageRow? = nil, section: UInt16 = 0, badge: String? = nil) {
        self.id = id
        self.kind = kind
        self.text = text
        self.detailText = detailText
        self.imageID = imageID
        self.accessory = accessory ?? (kind == .container ? .disclosureIndicator : .none)
        self.playingIndicator = playingIndicator
        self.isEnabled = isEnabled
        self.appValue = appValue
        self.imageRow = imageRow
        self.section = section
        self.badge = badge
    }
}

/// A group of rows.
public struct ContentSection: Hashable, Sendable {
    public enum Kind: Hashable, Sendable {
        case plain(title: String?)
        case loading
        case playAll(itemCount: UInt32)
        case empty(text: String)
        case loadFailed(text: String)
    }
    public var id: UInt16
    public var kind: Kind
    public init(id: UInt16, kind: Kind) {
        self.id = id
        self.kind = kind
    }
}

/// The limits a head unit states up front; what exceeds them is refused with
/// a clear error, never silently cut.
public struct HeadUnitLimits: Hashable, Sendable {
    public var maximumTabs: Int
    public var maximumPageSize: Int
    public var maximumImageRowImages: Int
    /// 1, 2 or 3: images are delivered at this scale.
    public var imageScale: Int
    public init(maximumTabs: Int = 4, maximumPageSize: Int = 50, maximumImageRowImages: Int = 6, imageScale: Int = 2) {
        self.maximumTabs = maximumTabs
        self.maximumPageSize = maximumPageSize
        self.maximumImageRowImages = maximumImageRowImages
        self.imageScale = imageScale
    }
    /// Audio apps may show at most 4 tabs.
    public static let audioApps = HeadUnitLimits()
    /// The most tabs an audio app may show, whatever a head unit states.
    public static let audioAppTabLimit = 4
    /// The tabs that may be shown: the stated maximum, at most 4.
    public var tabsShown: Int { min(maximumTabs, Self.audioAppTabLimit) }
}

/// What is playing, as the phone publishes it and the head unit keeps it.
public struct NowPlayingInfo: Hashable, Sendable {
    public enum PlaybackState: UInt8, Hashable, Sendable { case unknown, playing, paused, stopped, interrupted }

    public var itemID: UInt64?
    public var title: String?
    public var artist: String?
    public var albumTitle: String?
    public var genre: String?
    public var releaseDate: String?
    public var durationMilliseconds: UInt32?
    public var artworkTransferID: UInt8?
    /// The phone app's image id for the item's artwork (as its content source
    /// names images). Never on the wire: the phone role asks the app for
    /// this image at the head unit's scale, sends it over the file-transfer
    /// session and fills `artworkTransferID` for it. Nil on the head unit.
    public var artworkImageID: String?
    public var elapsedMilliseconds: UInt32
    /// 1.0 is normal speed; 0 while not playing, or playing but stalled
    /// (buffering): the position does not move.
    public var playbackRate: Double
    public var defaultPlaybackRate: Double
    public var queueIndex: UInt32?
    public var queueCount: UInt32?
    public var state: PlaybackState
    public var repeatMode: RepeatMode
    public var shuffleMode: ShuffleMode
    public var appName: String?
    /// The media library `itemID` is an item of (PlaybackMediaLibraryUniqueIdentifier);
    /// nil when what plays is not from one.
    public var mediaLibraryID: String?

    public init(itemID: UInt64? = nil, title: String? = nil, artist: String? = nil, albumTitle: String? = nil, genre: String? = nil,
                releaseDate: String? = nil, durationMilliseconds: UInt32? = nil, artworkTransferID: UInt8? = nil,
                artworkImageID: String? = nil, elapsedMilliseconds: UInt32 = 0, playbackRate: Double? = nil, defaultPlaybackRate: Double = 1, queueIndex: UInt32? = nil,
                queueCount: UInt32? = nil, state: PlaybackState = .unknown, repeatMode: RepeatMode = .off,
                shuffleMode: ShuffleMode = .off, appName: String? = nil, mediaLibraryID: String? = nil) {
        self.itemID = itemID
        self.title = title
        self.artist = artist
        self.albumTitle = albumTitle
        self.genre = genre
        self.releaseDate = releaseDate
        self.durationMilliseconds = durationMilliseconds
        self.artworkTransferID = artworkTransferID
        self.artworkImageID = artworkImageID
        self.elapsedMilliseconds = elapsedMilliseconds
        // Left out, the rate follows the state: normal speed while playing,
        // so that "playing" alone moves the position.
        self.playbackRate = playbackRate ?? (state == .playing ? 1 : 0)
        self.defaultPlaybackRate = defaultPlaybackRate
        self.queueIndex = queueIndex
        self.queueCount = queueCount
        self.state = state
        self.repeatMode = repeatMode
        self.shuffleMode = shuffleMode
        self.appName = appName
        self.mediaLibraryID = mediaLibraryID
    }
}
