import IAPAuthentication
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import Foundation
import Logging
import Synchronization
import IAPWire

/// The head-unit (car) end of a connection to a phone, for app code: browse
/// the phone app's content tree page by page, play an item, send commands
/// and await their status, press the steering-wheel remote's buttons, fetch
/// artwork, and follow now playing. Authentication and identification run
/// first, as a real accessory does them.
///
/// ```swift
/// let headUnit = try await HeadUnit.connect(to: "tcp:127.0.0.1:7000")
/// let tabs = try await headUnit.tabs()
/// let page = try await headUnit.open(tabs[0].id)
/// try await headUnit.play(page.items[0].id)
/// ```
///
/// Every method may be called from any task. Requests the phone does not
/// answer in time end with `RequestStatus.timedOut`; when the connection
/// ends, every waiting call throws: `HeadUnitError.transport` when the
/// transport could not connect or ended (switch on its kind: `.refused`,
/// `.notFound`, `.closed` …), `HeadUnitError.disconnected` when the link or
/// the session ended over a transport still open.
public final class HeadUnit: Sendable {
    public struct Configuration: Sendable {
        /// What the screen can show; told to the phone when media starts.
        public var limits: HeadUnitLimits
        /// Signs the phone's authentication challenge. Nil: the software
        /// authenticator kept in the user's data directory (a P-256 test
        /// key and certificate, created on first use).
        public var authenticator: (any Authenticator)?
        /// How long `connect` waits for the phone's app to be ready.
        public var connectTimeout: Duration
        public var logger: Logger
        /// Phone libraries kept from earlier connections (`MediaLibraryMirror`
        /// is Codable: keep what `mediaLibrarySynced` gives): a phone that
        /// comes back is asked only for what changed since.
        public var mediaLibraries: [MediaLibraryMirror]

        public init(limits: HeadUnitLimits = .audioApps, authenticator: (any Authenticator)? = nil, connectTimeout: Duration = .seconds(30),
                    logger: Logger = Logger(label: "iap-devkit.head-unit"), mediaLibraries: [MediaLibraryMirror] = []) {
            self.limits = limits
            self.authenticator = authenticator
            self.connectTimeout = connectTimeout
            self.logger = logger
            self.mediaLibraries = mediaLibraries
        }
    }

    public enum Event: Hashable, Sendable {
        /// Authentication, identification, failure or disconnection.
        case stage(Stage)
        /// The phone's media app is ready to browse.
        case connected(appName: String, hasContentTree: Bool)
        case nowPlaying(NowPlayingInfo)
        /// The commands the app offers changed (radio controls or transport).
        case controlsChanged(radio: Bool, advertised: [AdvertisedCommand])
        case queue(QueueResponse)
        /// Something the phone did wrong; the connection goes on.
        case problem(String)
        /// The connection ended; no more events follow.
        case disconnected(String)
        /// The media libraries the phone offers (Media Library Access); empty: none.
        case mediaLibraries([MediaLibraryDescription])
        /// A library reached 100 %, first or after a change: bind lists to its views.
        case mediaLibrarySynced(MediaLibraryMirror)
    }

    /// Every event of the connection, in order. Bounded: when nobody reads,
    /// the oldest of the last 256 are dropped.
    public let events: AsyncStream<Event>
    private let eventFeed: AsyncStream<Event>.Continuation
    private let endpoint: MediaEndpoint
    private let state = Locked(Waiters())
    private let runner = Mutex<Task<Void, Never>?>(nil)

    /// Connects over a transport named as the CLI names them (`tcp:HOST:PORT`,
    /// `tcp-listen:HOST:PORT`, `serial:PATH@BAUD`, `usb:VID:PID`, `usb:auto`)
    /// and returns once the phone's app is ready to browse. A name that does
    /// not parse throws a `TransportError` of kind `.invalidSpec`; a
    /// transport that cannot connect throws `HeadUnitError.transport`, as
    /// does a phone app not ready within the configuration's
    /// `connectTimeout` (kind `.timedOut`).
    public static func connect(to transport: String, configuration: Configuration = Configuration()) async throws -> HeadUnit {
        try await connect(to: try TransportSpec(parsing: transport), configuration: configuration)
    }

    /// Connects over the transport a value names (`.tcp(host:port:)`,
    /// `.usb(vendor:product:)`, …), as `connect(to:)` does with its name;
    /// `.loopback` has two ends and throws `.invalidSpec` (use `connect(over:)`
    /// with one end of `openPair()`).
    public static func connect(to transport: TransportSpec, configuration: Configuration = Configuration()) async throws -> HeadUnit {
        try await connect(over: try transport.open(), configuration: configuration)
    }

    /// Connects over a transport made by the caller (a loopback end, say).
    public static func connect(over transport: any Transport, configuration: Configuration = Configuration()) async throws -> HeadUnit {
        // Reading the stored key and opening the transport (libusb_open and
        // claiming an interface, for USB) block: never on the cooperative pool.
        let headUnit = try await DedicatedThread.run("connecting the head unit") {
            try HeadUnit(transport: transport, configuration: configuration)
        }
        do {
            try await headUnit.waitUntilConnected(timeout: configuration.connectTimeout)
        } catch {
            await headUnit.close()
            throw error
        }
        return headUnit
    }

    private init(transport: any Transport, configuration: Configuration) throws {
        let authenticator = try configuration.authenticator ?? Self.storedAuthenticator()
        endpoint = MediaEndpoint(kind: .headUnit, transport: transport, headUnitLimits: configuration.limits,
                                 authentication: EndpointAuthentication(policy: .required, authenticator: { await authenticator.answer($0) }),
                                 mediaLibraries: configuration.mediaLibraries, logger: configuration.logger)
        (events, eventFeed) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(256))
        endpoint.observe { [state, eventFeed, endpoint] event, connection in
            let transportError = endpoint.transportError
            state.withLock { $0.handle(event, connection: connection, transportError: transportError, feed: eventFeed) }
        }
        do {
            try endpoint.start()
        } catch {
            throw HeadUnitError.transport(error)
        }
        let endpoint = self.endpoint
        runner.withLock {
            $0 = Task { [state, eventFeed] in
                await endpoint.run()
                let reason = endpoint.endReason ?? "the connection ended"
                state.withLock { $0.end(endpoint.transportError.map(HeadUnitError.transport) ?? .disconnected(reason)) }
                eventFeed.yield(.disconnected(reason))
                eventFeed.finish()
            }
        }
    }

    private static func storedAuthenticator() throws -> any Authenticator {
        guard let directory = SoftwareAuthenticator.defaultDirectory(environment: ProcessInfo.processInfo.environment) else {
            throw HeadUnitError.noAuthenticator("no place for the software authenticator's keys: set HOME or XDG_DATA_HOME, or pass an authenticator")
        }
        return try SoftwareAuthenticator.openOrCreate(directory: directory)
    }

    /// Closes the connection and waits until it has ended.
    public func close() async {
        await endpoint.close()
        await runner.withLock { $0 }?.value
    }

    // MARK: What the phone offers

    /// The phone app's name once connected.
    public var appName: String? { state.withLock { $0.appName } }

    /// What is playing, with the elapsed time as of now.
    public var nowPlaying: NowPlayingInfo {
        let model = state.withLock { $0.nowPlaying }
        var info = model.info
        info.elapsedMilliseconds = model.elapsed(at: MonotonicClock.now())
        return info
    }

    /// The artwork of what is playing (the image file the phone sent with
    /// it, at the screen's scale), once it has arrived; nil for an item
    /// without artwork. Its arrival is announced by another `.nowPlaying`
    /// event.
    public var nowPlayingArtwork: [UInt8]? {
        state.withLock { state in
            state.artwork.flatMap { $0.id == state.nowPlaying.info.artworkTransferID ? $0.bytes : nil }
        }
    }

    /// The commands the app advertises, enabled or not.
    public var advertisedCommands: [AdvertisedCommand] { state.withLock { $0.advertised } }

    // MARK: Requests

    /// The root of the content tree: the app's tabs.
    public func tabs() async throws -> [ContentItem] {
        try await request({ $0.tabs.append($1) }) { role, now in role.openRoot(now: now) }
    }

    /// Opens a container at its first page; `loadMore` fetches the next.
    /// Children are fetched only now, as a car's screen does.
    public func open(_ containerID: String) async throws -> Container {
        try await request({ $0.containers[containerID, default: []].append($1) }) { role, now in role.open(containerID, now: now) }
    }

    /// The next page of a container already open: the state holds every
    /// item so far. A container whose items are all here is returned as is.
    public func loadMore(_ containerID: String) async throws -> Container {
        try await request({ $0.containers[containerID, default: []].append($1) }) { role, now in
            guard let current = role.containers[containerID] else { return role.open(containerID, now: now) }
            // A page on its way answers this call too.
            if current.loading { return [] }
            let outputs = role.loadMore(containerID, now: now)
            return outputs.isEmpty ? [.event(.page(containerID: containerID))] : outputs
        }
    }

    /// Plays an item (or an image-row entry of it); returns the phone's status.
    @discardableResult
    public func play(_ itemID: String, imageRowEntryID: String? = nil) async throws -> RequestStatus {
        try await request({ $0.selections[itemID, default: []].append($1) }) { role, now in
            role.select(itemID, imageRowEntryID: imageRowEntryID, now: now)
        }
    }

    /// Sends a command with its value (a position, a mode) and returns the
    /// phone's status.
    @discardableResult
    public func send(_ command: RemoteCommand) async throws -> RequestStatus {
        try await request({ $0.commands[command, default: []].append($1) }) { role, now in role.send(command, now: now) }
    }

    /// "Up next": the app's playback queue, first page.
    public func queue() async throws -> QueueResponse {
        try await request({ $0.queues.append($1) }) { role, now in role.requestQueue(now: now) }
    }

    /// The next page of "up next": the response holds every item so far.
    /// Before `queue()` it is the first page; a queue whose items are all
    /// here (or whose last page failed) is returned as is.
    public func loadMoreQueue() async throws -> QueueResponse {
        try await request({ $0.queues.append($1) }) { role, now in
            guard let held = role.queue else { return role.requestQueue(now: now) }
            // A page on its way answers this call too.
            if role.isLoadingQueue { return [] }
            let outputs = role.loadMoreQueue(now: now)
            return outputs.isEmpty ? [.event(.queue(held))] : outputs
        }
    }

    /// The bytes of an image (album art, an icon) at the screen's scale.
    public func artwork(_ imageID: String) async throws -> [UInt8] {
        let transferID: UInt8 = try await request({ $0.images[imageID, default: []].append($1) }) { role, now in
            role.requestImage(imageID, now: now)
        }
        return try await withCheckedThrowingContinuation { continuation in
            state.withLock { $0.awaitFile(transferID, continuation) }
        }
    }

    /// The phone's media libraries (Media Library Access), each synced to
    /// 100 % with its playlists' contents: items, playlists and the views a
    /// car offers (artists, albums, songs, genres, composers, playlists).
    /// Waits for the first sync; later changes arrive as
    /// `Event.mediaLibrarySynced`. Throws `HeadUnitError.noMediaLibrary`
    /// when the phone offers none.
    public func mediaLibraries() async throws -> [MediaLibraryMirror] {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { waiters -> Result<[MediaLibraryMirror], HeadUnitError>? in
                if let ended = waiters.ended { return .failure(ended) }
                if waiters.offersNoLibrary { return .failure(.noMediaLibrary) }
                if let synced = waiters.syncedLibraries { return .success(synced) }
                waiters.libraries.append(continuation)
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// Asks the phone to play from a library (PlayMediaLibraryItems,
    /// Collection, Special or CurrentSelection). There is no answer: now
    /// playing names the item and the library when the phone plays it.
    public func play(_ request: MediaLibraryPlayRequest) async throws {
        let _: Void = try await self.request({ $0.presses.append($1) }, answered: { $0.pressed() }) { role, _ in role.playFromLibrary(request) }
    }

    /// Presses and releases a button of the steering-wheel remote (HID). HID
    /// has no answer: the effect shows in now playing.
    public func press(_ button: Button) async throws {
        let _: Void = try await request({ $0.presses.append($1) }, answered: { $0.pressed() }) { role, _ in role.press(button.hidButton) }
    }

    /// Registers a waiter, then runs the role action in order with the
    /// connection's other inputs; the answer's event resumes the waiter (or
    /// `answered`, right after the action, for what has no answer).
    private func request<T: Sendable>(_ register: @escaping @Sendable (inout Waiters, CheckedContinuation<T, any Error>) -> Void,
                                      answered: (@Sendable (inout Waiters) -> Void)? = nil,
                                      _ action: @escaping @Sendable (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let ended = state.withLock { waiters -> HeadUnitError? in
                if let ended = waiters.ended { return ended }
                register(&waiters, continuation)
                return nil
            }
            if let ended {
                continuation.resume(throwing: ended)
                return
            }
            endpoint.withConnection { [state] connection, now in
                guard connection.isMediaConnected else {
                    state.withLock { $0.end(HeadUnitError.notConnected) }
                    return []
                }
                let outputs = connection.headUnitDoes(now: now, action)
                if let answered { state.withLock { answered(&$0) } }
                return outputs
            }
        }
    }

    private func waitUntilConnected(timeout: Duration) async throws {
        // Closes the connection when the time is up; true if it did.
        let timer = Task { [endpoint] in
            do { try await Task.sleep(for: timeout) } catch { return false }
            await endpoint.close()
            return true
        }
        do {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let ready = state.withLock { waiters -> Result<Void, HeadUnitError>? in
                    if let ended = waiters.ended { return .failure(ended) }
                    if waiters.appName != nil || waiters.libraryInformation { return .success(()) }
                    waiters.connected.append(continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
            timer.cancel()
        } catch {
            timer.cancel()
            if await timer.value {
                throw HeadUnitError.transport(TransportError(.timedOut, "the phone's app was not ready within \(timeout)"))
            }
            throw error
        }
    }
}

/// Why a head unit's call did not get an answer.
public enum HeadUnitError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The transport could not connect, or ended, before the answer came:
    /// its kind says how (`.refused`, `.notFound`, `.permission`,
    /// `.timedOut`, `.closed` …).
    case transport(TransportError)
    /// The link or the session ended (the reason in words) before the
    /// answer came, over a transport still open.
    case disconnected(String)
    /// Authentication or identification has not finished; nothing can be browsed yet.
    case notConnected
    /// The phone answered a browse with a failure.
    case browseFailed(RequestStatus, String)
    /// The phone could not give the image.
    case imageUnavailable(RequestStatus)
    /// No authenticator could be made.
    case noAuthenticator(String)
    /// The phone offers no media library (MediaLibraryInformation listed none).
    case noMediaLibrary

    public var description: String {
        switch self {
        case .transport(let error): error.description
        case .disconnected(let reason): "the connection ended: \(reason)"
        case .notConnected: "the phone's media app is not connected yet"
        case .browseFailed(let status, let reason): "the phone could not list the container (\(status)): \(reason)"
        case .imageUnavailable(let status): "the phone could not give the image (\(status))"
        case .noAuthenticator(let reason): reason
        case .noMediaLibrary: "the phone offers no media library"
        }
    }
}

/// The calls waiting for an answer, keyed by what the answer's event names.
struct Waiters: Sendable {
    typealias Waiter<T> = CheckedContinuation<T, any Error>
    var connected: [Waiter<Void>] = []
    var tabs: [Waiter<[ContentItem]>] = []
    var containers: [String: [Waiter<HeadUnit.Container>]] = [:]
    var selections: [String: [Waiter<RequestStatus>]] = [:]
    var commands: [RemoteCommand: [Waiter<RequestStatus>]] = [:]
    var queues: [Waiter<QueueResponse>] = []
    var images: [String: [Waiter<UInt8>]] = [:]
    var presses: [Waiter<Void>] = []
    var fileWaiters: [UInt8: Waiter<[UInt8]>] = [:]
    /// Files that arrived before anyone asked for them (the image's answer
    /// may follow its file), the last few only.
    var files: [(id: UInt8, bytes: [UInt8])] = []
    /// The last file now playing named as its artwork.
    var artwork: (id: UInt8, bytes: [UInt8])?
    var appName: String?
    /// The phone answered StartMediaLibraryInformation: it is ready, whether
    /// or not it speaks the dev-kit extension.
    var libraryInformation = false
    var offersNoLibrary = false
    /// Every offered library, once all are synced.
    var syncedLibraries: [MediaLibraryMirror]?
    var libraries: [Waiter<[MediaLibraryMirror]>] = []
    var advertised: [AdvertisedCommand] = []
    var nowPlaying = NowPlayingModel()
    /// Set when the connection has ended: every later call fails with it.
    var ended: HeadUnitError?

    /// `transportError`: why the transport closed, if it has (the link goes
    /// down because of it).
    mutating func handle(_ event: Connection.Event, connection: Connection, transportError: TransportError?,
                         feed: AsyncStream<HeadUnit.Event>.Continuation) {
        switch event {
        case .stage(let stage):
            feed.yield(.stage(HeadUnit.Stage(stage)))
            switch stage {
            case .failed(let reason): end(.disconnected(reason))
            case .disconnected: end(transportError.map(HeadUnitError.transport) ?? .disconnected("the link went down"))
            default: break
            }
        case .media(let media):
            handle(media, headUnit: connection.headUnit, feed: feed)
        case .fileReceived(let id, let bytes):
            if let waiter = fileWaiters.removeValue(forKey: id) {
                waiter.resume(returning: bytes)
            } else if nowPlaying.info.artworkTransferID == id {
                artwork = (id, bytes)
                feed.yield(.nowPlaying(connection.headUnit.nowPlaying.info))
            } else {
                files.append((id, bytes))
                if files.count > 8 { files.removeFirst() }
            }
        case .problem(let problem):
            feed.yield(.problem(problem))
        case .accessoryCertificate, .unhandled, .log:
            break
        }
    }

    private mutating func handle(_ event: HeadUnitMediaRole.Event, headUnit: HeadUnitMediaRole, feed: AsyncStream<HeadUnit.Event>.Continuation) {
        switch event {
        case .mediaLibraries(let offered):
            libraryInformation = true
            feed.yield(.mediaLibraries(offered))
            // A phone that speaks only standard iAP2 is ready now.
            for waiter in connected { waiter.resume() }
            connected = []
            if offered.isEmpty {
                offersNoLibrary = true
                for waiter in libraries { waiter.resume(throwing: HeadUnitError.noMediaLibrary) }
                libraries = []
            }
        case .mediaLibrarySynced(let id, _):
            if let mirror = headUnit.mediaLibraries[id] { feed.yield(.mediaLibrarySynced(mirror)) }
            let offered = headUnit.offeredLibraries.compactMap { headUnit.mediaLibraries[$0] }
            guard offered.count == headUnit.offeredLibraries.count, offered.allSatisfy(\.isSynced) else { break }
            syncedLibraries = offered
            for waiter in libraries { waiter.resume(returning: offered) }
            libraries = []
        case .mediaLibraryUpdated:
            break
        case .mediaLibraryProblem(let problem):
            feed.yield(.problem(problem))
        case .appInformation(let name, let hasContentTree):
            appName = name
            ended = nil
            for waiter in connected { waiter.resume() }
            connected = []
            feed.yield(.connected(appName: name, hasContentTree: hasContentTree))
        case .controlsChanged(let radio, let commands):
            advertised = commands
            feed.yield(.controlsChanged(radio: radio, advertised: commands))
        case .tabs(let items):
            for waiter in tabs { waiter.resume(returning: items) }
            tabs = []
        case .page(let containerID):
            let page = HeadUnit.Container(headUnit.containers[containerID] ?? HeadUnitMediaRole.ContainerState())
            for waiter in containers.removeValue(forKey: containerID) ?? [] { waiter.resume(returning: page) }
        case .browseFailed(let containerID, let status, let reason):
            let error = HeadUnitError.browseFailed(status, reason)
            if containerID.isEmpty {
                for waiter in tabs { waiter.resume(throwing: error) }
                tabs = []
            }
            for waiter in containers.removeValue(forKey: containerID) ?? [] { waiter.resume(throwing: error) }
        case .selection(let itemID, let status):
            for waiter in selections.removeValue(forKey: itemID) ?? [] { waiter.resume(returning: status) }
        case .commandStatus(let command, let status):
            for waiter in commands.removeValue(forKey: command) ?? [] { waiter.resume(returning: status) }
        case .nowPlaying(let info):
            nowPlaying = headUnit.nowPlaying
            // A phone may send the artwork's file before the update that names it.
            if let id = info.artworkTransferID, let index = files.firstIndex(where: { $0.id == id }) {
                artwork = files.remove(at: index)
            }
            feed.yield(.nowPlaying(info))
        case .queue(let response):
            for waiter in queues { waiter.resume(returning: response) }
            queues = []
            feed.yield(.queue(response))
        case .image(let imageID, let status, let transferID):
            let waiting = images.removeValue(forKey: imageID) ?? []
            guard status == .success, let transferID else {
                for waiter in waiting { waiter.resume(throwing: HeadUnitError.imageUnavailable(status)) }
                return
            }
            for waiter in waiting { waiter.resume(returning: transferID) }
        }
    }

    mutating func pressed() {
        for waiter in presses { waiter.resume() }
        presses = []
    }

    mutating func awaitFile(_ id: UInt8, _ waiter: Waiter<[UInt8]>) {
        if let index = files.firstIndex(where: { $0.id == id }) {
            waiter.resume(returning: files.remove(at: index).bytes)
        } else if let ended {
            waiter.resume(throwing: ended)
        } else {
            fileWaiters[id]?.resume(throwing: HeadUnitError.imageUnavailable(.commandFailed))
            fileWaiters[id] = waiter
        }
    }

    /// Fails every waiting call; later calls fail at once.
    mutating func end(_ error: HeadUnitError) {
        if error != .notConnected {
            ended = error
            // What the phone said belongs to the connection that ended: a
            // track shown as still playing would be stale state.
            appName = nil
            libraryInformation = false
            offersNoLibrary = false
            syncedLibraries = nil
            advertised = []
            nowPlaying = NowPlayingModel()
            artwork = nil
        }
        for waiter in connected { waiter.resume(throwing: error) }
        for waiter in tabs { waiter.resume(throwing: error) }
        for waiter in containers.values.joined() { waiter.resume(throwing: error) }
        for waiter in selections.values.joined() { waiter.resume(throwing: error) }
        for waiter in commands.values.joined() { waiter.resume(throwing: error) }
        for waiter in queues { waiter.resume(throwing: error) }
        for waiter in images.values.joined() { waiter.resume(throwing: error) }
        for waiter in presses { waiter.resume(throwing: error) }
        for waiter in libraries { waiter.resume(throwing: error) }
        libraries = []
        for waiter in fileWaiters.values { waiter.resume(throwing: error) }
        connected = []; tabs = []; containers = [:]; selections = [:]; commands = [:]; queues = []; images = [:]; presses = []; fileWaiters = [:]
        files = []
    }
}

/// A value behind a lock, shared by reference with the endpoint's callbacks.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: sending Value) { mutex = Mutex(value) }
    func withLock<Result: Sendable>(_ body: (inout sending Value) throws -> sending Result) rethrows -> Result {
        try mutex.withLock(body)
    }
}
