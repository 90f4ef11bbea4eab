import Synchronization
import Testing
@testable import IAPKit
import IAPLink
import IAPRoles

/// The head unit going away while playing pauses the app's player (DOMAIN:
/// "on disconnect the phone role pauses playback"), whatever the head unit
/// was allowed to do.
@Suite struct DisconnectPauseTests {
    final class Calls: Sendable {
        let kinds = Mutex<[RemoteCommand.Kind]>([])
        func add(_ command: RemoteCommand) -> RequestStatus {
            kinds.withLock { $0.append(command.kind) }
            return .success
        }
        var all: [RemoteCommand.Kind] { kinds.withLock { $0 } }
    }

    static func app(_ commands: RemoteCommandCenter) -> (DataSourceApp, NowPlayingCenter) {
        let center = NowPlayingCenter()
        center.info = NowPlayingInfo(title: "So What", state: .playing)
        return (DataSourceApp(appName: "Test", content: nil, commands: Locked(commands), nowPlaying: center), center)
    }

    @Test func aPauseHandlerTheHeadUnitMayNotUseStillRuns() {
        let calls = Calls()
        var commands = RemoteCommandCenter()
        commands.register(.pause, enabled: false) { calls.add($0) }
        let (app, _) = Self.app(commands)
        app.pause(at: .zero)
        #expect(calls.all == [.pause])
    }

    @Test func withoutAPauseHandlerThePlayPauseToggleRuns() {
        let calls = Calls()
        var commands = RemoteCommandCenter()
        commands.register(.togglePlayPause) { calls.add($0) }
        let (app, _) = Self.app(commands)
        app.pause(at: .zero)
        #expect(calls.all == [.togglePlayPause])
    }

    @Test func withNeitherNowPlayingShowsPaused() {
        let (app, center) = Self.app(RemoteCommandCenter())
        app.pause(at: .zero)
        #expect(center.info.state == .paused)
        #expect(center.info.playbackRate == 0)
    }
}
