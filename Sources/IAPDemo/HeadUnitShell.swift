// `import IAPDemo` brings the sample app too (SampleApp, SampleLibrary,
// MediaEventText), which lives sans-IO in IAPSampleApp.
@_exported import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// The head unit's shell: a line in, role actions and text out.
public struct HeadUnitShell: Sendable {
    /// The container shown (`""` is the tabs).
    private(set) var path: [String] = [""]
    private(set) var quit = false
    /// Lines that could not be carried out (an unknown command, a row that
    /// is not there, a bad argument): a script with any fails at its end.
    public private(set) var mistakes = 0
    var watchUntil: LinkInstant?
    /// Where the shell is in the phone's media library (`lib`).
    private(set) var library = MediaLibraryBrowser()
    /// Whether a line's answer starts with the line itself (`> ls`): for a
    /// script's transcript; at a terminal the prompt already shows it.
    var echoes = true

    static let help = [
        "ls                    list the current level (tabs at the root)",
        "cd N | cd .. | cd /   open row N, go up, go to the tabs",
        "more, retry           load the next page; retry a failed load",
        "play N                select row N; play alone sends the play command",
        "pause, next, prev, stop, toggle",
        "seek SECONDS          jump to a position; skip SECONDS / back SECONDS move by an interval",
        "repeat off|one|all, shuffle off|songs|albums, rate (steps through the phone's rates)",
        "like, unlike, dislike, bookmark (the phone must offer them)",
        "queue [more]          up next (its next page)",
        "np, watch [SECONDS]   now playing, once or every second",
        "art N                 fetch row N's image over the file-transfer session",
        "lib [N | ..]          the phone's media library: artists, albums, songs, genres, composers, playlists; open row N (a song plays)",
        "lplay N               play library row N: a song from there, an artist, album, genre, composer or playlist whole",
        "buttons               the transport buttons shown now",
        "press BUTTON          a steering-wheel press over HID: play-pause, next, previous, stop, fast-forward, rewind",
        "quit",
    ]

    var current: String { path.last ?? "" }

    /// The commands, for completion.
    public static let commands = ["art", "back", "bookmark", "buttons", "cd", "dislike", "help", "lib", "like", "lplay", "ls", "more", "next", "np",
                                  "pause", "play", "prev", "press", "queue", "quit", "rate", "repeat", "retry", "seek", "shuffle",
                                  "skip", "stop", "toggle", "unlike", "watch"]

    static let repeatModes: [String: RepeatMode] = ["off": .off, "one": .one, "all": .all]
    static let shuffleModes: [String: ShuffleMode] = ["off": .off, "songs": .items, "items": .items, "albums": .collections, "collections": .collections]
    static let buttons: [String: HIDRemote.Button] = ["play-pause": .playPause, "playpause": .playPause, "play": .play, "pause": .pause,
                                                      "next": .nextTrack, "previous": .previousTrack, "prev": .previousTrack, "stop": .stop,
                                                      "fast-forward": .fastForward, "rewind": .rewind, "volume-up": .volumeUp, "volume-down": .volumeDown]

    /// The words a command takes, for completion (none for a row number or a time).
    public static func arguments(of command: String) -> [String] {
        switch command {
        case "cd": [".." , "/"]
        case "repeat": repeatModes.keys.sorted()
        case "shuffle": shuffleModes.keys.sorted()
        case "press": buttons.keys.sorted()
        default: []
        }
    }

    mutating func execute(_ line: String, role: inout HeadUnitMediaRole, now: LinkInstant) -> ([HeadUnitMediaRole.Output], [String]) {
        let words = line.split(separator: " ").map(String.init)
        guard let verb = words.first?.lowercased() else { return ([], []) }
        let argument = words.dropFirst().joined(separator: " ")
        let text = echoes ? ["> " + line] : []
        func row(_ index: String) -> ContentItem? {
            guard let number = Int(index) else { return nil }
            let items = current.isEmpty ? role.tabs : role.containers[current]?.items ?? []
            return items.indices.contains(number - 1) ? items[number - 1] : nil
        }
        func seconds(_ value: String) -> UInt32? { Double(value).map { UInt32(max(0, $0) * 1000) } }
        func mistake(_ message: String) -> ([HeadUnitMediaRole.Output], [String]) {
            mistakes += 1
            return ([], text + [message])
        }
        switch verb {
        case "help", "?":
            return ([], text + Self.help)
        case "ls":
            return ([], text + listing(role))
        case "cd":
            switch argument {
            case "/":
                path = [""]
                return (role.tabs.isEmpty ? role.openRoot(now: now) : [], text + listing(role))
            case "..":
                if path.count > 1 { path.removeLast() }
                return ([], text + listing(role))
            case "":
                return mistake("cd needs a row number, .. or /")
            default:
                guard let item = row(argument) else { return mistake("no row \(argument) here; `ls` lists them") }
                guard item.kind == .container else { return mistake("\(item.text) is not a container; `play \(argument)` plays it") }
                path.append(item.id)
                return (role.open(item.id, now: now), text)
            }
        case "more":
            return (role.loadMore(current, now: now), text)
        case "retry":
            return (role.retry(current, now: now), text)
        case "play":
            if argument.isEmpty { return (role.send(.play, now: now), text) }
            guard let item = row(argument) else { return mistake("no row \(argument) here") }
            guard item.isEnabled else { return ([], text + ["\(item.text) is shown but cannot be selected"]) }
            if let entry = item.imageRow?.entries.first(where: \.selectable) {
                return (role.select(item.id, imageRowEntryID: entry.id, now: now), text)
            }
            return (role.select(item.id, now: now), text)
        case "pause": return (role.send(.pause, now: now), text)
        case "toggle": return (role.send(.togglePlayPause, now: now), text)
        case "stop": return (role.send(.stop, now: now), text)
        case "next": return (role.send(.nextTrack, now: now), text)
        case "prev", "previous": return (role.send(.previousTrack, now: now), text)
        case "seek":
            guard let position = seconds(argument) else { return mistake("seek needs a position in seconds") }
            return (role.send(.changePlaybackPosition(milliseconds: position), now: now), text)
        case "skip", "back":
            guard let interval = seconds(argument.isEmpty ? "15" : argument) else { return mistake("\(verb) takes seconds") }
            return (role.send(verb == "skip" ? .skipForward(milliseconds: interval) : .skipBackward(milliseconds: interval), now: now), text)
        case "repeat":
            guard let mode = Self.repeatModes[argument] else { return mistake("repeat off, one or all") }
            return (role.send(.changeRepeatMode(mode), now: now), text)
        case "shuffle":
            guard let mode = Self.shuffleModes[argument] else { return mistake("shuffle off, songs or albums") }
            return (role.send(.changeShuffleMode(mode), now: now), text)
        case "rate": return (role.send(.changePlaybackRate, now: now), text)
        case "like": return (role.send(.like(true), now: now), text)
        case "unlike": return (role.send(.like(false), now: now), text)
        case "dislike": return (role.send(.dislike(true), now: now), text)
        case "bookmark": return (role.send(.bookmark(true), now: now), text)
        case "queue": return (argument == "more" ? role.loadMoreQueue(now: now) : role.requestQueue(now: now), text)
        case "np":
            return ([], text + [MediaEventText.nowPlayingLine(role, now: now)])
        case "watch":
            let duration = Double(argument) ?? 5
            watchUntil = now + .milliseconds(Int64(duration * 1000))
            return ([], text)
        case "art":
            guard let item = row(argument), let image = item.imageID ?? item.imageRow?.entries.first?.imageID else {
                return mistake("row \(argument) has no image")
            }
            return (role.requestImage(image, now: now), text)
        case "press":
            guard let button = Self.buttons[argument.lowercased()] else { return mistake("press one of: " + Self.buttons.keys.sorted().joined(separator: ", ")) }
            return (role.press(button), text)
        case "lib", "library":
            switch library.open(argument, role: role) {
            case .opened: return ([], text + library.listing(role))
            case .play(let request): return (role.playFromLibrary(request), text)
            case .mistake(let message): return mistake(message)
            }
        case "lplay":
            switch library.play(argument, role: role) {
            case .play(let request): return (role.playFromLibrary(request), text)
            case .opened: return ([], text)
            case .mistake(let message): return mistake(message)
            }
        case "buttons":
            return ([], text + ["\(role.radioControls ? "radio" : "standard") controls: " + role.buttons.map(\.description).joined(separator: ", ")])
        case "quit", "exit":
            quit = true
            return ([], text)
        default:
            return mistake("unknown command \(verb); `help` lists them")
        }
    }

    func listing(_ role: HeadUnitMediaRole) -> [String] {
        if current.isEmpty {
            if role.tabs.isEmpty { return ["(no tabs yet: `cd /` asks for them)"] }
            return role.tabs.enumerated().map { "  \($0.offset + 1). \($0.element.text)" + ($0.element.badge.map { " [\($0)]" } ?? "") }
        }
        guard let state = role.containers[current] else { return ["(not loaded)"] }
        if state.loading { return ["(loading…)"] }
        if let failure = state.failure { return ["(failed: \(failure); `retry`)"] }
        var lines = state.items.enumerated().map { index, item -> String in
            var line = "  \(index + 1). \(item.text)"
            if let detail = item.detailText { line += " — \(detail)" }
            if item.kind == .container { line += " ›" }
            if item.playingIndicator != .none { line += " ▶" }
            if !item.isEnabled { line += " (disabled)" }
            if let images = item.imageRow { line += " [\(images.entries.count) images]" }
            return line
        }
        if state.items.count < state.totalCount { lines.append("  … \(state.totalCount - state.items.count) more (`more`)") }
        return lines
    }
}

