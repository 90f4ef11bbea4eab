import IAPRoles

/// The header's status line in words a driver reads at a glance: what was
/// played (by its title), what a command did ("Shuffle: songs"), what could
/// not be opened and why; never an id or a command's wire name.
enum ScreenStatus {
    static func selection(title: String?, id: String, _ status: RequestStatus) -> String {
        let name = "“\(title ?? id)”"
        return status == .success ? "Playing \(name)" : "Could not play \(name): \(status)"
    }

    static func command(_ command: RemoteCommand, _ status: RequestStatus) -> String {
        let name = Self.name(command)
        return status == .success ? name : "\(name): \(status)"
    }

    static func browseFailed(title: String?, id: String, _ status: RequestStatus, reason: String) -> String {
        let name = id.isEmpty ? "the tabs" : "“\(title ?? id)”"
        return "Could not open \(name): \(reason.isEmpty ? "\(status)" : reason)"
    }

    static func name(_ command: RemoteCommand) -> String {
        switch command {
        case .play: "Play"
        case .pause: "Pause"
        case .stop: "Stop"
        case .togglePlayPause: "Play / Pause"
        case .nextTrack: "Next track"
        case .previousTrack: "Previous track"
        case .changePlaybackPosition(let milliseconds): "Position \(clock(milliseconds))"
        case .seekForward(let begin): begin ? "Fast forward" : "Fast forward ended"
        case .seekBackward(let begin): begin ? "Rewind" : "Rewind ended"
        case .skipForward(let milliseconds): "Forward \(milliseconds / 1000) s"
        case .skipBackward(let milliseconds): "Back \(milliseconds / 1000) s"
        case .changeRepeatMode(let mode): "Repeat: \(["off", "one", "all"][Int(mode.rawValue)])"
        case .changeShuffleMode(let mode): "Shuffle: \(["off", "songs", "albums"][Int(mode.rawValue)])"
        case .changePlaybackRate: "Playback rate"
        case .like(let on): on ? "Liked" : "Like removed"
        case .dislike(let on): on ? "Disliked" : "Dislike removed"
        case .bookmark(let on): on ? "Bookmarked" : "Bookmark removed"
        }
    }

    static func clock(_ milliseconds: UInt32) -> String {
        let seconds = milliseconds / 1000
        return "\(seconds / 60):\(seconds % 60 < 10 ? "0" : "")\(seconds % 60)"
    }
}
