import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPDemo
import IAPLink
import IAPEndpoint
import IAPRoles
import IAPTransport
import IAPKit
import IAPScreen
import IAPWire
import Logging
import Synchronization

extension IAPHIDReportWriter.LengthForm: ExpressibleByArgument {}

/// `--transport` values: a value that does not parse says what is wrong with it.
func parseTransport(_ argument: String) throws -> TransportSpec {
    do {
        return try TransportSpec(parsing: argument)
    } catch {
        throw ValidationError(error.description)
    }
}

/// What shell completion offers for a transport: each form, with an example address.
let transportCompletions: CompletionKind = .list(["loopback", "tcp:127.0.0.1:7000", "tcp-listen:127.0.0.1:7000", "serial:/dev/ttyUSB0@115200", "usb:auto"])

struct TransportOptions: ParsableArguments {
    @Option(help: ArgumentHelp("How to reach the other end: \(TransportSpec.forms). With loopback both ends run in this process.",
                               valueName: "transport"), completion: transportCompletions, transform: parseTransport)
    var transport: TransportSpec = .loopback

    @Option(help: ArgumentHelp("Also write this end's traffic to a usbmon pcapng file as it happens (read it with `iapctl decode`).",
                               valueName: "file.pcapng"))
    var trace: String?

    @Option(help: ArgumentHelp("With usb: and a phone that carries iAP over HID (a real iPhone or iPod): how many bytes each SET_REPORT carries. full: the report id and the report's declared size (the HID specification's form; what a real Pioneer head unit sends). count: the declared size with the id inside it (ADIT's head-unit stack). Try the other when the phone refuses reports.",
                               valueName: "form"), completion: .list(IAPHIDReportWriter.LengthForm.allCases.map(\.rawValue)))
    var hidReportLength: IAPHIDReportWriter.LengthForm = .full

    @OptionGroup(title: "Link packets") var linkPackets: LinkPacketOptions

    @OptionGroup(title: "Authentication") var authentication: AuthenticationOptions

    /// Opens the transport (both ends for loopback), this end recorded when --trace asks.
    func open(as kind: EndKind) throws -> (Transport, Transport?) {
        let (transport, other) = self.transport.openPair(hidReportLength: hidReportLength)
        guard let trace else { return (transport, other) }
        return (try TraceFile(path: trace).recording(transport, as: kind), other)
    }
}

/// The link packets an end proposes to receive (its SYN or SYN+ACK); the
/// peer sends within them. Unset: what suits the transport
/// (`Transport.linkPacketSizing`), else the link's defaults.
struct LinkPacketOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("The largest link packet this end takes, in bytes, header and checksums included (\(LinkPacketSizing.allowedPacketLengths.lowerBound)...\(LinkPacketSizing.allowedPacketLengths.upperBound)). Default: what suits the transport (\(LinkPacketOptions.defaults)).",
                                                        valueName: "bytes"))
    var linkPacketLength: Int?

    @Option(parsing: .unconditional, help: ArgumentHelp("How many link packets this end takes unacknowledged (\(LinkPacketSizing.allowedOutstandingPackets.lowerBound)...\(LinkPacketSizing.allowedOutstandingPackets.upperBound)). Default: what suits the transport.",
                                                        valueName: "packets"))
    var linkOutstanding: Int?

    /// The defaults in words, for --help.
    static var defaults: String {
        let link = LinkParameters()
        return "\(LinkPacketSizing.large.maximumPacketLength) bytes and \(LinkPacketSizing.large.maximumOutstandingPackets) outstanding over TCP and USB, "
            + "\(link.maximumPacketLength) and \(link.maximumOutstandingPackets) over serial and loopback"
    }

    func validate() throws {
        if let length = linkPacketLength, !LinkPacketSizing.allowedPacketLengths.contains(length) {
            throw ValidationError("--link-packet-length must be between \(LinkPacketSizing.allowedPacketLengths.lowerBound) and \(LinkPacketSizing.allowedPacketLengths.upperBound) bytes (a SYN's 16-bit field; a packet must carry data), not \(length)")
        }
        if let outstanding = linkOutstanding, !LinkPacketSizing.allowedOutstandingPackets.contains(outstanding) {
            throw ValidationError("--link-outstanding must be between \(LinkPacketSizing.allowedOutstandingPackets.lowerBound) and \(LinkPacketSizing.allowedOutstandingPackets.upperBound) packets, not \(outstanding)")
        }
    }
}

/// How `phone` and `head-unit` serve `tcp-listen:` connections.
struct ServingOptions: ParsableArguments {
    @Option(parsing: .unconditional, help: ArgumentHelp("With tcp-listen: close a connection on which no link has been up, and no legacy iAP1 head unit has sent a frame, for this many seconds (since it was accepted, or since its link went down), and serve the next peer. A peer that connects and says nothing, or stops without closing, would otherwise hold the listener. 0: never.",
                               valueName: "seconds"))
    var idleLimit: Double = 60

    func validate() throws {
        guard idleLimit >= 0, idleLimit.isFinite else { throw ValidationError("--idle-limit must be 0 or more seconds, not \(idleLimit)") }
    }

    var limit: Duration? { idleLimit > 0 ? .milliseconds(Int64((idleLimit * 1000).rounded())) : nil }
}

/// Seconds with three decimals, e.g. `12.034`.
func secondsText(_ value: Double) -> String {
    let milliseconds = Int((value * 1000).rounded())
    let fraction = String(milliseconds % 1000)
    return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}

/// Runs one role, and for loopback its counterpart too. The head unit reads
/// shell lines from standard input (a person, or a script). Over
/// `tcp-listen:` it serves one peer after another until stopped, unless
/// `once`.
func runRole(_ kind: EndKind, options: TransportOptions, once: Bool, serving: ServingOptions, library: SampleLibrary = .standard,
             screen: HeadUnitScreen? = nil, maximumConnections: Int = 1, libraryCache: MediaLibraryCache? = nil) async throws {
    let logger = Log()
    // The phone's media library is built now, once (each connection's app reuses it).
    if kind == .phone { _ = SampleApp(library: library) }
    guard case .tcpListen(let host, let port) = options.transport, !once else {
        let (transport, other) = try options.open(as: kind)
        let shell = ShellFeed()
        if kind == .headUnit || other != nil, !once { StandardInputLines.start(interrupt: shell.interrupt) { shell.feed($0) } }
        let outcome = try await runConnection(kind, transport: transport, other: other, options: options, once: once, library: library,
                                              shell: shell, logger: logger, screen: screen, libraryCache: libraryCache)
        if let screen, !outcome.quit {
            // The page keeps showing how the connection ended until the program is stopped.
            logger(kind.rawValue, "the connection ended; the screen stays up until Ctrl-C")
            try await screen.waitUntilCancelled()
        }
        if outcome.failed { throw ExitCode(1) }
        return
    }
    let listener = try TCPTransport.listener(host: host, port: port)
    let traceFile = try options.trace.map { try TraceFile(path: $0) }
    if maximumConnections > 1 {
        try await serveAtOnce(kind, listener: listener, traceFile: traceFile, options: options, serving: serving, library: library,
                              maximumConnections: maximumConnections, logger: logger)
        return
    }
    let shell = ShellFeed()
    if kind == .headUnit { StandardInputLines.start(interrupt: shell.interrupt) { shell.feed($0) } }
    logger(kind.rawValue, "listening on \(options.transport); serving one connection after another (--once serves one)")
    var number = 0
    while true {
        number += 1
        let peerConnected = OnceSet()
        let accepted = listener.nextConnection { peerConnected.set() }
        let transport = traceFile?.recording(accepted, as: kind, connection: number) ?? accepted
        let idle = serving.limit.map { (limit: $0, counting: peerConnected) }
        let outcome = try await runConnection(kind, transport: transport, other: nil, options: options, once: false, library: library,
                                              shell: shell, logger: logger, screen: screen, serving: true, idle: idle, libraryCache: libraryCache)
        if outcome.quit { return }
        logger(kind.rawValue, "connection #\(number) ended; waiting for the next")
    }
}

/// Serves up to `maximumConnections` peers of a listener at once, each its
/// own connection (the phone: a stalled or failed head unit never keeps the
/// next one waiting). At the limit no further peer is accepted until one
/// ends; the kernel's listen backlog (4) holds the next few meanwhile.
func serveAtOnce(_ kind: EndKind, listener: TCPListener, traceFile: TraceFile?, options: TransportOptions, serving: ServingOptions,
                 library: SampleLibrary, maximumConnections: Int, logger: Log) async throws {
    logger(kind.rawValue, "listening on \(options.transport); serving up to \(maximumConnections) connections at once (--max-connections)")
    try await withThrowingTaskGroup(of: Void.self) { group in
        var active = 0
        var number = 0
        while true {
            if active >= maximumConnections {
                try await group.next()
                active -= 1
            }
            number += 1
            let connection = number
            // Set once a peer has connected, or once the connection ended without one.
            let taken = OnceSet()
            let peerConnected = OnceSet()
            let accepted = listener.nextConnection {
                peerConnected.set()
                taken.set()
            }
            let transport = traceFile?.recording(accepted, as: kind, connection: connection) ?? accepted
            let idle = serving.limit.map { (limit: $0, counting: peerConnected) }
            group.addTask {
                defer { taken.set() }
                let outcome = try await runConnection(kind, transport: transport, other: nil, options: options, once: false, library: library,
                                                      shell: ShellFeed(), logger: logger, serving: true, idle: idle, label: "\(kind.rawValue) #\(connection)")
                logger(kind.rawValue, "connection #\(connection) ended" + (outcome.failed ? " (its session failed)" : ""))
            }
            active += 1
            // The next accept waits until this one has its peer.
            try await taken.wait()
        }
    }
}

/// Where shell lines go: the head unit's shell of the current connection.
final class ShellFeed: Sendable {
    private let current = Mutex<(shell: ShellDriver?, waiting: [String?])>((nil, []))

    func feed(_ line: String?) {
        let shell = current.withLock { state -> ShellDriver? in
            if state.shell == nil { state.waiting.append(line) }
            return state.shell
        }
        shell?.feed(line)
    }

    func attach(_ shell: ShellDriver?) {
        let waiting = current.withLock { state -> [String?] in
            state.shell = shell
            defer { state.waiting = [] }
            return shell == nil ? [] : state.waiting
        }
        for line in waiting { shell?.feed(line) }
    }

    /// Lines a connection's shell had not run when it ended: the next
    /// connection's shell runs them first.
    func keep(_ unrun: (lines: [String], inputEnded: Bool)) {
        current.withLock { state in
            state.waiting = unrun.lines.map { Optional($0) } + (unrun.inputEnded ? [nil] : []) + state.waiting
        }
    }

    /// Ctrl-C at the prompt: stops a `watch`. False when no connection's
    /// shell is there to take it (the program then ends, as Ctrl-C does).
    func interrupt() -> Bool {
        guard let shell = current.withLock({ $0.shell }) else { return false }
        shell.interrupt()
        return true
    }
}

/// Waits until `endpoint` has had no link up, and no iAP1 frame from a legacy
/// head unit, for `limit` since `counting` was set (true), or until
/// cancelled (false). Looks twice a second: a link up
/// for less than that between two looks can go unseen, which only matters
/// to a peer that connects and fails for the whole limit anyway.
func linkStaysDown(on endpoint: MediaEndpoint, for limit: Duration, countingFrom counting: OnceSet) async -> Bool {
    let clock = ContinuousClock()
    var downSince = clock.now
    // A legacy iAP1 head unit has no iAP2 link: its frames are its traffic.
    var legacyFrames = endpoint.statistics.legacyFramesReceived
    while !Task.isCancelled {
        do { try await Task.sleep(for: .milliseconds(500)) } catch { return false }
        let frames = endpoint.statistics.legacyFramesReceived
        defer { legacyFrames = frames }
        if endpoint.isUp || frames != legacyFrames || !counting.isSet {
            downSince = clock.now
        } else if clock.now - downSince >= limit {
            return true
        }
    }
    return false
}

/// Set once, from any thread; tasks can wait for it.
final class OnceSet: Sendable {
    private struct State {
        var isSet = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// Waiters cancelled before they were registered.
        var cancelled: Set<Int> = []
    }
    private let state = Mutex(State())

    func set() {
        let waiters = state.withLock { state in
            state.isSet = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    var isSet: Bool { state.withLock { $0.isSet } }

    /// Returns once set; throws `CancellationError` if the task is cancelled first.
    func wait() async throws {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.isSet || state.cancelled.remove(id) != nil { return true }
                    state.waiters[id] = waiter
                    return false
                }
                if resumeNow { waiter.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                if let waiter = state.waiters.removeValue(forKey: id) { return waiter }
                if !state.isSet { state.cancelled.insert(id) }
                return nil
            }
            waiter?.resume()
        }
        if !isSet { throw CancellationError() }
    }
}

struct ConnectionOutcome {
    /// The head unit's shell quit: stop serving.
    var quit: Bool
    /// Exit status 1: the link never came up, or with --once no now playing came.
    var failed: Bool
}

/// One connection: the role over `transport` (and its counterpart over
/// `other` for loopback) until it ends. `serving`: a listener's connection,
/// which ends when the peer goes, the shell quits, or no link has been up
/// for `idle.limit` since the peer connected (`idle.counting`).
func runConnection(_ kind: EndKind, transport: Transport, other: Transport?, options: TransportOptions, once: Bool,
                   library: SampleLibrary, shell: ShellFeed, logger: Log, screen: HeadUnitScreen? = nil,
                   serving: Bool = false, idle: (limit: Duration, counting: OnceSet)? = nil, label: String? = nil,
                   libraryCache: MediaLibraryCache? = nil) async throws -> ConnectionOutcome {
    let interactive = isatty(0) == 1
    func endpoint(_ kind: EndKind, over transport: Transport) throws -> MediaEndpoint {
        let logger = Logger(label: label ?? kind.rawValue)
        let kept = kind == .headUnit ? libraryCache?.load(logger: logger) ?? [] : []
        let endpoint = MediaEndpoint(kind: kind, transport: transport, app: kind == .phone ? SampleApp(library: library) : nil,
                                     authentication: try options.authentication.endpointAuthentication(for: kind), mediaLibraries: kept,
                                     linkPacketLength: options.linkPackets.linkPacketLength, linkOutstandingPackets: options.linkPackets.linkOutstanding, logger: logger)
        if kind == .headUnit, let libraryCache {
            endpoint.observe { event, connection in
                if case .media(.mediaLibrarySynced(let id, _)) = event, let mirror = connection.headUnit.mediaLibraries[id] {
                    libraryCache.save(mirror, logger: logger)
                }
            }
        }
        return endpoint
    }
    let end = try endpoint(kind, over: transport)
    let counterpartKind: EndKind = kind == .phone ? .headUnit : .phone
    let counterpart = try other.map { try endpoint(counterpartKind, over: $0) }
    let headUnit = kind == .headUnit ? end : counterpart
    // The head unit's view, and its shell unless it only waits for now playing.
    // At a prompt the typed line shows already: no `> line` echo.
    let headUnitShell = headUnit.map { endpoint in
        ShellDriver(endpoint: endpoint, echoesLines: !LineEditor.wasStarted) { Console.result(EndKind.headUnit.rawValue, $0) }
    }
    let runsShell = !(kind == .headUnit && once)
    // The head unit is done after its first now-playing update with --once;
    // otherwise when its shell has quit (or its script ended and every
    // request was answered), after it has seen now playing at least once.
    // A listener's connection ends with the peer or the shell's quit.
    let started = MonotonicClock.now()
    let showsScreen = screen != nil
    func stop(_ kind: EndKind) -> @Sendable (MediaEndpoint.Status) -> Bool {
      { status in
        // A phone whose session failed (authentication refused or never
        // answered, identification rejected) has nothing more to do on this
        // connection: it ends, and the listener is free for the next peer.
        if kind == .phone, case .failed(let reason) = status.stage {
            logger(label ?? kind.rawValue, "closing the connection: \(reason)", level: .warning)
            return true
        }
        guard kind == .headUnit, let shell = headUnitShell else { return false }
        if once { return shell.nowPlayingUpdates > 0 }
        if shell.quit { return true }
        // With a screen, a person drives the head unit from the browser: the end of a script is not the end.
        if serving || showsScreen { return false }
        let waited = Double(MonotonicClock.now().nanoseconds - started.nanoseconds) / 1e9
        return shell.finished && (shell.nowPlayingUpdates > 0 || waited > 15)
      }
    }
    end.stop(when: stop(kind))
    counterpart?.stop(when: stop(counterpartKind))
    do {
        try counterpart?.start()
        try end.start()
    } catch {
        throw CommandFailure(message: error.description)
    }
    if !serving {
        logger(kind.rawValue, "running over \(options.transport)" + (headUnit != nil && interactive ? "; type `help` for the shell's commands" : ""))
    }
    if runsShell { shell.attach(headUnitShell) }
    if let screen, let headUnit { screen.attach(headUnit) }
    await withTaskGroup(of: Void.self) { group in
        group.addTask { await end.run() }
        if let counterpart { group.addTask { await counterpart.run() } }
        if serving, let idle {
            group.addTask {
                guard await linkStaysDown(on: end, for: idle.limit, countingFrom: idle.counting) else { return }
                logger(kind.rawValue, "no link on this connection for \(idle.limit); closing it to serve the next peer", level: .warning)
            }
        }
        await group.next()
        await end.close()
        await counterpart?.close()
        group.cancelAll()
        await group.waitForAll()
    }
    // What the shell had still to do when the connection ended: kept for the next connection when serving.
    let shellDone = headUnitShell.map { $0.quit || $0.finished } ?? true
    let unrun = headUnitShell?.takeUnrunLines() ?? (lines: [], inputEnded: true)
    shell.attach(nil)
    if serving { shell.keep(unrun) }
    if let screen, let headUnit { screen.detach(headUnit, reason: headUnit.endReason ?? "the connection ended") }
    var failed = false
    if let headUnit, !headUnit.everUp || (once && headUnit.nowPlayingUpdates == 0) { failed = true }
    if kind == .phone, !end.everUp { failed = true }
    // A script (not a person at the prompt) with lines that could not be carried out fails at its end.
    if !interactive, runsShell, let mistakes = headUnitShell?.mistakes, mistakes > 0 {
        logger(kind.rawValue, "the script had \(mistakes) line\(mistakes == 1 ? "" : "s") that could not be carried out (above)", level: .error)
        failed = true
    }
    // The connection ended under a shell that was not done (the phone went away): what it did not run is named.
    if runsShell, !serving, !shellDone {
        let typed = await LineEditor.stop()
        let notRun = unrun.lines + (typed.map { [$0] } ?? [])
        let reason = headUnit?.endReason ?? end.endReason ?? "the connection ended"
        logger(kind.rawValue, "the connection ended (\(reason)) before the shell's input did"
               + (notRun.isEmpty ? "" : "; not run: " + notRun.map { "'\($0)'" }.joined(separator: ", "))
               + (typed == nil ? "" : " (the line being typed is kept in the history)"), level: .error)
        failed = true
    }
    return ConnectionOutcome(quit: headUnitShell?.quit ?? false, failed: failed)
}

struct Phone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the device (phone) end: identify the accessory, then serve the sample library, now playing and commands.",
        discussion: """
        The phone waits for the accessory's detect sequence and SYN, brings the link
        up, sends StartIdentification, checks the IdentificationInformation it gets
        (rejecting it with every missing or malformed parameter named), and answers
        StartNowPlayingUpdates, browse requests, selections and remote commands from
        a built-in sample library and player. It copes with the accessory closing
        the connection at any moment (playback pauses).

        A head unit that speaks only the legacy iAP1 (FF 55 frames, as over a
        serial dock connector) is answered in iAP1 from the same library: once it
        identifies (IdentifyDeviceLingoes, IDPS or Identify), it can authenticate
        (2.0, checked as --auth and --trust-anchors say), read play status and
        the playing queue, control playback, get play-status notifications and
        browse the content tree as nested playlists.

        Examples:
          iapctl phone --transport tcp-listen:127.0.0.1:7000   # up to 4 head units at once
          iapctl phone --once --transport tcp-listen:127.0.0.1:7000
          iapctl phone --transport serial:/dev/ttyUSB0@115200
          iapctl phone --library my.json --transport tcp-listen:0.0.0.0:7000
          iapctl phone                        # with an in-process head unit
        """
    )

    @OptionGroup var options: TransportOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    @Option(help: ArgumentHelp("Serve this library (JSON, format in Docs/Messages.md) instead of the built-in one.", valueName: "file.json"),
            completion: .file(extensions: ["json"]))
    var library: String?

    @Flag(help: "Print the built-in library as JSON (a starting point for --library) and exit.")
    var printLibrary = false

    @Flag(help: "With tcp-listen: serve one connection, then exit (without it the phone serves head units until stopped, up to --max-connections at once).")
    var once = false

    @OptionGroup(title: "Serving tcp-listen connections") var serving: ServingOptions

    @Option(parsing: .unconditional, help: ArgumentHelp("With tcp-listen: serve up to this many head units at once, each its own session (a stalled one never keeps the next waiting); at the limit the next waits until one ends.",
                               valueName: "count"))
    var maxConnections = 4

    func validate() throws {
        guard (1...256).contains(maxConnections) else { throw ValidationError("--max-connections must be 1 to 256, not \(maxConnections)") }
    }

    func run() async throws {
        if printLibrary {
            print(try LibraryFile.example())
            return
        }
        var served = SampleLibrary.standard
        if let library { served = try LibraryFile.load(library) }
        logging.bootstrap()
        try await runRole(.phone, options: options, once: once, serving: serving, library: served, maximumConnections: maxConnections)
    }
}

struct HeadUnit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "head-unit",
        abstract: "Run the accessory (head unit) end: identify, then browse, watch now playing and send commands from a shell.",
        discussion: """
        After the link is up and identification accepted, the head unit states its
        limits, subscribes to now playing and reads commands from standard input,
        typed or as a script:

          ls                    list the current level (tabs at the root)
          cd N | cd .. | cd /   open row N, go up, go to the tabs
          more, retry           next page; retry a failed load
          play N                select row N (play with no N: the play command)
          pause, next, prev, stop, toggle
          seek SECONDS, skip SECONDS, back SECONDS
          repeat off|one|all, shuffle off|songs|albums, rate
          like, unlike, dislike, bookmark
          queue [more], np, watch [SECONDS], art N, buttons, help, quit
          press BUTTON          the steering wheel (HID): play-pause, next, prev, ...

        At a terminal the shell has a prompt, line editing, history and tab
        completion; Ctrl-C cancels the line being typed or a watch, Ctrl-D
        quits. A script waits for the answers to each line (and for a watch
        to end) before the next.

        Examples:
          iapctl head-unit                    # with an in-process phone
          iapctl head-unit --transport tcp:127.0.0.1:7000
          iapctl head-unit --once --transport tcp:127.0.0.1:7000
          iapctl head-unit --transport usb:auto --ui 127.0.0.1:8080
          iapctl head-unit --transport usb:auto --role-switch   # the phone becomes the host
          printf 'cd 1\\ncd 2\\nplay 4\\nnp\\n' | iapctl head-unit

        With --role-switch the head unit asks a USB phone to become the host
        (0x40/0x51), waits for it to leave, and runs as the USB device presenting
        the bulk iAP Interface (Docs/Hardware.md, "The role switch").

        The exit status is 1 when the link never came up (or, with --once, when no
        now-playing update arrived), when a script had lines that could not be
        carried out, or when the connection ended before the shell's input did
        (the phone went away: the lines not run are named).
        """
    )

    @OptionGroup var options: TransportOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    @Flag(help: "Exit after the first now-playing update (with tcp-listen: after one connection).")
    var once = false

    @OptionGroup(title: "Serving tcp-listen connections") var serving: ServingOptions

    @Option(help: ArgumentHelp("Also show the head unit's screen in a browser at http://HOST:PORT/ (tabs, lists, now playing, buttons; taps drive the head unit). HOST is a loopback address or name (127.0.0.1, [::1], localhost) unless --ui-allow-remote. It stays up until Ctrl-C.",
                               valueName: "host:port"),
            transform: parseScreenAddress)
    var ui: ScreenAddress?

    @Flag(help: "Let --ui serve on an address other machines can reach: anyone on that network can then drive the head unit (a warning says so).")
    var uiAllowRemote = false

    @OptionGroup(title: "Role switch (USB)") var roleSwitching: RoleSwitchOptions

    @OptionGroup(title: "Media library") var libraryCache: MediaLibraryCacheOptions

    func validate() throws {
        if once && ui != nil { throw ValidationError("--once exits after the first now-playing update and --ui keeps the screen up: give one") }
        if uiAllowRemote && ui == nil { throw ValidationError("--ui-allow-remote goes with --ui") }
        try roleSwitching.validate(transport: options.transport)
    }

    func run() async throws {
        logging.bootstrap()
        // The key is read before the screen accepts connections (which take descriptors).
        _ = try options.authentication.endpointAuthentication(for: .headUnit)
        var screen: HeadUnitScreen?
        if let ui { screen = try await startScreen(at: ui, allowRemote: uiAllowRemote) }
        if let mode = roleSwitching.roleSwitch {
            try await runRoleSwitchedHeadUnit(mode: mode, switchOptions: roleSwitching, options: options, once: once, screen: screen)
            return
        }
        try await runRole(.headUnit, options: options, once: once, serving: serving, screen: screen, libraryCache: libraryCache.cache)
        MediaLibraryCache.flush()
    }
}
