import Synchronization
import Testing
@testable import IAPKit
import IAPLink
import IAPTransport

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

/// A data source whose one container takes for ever, and says when it was
/// cancelled.
struct NeverEndingLibrary: ContentDataSource {
    let cancelled: Received
    func tabs() async throws -> [ContentItem] { [ContentItem(id: "slow", kind: .container, text: "Slow")] }
    func children(of containerID: String, offset: Int, count: Int) async throws -> ContentPage {
        do {
            try await Task.sleep(for: .seconds(3600))
        } catch {
            cancelled.add(.pause)
            throw error
        }
        return ContentPage(items: [], totalCount: 0)
    }
    func play(_ itemID: String, imageRowEntryID: String?) async throws {}
}

@Suite struct EndpointStopTests {
    /// The head unit goes while the app is still loading: the load is
    /// cancelled, not left running for nobody.
    @Test func aLoadInFlightIsCancelledWhenTheConnectionEnds() async throws {
        let cancelled = Received()
        let phone = Phone(appName: "Slow", content: NeverEndingLibrary(cancelled: cancelled), configuration: .init(authentication: .off))
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let serving = Task { try await phone.serve(over: b) }
        let headUnit = try await HeadUnit.connect(over: a, configuration: .init(connectTimeout: .seconds(20)))
        #expect(try await headUnit.tabs().map(\.id) == ["slow"])
        let opening = Task { try? await headUnit.open("slow") }
        try await Task.sleep(for: .milliseconds(300))
        #expect(cancelled.all.isEmpty, "the load ended before the connection did")
        await headUnit.close()
        _ = try await serving.value
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        while cancelled.all.isEmpty && clock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        #expect(cancelled.all.count == 1, "the app's load was not cancelled when the connection ended")
        opening.cancel()
    }
}
