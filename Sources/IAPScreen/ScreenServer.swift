import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// What the screen's server will take from a browser (or from anything else
/// that connects): every input is bounded before it costs memory or time.
enum ScreenLimits {
    /// The request line and each header field, and all of them together
    /// (llhttp counts them as they arrive; a longer head is answered 400 and closed).
    static let headFieldBytes = 8 * 1024
    static let headBytes = 16 * 1024
    static let headFields = 64
    /// A WebSocket frame, and a message reassembled from fragments (larger: closed with 1009).
    static let frameBytes = 16 * 1024
    static let fragments = 16
    /// Messages a page may send: a burst, then a steady rate (more: closed with 1008).
    static let messageBurst = 400.0
    static let messagesPerSecond = 100.0
    /// Rows of a media library list sent to the page at first, and each
    /// `library_more` adds; at most this many in all (a list is never sent whole).
    static let libraryRows = 200
    static let libraryRowsAtMost = 5000
    /// Connections served at once (more are closed as soon as they are accepted).
    static let connections = 64
    /// How long an HTTP connection may stay silent before it is closed (a WebSocket has no such limit).
    static let idleSeconds: Int64 = 30
    /// How long accepting pauses when the process is out of descriptors.
    static let acceptBackoffMilliseconds: Int64 = 100
    /// Image requests remembered (each image is asked of the phone once); the oldest is forgotten first.
    static let requestedImages = 256
    /// Warnings about what clients send, per ten seconds; the rest are counted.
    static let warningsPerWindow = 20
}

/// Why the screen cannot serve.
public enum ScreenError: Error, CustomStringConvertible, Equatable {
    /// Another program listens on that address and port.
    case addressInUse(String)
    /// The host resolves to an address other programs on the network can reach,
    /// and serving there was not allowed (`allowRemote`).
    case notLoopback(host: String, address: String)
    /// The host name does not resolve, or the address cannot be bound.
    case cannotListen(String, reason: String)

    public var description: String {
        switch self {
        case .addressInUse(let address): "\(address) is already in use (another program listens there)"
        case .notLoopback(let host, let address):
            "\(host) is \(address), not a loopback address: anyone who reaches it could drive the head unit, and that needs to be allowed explicitly"
        case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
        }
    }
}

/// Which `Host` and `Origin` a request may carry: this screen's own address,
/// so that a page from another site (cross-site WebSocket hijacking) or a
/// name that was rebound to this address (DNS rebinding) is refused.
struct ScreenAccess: Sendable, Equatable {
    /// The port served.
    let port: Int
    /// Host names and address literals accepted (lowercased; IPv6 in brackets).
    let names: Set<String>
    /// A wildcard bind (0.0.0.0, ::): any address literal is one of this machine's.
    let anyAddressLiteral: Bool

    /// The access for a server asked to serve `host`, bound at `bound`.
    init(host: String, bound: SocketAddress) {
        port = bound.port ?? 0
        var names: Set<String> = [Self.name(host)]
        if let ip = bound.ipAddress { names.insert(Self.name(ip)) }
        let loopback = Self.isLoopback(bound)
        let wildcard = Self.isWildcard(bound)
        if loopback || wildcard { names.formUnion(["localhost", "127.0.0.1", "[::1]"]) }
        self.names = names
        anyAddressLiteral = wildcard
    }

    /// A name as a Host header writes it: lowercased, an IPv6 literal in brackets.
    static func name(_ host: String) -> String {
        let lower = host.lowercased()
        return lower.contains(":") && !lower.hasPrefix("[") ? "[\(lower)]" : lower
    }

    static func isLoopback(_ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress else { return false }
        return ip.hasPrefix("127.") || ip == "::1" || ip.hasPrefix("::ffff:127.")
    }

    static func isWildcard(_ address: SocketAddress) -> Bool {
        address.ipAddress == "0.0.0.0" || address.ipAddress == "::"
    }

    /// A `Host` header's value (`name[:port]`): this screen's?
    func allows(host value: String?) -> Bool {
        guard let value, !value.isEmpty else { return false }
        let name: Substring, portText: Substring?
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return false }
            name = value[...close]
            let rest = value[value.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return false }
            portText = rest.isEmpty ? nil : rest.dropFirst()
        } else if let colon = value.lastIndex(of: ":") {
            name = value[..<colon]
            portText = value[value.index(after: colon)...]
        } else {
            name = value[...]
            portText = nil
        }
        let port = portText.map { Int($0) } ?? 80
        guard port == self.port else { return false }
        let lower = name.lowercased()
        if names.contains(lower) { return true }
        return anyAddressLiteral && Self.isAddressLiteral(lower)
    }

    /// An `Origin` header's value: none (not a browser), or this screen's page.
    func allows(origin value: String?) -> Bool {
        guard let value else { return true }
        guard value.hasPrefix("http://") else { return false }
        let authority = value.dropFirst("http://".count)
        guard !authority.contains("/") else { return false }
        return allows(host: String(authority))
    }

    /// A request's `Host` and `Origin`: both this screen's?
    func allows(_ headers: HTTPHeaders) -> Bool {
        allows(host: headers.first(name: "Host")) && allows(origin: headers.first(name: "Origin"))
    }

    static func isAddressLiteral(_ name: String) -> Bool {
        let bare = name.hasPrefix("[") && name.hasSuffix("]") ? String(name.dropFirst().dropLast()) : name
        return (try? SocketAddress(ipAddress: bare, port: 0)) != nil
    }
}

/// Warnings caused by what clients send, capped: at most
/// `ScreenLimits.warningsPerWindow` lines per ten seconds; the rest are
/// counted and said in one line when the next window opens.
final class WarningBudget: Sendable {
    private struct State {
        var windowStart: ContinuousClock.Instant
        var spent = 0
        var suppressed = 0
    }

    private let state: Mutex<State>
    private let logger: Logger

    init(logger: Logger) {
        self.logger = logger
        state = Mutex(State(windowStart: .now))
    }

    func warning(_ message: @autoclosure () -> String) {
        let now = ContinuousClock.now
        let (allowed, suppressed) = state.withLock { state -> (Bool, Int) in
            var suppressed = 0
            if now - state.windowStart >= .seconds(10) {
                suppressed = state.suppressed
                state = State(windowStart: now)
            }
            guard state.spent < ScreenLimits.warningsPerWindow else {
                state.suppressed += 1
                return (false, suppressed)
            }
            state.spent += 1
            return (true, suppressed)
        }
        if suppressed > 0 { logger.warning("\(suppressed) more warnings like these were left out in the last 10 s") }
        if allowed { logger.warning("\(message())") }
    }
}

/// A set that keeps the newest `capacity` members: inserting into a full
/// set forgets the oldest.
struct RecentSet: Sendable {
    let capacity: Int
    private var order: [String] = []
    private var members: Set<String> = []

    init(capacity: Int) { self.capacity = capacity }

    var count: Int { members.count }
    func contains(_ member: String) -> Bool { members.contains(member) }

    /// Inserts `member`; false when it was there already.
    mutating func insert(_ member: String) -> Bool {
        guard members.insert(member).inserted else { return false }
        order.append(member)
        if order.count > capacity { members.remove(order.removeFirst()) }
        return true
    }
}

/// The listening side: resolves and binds, admits connections up to the
/// limit, and sets each one up for HTTP with a WebSocket upgrade at `/ws`.
struct ScreenServer {
    let host: String
    let port: UInt16
    let allowRemote: Bool
    let logger: Logger
    let warnings: WarningBudget

    /// Binds and returns the listening channel, or says why it cannot.
    func bind(screen: HeadUnitScreen) async throws -> (Channel, ScreenAccess) {
        let group = MultiThreadedEventLoopGroup.singleton
        let display = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        let address: SocketAddress
        do {
            address = try await group.next().submit { [host, port] in try SocketAddress.makeAddressResolvingHost(host, port: Int(port)) }.get()
        } catch {
            throw ScreenError.cannotListen(display, reason: "\(error)")
        }
        if !allowRemote && !ScreenAccess.isLoopback(address) {
            throw ScreenError.notLoopback(host: host, address: address.ipAddress ?? "\(address)")
        }
        let connections = Mutex(0)
        let warnings = self.warnings
        let logger = self.logger
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(AcceptBackoffHandler(shouldForwardIOErrorCaught: true) { _ in
                        .milliseconds(ScreenLimits.acceptBackoffMilliseconds)
                    })
                    try channel.pipeline.syncOperations.addHandler(AcceptErrorHandler(warnings: warnings))
                }
            }
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 64 * 1024, high: 256 * 1024))
            .childChannelInitializer { [weak screen] channel in
                guard let screen else { return channel.close() }
                let admitted = connections.withLock { count in
                    guard count < ScreenLimits.connections else { return false }
                    count += 1
                    return true
                }
                guard admitted else {
                    warnings.warning("refused a connection from \(channel.remoteAddress.map { "\($0)" } ?? "a client"): \(ScreenLimits.connections) are open already")
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                channel.closeFuture.whenComplete { _ in connections.withLock { $0 -= 1 } }
                return Self.initialize(channel, screen: screen, logger: logger)
            }
        let channel: Channel
        do {
            channel = try await bootstrap.bind(to: address).get()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw ScreenError.addressInUse(display)
        } catch {
            throw ScreenError.cannotListen(display, reason: "\(error)")
        }
        guard let local = channel.localAddress else {
            channel.close(promise: nil)
            throw ScreenError.cannotListen(display, reason: "the socket has no local address")
        }
        return (channel, ScreenAccess(host: host, bound: local))
    }

    private static func initialize(_ channel: Channel, screen: HeadUnitScreen, logger: Logger) -> EventLoopFuture<Void> {
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: ScreenLimits.frameBytes, automaticErrorHandling: true,
            shouldUpgrade: { channel, head in
                channel.eventLoop.makeSucceededFuture(screen.allowsUpgrade(head) ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { channel, _ in
                channel.pipeline.removeHandler(name: "screen-idle").flatMap {
                    channel.pipeline.removeHandler(name: "screen-http")
                }.flatMapThrowing {
                    try channel.pipeline.syncOperations.addHandlers(
                        NIOWebSocketFrameAggregator(minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: ScreenLimits.fragments,
                                                    maxAccumulatedFrameSize: ScreenLimits.frameBytes),
                        ScreenWebSocketHandler(screen: screen))
                }
            })
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = ScreenLimits.headFieldBytes
        limits.maxHeaderListSize = ScreenLimits.headBytes
        limits.maxHeaderFieldCount = ScreenLimits.headFields
        return channel.eventLoop.makeCompletedFuture {
            let pipeline = channel.pipeline.syncOperations
            try pipeline.configureHTTPServerPipeline(
                withPipeliningAssistance: true, withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }),
                withErrorHandling: true, withOutboundHeaderValidation: true, withEncoderConfiguration: .init(),
                withDecoderLimitConfiguration: limits)
            try pipeline.addHandler(IdleStateHandler(readTimeout: .seconds(ScreenLimits.idleSeconds)), name: "screen-idle")
            try pipeline.addHandler(ScreenHTTPHandler(screen: screen), name: "screen-http")
        }
    }
}

/// Says why accepting failed (out of descriptors, typically); the backoff
/// handler before it pauses accepting briefly, and the server goes on.
final class AcceptErrorHandler: ChannelInboundHandler {
    typealias InboundIn = Channel
    let warnings: WarningBudget

    init(warnings: WarningBudget) { self.warnings = warnings }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        warnings.warning("cannot accept a connection: \(error); trying again in \(ScreenLimits.acceptBackoffMilliseconds) ms")
    }
}

/// One HTTP connection: the page, images, the favicon; anything not from
/// this screen's own address is refused (403).
final class ScreenHTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let screen: HeadUnitScreen
    private var head: HTTPRequestHead?

    init(screen: HeadUnitScreen) { self.screen = screen }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch Self.unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            respond(context: context, to: head)
        }
    }

    private func respond(context: ChannelHandlerContext, to head: HTTPRequestHead) {
        let answer = screen.answer(head, from: context.channel.remoteAddress)
        let keepAlive = head.isKeepAlive && [.ok, .noContent, .notFound].contains(answer.status)
        var headers = HTTPHeaders(answer.headers)
        headers.replaceOrAdd(name: "Content-Length", value: "\(answer.body.count)")
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        context.write(Self.wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: answer.status, headers: headers))), promise: nil)
        if !answer.body.isEmpty {
            context.write(Self.wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An upgrade refused (not this screen's host or origin, or not /ws): the request comes next, and is answered.
        if error is NIOWebSocketUpgradeError { return }
        // A parse error has been answered 400 by NIO's error handler, which closes the connection.
        if let error = error as? HTTPParserError {
            let reason = error == .headerOverflow
                ? "its request line or headers are longer than \(ScreenLimits.headBytes) bytes (or more than \(ScreenLimits.headFields) headers)"
                : "it is not HTTP (\(error))"
            screen.warnings.warning("refused a request from \(context.channel.remoteAddress.map { "\($0)" } ?? "a client"): \(reason)")
        }
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }
}

/// What a WebSocket client is to the screen: where the screen's snapshots go.
final class ScreenClient: Sendable {
    private let handler: NIOLoopBound<ScreenWebSocketHandler>

    init(_ handler: NIOLoopBound<ScreenWebSocketHandler>) { self.handler = handler }

    /// Shows `text` (a snapshot) on that page: sent at once, or, while the
    /// page reads slower than the screen changes, only the newest is kept.
    func show(_ text: String) {
        let handler = self.handler
        handler.eventLoop.execute { handler.value.show(text) }
    }
}

/// One page's WebSocket: snapshots out; taps in, at a bounded rate.
final class ScreenWebSocketHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let screen: HeadUnitScreen
    private var context: ChannelHandlerContext?
    private var client: ScreenClient?
    private var pending: String?
    private var closing = false
    private var tokens = ScreenLimits.messageBurst
    private var lastRefill = NIODeadline.now()

    init(screen: HeadUnitScreen) { self.screen = screen }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let client = ScreenClient(NIOLoopBound(self, eventLoop: context.eventLoop))
        self.client = client
        screen.connect(client)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if let client { screen.disconnect(client) }
        client = nil
        self.context = nil
    }

    func show(_ text: String) {
        guard let context, !closing else { return }
        guard context.channel.isWritable else {
            pending = text
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: text.utf8.count)
        buffer.writeString(text)
        context.writeAndFlush(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .text, data: buffer)), promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, let text = pending {
            pending = nil
            show(text)
        }
        context.fireChannelWritabilityChanged()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = Self.unwrapInboundIn(data)
        guard !closing else { return }
        switch frame.opcode {
        case .text:
            guard takeToken() else {
                screen.warnings.warning("closed a page's connection: it sent more than \(Int(ScreenLimits.messagesPerSecond)) messages a second")
                close(context: context, code: .policyViolation)
                return
            }
            var data = frame.unmaskedData
            screen.received(data.readString(length: data.readableBytes) ?? "")
        case .binary:
            screen.warnings.warning("closed a page's connection: it sent a binary message (the page sends text)")
            close(context: context, code: .unacceptableData)
        case .ping:
            var data = frame.unmaskedData
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: data.readSlice(length: data.readableBytes) ?? ByteBuffer())
            context.writeAndFlush(Self.wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            close(context: context, code: .normalClosure)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // Frames over the limit were closed with 1009 by NIO's protocol error handler; messages
        // reassembled over it are closed here the same way.
        if error is NIOWebSocketFrameAggregator.Error {
            screen.warnings.warning("closed a page's connection: it sent a message larger than \(ScreenLimits.frameBytes) bytes or in too many fragments")
            close(context: context, code: .messageTooLarge)
        } else if let error = error as? NIOWebSocketError {
            // Answered already (a close frame, 1009 for a frame over the limit) by NIO's protocol error handler.
            closing = true
            screen.warnings.warning("closed a page's connection: "
                + (error == .invalidFrameLength ? "it sent a frame larger than \(ScreenLimits.frameBytes) bytes" : "\(error)"))
        } else {
            screen.warnings.warning("closed a page's connection: \(error)")
            close(context: context, code: .protocolError)
        }
    }

    private func takeToken() -> Bool {
        let now = NIODeadline.now()
        let seconds = Double((now - lastRefill).nanoseconds) / 1e9
        lastRefill = now
        tokens = min(ScreenLimits.messageBurst, tokens + seconds * ScreenLimits.messagesPerSecond)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    private func close(context: ChannelHandlerContext, code: WebSocketErrorCode) {
        guard !closing else { return }
        closing = true
        var data = context.channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: code)
        let channel = context.channel
        context.writeAndFlush(Self.wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data))).whenComplete { _ in
            channel.close(promise: nil)
        }
    }
}
