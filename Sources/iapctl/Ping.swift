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
        let answers = AnswerBox()
        let end = MediaEndpoint(kind: .pinger, transport: transport, authentication: try options.authentication.endpointAuthentication(for: .pinger),
                                logger: Logger(label: "ping"))
        end.onUnhandledMessage { message in
            if let sequence = DiagnosticPing.sequence(ofAnswer: message) { answers.deliver(sequence, at: MonotonicClock.now()) }
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
            try await pings(over: end, answers: answers, session: session)
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

    /// Waits for the link, then sends the pings one at a time; the round
    /// trips of those answered, and how many were not.
    private func pings(over end: MediaEndpoint, answers: AnswerBox, session: SessionWatch) async throws -> (rtts: [Double], lost: Int) {
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
        // survive) ends the run at once: a ping waiting for its answer is
        // given up on, and none is sent after it.
        let watch = Task {
            while !Task.isCancelled {
                if end.transportError != nil || !end.isUp {
                    answers.abandon()
                    return
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        defer { watch.cancel() }
        var rtts: [Double] = []
        var lost = 0
        for sequence in 1...count {
            if answers.isAbandoned {
                throw CommandFailure(message: linkLostText(end, after: rtts.count, lost: lost))
            }
            // Built before the clock starts: the round trip is what is timed.
            let request = DiagnosticPing.request(sequence: UInt32(sequence), size: size)
            answers.expect(UInt32(sequence))
            let sent = MonotonicClock.now()
            end.sendFromOutside(request)
            if let answeredAt = await answers.answer(UInt32(sequence), within: timeout) {
                let milliseconds = Double(answeredAt.nanoseconds - sent.nanoseconds) / 1e6
                rtts.append(milliseconds)
                if !json && (count <= 20 || sequence % max(1, count / 10) == 0) {
                    Console.result("ping", "seq=\(sequence) size=\(size) time=\(millisecondsText(milliseconds)) ms")
                }
            } else if answers.isAbandoned {
                throw CommandFailure(message: linkLostText(end, after: rtts.count, lost: lost))
            } else {
                lost += 1
                if !json { Console.result("ping", "seq=\(sequence): no answer within \(timeout) s") }
            }
        }
        return (rtts, lost)
    }

    /// Why the pings stopped: the link or its transport ended.
    private func linkLostText(_ end: MediaEndpoint, after answered: Int, lost: Int) -> String {
        let reason = end.transportError.map { "the transport closed: \($0)" } ?? end.endReason ?? "the link went down"
        return "stopped after \(answered) of \(count) pings answered (\(lost) lost): \(reason)"
    }
}

/// Answer times by sequence number, shared between the session's event loop
/// and the pinging task, which waits for each answer without polling. Only
/// expected sequence numbers are recorded. One watchdog timer, started once,
/// gives up on answers that did not come in time: nothing is armed per ping.
final class AnswerBox: Sendable {
    private struct Waiter {
        let continuation: CheckedContinuation<LinkInstant?, Never>
        let giveUpAt: LinkInstant
    }
    private struct State {
        var expected: Set<UInt32> = []
        var answered: [UInt32: LinkInstant] = [:]
        var waiters: [UInt32: Waiter] = [:]
        var abandoned = false
    }
    private let state = Mutex(State())
    private let watchdog: DispatchSourceTimerBox

    init() {
        watchdog = DispatchSourceTimerBox(every: .milliseconds(50))
        watchdog.start { [weak self] in
            guard let self else { return }
            let now = MonotonicClock.now()
            let expired = state.withLock { table -> [Waiter] in
                let due = table.waiters.filter { $0.value.giveUpAt <= now }
                for sequence in due.keys {
                    table.waiters[sequence] = nil
                    table.expected.remove(sequence)
                }
                return Array(due.values)
            }
            for waiter in expired { waiter.continuation.resume(returning: nil) }
        }
    }

    deinit { watchdog.cancel() }

    func expect(_ sequence: UInt32) { state.withLock { _ = $0.expected.insert(sequence) } }

    /// Whether the link went away: waits end at once and return nil.
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Gives up on every answer, waiting or to come.
    func abandon() {
        let waiters = state.withLock { table -> [Waiter] in
            table.abandoned = true
            defer { table.waiters = [:] }
            return Array(table.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
    }

    func deliver(_ sequence: UInt32, at instant: LinkInstant) {
        let waiter = state.withLock { table -> Waiter? in
            guard table.expected.remove(sequence) != nil else { return nil }
            if let waiter = table.waiters.removeValue(forKey: sequence) { return waiter }
            table.answered[sequence] = instant
            return nil
        }
        waiter?.continuation.resume(returning: instant)
    }

    /// When the answer to `sequence` arrived, waiting up to `timeout`
    /// seconds for it; nil when it did not.
    func answer(_ sequence: UInt32, within timeout: Double) async -> LinkInstant? {
        let giveUpAt = MonotonicClock.now() + .nanoseconds(Int64(timeout * 1e9))
        return await withCheckedContinuation { (continuation: CheckedContinuation<LinkInstant?, Never>) in
            let early = state.withLock { table -> LinkInstant?? in
                if let instant = table.answered.removeValue(forKey: sequence) { return .some(instant) }
                if table.abandoned { return .some(nil) }
                table.waiters[sequence] = Waiter(continuation: continuation, giveUpAt: giveUpAt)
                return nil
            }
            if let early { continuation.resume(returning: early) }
        }
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
