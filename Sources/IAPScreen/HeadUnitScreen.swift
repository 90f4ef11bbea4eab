import FlyingFox
import FlyingSocks
import Foundation
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import Logging
import Synchronization

/// The head unit's screen in a browser: a page at `http://HOST:PORT/` that
/// shows what the head-unit role knows (tabs, lists, now playing, buttons,
/// the connection's state and each command's status), live over a
/// WebSocket, and sends taps back as the same role actions the shell uses.
/// Several browsers may watch one head unit. The server lives as long as the
/// program; head units come and go (`attach`), as phones are plugged in.
public final class HeadUnitScreen: Sendable {
    private struct State: Sendable {
        var endpoint: MediaEndpoint?
        var model: ScreenModel?
        var linkUp = false
        var ended: String?
        var statuses: [String] = []
        var images = ScreenImages()
        /// Images the page asked for (each is asked for once).
        var requestedImages: Set<String> = []
        var clients: [UUID: AsyncStream<WSMessage>.Continuation] = [:]

        mutating func record(_ status: String) {
            statuses.insert(status, at: 0)
            if statuses.count > 8 { statuses.removeLast() }
        }
    }

    private let state = Mutex(State())
    private let server: HTTPServer
    private let logger: Logger

    /// A screen on `host:port` (an IPv4 or IPv6 address; port 0 picks one).
    public init(host: String, port: UInt16, logger: Logger = Logger(label: "iap-devkit.screen")) throws {
        self.logger = logger
        let address: any SocketAddress = host.contains(":") ? try sockaddr_in6.inet6(ip6: host, port: port) : try sockaddr_in.inet(ip4: host, port: port)
        server = HTTPServer(address: address, logger: SwiftLogBridge(logger: logger))
    }

    /// Serves until cancelled.
    public func run() async throws {
        await server.appendRoute("GET /") { _ in
            HTTPResponse(statusCode: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: Data(ScreenPage.html.utf8))
        }
        await server.appendRoute("GET /image/*") { [weak self] request in
            let id = String(request.path.dropFirst("/image/".count)).removingPercentEncoding ?? ""
            guard let bytes = self?.image(id) else { return HTTPResponse(statusCode: .notFound) }
            return HTTPResponse(statusCode: .ok, headers: [.contentType: Self.contentType(bytes), .cacheControl: "no-store"], body: Data(bytes))
        }
        await server.appendRoute("GET /ws", to: .webSocket(ScreenSocket(screen: self)))
        try await server.run()
    }

    /// Returns only when the task is cancelled (the program is stopped).
    public func waitUntilCancelled() async throws {
        while true { try await Task.sleep(for: .seconds(3600)) }
    }

    /// Waits until the server listens; returns the port (useful with port 0).
    public func listeningPort() async throws -> UInt16 {
        try await server.waitUntilListening()
        switch await server.listeningAddress {
        case .ip4(_, let port)?, .ip6(_, let port)?: return port
        default: return 0
        }
    }

    /// Shows this head unit from now on (the one before is forgotten).
    /// Call before the endpoint starts, so no event is missed.
    public func attach(_ endpoint: MediaEndpoint) {
        state.withLock { state in
            state.endpoint = endpoint
            state.linkUp = false
            state.ended = nil
            state.statuses = []
            state.requestedImages = []
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
                state.record("play \(itemID): \(status)")
            case .media(.commandStatus(let command, let status)):
                state.record("\(command.kind): \(status)")
            case .media(.browseFailed(let containerID, let status, let reason)):
                state.record("browse \(containerID.isEmpty ? "tabs" : containerID): \(status) (\(reason))")
            default:
                break
            }
        }
        publish(connection, now: now)
    }

    private func publish(_ connection: Connection, now: LinkInstant) {
        let model = state.withLock { state -> ScreenModel in
            let model = ScreenModel.make(connection, linkUp: state.linkUp, ended: state.ended, now: now, statuses: state.statuses,
                                         images: state.images.stored.map(\.id), missingImages: state.images.missing.sorted(),
                                         artwork: state.images.artwork(connection.headUnit.nowPlaying.info.artworkTransferID))
            state.model = model
            return model
        }
        broadcast(model)
    }

    private func broadcast(_ model: ScreenModel) {
        guard let text = Self.json(model) else { return }
        for client in state.withLock({ Array($0.clients.values) }) { client.yield(.text(text)) }
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

    func connect(_ id: UUID, _ client: AsyncStream<WSMessage>.Continuation) {
        let model = state.withLock { state -> ScreenModel? in
            state.clients[id] = client
            return state.model
        }
        if let model, let text = Self.json(model) { client.yield(.text(text)) }
    }

    func disconnect(_ id: UUID) {
        _ = state.withLock { $0.clients.removeValue(forKey: id) }
    }

    /// A tap on the page, as JSON: `{"action": "open", "id": "album:1"}` and so on (ScreenAction).
    func received(_ text: String) {
        guard let action = try? JSONDecoder().decode(ScreenAction.self, from: Data(text.utf8)) else {
            logger.warning("the page sent something that is not an action: \(text.prefix(200))")
            return
        }
        guard let endpoint = state.withLock({ $0.endpoint }) else { return }
        if case .image(let id) = action {
            let first = state.withLock { state in state.requestedImages.insert(id).inserted }
            guard first else { return }
        }
        endpoint.withConnection { connection, now in
            guard connection.isMediaConnected else { return [] }
            return connection.headUnitDoes(now: now) { role, now in action.perform(on: &role, now: now) }
        }
    }
}

/// One WebSocket per browser: the current screen at once and on every
/// change; taps in.
struct ScreenSocket: WSMessageHandler {
    let screen: HeadUnitScreen

    func makeMessages(for client: AsyncStream<WSMessage>) async throws -> AsyncStream<WSMessage> {
        let id = UUID()
        let (messages, continuation) = AsyncStream.makeStream(of: WSMessage.self, bufferingPolicy: .bufferingNewest(16))
        screen.connect(id, continuation)
        Task { [screen] in
            for await message in client {
                if case .text(let text) = message { screen.received(text) }
            }
            screen.disconnect(id)
            continuation.finish()
        }
        return messages
    }
}

/// FlyingFox's log lines into swift-log (it would print them otherwise).
struct SwiftLogBridge: FlyingSocks.Logging {
    let logger: Logger
    func logDebug(_ debug: @autoclosure () -> String) { logger.debug("\(debug())") }
    func logInfo(_ info: @autoclosure () -> String) { logger.debug("\(info())") }
    func logWarning(_ warning: @autoclosure () -> String) { logger.warning("\(warning())") }
    func logError(_ error: @autoclosure () -> String) { logger.error("\(error())") }
    func logCritical(_ critical: @autoclosure () -> String) { logger.critical("\(critical())") }
}
