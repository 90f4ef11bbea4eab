import Foundation
import IAPAuthentication
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import Logging
import IAPWire

/// An app's content, as a car's screen browses it: tabs at the root,
/// containers whose children are fetched only when opened, page by page.
/// Throw a `ContentError` to give the head unit a status and a reason;
/// any other error is reported as `RequestStatus.commandFailed`.
public protocol ContentDataSource: Sendable {
    /// The root: at most the head unit's `maximumTabs` containers.
    func tabs() async throws -> [ContentItem]
    /// A page of a container's children, `count` at most from `offset`.
    func children(of containerID: String, offset: Int, count: Int) async throws -> ContentPage
    /// Starts playing an item (or an entry of an item's image row).
    func play(_ itemID: String, imageRowEntryID: String?) async throws
    /// "Up next", a page of it. The default: an empty queue.
    func queue(offset: Int, count: Int) async throws -> QueuePage
    /// An image's bytes at a scale (1, 2 or 3). The default: no images.
    func image(_ imageID: String, scale: Int) async throws -> [UInt8]
    /// Media Library Access: play these items of `Phone`'s library (their
    /// persistent ids) as the queue, from `startIndex`. The head unit named
    /// them, or a collection or all songs holding them.
    func playLibraryItems(_ items: [UInt64], startIndex: Int) async throws
    /// Media Library Access: play what the app has selected.
    func playLibraryCurrentSelection() async throws
}

extension ContentDataSource {
    public func queue(offset: Int, count: Int) async throws -> QueuePage { QueuePage(items: [], totalCount: 0, currentIndex: 0) }
    public func image(_ imageID: String, scale: Int) async throws -> [UInt8] { throw ContentError(.noSuchContent, "no image \(imageID)") }
    public func playLibraryItems(_ items: [UInt64], startIndex: Int) async throws {
        throw ContentError(.noSuchContent, "this app plays nothing from a media library")
    }
    public func playLibraryCurrentSelection() async throws {
        throw ContentError(.noSuchContent, "this app plays nothing from a media library")
    }
}

/// A page of a container's children.
public struct ContentPage: Hashable, Sendable {
    public var items: [ContentItem]
    public var sections: [ContentSection]
    /// How many children the container has in all.
    public var totalCount: Int

    public init(items: [ContentItem], sections: [ContentSection] = [], totalCount: Int) {
        self.items = items
        self.sections = sections
        self.totalCount = totalCount
    }

    /// The page of `all` that starts at `offset`, `count` long at most.
    public init(_ all: [ContentItem], offset: Int, count: Int, sections: [ContentSection] = []) {
        self.init(items: Array(all.dropFirst(offset).prefix(count)), sections: sections, totalCount: all.count)
    }
}

/// A page of the playback queue.
public struct QueuePage: Hashable, Sendable {
    public var items: [ContentItem]
    public var totalCount: Int
    public var currentIndex: Int

    public init(items: [ContentItem], totalCount: Int, currentIndex: Int) {
        self.items = items
        self.totalCount = totalCount
        self.currentIndex = currentIndex
    }
}

/// A failure the head unit is told about, with its status.
public struct ContentError: Error, Hashable, Sendable, CustomStringConvertible {
    public var status: RequestStatus
    public var reason: String

    public init(_ status: RequestStatus, _ reason: String) {
        self.status = status
        self.reason = reason
    }

    public var description: String { "\(status): \(reason)" }
}

/// What the app is playing. Set `info` when playback changes (a new item,
/// play, pause, a seek); while playing, the elapsed time runs on from the
/// moment it was set, at the playback rate, so it need not be set every
/// second. The head unit gets an update whenever it changes meaningfully.
public final class NowPlayingCenter: Sendable {
    private let state = Locked<(info: NowPlayingInfo, setAt: LinkInstant)>((NowPlayingInfo(), MonotonicClock.now()))
    private let changed = Locked(ChangeAction())
    /// A struct around the closure: a bare optional closure held in a
    /// generic container is re-wrapped at every access and grows without end.
    private struct ChangeAction {
        var action: (@Sendable () -> Void)?
    }

    public init() {}

    public var info: NowPlayingInfo {
        get { info(at: MonotonicClock.now()) }
        set {
            state.withLock { $0 = (newValue, MonotonicClock.now()) }
            changed.withLock { $0.action }?()
        }
    }

    /// The info with its elapsed time run on to `now`.
    func info(at now: LinkInstant) -> NowPlayingInfo {
        var (info, setAt) = state.withLock { $0 }
        info.elapsedMilliseconds = NowPlayingModel.extrapolate(info, from: setAt, to: now)
        return info
    }

    func onChange(_ action: @escaping @Sendable () -> Void) { changed.withLock { $0.action = action } }
}

/// The device (phone) end of a connection to a head unit, serving an app:
/// its content (a data source), what it is playing (a now-playing center)
/// and what it can do (a remote command center, one handler per command).
/// The head unit authenticates and identifies first, as a car does.
///
/// ```swift
/// let phone = Phone(appName: "My Music", content: MyLibrary(), commands: commands)
/// phone.nowPlaying.info = NowPlayingInfo(title: "So What", artist: "Miles Davis", state: .playing)
/// try await phone.serve("tcp-listen:0.0.0.0:7000")
/// ```
public final class Phone: Sendable {
    public struct Configuration: Sendable {
        /// Whether the accessory must authenticate before identification.
        public var authentication: AuthenticationPolicy
        /// Trust anchors for the accessory's certificate chain. Without
        /// them a valid signature from an unknown issuer is accepted and
        /// reported as untrusted (test certificates work).
        public var trustAnchors: TrustAnchors?
        public var logger: Logger

        public init(authentication: AuthenticationPolicy = .required, trustAnchors: TrustAnchors? = nil,
                    logger: Logger = Logger(label: "iap-devkit.phone")) {
            self.authentication = authentication
            self.trustAnchors = trustAnchors
            self.logger = logger
        }
    }

    /// What happens to the phone's connections, each reported once.
    public enum Event: Hashable, Sendable {
        /// A head unit authenticated (when required) and identified itself:
        /// it can browse and play from now on. State kept per connection
        /// starts here.
        case connected(AccessoryIdentity)
        /// The connection that `connected` announced ended, with the
        /// reason: exactly once for each `connected`. Release what was
        /// kept for it.
        case disconnected(String)
    }

    public let appName: String
    public let nowPlaying: NowPlayingCenter
    /// Connections coming and going, over every `serve`; when nobody reads,
    /// only the newest 64 are kept.
    public let events: AsyncStream<Event>
    private let eventFeed: AsyncStream<Event>.Continuation
    private let app: DataSourceApp
    private let configuration: Configuration
    /// The endpoints serving head units now, by serve.
    private let serving = Locked<[Int: MediaEndpoint]>([:])
    private let servesStarted = Locked(0)

    /// - Parameters:
    ///   - appName: the name the head unit shows.
    ///   - content: the content tree; nil for an app with nothing to browse.
    ///   - commands: what the head unit's buttons and voice can ask.
    ///   - nowPlaying: what is playing; a data source that starts playback
    ///     usually holds the same center.
    ///   - configuration: authentication and logging.
    ///   - library: the media library a head unit syncs through Media
    ///     Library Access (its plays reach `content`'s `playLibraryItems`).
    public init(appName: String, content: (any ContentDataSource)?, commands: RemoteCommandCenter = RemoteCommandCenter(),
                nowPlaying: NowPlayingCenter = NowPlayingCenter(), configuration: Configuration = Configuration(), library: MediaLibrary? = nil) {
        self.appName = appName
        self.nowPlaying = nowPlaying
        self.configuration = configuration
        app = DataSourceApp(appName: appName, content: content, commands: Locked(commands), nowPlaying: nowPlaying, mediaLibrary: library)
        (events, eventFeed) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(64))
        // Every connected head unit hears of a change to what is playing.
        nowPlaying.onChange { [serving] in
            for endpoint in serving.withLock({ Array($0.values) }) { endpoint.wake() }
        }
    }

    deinit { eventFeed.finish() }

    /// Changes what the head unit can ask: register, withdraw or grey out
    /// commands. A connected head unit is told at once (AdvertisedCommands),
    /// and the next connection starts with the new set. Withdrawing like,
    /// dislike and bookmark is what gives a head unit its standard controls
    /// back; disabling them is not enough. `change` runs on this phone's set
    /// and on each connection's copy, so it must do the same to all.
    public func updateCommands(_ change: @escaping @Sendable (inout RemoteCommandCenter) -> Void) {
        app.commands.withLock { change(&$0) }
        for endpoint in serving.withLock({ Array($0.values) }) {
            endpoint.withConnection { connection, now in
                connection.phoneDoes(now: now) { role, _ in role.updateCommands(change) }
            }
        }
    }

    /// Serves every head unit that connects to a `tcp-listen:HOST:PORT`
    /// address, up to `maximumConnections` at once, each its own session:
    /// one that stalls or fails authentication never keeps the next
    /// waiting. At the limit the next peers wait in the listen backlog
    /// until a connection ends. Runs until cancelled; `events` reports each
    /// connection, and now playing and `updateCommands` reach every one.
    /// Throws the `TransportError` when the address does not parse, is not
    /// a `tcp-listen:` one (`.invalidSpec`) or cannot be bound.
    /// - Parameter listening: called once the socket listens, with its port.
    public func serveEach(_ listenAddress: String, maximumConnections: Int = 4,
                          listening: @Sendable (_ port: UInt16) -> Void = { _ in }) async throws {
        guard case .tcpListen(let host, let port) = try TransportSpec(parsing: listenAddress) else {
            throw TransportError(.invalidSpec, "serveEach takes a tcp-listen:HOST:PORT address, not \(listenAddress)")
        }
        guard maximumConnections >= 1 else {
            throw TransportError(.invalidSpec, "maximumConnections must be at least 1, not \(maximumConnections)")
        }
        let listener = try TCPTransport.listener(host: host, port: port)
        listening(listener.port)
        let logger = configuration.logger
        try await withThrowingTaskGroup(of: Void.self) { group in
            var active = 0
            while !Task.isCancelled {
                if active >= maximumConnections {
                    try await group.next()
                    active -= 1
                }
                // Ends once a peer has connected, or once the serve ended without one.
                let (peerArrived, arrival) = AsyncStream.makeStream(of: Void.self)
                let transport = listener.nextConnection { arrival.finish() }
                group.addTask { [self] in
                    defer { arrival.finish() }
                    do {
                        let reason = try await serve(over: transport)
                        logger.info("a head unit's connection ended: \(reason)")
                    } catch {
                        logger.warning("a head unit could not be served: \(error)")
                    }
                }
                active += 1
                // One accept at a time: the next waits until this one has its peer.
                for await _ in peerArrived {}
            }
            group.cancelAll()
        }
    }

    /// Serves one connection over a transport named as the CLI names them
    /// (`tcp-listen:HOST:PORT`, `tcp:HOST:PORT`, `serial:PATH@BAUD`, …);
    /// returns when it ends, with the reason. Throws the `TransportError`
    /// when the name does not parse (`.invalidSpec`) or the transport could
    /// not be opened or connected (`.refused`, `.notFound`, …).
    @discardableResult
    public func serve(_ transport: String) async throws -> String {
        try await serve(try TransportSpec(parsing: transport))
    }

    /// Serves one connection over the transport a value names
    /// (`.tcpListen(host:port:)`, `.tcp(host:port:)`, …), as `serve(_:)`
    /// does with its name.
    @discardableResult
    public func serve(_ transport: TransportSpec) async throws -> String {
        try await serve(over: try transport.open())
    }

    /// Serves one connection over a transport made by the caller.
    @discardableResult
    public func serve(over transport: any Transport) async throws -> String {
        let logger = configuration.logger
        var authentication = EndpointAuthentication.off
        if configuration.authentication == .required {
            let verifier = DeviceVerifier(anchors: configuration.trustAnchors)
            authentication = EndpointAuthentication(policy: .required, verifier: { await verifier.answer($0) })
        }
        let endpoint = MediaEndpoint(kind: .phone, transport: transport, app: app, authentication: authentication,
                                     logger: logger)
        endpoint.stop(when: { $0.endReason != nil })
        let connected = Locked(false)
        endpoint.observe { [eventFeed] event, connection in
            guard case .stage(.identified) = event, let identity = connection.accessory else { return }
            if connected.withLock({ was in defer { was = true }; return !was }) { eventFeed.yield(.connected(identity)) }
        }
        let number = servesStarted.withLock { count in
            count += 1
            return count
        }
        serving.withLock { $0[number] = endpoint }
        defer { serving.withLock { $0[number] = nil } }
        try endpoint.start()
        await withTaskCancellationHandler {
            await endpoint.run()
        } onCancel: {
            Task { await endpoint.close() }
        }
        await endpoint.close()
        if connected.withLock({ $0 }) { eventFeed.yield(.disconnected(endpoint.endReason ?? "the connection ended")) }
        // Ended before the link ever came up, and not in order: it never connected.
        if !endpoint.everUp, let error = endpoint.transportError, error.kind != .closed { throw error }
        return endpoint.endReason ?? "the connection ended"
    }
}

/// The connection core's view of an app built from the public pieces.
struct DataSourceApp: MediaApp {
    let appName: String
    let content: (any ContentDataSource)?
    /// Shared with the `Phone`, which changes it (`updateCommands`).
    let commands: Locked<RemoteCommandCenter>
    let nowPlaying: NowPlayingCenter
    var mediaLibrary: MediaLibrary? = nil

    var offersContent: Bool { content != nil }

    func commandCenter() -> RemoteCommandCenter { commands.withLock { $0 } }

    func load(_ request: PhoneMediaRole.LoadRequest, now: LinkInstant) async -> (PhoneMediaRole.LoadResult, after: Duration) {
        guard let content else { return (.failed(.noSuchContent, "\(appName) has no content to browse"), .zero) }
        do {
            switch request {
            case .tabs:
                let tabs = try await content.tabs()
                return (.page(items: tabs, sections: [], totalCount: tabs.count), .zero)
            case .children(let containerID, let offset, let count):
                let page = try await content.children(of: containerID, offset: offset, count: count)
                return (.page(items: page.items, sections: page.sections, totalCount: page.totalCount), .zero)
            case .play(let itemID, let entry):
                try await content.play(itemID, imageRowEntryID: entry)
                return (.done, .zero)
            case .queue(let offset, let count):
                let page = try await content.queue(offset: offset, count: count)
                return (.queue(items: page.items, totalCount: page.totalCount, currentIndex: page.currentIndex), .zero)
            case .image(let id, let scale):
                return (.image(try await content.image(id, scale: scale)), .zero)
            case .playLibraryItems(_, let items, let start):
                try await content.playLibraryItems(items, startIndex: start)
                return (.done, .zero)
            case .playLibraryCurrentSelection:
                try await content.playLibraryCurrentSelection()
                return (.done, .zero)
            }
        } catch let error as ContentError {
            return (.failed(error.status, error.reason), .zero)
        } catch {
            return (.failed(.commandFailed, "\(error)"), .zero)
        }
    }

    func nowPlaying(at now: LinkInstant) -> NowPlayingInfo { nowPlaying.info(at: now) }

    /// The head unit went away while playing: the app's pause handler runs
    /// (as a car's disconnect pauses a phone's player), or its play/pause
    /// toggle, whether or not the head unit could use them; without either,
    /// or when the handler fails, now playing shows paused.
    func pause(at now: LinkInstant) {
        let commands = commandCenter()
        let status = commands.performLocally(.pause) ?? commands.performLocally(.togglePlayPause)
        guard status != .success else { return }
        var info = nowPlaying.info(at: now)
        info.state = .paused
        info.playbackRate = 0
        nowPlaying.info = info
    }
}
