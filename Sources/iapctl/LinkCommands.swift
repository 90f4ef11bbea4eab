import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

extension TransportSpec: ExpressibleByArgument {
    public init?(argument: String) {
        guard let spec = try? TransportSpec(parsing: argument) else { return nil }
        self = spec
    }
}

struct TransportOptions: ParsableArguments {
    @Option(help: ArgumentHelp("How to reach the other end: \(TransportSpec.forms). With loopback both ends run in this process.",
                               valueName: "transport"))
    var transport: TransportSpec = .loopback

    @Flag(help: "Log link statistics when the link goes down or the command ends.")
    var verbose = false
}

/// Which end of the link a command runs.
enum EndKind: String {
    case phone = "phone"
    case headUnit = "head-unit"
    /// A device end with no role: it only answers pings.
    case responder = "responder"
    /// An accessory end with no role, for `iapctl ping`.
    case pinger = "ping"

    var linkRole: LinkRole { self == .phone || self == .responder ? .device : .accessory }
}

/// One link end with its control channel and role, driven by a LinkDriver.
final class EndSession: @unchecked Sendable {
    let kind: EndKind
    let driver: LinkDriver
    private var channel = ControlChannel()
    private var phone = PhoneIdentificationRole()
    private var headUnit = HeadUnitIdentificationRole()
    private let log: @Sendable (String) -> Void
    private var controlSession: UInt8?
    /// Called for every message the role did not consume (ping answers).
    var onMessage: (@Sendable (ControlMessage) -> Void)?

    init(kind: EndKind, transport: Transport, log: @escaping @Sendable (String) -> Void) {
        self.kind = kind
        let configuration = LinkConfiguration(role: kind.linkRole)
        self.driver = LinkDriver(configuration: configuration, transport: transport)
        self.log = log
    }

    var nowPlayingUpdates: Int { headUnit.updates }
    /// The link came up at least once.
    private(set) var everUp = false

    /// Handles events until the transport closes or `stop` says so.
    func run(stop: @escaping @Sendable (EndSession, LinkDriverEvent) -> Bool = { _, _ in false }) async {
        for await event in driver.events {
            await handle(event)
            if stop(self, event) { return }
        }
    }

    func send(_ message: ControlMessage) async {
        guard let session = controlSession else {
            log("cannot send \(MessageCatalog.name(of: message.id) ?? "message"): no control session")
            return
        }
        do {
            try await driver.send(try message.encoded(), session: session)
        } catch {
            log("cannot send \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))"): \(error)")
        }
    }

    private func handle(_ event: LinkDriverEvent) async {
        switch event {
        case .link(.up(let link)):
            controlSession = link.sessions.first { $0.type == .control }?.id
            everUp = true
            channel.reset()
            log("link up: sending up to \(link.sendWindow) packets of \(link.sendPacketLength) bytes, "
                + (link.zeroAck ? "zero-ACK" : "retransmit after \(link.retransmitTimeout), at most \(link.maximumRetransmissions) times")
                + "; sessions " + link.sessions.map { "\($0.id) \($0.type.name)" }.joined(separator: ", "))
            if kind == .phone { await perform(phone.linkUp()) }
        case .link(.down(let reason)):
            log("link down: \(reason)")
            if verboseStatistics { log("statistics: \(driver.statistics)") }
            controlSession = nil
            channel.reset()
            await perform(phone.linkDown())
            headUnit.linkDown()
        case .link(.failed(let failure)):
            log("link failed: \(failure)")
        case .link(.renegotiated(let link)):
            log("link renegotiated: window \(link.sendWindow), packets of \(link.sendPacketLength) bytes")
        case .link(.negotiationAdjusted(let reasons)):
            log("adjusted the peer's proposal: " + reasons.joined(separator: "; "))
        case .link(.proposalRefused(let reasons)):
            log("refused the peer's proposal: " + reasons.joined(separator: "; "))
        case .link(.peerSleeping):
            log("the peer is going to sleep")
        case .link(.sessionWritable):
            break
        case .data(let session, let bytes):
            guard session == controlSession else {
                log("\(bytes.count) bytes on session \(session)")
                return
            }
            let (inputs, replies) = channel.receive(bytes)
            for reply in replies { await send(reply) }
            for input in inputs {
                switch input {
                case .problem(let problem):
                    log("control session: \(problem)")
                case .message(let message):
                    onMessage?(message)
                    switch kind {
                    case .phone: await perform(phone.received(message))
                    case .headUnit: await perform(headUnit.received(message))
                    case .responder, .pinger: break
                    }
                }
            }
        case .transportClosed(let reason):
            log("transport closed: \(reason)")
        }
    }

    var verboseStatistics = false

    private func perform(_ outputs: [RoleOutput]) async {
        for output in outputs {
            switch output {
            case .send(let message): await send(message)
            case .log(let line): log(line)
            }
        }
    }
}

/// Opens a transport by name; for loopback, the caller gets both ends.
func openTransports(_ spec: TransportSpec) throws -> (Transport, Transport?) {
    switch spec {
    case .loopback:
        let instant = WireFaults(delay: .zero)
        let (first, second) = LoopbackTransport.pair(towardsSecond: instant, towardsFirst: instant)
        return (first, second)
    case .tcp(let host, let port):
        return (TCPTransport.connect(host: host, port: port), nil)
    case .tcpListen(let host, let port):
        return (TCPTransport.listen(host: host, port: port), nil)
    case .serial(let path, let baud):
        return (SerialTransport.open(path: path, baud: baud), nil)
    }
}

/// Timestamped log lines on standard output.
final class Logger: Sendable {
    private let start = MonotonicClock.now()
    func callAsFunction(_ who: String, _ line: String) {
        let elapsed = Double(MonotonicClock.now().nanoseconds - start.nanoseconds) / 1e9
        let text = "[\(secondsText(elapsed))] \(who): \(line)\n"
        _ = text.withCString { write(1, $0, strlen($0)) }
    }
}

/// Seconds with three decimals, e.g. `12.034`.
func secondsText(_ value: Double) -> String {
    let milliseconds = Int((value * 1000).rounded())
    let fraction = String(milliseconds % 1000)
    return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

/// Runs one role, and for loopback its counterpart too.
func runRole(_ kind: EndKind, options: TransportOptions, once: Bool) async throws {
    let logger = Logger()
    let (transport, other) = try openTransports(options.transport)
    let end = EndSession(kind: kind, transport: transport) { logger(kind.rawValue, $0) }
    end.verboseStatistics = options.verbose
    var counterpart: EndSession?
    if let other {
        let otherKind: EndKind = kind == .phone ? .headUnit : .phone
        counterpart = EndSession(kind: otherKind, transport: other) { logger(otherKind.rawValue, $0) }
        counterpart?.verboseStatistics = options.verbose
    }
    // With loopback, or with --once, the head unit ends after its first now-playing update.
    let stopAfterNowPlaying = once || other != nil
    let headUnit = kind == .headUnit ? end : counterpart
    let stop: @Sendable (EndSession, LinkDriverEvent) -> Bool = { session, event in
        if case .link(.failed) = event, session.kind == .headUnit { return true }
        if stopAfterNowPlaying, session.kind == .headUnit, session.nowPlayingUpdates > 0 { return true }
        return false
    }
    do {
        try counterpart?.driver.start()
        try end.driver.start()
    } catch {
        throw ValidationError(error.description)
    }
    logger(kind.rawValue, "running over \(options.transport)")
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await end.run(stop: stop) }
        if let counterpart { group.addTask { await counterpart.run(stop: stop) } }
        // When the head unit is done, close everything; the other loop then ends.
        await group.next()
        end.driver.close()
        counterpart?.driver.close()
        await group.waitForAll()
    }
    // The head unit fails when its link never came up, or when it was asked
    // to wait for now playing and none came.
    if let headUnit, !headUnit.everUp || (stopAfterNowPlaying && headUnit.nowPlayingUpdates == 0) {
        throw ExitCode(1)
    }
    if kind == .phone, !end.everUp { throw ExitCode(1) }
}

struct Phone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the device (phone) end of the link: identify the accessory, serve now playing, answer pings.",
        discussion: """
        The phone waits for the accessory's detect sequence and SYN, brings the link
        up, sends StartIdentification, checks the IdentificationInformation it gets
        (rejecting it with every missing or malformed parameter named), and answers
        StartNowPlayingUpdates with a built-in track. It copes with the accessory
        closing the connection at any moment.

        Examples:
          iapctl phone --transport tcp-listen:127.0.0.1:7000
          iapctl phone --transport serial:/dev/ttyUSB0@115200
          iapctl phone                        # with an in-process head unit
        """
    )

    @OptionGroup var options: TransportOptions

    func run() async throws {
        try await runRole(.phone, options: options, once: false)
    }
}

struct HeadUnit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "head-unit",
        abstract: "Run the accessory (head unit) end of the link: detect, synchronise, identify, subscribe to now playing.",
        discussion: """
        Examples:
          iapctl head-unit --transport tcp:127.0.0.1:7000
          iapctl head-unit --once --transport tcp:127.0.0.1:7000   # exit after now playing
          iapctl head-unit                    # with an in-process phone, exits after now playing

        The exit status is 1 when the link fails or no now-playing update arrived.
        """
    )

    @OptionGroup var options: TransportOptions

    @Flag(help: "Exit after the first now-playing update.")
    var once = false

    func run() async throws {
        try await runRole(.headUnit, options: options, once: once)
    }
}
