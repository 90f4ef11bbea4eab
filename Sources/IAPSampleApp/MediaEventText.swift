import IAPLink
import IAPRoles
import IAPWire

/// Head-unit events in words, for transcripts, logs and the shell.
public enum MediaEventText {
    public static func describe(_ event: HeadUnitMediaRole.Event, headUnit: HeadUnitMediaRole, now: LinkInstant) -> String {
        switch event {
        case .mediaLibraries(let libraries):
            return libraries.isEmpty ? "the phone offers no media library"
                : "media libraries: " + libraries.map { "\($0.name) (\($0.uniqueIdentifier), \($0.type))" }.joined(separator: ", ")
        case .mediaLibraryUpdated(let library, let progress): return "media library \(library): \(progress) %"
        case .mediaLibrarySynced(let library, let revision):
            let mirror = headUnit.mediaLibraries[library]
            return "media library \(library) synced at revision \(revision ?? "?"): \(mirror?.items.count ?? 0) items, \(mirror?.playlists.count ?? 0) playlists"
        case .mediaLibraryProblem(let problem): return "media library: \(problem)"
        case .appInformation(let name, let content): return "app \"\(name)\"\(content ? " with a content tree" : "")"
        case .controlsChanged(let radio, let advertised):
            return "\(radio ? "radio" : "standard") controls: " + headUnit.buttons.map(\.description).joined(separator: ", ")
                + " (\(advertised.count) commands advertised)"
        case .tabs(let tabs): return "tabs: " + tabs.map { $0.text + ($0.badge.map { " [\($0)]" } ?? "") }.joined(separator: " | ")
        case .page(let container):
            let state = headUnit.containers[container]
            let rows = (state?.items ?? []).prefix(8).map { item -> String in
                var text = item.text
                if let detail = item.detailText { text += " — \(detail)" }
                if !item.isEnabled { text += " (disabled)" }
                if item.playingIndicator != .none { text += " ▶" }
                if let row = item.imageRow { text += " [\(row.entries.count) images]" }
                return text
            }
            return "\(container): \(state?.items.count ?? 0) of \(state?.totalCount ?? 0) rows: " + rows.joined(separator: "; ")
        case .browseFailed(let container, let status, let reason): return "\(container.isEmpty ? "root" : container) failed (\(status)): \(reason)"
        case .selection(let item, let status): return "selected \(item): \(status)"
        case .commandStatus(let command, let status):
            return "\(command.kind): \(status)" + (status == .success ? "" : " (\(whyRefused(command, headUnit: headUnit)))")
        case .nowPlaying(let info):
            let model = headUnit.nowPlaying
            let elapsed = model.elapsedIsValid ? "\(model.elapsed(at: now) / 1000) s" : "? s"
            let flagged = Set(model.outOfRange.map(\.attribute))
            let state = flagged.contains(.playbackStatus) || flagged.contains(.playbackState) && info.state == .unknown ? "state ?" : "\(info.state)"
            let repeatMode = flagged.contains(.repeatMode) ? "?" : "\(info.repeatMode)"
            let shuffleMode = flagged.contains(.shuffleMode) ? "?" : word(for: info.shuffleMode)
            return "now playing: \(info.title ?? "nothing") — \(info.artist ?? "") [\(state), \(elapsed) of \((info.durationMilliseconds ?? 0) / 1000) s, rate \(info.playbackRate), repeat \(repeatMode), shuffle \(shuffleMode)\(info.artworkTransferID.map { ", artwork file \($0)" } ?? "")]"
                + outOfRangeSuffix(model)
        case .queue(let queue):
            return "up next (\(queue.status)): " + queue.items.map { ($0.playingIndicator != .none ? "▶ " : "") + $0.text }.joined(separator: ", ")
        case .image(let image, let status, let transfer): return "image \(image): \(status)\(transfer.map { ", file transfer \($0)" } ?? "")"
        }
    }

    /// A shuffle mode in the shell's words (`shuffle off|songs|albums`),
    /// not the protocol's (items, collections).
    public static func word(for mode: ShuffleMode) -> String {
        switch mode {
        case .off: "off"
        case .items: "songs"
        case .collections: "albums"
        }
    }

    /// What the head unit can tell of why the phone refused a command (the
    /// answer carries a status only): a command the phone does not offer,
    /// a position past the end of the track, nothing playing.
    static func whyRefused(_ command: RemoteCommand, headUnit: HeadUnitMediaRole) -> String {
        let kind = command.kind
        let offered = headUnit.advertised.first { $0.kind == kind }
        if headUnit.hasCommandSet, offered == nil {
            return "the phone does not offer \(kind) now; `buttons` shows what it offers"
        }
        if offered?.enabled == false { return "the phone offers \(kind) but has it disabled now" }
        let info = headUnit.nowPlaying.info
        if info.title == nil { return "nothing is playing" }
        if case .changePlaybackPosition(let position) = command, let duration = info.durationMilliseconds, position > duration {
            return "\(position / 1000) s is past the end of the track, which is \(duration / 1000) s long"
        }
        return "the phone gave no reason"
    }

    /// The now-playing line, with the elapsed time computed for `now`.
    public static func nowPlayingLine(_ headUnit: HeadUnitMediaRole, now: LinkInstant) -> String {
        let info = headUnit.nowPlaying.info
        guard let title = info.title else { return "now playing: nothing" }
        let model = headUnit.nowPlaying
        let elapsed = model.elapsed(at: now) / 1000
        let position = model.elapsedIsValid ? "\(elapsed / 60):\(elapsed % 60 < 10 ? "0" : "")\(elapsed % 60)" : "?:??"
        let duration = (info.durationMilliseconds ?? 0) / 1000
        return "now playing: \(title) — \(info.artist ?? "") · \(position) / \(duration / 60):\(duration % 60 < 10 ? "0" : "")\(duration % 60) [\(info.state)\(info.state == .playing ? " at \(info.playbackRate)x" : "")] — \(info.appName ?? "")"
            + outOfRangeSuffix(model)
    }

    /// " (out of range: playback status 9 out of range (0...4), …)" when the phone sent any.
    static func outOfRangeSuffix(_ model: NowPlayingModel) -> String {
        model.outOfRange.isEmpty ? "" : " (out of range: " + model.outOfRange.map(\.description).joined(separator: "; ") + ")"
    }
}
