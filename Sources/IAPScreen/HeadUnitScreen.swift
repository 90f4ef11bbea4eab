import Foundation
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import IAPWire

/// The head unit's screen in a browser: a page at `http://HOST:PORT/` that
/// shows what the head-unit role knows (tabs, lists, now playing, buttons,
/// the connection's state and each command's status), live over a
/// WebSocket, and sends taps back as the same role actions the shell uses.
/// Several browsers may watch one head unit. The server lives as long as the
/// program; head units come and go (`attach`), as phones are plugged in.
///
/// Only this screen's own pages may drive it: a request whose `Host` or
/// `Origin` is not the address served is refused (403). Every input is
/// bounded (`ScreenLimits`): request heads, WebSocket frames and message
/// rates, connections, remembered image requests, and the warnings they cause.
public final class HeadUnitScreen: Sendable {
    private struct State: Sendable {
        var endpoint: MediaEndpoint?
        var model: ScreenModel?
        var linkUp = false
        var ended: String?
        var statuses: [String] = []
        /// How many statuses were recorded (the page clears the line when the user moves on, and shows the next).
        var statusCount = 0
        var statusFailed = false
        var images = ScreenImages()
        /// Images the page asked for (each is asked for once; the oldest are forgotten).
        var requestedImages = RecentSet(capacity: ScreenLimits.requestedImages)
        var clients: [ObjectIdentifier: ScreenClient] = [:]
        var access: ScreenAccess?
        /// Where the page is in the phone's media library, and how many rows of its list it shows.
        var libraryBrowser = MediaLibraryBrowser()
        var libraryWindow = ScreenLimits.libraryRows

        mutating func record(_ status: String, failed: Bool) {
            statuses.insert(status, at: 0)
            if statuses.count > 8 { statuses.removeLast() }
            statusCount += 1
            statusFailed = failed
        }
    }

    private let state = Mutex(State())
    private let server: ScreenServer
    private let listening: EventLoopPromise<UInt16>
    private let logger: Logger
    let warnings: WarningBudget

    /// A screen on `host:port`: an IPv4 or IPv6 address or a host name
    /// (resolved when it starts); port 0 picks one. Unless `allowRemote`,
    /// the host must be a loopback address (127.0.0.1, ::1, localhost):
    /// anyone who can reach the screen can drive the head unit.
    public init(host: String, port: UInt16, allowRemote: Bool = false, logger: Logger = Logger(label: "iap-devkit.screen")) throws {
        self.logger = logger
        warnings = WarningBudget(logger: logger)
        server = ScreenServer(host: host, port: port, allowRemote: allowRemote, logger: logger, warnings: warnings)
        listening = MultiThreadedEventLoopGroup.singleton.next().makePromise()
    }

    /// Serves until cancelled. Throws `ScreenError` at once when it cannot
    /// listen (the address is in use, or is not a loopback address and
    /// remote access was not allowed).
    public func run() async throws {
        let channel: Channel
        do {
            let (bound, access) = try await server.bind(screen: self)
            channel = bound
            state.withLock { $0.access = access }
            listening.succeed(UInt16(access.port))
        } catch {
            listening.fail(error)
            throw error
        }
        try await withTaskCancellationHandler {
            try await channel.closeFuture.get()
        } onCancel: {
            channel.close(promise: nil)
        }
    }

    /// Returns only when the task is cancelled (the program is stopped).
    public func waitUntilCancelled() async throws {
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    /// Waits until the server listens; returns the port (useful with port 0).
    /// Throws what `run` threw when it could not listen.
    public func listeningPort() async throws -> UInt16 {
        try await listening.futureResult.get()
    }

    /// Shows this head unit from now on (the one before is forgotten).
    /// Call before the endpoint starts, so no event is missed.
    public func attach(_ endpoint: MediaEndpoint) {
        state.withLock { state in
            state.endpoint = endpoint
            state.linkUp = false
            state.ended = nil
            state.statuses = []
            state.statusFailed = false
            state.requestedImages = RecentSet(capacity: ScreenLimits.requestedImages)
            state.images = ScreenImages()
            state.model = nil
        }
        endpoint.observe { [weak self, weak endpoint] event, connection in
            guard let self, let endpoint, self.isCurrent(endpoint) else { return }
            self.observe(event, connection)
        }
        endpoint.withConnection { [weak self] connection, now in
            self?.publish(connection, now: now)
            return []
        }
    }

    /// The head unit's connection ended: the page says so, with the reason.
    public func detach(_ endpoint: MediaEndpoint, reason: String) {
        let model = state.withLock { state -> ScreenModel? in
            guard state.endpoint === endpoint else { return nil }
            state.ended = reason
            state.model?.stage = "disconnected"
            state.model?.stageText = reason
            return state.model
        }
        if let model { broadcast(model) }
    }

    private func isCurrent(_ endpoint: MediaEndpoint) -> Bool { state.withLock { $0.endpoint === endpoint } }

    // MARK: Events

    private func observe(_ event: Connection.Event, _ connection: Connection) {
        let now = MonotonicClock.now()
        state.withLock { state in
            state.images.take(event, nowPlayingArtwork: connection.headUnit.nowPlaying.info.artworkTransferID)
            switch event {
            case .stage(let stage):
                if case .disconnected = stage { state.linkUp = false } else { state.linkUp = true }
            case .media(.selection(let itemID, let status)):
                state.record(ScreenStatus.selection(title: ScreenModel.title(of: itemID, in: connection.headUnit), id: itemID, status),
                             failed: status != .success)
            case .media(.commandStatus(let command, let status)):
                state.record(ScreenStatus.command(command, status), failed: status != .success)
            case .media(.browseFailed(let containerID, let status, let reason)):
                state.record(ScreenStatus.browseFailed(title: ScreenModel.title(of: containerID, in: connection.headUnit), id: containerID, status,
                                                       reason: reason), failed: true)
            default:
                break
            }
        }
        publish(connection, now: now)
    }

    private func publish(_ connection: Connection, now: LinkInstant) {
        let model = state.withLock { state -> ScreenModel in
            let model = ScreenModel.make(connection, linkUp: state.linkUp, ended: state.ended, now: now, statuses: state.statuses,
                                         statusCount: state.statusCount, statusFailed: state.statusFailed,
                                         images: state.images.stored.map(\.id), missingImages: state.images.missing.sorted(),
                                         artwork: state.images.artwork(connection.headUnit.nowPlaying.info.artworkTransferID),
                                         libraryBrowser: state.libraryBrowser, libraryWindow: state.libraryWindow)
            state.model = model
            return model
        }
        broadcast(model)
    }

    private func broadcast(_ model: ScreenModel) {
        guard let text = Self.json(model) else { return }
        for client in state.withLock({ Array($0.clients.values) }) { client.show(text) }
    }

    static func json(_ model: ScreenModel) -> String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(model)).map { String(decoding: $0, as: UTF8.self) }
    }

    private func image(_ id: String) -> [UInt8]? {
        state.withLock { state in state.images.bytes(id) }
    }

    static func contentType(_ bytes: [UInt8]) -> String {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8]) { return "image/jpeg" }
        if bytes.starts(with: Array("GIF8".utf8)) { return "image/gif" }
        return "application/octet-stream"
    }

    // MARK: Clients

    func connect(_ client: ScreenClient) {
        let model = state.withLock { state -> ScreenModel? in
            state.clients[ObjectIdentifier(client)] = client
            return state.model
        }
        if let model, let text = Self.json(model) { client.show(text) }
    }

    func disconnect(_ client: ScreenClient) {
        _ = state.withLock { $0.clients.removeValue(forKey: ObjectIdentifier(client)) }
    }

    /// A tap on the page, as JSON: `{"action": "open", "id": "album:1"}` and so on (ScreenAction).
    func received(_ text: String) {
        guard let action = try? JSONDecoder().decode(ScreenAction.self, from: Data(text.utf8)) else {
            warnings.warning("the page sent something that is not an action: \(text.prefix(200))")
            return
        }
        guard let endpoint = state.withLock({ $0.endpoint }) else { return }
        if case .image(let id) = action {
            let first = state.withLock { state in state.requestedImages.insert(id) }
            guard first else { return }
        }
        endpoint.withConnection { [self] connection, now in
            guard connection.isMediaConnected else { return [] }
            // The library's list is kept here: moving in it changes the page, not the role.
            let library = state.withLock { state in
                action.performLibrary(&state.libraryBrowser, window: &state.libraryWindow, role: connection.headUnit)
            }
            guard let library else { return connection.headUnitDoes(now: now) { role, now in action.perform(on: &role, now: now) } }
            if let problem = library.problem { state.withLock { $0.record(problem, failed: true) } }
            let outputs = connection.headUnitDoes(now: now) { _, _ in library.outputs }
            publish(connection, now: now)
            return outputs
        }
    }

    /// How many image requests are remembered (bounded by `ScreenLimits.requestedImages`).
    var requestedImageCount: Int { state.withLock { $0.requestedImages.count } }

    // MARK: HTTP

    /// An HTTP answer: status, headers, body.
    struct Answer {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        var body: [UInt8] = []
    }

    /// Is this request from this screen's own address (its `Host` and, from a browser, its `Origin`)?
    /// Says why not, once per request refused.
    private func isOwn(_ head: HTTPRequestHead, from remote: SocketAddress?) -> Bool {
        guard let access = state.withLock({ $0.access }) else { return false }
        let host = head.headers.first(name: "Host")
        let origin = head.headers.first(name: "Origin")
        if access.allows(head.headers) { return true }
        let why = access.allows(host: host) ? "origin \(origin ?? "")" : "host \(host ?? "(none)")"
        warnings.warning("refused \(head.method) \(head.uri.prefix(100)) from \(remote.map { "\($0)" } ?? "a client"): \(why.prefix(200)) is not this screen's address")
        return false
    }

    /// Whether a WebSocket upgrade may go ahead (refused ones are answered by `answer`).
    func allowsUpgrade(_ head: HTTPRequestHead) -> Bool {
        guard head.uri == "/ws", let access = state.withLock({ $0.access }) else { return false }
        return access.allows(head.headers)
    }

    /// The answer to a request: the page, an image, the favicon (none: 204).
    func answer(_ head: HTTPRequestHead, from remote: SocketAddress?) -> Answer {
        guard isOwn(head, from: remote) else { return Answer(status: .forbidden) }
        guard head.method == .GET || head.method == .HEAD else { return Answer(status: .methodNotAllowed, headers: [("Allow", "GET")]) }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        switch path {
        case "/":
            return Answer(status: .ok, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store")], body: Array(ScreenPage.html.utf8))
        case "/favicon.ico":
            return Answer(status: .noContent)
        case "/ws":
            return Answer(status: .badRequest, headers: [("Content-Type", "text/plain; charset=utf-8")], body: Array("/ws is a WebSocket\n".utf8))
        default:
            guard path.hasPrefix("/image/"), let id = String(path.dropFirst("/image/".count)).removingPercentEncoding,
                  let bytes = image(id) else { return Answer(status: .notFound) }
            return Answer(status: .ok, headers: [("Content-Type", Self.contentType(bytes)), ("Cache-Control", "no-store")], body: bytes)
        }
    }
}
