import IAPAuthentication
import IAPKit
import IAPTransport
import Synchronization
import Testing

/// A small library: two tabs, an album of three tracks, one image.
struct TinyLibrary: ContentDataSource {
    let playing: NowPlayingCenter
    static let tracks = ["So What", "Freddie Freeloader", "Blue in Green"]

    func tabs() async throws -> [ContentItem] {
        [ContentItem(id: "albums", kind: .container, text: "Albums"), ContentItem(id: "broken", kind: .container, text: "Broken")]
    }

    func children(of containerID: String, offset: Int, count: Int) async throws -> ContentPage {
        switch containerID {
        case "albums": return ContentPage([ContentItem(id: "kind-of-blue", kind: .container, text: "Kind of Blue")], offset: offset, count: count)
        case "kind-of-blue":
            let items = Self.tracks.enumerated().map { ContentItem(id: "track:\($0.offset)", kind: .playable, text: $0.element) }
            return ContentPage(items, offset: offset, count: count)
        case "broken": throw ContentError(.commandFailed, "the network is unreachable")
        default: throw ContentError(.noSuchContent, "no container \(containerID)")
        }
    }

    func play(_ itemID: String, imageRowEntryID: String?) async throws {
        guard itemID.hasPrefix("track:"), let index = Int(itemID.dropFirst(6)), Self.tracks.indices.contains(index) else {
            throw ContentError(.noSuchContent, "no track \(itemID)")
        }
        playing.info = NowPlayingInfo(title: Self.tracks[index], artist: "Miles Davis", elapsedMilliseconds: 0, playbackRate: 1, state: .playing)
    }

    func queue(offset: Int, count: Int) async throws -> QueuePage {
        let items = Self.tracks.enumerated().map { ContentItem(id: "track:\($0.offset)", kind: .playable, text: $0.element) }
        return QueuePage(items: Array(items.dropFirst(offset).prefix(count)), totalCount: items.count, currentIndex: 1)
    }

    func image(_ imageID: String, scale: Int) async throws -> [UInt8] {
        guard imageID == "cover" else { throw ContentError(.noSuchContent, "no image \(imageID)") }
        return Array(repeating: UInt8(scale), count: 3000)
    }
}

/// A phone serving `TinyLibrary` and a head unit connected to it over the
/// in-memory loopback, both through the public API.
final class Received: Sendable {
    private let commands = Mutex<[RemoteCommand]>([])
    func add(_ command: RemoteCommand) { commands.withLock { $0.append(command) } }
    var all: [RemoteCommand] { commands.withLock { $0 } }
}

func withPair(_ body: (HeadUnit, Phone, Received) async throws -> Void) async throws {
    let received = Received()
    var commands = RemoteCommandCenter()
    commands.register(.pause) { command in received.add(command); return .success }
    commands.register(.changePlaybackPosition) { command in received.add(command); return .success }
    let center = NowPlayingCenter()
    let phone = Phone(appName: "Tiny", content: TinyLibrary(playing: center), commands: commands, nowPlaying: center)
    let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
    let serving = Task { try await phone.serve(over: b) }
    let headUnit = try await HeadUnit.connect(over: a, configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral(), connectTimeout: .seconds(20)))
    try await body(headUnit, phone, received)
    await headUnit.close()
    _ = try await serving.value
}

@Suite struct KitTests {
    @Test func aHeadUnitBrowsesPlaysAndFollowsNowPlaying() async throws {
        try await withPair { headUnit, phone, _ in
            #expect(headUnit.appName == "Tiny")
            let tabs = try await headUnit.tabs()
            #expect(tabs.map(\.text) == ["Albums", "Broken"])
            let albums = try await headUnit.open("albums")
            #expect(albums.items.map(\.text) == ["Kind of Blue"] && albums.isComplete)
            let album = try await headUnit.open("kind-of-blue")
            #expect(album.items.count == 3 && album.totalCount == 3)
            let status = try await headUnit.play("track:1")
            #expect(status == .success)
            // The update follows the play's status; wait for it in the events.
            for await event in headUnit.events {
                if case .nowPlaying(let info) = event, info.title == "Freddie Freeloader" { break }
            }
            #expect(headUnit.nowPlaying.title == "Freddie Freeloader")
            #expect(headUnit.nowPlaying.artist == "Miles Davis")
            #expect(try await headUnit.play("track:9") == .noSuchContent)
        }
    }

    @Test func failuresReachTheCallerWithTheirStatus() async throws {
        try await withPair { headUnit, _, _ in
            await #expect(throws: HeadUnitError.browseFailed(.commandFailed, "the network is unreachable")) { try await headUnit.open("broken") }
            await #expect(throws: HeadUnitError.imageUnavailable(.noSuchContent)) { try await headUnit.artwork("nothing") }
        }
    }

    @Test func commandsCarryTheirValuesAndArtworkArrivesWhole() async throws {
        try await withPair { headUnit, _, received in
            #expect(try await headUnit.send(.changePlaybackPosition(milliseconds: 61_000)) == .success)
            #expect(received.all == [.changePlaybackPosition(milliseconds: 61_000)])
            let art = try await headUnit.artwork("cover")
            #expect(art == Array(repeating: 2, count: 3000), "the default screen asks at scale 2")
            try await headUnit.press(.playPause)
        }
    }

    @Test func whatThePhoneSaidIsReleasedWhenTheConnectionEnds() async throws {
        try await withPair { headUnit, _, _ in
            let status = try await headUnit.play("track:1")
            #expect(status == .success)
            for await event in headUnit.events {
                if case .nowPlaying(let info) = event, info.title == "Freddie Freeloader" { break }
            }
            #expect(headUnit.appName == "Tiny")
            #expect(!headUnit.advertisedCommands.isEmpty)
            await headUnit.close()
            #expect(headUnit.appName == nil)
            #expect(headUnit.advertisedCommands.isEmpty)
            #expect(headUnit.nowPlaying == NowPlayingInfo(), "a track left showing as playing after the disconnect")
        }
    }

    /// The first event of `events` that `pick` makes a value of, within 10 s;
    /// nil if none came (a test waits, never hangs).
    func first<Event: Sendable, Value: Sendable>(in events: AsyncStream<Event>,
                                                 _ pick: @escaping @Sendable (Event) -> Value?) async -> Value? {
        await withTaskGroup(of: Value?.self) { group in
            group.addTask {
                for await event in events { if let value = pick(event) { return value } }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(10))
                return nil
            }
            let found = await group.next() ?? nil
            group.cancelAll()
            return found
        }
    }

    /// Whether the head unit's controls are radio controls, from the first
    /// controlsChanged event `match` accepts.
    func controls(_ headUnit: HeadUnit, _ match: @escaping @Sendable ([AdvertisedCommand]) -> Bool) async -> Bool? {
        await first(in: headUnit.events) { event in
            if case .controlsChanged(let radio, let advertised) = event, match(advertised) { radio } else { nil }
        }
    }

    /// An app names its artwork by image id; the head unit gets the image,
    /// at its scale, without asking.
    @Test func nowPlayingArtworkArrivesWithoutBeingAskedFor() async throws {
        try await withPair { headUnit, phone, _ in
            phone.nowPlaying.info = NowPlayingInfo(title: "So What", artworkImageID: "cover", state: .playing)
            let artwork = await first(in: headUnit.events) { event -> [UInt8]? in
                if case .nowPlaying = event { headUnit.nowPlayingArtwork } else { nil }
            }
            #expect(artwork == Array(repeating: 2, count: 3000), "the default screen's scale is 2")
            #expect(headUnit.nowPlaying.title == "So What")
            // An item without artwork: none is shown.
            phone.nowPlaying.info = NowPlayingInfo(title: "Jazz Radio", state: .playing)
            let cleared = await first(in: headUnit.events) { event -> Bool? in
                if case .nowPlaying(let info) = event, info.title == "Jazz Radio" { headUnit.nowPlayingArtwork == nil } else { nil }
            }
            #expect(cleared == true)
        }
    }

    @Test func anAppChangesItsCommandsWhileConnected() async throws {
        try await withPair { headUnit, phone, received in
            #expect(headUnit.advertisedCommands.map(\.kind).contains(.pause))
            phone.updateCommands { $0.register(.like) { _ in .success } }
            let withLike = await controls(headUnit) { $0.contains { $0.kind == .like } }
            #expect(withLike == true, "a like command gives the head unit radio controls")
            phone.updateCommands { $0.withdraw(.like); $0.withdraw(.pause) }
            let withdrawn = await controls(headUnit) { !$0.contains { $0.kind == .like } }
            #expect(withdrawn == false, "withdrawing like gives the standard controls back")
            #expect(!headUnit.advertisedCommands.map(\.kind).contains(.pause))
            let status = try await headUnit.send(.pause)
            #expect(status == .commandFailed, "a withdrawn command is refused")
            #expect(received.all.isEmpty)
        }
    }

    @Test func thePhoneIsToldOfEachConnectionOnceAndOfItsEnd() async throws {
        try await withPair { headUnit, phone, _ in
            guard case .connected(let identity)? = await first(in: phone.events, { $0 }) else {
                Issue.record("no connected event")
                return
            }
            #expect(identity.name == "iap-devkit head unit")
            await headUnit.close()
            guard case .disconnected(let reason)? = await first(in: phone.events, { $0 }) else {
                Issue.record("no disconnected event after the head unit closed")
                return
            }
            #expect(!reason.isEmpty)
        }
    }

    @Test func callsAfterTheConnectionEndedThrowTheClosedTransport() async throws {
        try await withPair { headUnit, _, _ in
            await headUnit.close()
            await #expect { _ = try await headUnit.tabs() } throws: { error in
                guard case .transport(let transport) = error as? HeadUnitError else { return false }
                return transport.kind == .closed
            }
        }
    }

    @Test func aHeadUnitWithNoPhoneTimesOutConnecting() async throws {
        let (a, _) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        await #expect {
            _ = try await HeadUnit.connect(over: a, configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral(), connectTimeout: .milliseconds(300)))
        } throws: { error in
            guard case .transport(let transport) = error as? HeadUnitError else { return false }
            return transport.kind == .timedOut
        }
    }

    @Test func connectingToAPortNothingListensOnIsRefused() async throws {
        let port = try TCPTransport.listener(host: "127.0.0.1", port: 0).port
        do {
            _ = try await HeadUnit.connect(to: "tcp:127.0.0.1:\(port)", configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral()))
            Issue.record("connected to a port nothing listens on")
        } catch HeadUnitError.transport(let error) {
            #expect(error.kind == .refused, "\(error)")
            #expect(error.description.contains("Connection refused"), "\(error)")
        } catch {
            Issue.record("expected HeadUnitError.transport, got \(error)")
        }
        await #expect {
            _ = try await HeadUnit.connect(to: TransportSpec.tcp(host: "127.0.0.1", port: port),
                                           configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral()))
        } throws: { error in
            guard case .transport(let transport) = error as? HeadUnitError else { return false }
            return transport.kind == .refused
        }
    }

    @Test func aTransportNameThatDoesNotParseIsAnInvalidSpec() async throws {
        await #expect { _ = try await HeadUnit.connect(to: "tcp:no-port") } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
        await #expect { try await Phone(appName: "Tiny", content: nil).serve("loopback") } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
        // Given as a value, a transport with two ends is refused the same way.
        await #expect { _ = try await HeadUnit.connect(to: TransportSpec.loopback) } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
        await #expect { try await Phone(appName: "Tiny", content: nil).serve(TransportSpec.loopback) } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
    }

    @Test func aSilentPeerDoesNotKeepTheNextHeadUnitWaiting() async throws {
        let center = NowPlayingCenter()
        let phone = Phone(appName: "Tiny", content: TinyLibrary(playing: center), nowPlaying: center)
        let free = try TCPTransport.listener(host: "127.0.0.1", port: 0).port
        let (ports, port) = AsyncStream.makeStream(of: UInt16.self)
        let serving = Task {
            defer { port.finish() }
            try await phone.serveEach("tcp-listen:127.0.0.1:\(free)", maximumConnections: 2) { port.yield($0) }
        }
        guard let bound = await first(in: ports, { $0 }) else {
            Issue.record("the phone never listened: \(String(describing: await serving.result))")
            return
        }
        // A peer that connects and never says a word.
        let silent = TCPTransport.connect(host: "127.0.0.1", port: bound)
        try silent.start { _ in }
        let headUnit = try await HeadUnit.connect(to: "tcp:127.0.0.1:\(bound)",
                                                  configuration: .init(authenticator: try SoftwareAuthenticator.ephemeral(), connectTimeout: .seconds(10)))
        #expect(try await headUnit.tabs().map(\.text) == ["Albums", "Broken"])
        // Now playing reaches the connected head unit.
        center.info = NowPlayingInfo(title: "Blue in Green", artist: "Miles Davis", state: .playing)
        #expect(await first(in: headUnit.events, { event -> Bool? in
            if case .nowPlaying(let info) = event, info.title == "Blue in Green" { true } else { nil }
        }) == true)
        await headUnit.close()
        silent.close()
        // Cancelling ends the serve, though an accept is waiting for the next peer.
        serving.cancel()
        let ended = Task {
            try? await serving.value
            return true
        }
        let timeout = Task {
            try? await Task.sleep(for: .seconds(10))
            return false
        }
        #expect(await first(in: AsyncStream { continuation in
            Task { continuation.yield(await ended.value) }
            Task { continuation.yield(await timeout.value) }
        }, { $0 }) == true, "serveEach did not return after it was cancelled")
    }

    @Test func serveEachTakesOnlyAListeningAddress() async throws {
        let phone = Phone(appName: "Tiny", content: nil)
        await #expect { try await phone.serveEach("tcp:127.0.0.1:7000") } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
        await #expect { try await phone.serveEach("tcp-listen:127.0.0.1:7000", maximumConnections: 0) } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
    }

    @Test func aPhoneThatCannotConnectThrowsTheTransportError() async throws {
        let port = try TCPTransport.listener(host: "127.0.0.1", port: 0).port
        let phone = Phone(appName: "Tiny", content: nil, configuration: .init(authentication: .off))
        await #expect { try await phone.serve("tcp:127.0.0.1:\(port)") } throws: { ($0 as? TransportError)?.kind == .refused }
        await #expect { try await phone.serve(TransportSpec.tcp(host: "127.0.0.1", port: port)) } throws: { ($0 as? TransportError)?.kind == .refused }
    }
}

@Suite struct KitPagingTests {
    @Test func aContainerLargerThanAPageArrivesPageByPage() async throws {
        let center = NowPlayingCenter()
        let phone = Phone(appName: "Tiny", content: TinyLibrary(playing: center), nowPlaying: center)
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let serving = Task { try await phone.serve(over: b) }
        let headUnit = try await HeadUnit.connect(over: a, configuration: .init(limits: HeadUnitLimits(maximumPageSize: 2),
                                                                               authenticator: try SoftwareAuthenticator.ephemeral()))
        let first = try await headUnit.open("kind-of-blue")
        #expect(first.items.count == 2 && first.totalCount == 3 && !first.isComplete)
        let all = try await headUnit.loadMore("kind-of-blue")
        #expect(all.items.map(\.text) == TinyLibrary.tracks && all.isComplete)
        let again = try await headUnit.loadMore("kind-of-blue")
        #expect(again == all, "a complete container is returned as it is")
        // Up next, the same way.
        let upNext = try await headUnit.queue()
        #expect(upNext.items.count == 2 && upNext.totalCount == 3 && upNext.currentIndex == 1)
        let wholeQueue = try await headUnit.loadMoreQueue()
        #expect(wholeQueue.items.map(\.text) == TinyLibrary.tracks)
        #expect(try await headUnit.loadMoreQueue() == wholeQueue, "a whole queue is returned as it is")
        await headUnit.close()
        _ = try await serving.value
    }
}
