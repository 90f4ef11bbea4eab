import IAPLink
import IAPRoles
import IAPWire

/// A tap on the page, sent as JSON over the WebSocket, and the role action
/// it is: the same actions the shell takes.
///
///     {"action": "tabs"}                                  the root
///     {"action": "open" | "more" | "retry", "id": ID}     a container
///     {"action": "play", "id": ID, "entry": ENTRY?}       an item (or an image-row entry)
///     {"action": "command", "name": NAME, "value": V?}    a remote command; V: milliseconds,
///                                                         a repeat or shuffle mode, or a bool
///     {"action": "press", "button": BUTTON}               the HID remote (play-pause, next, …)
///     {"action": "queue" | "queue_more"}                  up next: its first page, the next
///     {"action": "image", "id": IMAGE}                    an image, once
///     {"action": "library"}                               the media library's menu
///     {"action": "library_open" | "library_play", "index": N}   open or play row N (from 1) of the library's list
///     {"action": "library_back" | "library_more"}         up a level; more rows of a long list
enum ScreenAction: Decodable, Sendable, Equatable {
    case tabs
    case open(String), more(String), retry(String)
    case play(String, entry: String?)
    case command(RemoteCommand)
    case press(HIDRemote.Button)
    case queue, queueMore
    case image(String)
    case library, libraryOpen(Int), libraryPlay(Int), libraryBack, libraryMore

    private enum Key: String, CodingKey { case action, id, entry, name, value, button, index }

    struct Invalid: Error, CustomStringConvertible {
        let description: String
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let action = try container.decode(String.self, forKey: .action)
        func id() throws -> String { try container.decode(String.self, forKey: .id) }
        switch action {
        case "tabs": self = .tabs
        case "open": self = .open(try id())
        case "more": self = .more(try id())
        case "retry": self = .retry(try id())
        case "play": self = .play(try id(), entry: try container.decodeIfPresent(String.self, forKey: .entry))
        case "queue": self = .queue
        case "queue_more": self = .queueMore
        case "image": self = .image(try id())
        case "library": self = .library
        case "library_open": self = .libraryOpen(try container.decode(Int.self, forKey: .index))
        case "library_play": self = .libraryPlay(try container.decode(Int.self, forKey: .index))
        case "library_back": self = .libraryBack
        case "library_more": self = .libraryMore
        case "press":
            let name = try container.decode(String.self, forKey: .button)
            guard let button = HIDRemote.Button.allCases.first(where: { $0.description == name }) else { throw Invalid(description: "no button \(name)") }
            self = .press(button)
        case "command":
            let name = try container.decode(String.self, forKey: .name)
            self = .command(try Self.command(name, container: container))
        default:
            throw Invalid(description: "no action \(action)")
        }
    }

    private static func command(_ name: String, container: KeyedDecodingContainer<Key>) throws -> RemoteCommand {
        func milliseconds() throws -> UInt32 { try container.decode(UInt32.self, forKey: .value) }
        func flag() throws -> Bool { try container.decodeIfPresent(Bool.self, forKey: .value) ?? true }
        func word() throws -> String { try container.decode(String.self, forKey: .value) }
        switch name {
        case "play": return .play
        case "pause": return .pause
        case "stop": return .stop
        case "toggle_play_pause": return .togglePlayPause
        case "next_track": return .nextTrack
        case "previous_track": return .previousTrack
        case "change_playback_position": return .changePlaybackPosition(milliseconds: try milliseconds())
        case "seek_forward": return .seekForward(begin: try flag())
        case "seek_backward": return .seekBackward(begin: try flag())
        case "skip_forward": return .skipForward(milliseconds: try milliseconds())
        case "skip_backward": return .skipBackward(milliseconds: try milliseconds())
        case "change_repeat_mode":
            let modes: [String: RepeatMode] = ["off": .off, "one": .one, "all": .all]
            guard let mode = modes[try word()] else { throw Invalid(description: "repeat is off, one or all") }
            return .changeRepeatMode(mode)
        case "change_shuffle_mode":
            let modes: [String: ShuffleMode] = ["off": .off, "songs": .items, "albums": .collections]
            guard let mode = modes[try word()] else { throw Invalid(description: "shuffle is off, songs or albums") }
            return .changeShuffleMode(mode)
        case "change_playback_rate": return .changePlaybackRate
        case "like": return .like(try flag())
        case "dislike": return .dislike(try flag())
        case "bookmark": return .bookmark(try flag())
        default: throw Invalid(description: "no command \(name)")
        }
    }

    func perform(on role: inout HeadUnitMediaRole, now: LinkInstant) -> [HeadUnitMediaRole.Output] {
        switch self {
        case .tabs: role.openRoot(now: now)
        case .open(let id): role.open(id, now: now)
        case .more(let id): role.loadMore(id, now: now)
        case .retry(let id): role.retry(id, now: now)
        case .play(let id, let entry): role.select(id, imageRowEntryID: entry, now: now)
        case .command(let command): role.send(command, now: now)
        case .press(let button): role.press(button)
        case .queue: role.requestQueue(now: now)
        case .queueMore: role.loadMoreQueue(now: now)
        case .image(let id): role.requestImage(id, now: now)
        case .library, .libraryOpen, .libraryPlay, .libraryBack, .libraryMore: []
        }
    }

    /// The library's actions move `browser` (and the rows shown, `window`)
    /// and may play; nil for the other actions.
    func performLibrary(_ browser: inout MediaLibraryBrowser, window: inout Int, role: HeadUnitMediaRole) -> (outputs: [HeadUnitMediaRole.Output], problem: String?)? {
        func step(_ step: MediaLibraryBrowser.Step) -> ([HeadUnitMediaRole.Output], String?) {
            switch step {
            case .opened: ([], nil)
            case .play(let request): (role.playFromLibrary(request), nil)
            case .mistake(let message): ([], message)
            }
        }
        switch self {
        case .library:
            window = ScreenLimits.libraryRows
            return step(browser.open("", role: role))
        case .libraryOpen(let index):
            window = ScreenLimits.libraryRows
            return step(browser.open(String(index), role: role))
        case .libraryPlay(let index): return step(browser.play(String(index), role: role))
        case .libraryBack:
            window = ScreenLimits.libraryRows
            return step(browser.open("..", role: role))
        case .libraryMore:
            window = min(window + ScreenLimits.libraryRows, ScreenLimits.libraryRowsAtMost)
            return ([], nil)
        default: return nil
        }
    }
}
