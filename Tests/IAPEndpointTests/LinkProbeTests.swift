import Synchronization
import Testing
import IAPEndpoint
import IAPLink
import IAPTransport

/// What a link probe (`MediaEndpoint(linkProbe:)`) reported, in order.
enum ProbeEvent: Sendable {
    case link(LinkEvent)
    /// Bytes a session delivered, one call of `onSessionData`.
    case data(session: UInt8, [UInt8])
    /// The endpoint stopped because its transport closed, with why.
    case transportClosed(TransportError)
}

/// Collects a link probe's link events and session bytes into a list that
/// tests poll, and, once the endpoint stops, the transport's closing.
/// Made before the probe starts.
final class ProbeEvents: Sendable {
    let events = Mutex<[ProbeEvent]>([])

    init(_ endpoint: MediaEndpoint) {
        endpoint.onLinkEvent { [self] event in events.withLock { $0.append(.link(event)) } }
        endpoint.onSessionData { [self] session, bytes in events.withLock { $0.append(.data(session: session, bytes)) } }
        // `run` returns once the transport has closed and the link's last
        // events are handled (these tests set no stop condition).
        Task { [self, weak endpoint] in
            guard let endpoint else { return }
            await endpoint.run()
            if let error = endpoint.transportError { events.withLock { $0.append(.transportClosed(error)) } }
        }
    }

    /// Waits until `done` holds for everything seen so far, or time runs
    /// out (a bound against a hang: the wait ends as soon as `done` holds).
    func wait(seconds: Double = 30, until done: @Sendable ([ProbeEvent]) -> Bool) async -> [ProbeEvent] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if events.withLock({ done($0) }) { break }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return events.withLock { $0 }
    }
}

func received(_ events: [ProbeEvent], session: UInt8) -> [UInt8] {
    events.flatMap { event -> [UInt8] in
        if case .data(session, let bytes) = event { bytes } else { [] }
    }
}

func isUpEvent(_ event: ProbeEvent) -> Bool { if case .link(.up) = event { true } else { false } }
func isDownEvent(_ event: ProbeEvent) -> Bool { if case .link(.down) = event { true } else { false } }
func isTransportClosed(_ event: ProbeEvent) -> Bool { if case .transportClosed = event { true } else { false } }

/// A transport that can hold writes back and then pass them on as one, so
/// that the peer reads several packets at once.
private final class HoldingTransport: Transport {
    let inner: LoopbackTransport
    private let held = Mutex<[UInt8]?>(nil)
    var name: String { inner.name }

    init(_ inner: LoopbackTransport) { self.inner = inner }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) { try inner.start(handler) }
    func write(_ bytes: [UInt8]) {
        let passOn = held.withLock { held -> Bool in
            guard held != nil else { return true }
            held! += bytes
            return false
        }
        if passOn { inner.write(bytes) }
    }
    func close() { inner.close() }

    func hold() { held.withLock { $0 = [] } }
    var heldCount: Int { held.withLock { $0?.count ?? 0 } }
    func release() {
        let bytes = held.withLock { held -> [UInt8] in
            defer { held = nil }
            return held ?? []
        }
        if !bytes.isEmpty { inner.write(bytes) }
    }
}

/// Bare link ends (link probes, the endpoint core without a session) over
/// real transports in real time: the link layer as `conformance --against`
/// runs it.
@Suite(.serialized) struct LinkProbeTests {
    @Test func linkOverLossyLoopbackInRealTime() async throws {
        var faults = WireFaults(loss: 0.1, duplication: 0.05, reordering: 0.05)
        faults.delay = .milliseconds(1)
        let (a, d) = LoopbackTransport.pair(towardsSecond: faults, towardsFirst: faults, seed: 3)
        let parameters = LinkParameters(maximumPacketLength: 256, retransmitTimeout: .milliseconds(60), cumulativeAckTimeout: .milliseconds(10), maximumRetransmissions: 20)
        let accessory = MediaEndpoint(linkProbe: a, link: LinkConfiguration(role: .accessory, parameters: parameters, detectInterval: .milliseconds(50)))
        let device = MediaEndpoint(linkProbe: d, link: LinkConfiguration(role: .device, parameters: parameters))
        let deviceEvents = ProbeEvents(device)
        let accessoryEvents = ProbeEvents(accessory)
        try device.start()
        try accessory.start()
        let payload = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let up = await accessoryEvents.wait { $0.contains(where: isUpEvent) }
        if up.contains(where: isUpEvent) {
            accessory.send(payload, session: 1)
            let events = await deviceEvents.wait { received($0, session: 1).count >= payload.count }
            #expect(received(events, session: 1) == payload)
            #expect(events.filter(isUpEvent).count == 1)
        } else {
            Issue.record("the link did not come up: \(up)")
        }
        await accessory.close()
        await device.close()
    }

    @Test func linkOverTCPAndDisconnectReportedOnce() async throws {
        let port = Mutex<UInt16>(0)
        let listening = MediaEndpoint(linkProbe: TCPTransport.listen(host: "127.0.0.1", port: 0) { bound in port.withLock { $0 = bound } },
                                      link: LinkConfiguration(role: .device))
        let deviceEvents = ProbeEvents(listening)
        try listening.start()
        var waited = 0
        while port.withLock({ $0 }) == 0 && waited < 1_000 {
            try await Task.sleep(for: .milliseconds(10))
            waited += 1
        }
        let bound = port.withLock { $0 }
        guard bound != 0 else {
            Issue.record("the listener never said which port it bound")
            await listening.close()
            return
        }
        let connecting = MediaEndpoint(linkProbe: TCPTransport.connect(host: "127.0.0.1", port: bound), link: LinkConfiguration(role: .accessory))
        let accessoryEvents = ProbeEvents(connecting)
        try connecting.start()
        let up = await accessoryEvents.wait { $0.contains(where: isUpEvent) }
        #expect(up.contains(where: isUpEvent))
        connecting.send(Array("hello over tcp".utf8), session: 1)
        let delivered = await deviceEvents.wait { received($0, session: 1).count >= 14 }
        #expect(received(delivered, session: 1) == Array("hello over tcp".utf8))
        // Pull the plug on the accessory side: the device sees one link-down.
        connecting.transport.close()
        let after = await deviceEvents.wait { $0.contains(where: isTransportClosed) }
        #expect(after.contains(where: isTransportClosed), "\(after.suffix(5))")
        let downs = after.filter(isDownEvent)
        #expect(downs.count == 1, "\(downs)")
        #expect(after.contains { if case .link(.down(.transportClosed)) = $0 { true } else { false } })
        await listening.close()
        await connecting.close()
    }

    @Test func connectingToNothingIsRefused() async throws {
        let port = try TCPTransport.listener(host: "127.0.0.1", port: 0).port  // closed again when released
        let probe = MediaEndpoint(linkProbe: TCPTransport.connect(host: "127.0.0.1", port: port), link: LinkConfiguration(role: .accessory))
        let collector = ProbeEvents(probe)
        try probe.start()
        let events = await collector.wait { $0.contains(where: isTransportClosed) }
        guard case .transportClosed(let error)? = events.last else {
            Issue.record("no transport-closed event: \(events)")
            return
        }
        #expect(error.kind == .refused, "\(error)")
        #expect(error.description.contains("cannot connect"))
        #expect(probe.transportError == error)
    }

    /// Bytes on the control session may go up joined; datagrams (file
    /// transfer, external accessory) arrive one call each, even when one
    /// read brought several.
    @Test func datagramsArriveOneEventEach() async throws {
        let (a, d) = LoopbackTransport.pair()
        let holding = HoldingTransport(a)
        let accessory = MediaEndpoint(linkProbe: holding, link: LinkConfiguration(role: .accessory))
        let device = MediaEndpoint(linkProbe: d, link: LinkConfiguration(role: .device))
        let deviceEvents = ProbeEvents(device)
        let accessoryEvents = ProbeEvents(accessory)
        try device.start()
        try accessory.start()
        let up = await accessoryEvents.wait { $0.contains(where: isUpEvent) }
        guard up.contains(where: isUpEvent), let fileTransfer = accessory.negotiated?.sessions.first(where: { $0.type == .fileTransfer })?.id else {
            Issue.record("the link did not come up with a file-transfer session: \(up)")
            await accessory.close()
            await device.close()
            return
        }
        let datagrams: [[UInt8]] = (1...5).map { [UInt8](repeating: UInt8($0), count: 10 * $0) }
        // All five packets reach the device in one read: held until every
        // one is written (a send may be handled by another input's thread).
        holding.hold()
        for datagram in datagrams { accessory.send(datagram, session: fileTransfer) }
        let packetBytes = datagrams.reduce(0) { $0 + 9 + $1.count + 1 }
        let deadline = ContinuousClock.now + .seconds(30)
        while holding.heldCount < packetBytes && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(holding.heldCount >= packetBytes, "only \(holding.heldCount) of \(packetBytes) bytes of datagram packets were written")
        holding.release()
        let events = await deviceEvents.wait { received($0, session: fileTransfer).count >= datagrams.joined().count }
        let delivered = events.compactMap { event -> [UInt8]? in if case .data(fileTransfer, let bytes) = event { bytes } else { nil } }
        #expect(delivered == datagrams)
        await accessory.close()
        await device.close()
    }
}
