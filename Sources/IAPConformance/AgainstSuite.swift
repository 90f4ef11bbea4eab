import IAPEndpoint
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire
import Synchronization

/// The conformance cases that make sense against another implementation at
/// the far end of a real transport (TCP or a serial port), with this project
/// as the accessory end. They run in real time, in order, on one connection:
/// what the peer does is observed only through what it sends back, so every
/// check uses the diagnostic ping (answered with id + 1 and identical
/// parameters) as the probe. A peer that does not answer pings fails the
/// cases that need it with a message saying so.
public struct AgainstSuite: Sendable {
    public static let caseNames = [
        "garbage-before-syn", "detect", "negotiation-accepted", "ping", "message-spanning-packets",
        "corrupted-checksums", "duplicates-reordering", "rst-mid-stream",
    ]

    public let transport: Transport
    /// How long to wait for each answer (a ping's, say).
    public let timeout: Duration
    /// How long to wait for the link to come up (at the start and after the
    /// RST); `timeout` unless given. Waits end as soon as the link is up, so
    /// a generous bound costs nothing when the peer is quick.
    public let linkTimeout: Duration

    public init(transport: Transport, timeout: Duration = .seconds(10), linkTimeout: Duration? = nil) {
        self.transport = transport
        self.timeout = timeout
        self.linkTimeout = linkTimeout ?? timeout
    }

    /// Runs every case; `report` gets each result as it is known.
    public func run(seed: UInt64, report: @Sendable (ConformanceResult) -> Void) async -> [ConformanceResult] {
        let probe = Probe(transport: transport)
        var results: [ConformanceResult] = []
        func finish(_ name: String, _ failures: [String], _ summary: String) {
            let result = ConformanceResult(name: name, seed: seed, failures: failures, summary: summary,
                                           milliseconds: Int((MonotonicClock.now().nanoseconds - probe.started.nanoseconds) / 1_000_000))
            results.append(result)
            report(result)
        }

        // garbage-before-syn and detect: stale bytes first, then the handshake.
        var random = SeededRandom(seed: seed)
        let stale = (0..<300).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        do {
            try probe.start(garbage: stale)
        } catch {
            finish("garbage-before-syn", ["cannot open the transport: \(error)"], "")
            return results
        }
        let up = await probe.waitUp(linkTimeout)
        finish("garbage-before-syn", up ? [] : ["the link did not come up after 300 stale bytes: \(probe.failureText)"], up ? "link up after stale bytes" : "")
        guard up, let link = probe.endpoint.negotiated else {
            finish("detect", ["no link: \(probe.failureText)"], "")
            return results
        }
        let detects = probe.writes().filter { $0 == DetectSequence.bytes }.count
        finish("detect", detects >= 1 ? [] : ["the link came up without a detect exchange"], "\(detects) detect sequence(s)")

        // negotiation-accepted: the peer's answer is in range and each side sends within the other's limits.
        var negotiation: [String] = []
        if link.sendWindow < 1 || link.sendWindow > 127 { negotiation.append("the peer's window \(link.sendWindow) is out of range") }
        if link.sendPacketLength < LinkPacket.minimumNegotiableLength { negotiation.append("the peer's max packet length \(link.sendPacketLength) is below 24") }
        finish("negotiation-accepted", negotiation,
               "peer receives \(link.sendWindow) packets of \(link.sendPacketLength) bytes; retransmit \(link.retransmitTimeout.wholeMillisecondsText)")

        // ping: round trips with identical parameters.
        var pingFailures: [String] = []
        var answered = 0
        for sequence in 1...20 as ClosedRange<UInt32> {
            if await probe.ping(sequence: sequence, size: 32, timeout: timeout) { answered += 1 } else {
                pingFailures.append("ping \(sequence) was not answered with identical parameters within \(timeout.wholeMillisecondsText)")
                break
            }
        }
        finish("ping", pingFailures, "\(answered) of 20 answered")
        guard pingFailures.isEmpty else {
            await probe.close()
            return results
        }

        // message-spanning-packets: a ping far larger than the peer's packets.
        let big = min(60_000, max(1000, link.maximumPayload * 5))
        let spanned = await probe.ping(sequence: 100, size: big, timeout: timeout)
        finish("message-spanning-packets", spanned ? [] : ["a \(big)-byte ping was not answered intact"], "\(big)-byte ping over \(link.maximumPayload)-byte payloads")

        // corrupted-checksums: a packet with a bad payload checksum is ignored, the link goes on.
        var corrupt = (try? LinkPacket(control: .ack, sequence: 0xEE, acknowledgement: 0, session: link.sessions.first { $0.type == .control }?.id ?? 1,
                                       payload: DiagnosticPing.request(sequence: 200, size: 8).encoded()).encoded()) ?? []
        if corrupt.count > 2 { corrupt[corrupt.count - 2] ^= 0x10 }
        probe.endpoint.injectRaw(corrupt)
        var header = corrupt
        if header.count > 8 { header[8] ^= 0x01 }
        probe.endpoint.injectRaw(Array(header.prefix(9)))
        let stillUp = await probe.ping(sequence: 201, size: 16, timeout: timeout)
        let answeredCorrupt = probe.answerCount(200) > 0
        finish("corrupted-checksums", (stillUp ? [] : ["the link stopped answering after a corrupted packet"]) + (answeredCorrupt ? ["the peer answered a packet whose checksum was wrong"] : []),
               "corrupted header and payload injected")

        // duplicates-reordering: the same data packet twice is delivered once.
        let before = probe.writes().count
        let firstAnswered = await probe.ping(sequence: 300, size: 16, timeout: timeout)
        if let original = probe.writes().dropFirst(before).first(where: { (try? LinkPacket(decoding: $0))?.payload.isEmpty == false }) {
            probe.endpoint.injectRaw(original)
        }
        _ = await probe.ping(sequence: 301, size: 16, timeout: timeout)
        let duplicates = probe.answerCount(300)
        finish("duplicates-reordering", (firstAnswered ? [] : ["ping 300 was not answered"]) + (duplicates > 1 ? ["a duplicated packet was delivered twice (\(duplicates) answers)"] : []),
               "duplicate injected; \(duplicates) answer(s)")

        // rst-mid-stream: RST ends the peer's link; a new synchronisation works.
        probe.endpoint.injectRaw((try? LinkPacket(control: .rst).encoded()) ?? [])
        try? await Task.sleep(for: .milliseconds(200))
        probe.endpoint.restart()
        let again = await probe.waitUp(linkTimeout, count: 2)
        let afterReset = again ? await probe.ping(sequence: 400, size: 16, timeout: timeout) : false
        finish("rst-mid-stream", again && afterReset ? [] : [again ? "no ping answer after re-synchronising" : "the link did not come up again after RST"],
               again ? "re-synchronised after RST" : "")
        await probe.close()
        return results
    }
}

/// This project's accessory end, a link probe (`MediaEndpoint(linkProbe:)`:
/// the one real-time driver of the endpoint core, without a session above
/// the link), plus the bookkeeping the cases observe.
final class Probe: Sendable {
    let endpoint: MediaEndpoint
    let started = MonotonicClock.now()
    private let state = Mutex<(ups: Int, failure: String?, answers: [UInt32: [ParameterList]], writes: [[UInt8]], control: UInt8?)>((0, nil, [:], [], nil))
    private let channel = Mutex(ControlChannel())
    private let runner = Mutex<Task<Void, Never>?>(nil)
    /// The transport has closed (or could not be opened): no wait can end well.
    private let transportClosed = Mutex(false)

    init(transport: Transport) {
        var configuration = LinkConfiguration(role: .accessory)
        configuration.detectInterval = .milliseconds(500)
        endpoint = MediaEndpoint(linkProbe: transport, link: configuration)
    }

    var failureText: String { state.withLock { $0.failure ?? "no answer" } }

    func writes() -> [[UInt8]] { state.withLock { $0.writes } }

    func answerCount(_ sequence: UInt32) -> Int { state.withLock { $0.answers[sequence]?.count ?? 0 } }

    func start(garbage: [UInt8]) throws(TransportError) {
        endpoint.onWrite { [self] bytes in state.withLock { $0.writes.append(bytes) } }
        endpoint.onLinkEvent { [self] event in linkEvent(event) }
        endpoint.onSessionData { [self] session, bytes in received(bytes, session: session) }
        try endpoint.start()
        let task = Task { [self] in await watchUntilStopped() }
        runner.withLock { $0 = task }
        endpoint.injectRaw(garbage)
    }

    /// The endpoint stops when its transport closes: from then on no wait can end well.
    private func watchUntilStopped() async {
        await endpoint.run()
        let reason = endpoint.transportError.map { "the transport closed: \($0)" } ?? endpoint.endReason ?? "the endpoint stopped"
        state.withLock { $0.failure = reason }
        transportClosed.withLock { $0 = true }
    }

    private func linkEvent(_ event: LinkEvent) {
        switch event {
        case .up(let link):
            state.withLock {
                $0.ups += 1
                $0.control = link.sessions.first { $0.type == .control }?.id
            }
            channel.withLock { $0.reset() }
        case .failed(let failure):
            state.withLock { $0.failure = failure.description }
        case .down(let reason):
            state.withLock { $0.failure = reason.description }
        default:
            break
        }
    }

    private func received(_ bytes: [UInt8], session: UInt8) {
        guard session == state.withLock({ $0.control }) else { return }
        let (inputs, _) = channel.withLock { $0.receive(bytes) }
        for case .message(let message) in inputs {
            if let sequence = DiagnosticPing.sequence(ofAnswer: message) {
                state.withLock { $0.answers[sequence, default: []].append(message.parameters) }
            }
        }
    }

    /// Waits until the link has come up `count` times; false at once when
    /// the transport has closed (a connection refused waited out the timeout).
    func waitUp(_ timeout: Duration, count: Int = 1) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if state.withLock({ $0.ups }) >= count && endpoint.isUp { return true }
            if transportClosed.withLock({ $0 }) { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// Sends a ping and waits for its answer with identical parameters.
    func ping(sequence: UInt32, size: Int, timeout: Duration) async -> Bool {
        let request = DiagnosticPing.request(sequence: sequence, size: size)
        guard let control = state.withLock({ $0.control }), let bytes = try? request.encoded() else { return false }
        endpoint.send(bytes, session: control)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let answers = state.withLock({ $0.answers[sequence] }), let first = answers.first {
                return first == request.parameters
            }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return false
    }

    func close() async {
        await endpoint.close()
        runner.withLock { $0?.cancel() }
    }
}
