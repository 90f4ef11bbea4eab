import IAPRoles
import IAPSession

extension HeadUnit {
    /// Where the connection to the phone stands (`Event.stage`).
    public enum Stage: Hashable, Sendable, CustomStringConvertible {
        case disconnected
        case authenticating
        case identifying
        /// Identified; the name is the one this head unit identified as.
        case identified(String)
        /// Authentication or identification failed; the connection ends.
        case failed(String)

        init(_ stage: Connection.Stage) {
            switch stage {
            case .disconnected: self = .disconnected
            case .authenticating: self = .authenticating
            case .identifying: self = .identifying
            case .identified(let name): self = .identified(name)
            case .failed(let reason): self = .failed(reason)
            }
        }

        public var description: String {
            switch self {
            case .disconnected: "disconnected"
            case .authenticating: "authenticating"
            case .identifying: "identifying"
            case .identified(let name): "identified as \(name)"
            case .failed(let reason): "failed: \(reason)"
            }
        }
    }

    /// A container of the phone's content tree as loaded so far (`open`,
    /// `loadMore`): its items in order, the sections that group them, and
    /// how many it holds in all.
    public struct Container: Hashable, Sendable {
        public var items: [ContentItem]
        public var sections: [ContentSection]
        public var totalCount: Int

        /// Whether every item is here; `loadMore` fetches the next page otherwise.
        public var isComplete: Bool { items.count >= totalCount }

        public init(items: [ContentItem], sections: [ContentSection] = [], totalCount: Int) {
            self.items = items
            self.sections = sections
            self.totalCount = totalCount
        }

        init(_ state: HeadUnitMediaRole.ContainerState) {
            self.init(items: state.items, sections: state.sections, totalCount: state.totalCount)
        }
    }

    /// A button of the steering-wheel remote (`press`), sent to the phone
    /// as a USB HID consumer-control usage.
    public enum Button: String, CaseIterable, Hashable, Sendable {
        case playPause, nextTrack, previousTrack, stop, play, pause, fastForward, rewind
        case volumeUp, volumeDown, mute, shuffle, `repeat`, voiceCommand, menu, back

        var hidButton: HIDRemote.Button {
            switch self {
            case .playPause: .playPause
            case .nextTrack: .nextTrack
            case .previousTrack: .previousTrack
            case .stop: .stop
            case .play: .play
            case .pause: .pause
            case .fastForward: .fastForward
            case .rewind: .rewind
            case .volumeUp: .volumeUp
            case .volumeDown: .volumeDown
            case .mute: .mute
            case .shuffle: .shuffle
            case .repeat: .repeat
            case .voiceCommand: .voiceCommand
            case .menu: .menu
            case .back: .back
            }
        }
    }
}
