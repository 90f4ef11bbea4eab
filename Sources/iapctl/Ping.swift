import ArgumentParser
import Dispatch
import IAPLink
import IAPEndpoint
import IAPRoles
import IAPSession
import IAPTrace
import IAPTransport
import IAPWire
import Logging
import Synchronization

struct Ping: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure round trips over a live link with the diagnostic ping both ends always answer.",
        discussion: """
        The ping is a control-session message with an even id in 0xFE00...0xFEFE;
        the other end answers with id + 1 and byte-identical parameters. This end
        runs as the accessory (it initiates the link).

        Examples:
          iapctl ping                                   # over an in-process loopback
          iapctl ping --transport tcp:127.0.0.1:7000 --count 1000 --size 512
          iapctl ping --json | jq .median_ms
        """
    )

    @OptionGroup var options: TransportOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    @Option(parsing: .unconditional, help: "Pings to send.")
    var count = 100

    @Option(parsing: .unconditional, help: "Padding bytes in each ping (0...60000).")
    var size = 64

    @Option(parsing: .unconditional, help: "Seconds to wait for each answer.")
    var timeout = 5.0

    @Flag(help: "Print one JSON object with the figures instead of text.")
    var json = false

    func validate() throws {
        guard count > 0 else { throw ValidationError("--count must be at least 1, not \(count)") }
        guard (0...60_000).contains(size) else { throw ValidationError("--size must be between 0 and 60000 bytes") }
        guard timeout > 0 else { throw ValidationError("--timeout must be positive") }
    }

    func run() async throws {
        logging.bootstrap()
        let (transport, other) = try options.open(as: .pinger)
        let end = MediaEndpoint(kind: .pinger, transport: transport, authentication: try options.authentication.endpointAuthentication(for: .pinger),
                                linkPacketLength: options.linkPackets.linkPacketLength, linkOutstandingPackets: options.linkPackets.linkOutstanding, logger: Logger(label: "ping"))
        let run = PingRun(end: end, count: count, size: size, timeout: timeout, printsEach: json ? nil : (count <= 20 ? 1 : max(1, count / 10)))
        end.onUnhandledMessage { message in
            if let sequence = DiagnosticPing.sequence(ofAnswer: message) { run.answered(sequence, at: MonotonicClock.now()) }
        }
        // The accessory sends nothing but authentication until the phone
        // says it succeeded (or skips it): pings are timed from then on.
        let session = SessionWatch()
        end.observe { event, _ in
            guard case .stage(let stage) = event else { return }
            session.saw(stage)
        }
        let responderAuthentication = try options.authentication.endpointAuthentication(for: .responder)
        let responder = other.map { MediaEndpoint(kind: .responder, transport: $0, authentication: responderAuthentication, logger: .discarding("endpoint")) }
        let (rtts, lost) = try await whileRunning(end, counterpart: responder) {
            try await pings(over: end, run: run, session: session)
        }
        let sorted = rtts.sorted()
        func percentile(_ p: Double) -> Double {
            guard !sorted.isEmpty else { return 0 }
            return sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded(.up)))]
        }
        if json {
            var object = JSONObjectWriter()
            object.string("transport", options.transport.description)
            object.integer("sent", count)
            object.integer("received", rtts.count)
            object.integer("size", size)
            object.raw("min_ms", millisecondsText(sorted.first ?? 0))
            object.raw("median_ms", millisecondsText(percentile(0.5)))
            object.raw("p99_ms", millisecondsText(percentile(0.99)))
            object.raw("max_ms", millisecondsText(sorted.last ?? 0))
            print(object.finish())
        } else {
            print("\(count) sent, \(rtts.count) received, \(lost) lost; round trip min \(millisecondsText(sorted.first ?? 0)) / median \(millisecondsText(percentile(0.5))) / p99 \(millisecondsText(percentile(0.99))) ms")
        }
        if rtts.isEmpty { throw ExitCode(1) }
    }

    /// Waits for the link, then runs the pings; the round trips of those
    /// answered, and how many were not.
    private func pings(over end: MediaEndpoint, run: PingRun, session: SessionWatch) async throws -> (rtts: [Double], lost: Int) {
        // Wait for the link, and for authentication to be behind it.
        let start = MonotonicClock.now()
        while !end.isUp || !session.isOpen {
            if let reason = session.failure {
                throw CommandFailure(message: "the session over \(options.transport) failed: \(reason)")
            }
            if let error = end.transportError {
                throw CommandFailure(message: "cannot reach the other end: \(error)")
            }
            if Double(MonotonicClock.now().nanoseconds - start.nanoseconds) / 1e9 > timeout * 4 {
                throw CommandFailure(message: end.isUp
                    ? "the link came up over \(options.transport) but authentication did not finish within \(Int(timeout * 4)) s"
                    : "the link did not come up over \(options.transport) within \(Int(timeout * 4)) s (is the other end running and speaking iAP2?)")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        // The phone side sends StartIdentification first; pings do not wait for it.
        // A link that goes down (the phone killed, a burst loss it did not
        // survive) ends the run at once.
        let outcome = await run.run()
        if outcome.abandoned {
            throw CommandFailure(message: linkLostText(end, after: outcome.rtts.count, lost: outcome.lost))
        }
        return (outcome.rtts, outcome.lost)
    }

    /// Why the pings stopped: the link or its transport ended.
    private func linkLostText(_ end: MediaEndpoint, after answered: Int, lost: Int) -> String {
        let reason = end.transportError.map { "the transport closed: \($0)" } ?? end.endReason ?? "the link went down"
        return "stopped after \(answered) of \(count) pings answered (\(lost) lost): \(reason)"
    }
}

/// The pings, one at a time. Each answer is taken on the thread that read
/// it, which records the round trip and sends the next ping there and then,
/// as the raw echo's client writes again on the thread its read returned on:
/// between an answer and the next ping there is no hand-off to another
/// thread. One watchdog timer, started once, gives up on an answer that did
/// not come in time (the next ping follows) and on a link that went away
/// (the run ends at once, none sent after it); nothing is armed per ping.
final class PingRun: Sendable {
    struct Outcome {
        var rtts: [Double] = []
        var lost = 0
        /// The link or its transport went away before the last answer.
        var abandoned = false
    }
    private struct Outstanding {
        let sequence: UInt32
        let sent: LinkInstant
        let giveUpAt: LinkInstant
    }
    private struct State {
        var nextSequence = 1
        var outstanding: Outstanding?
        var outcome = Outcome()
        var finished = false
        var waiter: CheckedContinuation<Outcome, Never>?
    }
    private let end: MediaEndpoint
    private let count: Int
    private let size: Int
    private let timeout: Double
    /// Every how many pings a text line is printed; nil: none (JSON).
    private let printsEach: Int?
    private let state = Mutex(State())
    private let watchdog: DispatchSourceTimerBox

    init(end: MediaEndpoint, count: Int, size: Int, timeout: Double, printsEach: Int?) {
        self.end = end
        self.count = count
        self.size = size
        self.timeout = timeout
        self.printsEach = printsEach
        watchdog = DispatchSourceTimerBox(every: .milliseconds(50))
    }

    deinit { watchdog.cancel() }

    /// Sends the first ping and returns once every ping was answered or
    /// given up on, or the link went away.
    func run() async -> Outcome {
        watchdog.start { [weak self] in self?.check() }
        return await withCheckedContinuation { (waiter: CheckedContinuation<Outcome, Never>) in
            state.withLock { $0.waiter = waiter }
            sendNext()
        }
    }

    /// The answer to `sequence` arrived at `instant` (on the reading thread).
    func answered(_ sequence: UInt32, at instant: LinkInstant) {
        let milliseconds = state.withLock { state -> Double? in
            guard !state.finished, let outstanding = state.outstanding, outstanding.sequence == sequence else { return nil }
            state.outstanding = nil
            let milliseconds = Double(instant.nanoseconds - outstanding.sent.nanoseconds) / 1e6
            state.outcome.rtts.append(milliseconds)
            return milliseconds
        }
        guard let milliseconds else { return }
        if let printsEach, Int(sequence) % printsEach == 0 {
            Console.result("ping", "seq=\(sequence) size=\(size) time=\(millisecondsText(milliseconds)) ms")
        }
        sendNext()
    }

    /// Sends the next ping, or ends the run after the last.
    private func sendNext() {
        let sequence = state.withLock { state -> Int? in
            guard !state.finished, state.outstanding == nil, state.nextSequence <= count else { return nil }
            defer { state.nextSequence += 1 }
            return state.nextSequence
        }
        guard let sequence else {
            finish(abandoned: false)
            return
        }
        // Built before the clock starts: the round trip is what is timed.
        let request = DiagnosticPing.request(sequence: UInt32(sequence), size: size)
        let sent = MonotonicClock.now()
        state.withLock { $0.outstanding = Outstanding(sequence: UInt32(sequence), sent: sent, giveUpAt: sent + .nanoseconds(Int64(timeout * 1e9))) }
        end.sendFromOutside(request)
    }

    /// The watchdog: a link gone ends the run; an answer past its time is lost.
    private func check() {
        if end.transportError != nil || !end.isUp {
            finish(abandoned: true)
            return
        }
        let now = MonotonicClock.now()
        let expired = state.withLock { state -> UInt32? in
            guard !state.finished, let outstanding = state.outstanding, outstanding.giveUpAt <= now else { return nil }
            state.outstanding = nil
            state.outcome.lost += 1
            return outstanding.sequence
        }
        guard let expired else { return }
        if printsEach != nil { Console.result("ping", "seq=\(expired): no answer within \(timeout) s") }
        sendNext()
    }

    /// Ends the run once (all pings done, or abandoned) and wakes `run`.
    private func finish(abandoned: Bool) {
        let ended = state.withLock { state -> (CheckedContinuation<Outcome, Never>, Outcome)? in
            guard !state.finished, let waiter = state.waiter else { return nil }
            // With every ping sent, only the last one's answer or loss ends the run.
            if !abandoned && state.outstanding != nil { return nil }
            state.finished = true
            state.outcome.abandoned = abandoned
            state.waiter = nil
            return (waiter, state.outcome)
        }
        guard let (waiter, outcome) = ended else { return }
        watchdog.cancel()
        waiter.resume(returning: outcome)
    }
}

/// Where the pinging end's session stands, from its stage events: open
/// once authentication is behind it (identifying or identified), or why it
/// failed.
final class SessionWatch: Sendable {
    private let state = Mutex<(open: Bool, failure: String?)>((false, nil))

    func saw(_ stage: Connection.Stage) {
        state.withLock {
            switch stage {
            case .identifying, .identified: $0.open = true
            case .failed(let reason): $0.failure = reason
            case .disconnected, .authenticating: break
            }
        }
    }

    var isOpen: Bool { state.withLock { $0.open } }
    var failure: String? { state.withLock { $0.failure } }
}

/// A repeating Dispatch timer.
///
/// `@unchecked Sendable`: Dispatch on Linux does not mark its timer source
/// Sendable; libdispatch makes `cancel` safe from any thread, and `start`
/// runs in its owner's initialiser, before it is shared.
final class DispatchSourceTimerBox: @unchecked Sendable {
    private let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "iap.ping.watchdog"))
    private let interval: DispatchTimeInterval

    init(every interval: DispatchTimeInterval) { self.interval = interval }

    func start(_ fire: @escaping @Sendable () -> Void) {
        source.setEventHandler(handler: fire)
        source.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        source.resume()
    }

    func cancel() { source.cancel() }
}

/// Milliseconds with three decimals.
func millisecondsText(_ value: Double) -> String {
    let micro = Int((value * 1000).rounded())
    let fraction = String(micro % 1000)
    return "\(micro / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
}
