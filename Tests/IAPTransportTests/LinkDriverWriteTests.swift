import Testing
import IAPLink
import IAPTransport
import IAPWire

/// A transport that records every write it is handed, then passes it on.
private final class RecordingTransport: Transport {
    let inner: LoopbackTransport
    let acceptsCoalescedWrites: Bool
    let writes = Locked<[[UInt8]]>([])
    var name: String { inner.name }

    init(_ inner: LoopbackTransport, coalesced: Bool) {
        self.inner = inner
        acceptsCoalescedWrites = coalesced
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) { try inner.start(handler) }
    func write(_ bytes: [UInt8]) {
        writes.withLock { $0.append(bytes) }
        inner.write(bytes)
    }
    func close() { inner.close() }
}

/// A transport that can hold writes back and then pass them on as one, so
/// that the peer reads several packets at once.
private final class HoldingTransport: Transport {
    let inner: LoopbackTransport
    private let held = Locked<[UInt8]?>(nil)
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
    func release() {
        let bytes = held.withLock { held -> [UInt8] in
            defer { held = nil }
            return held ?? []
        }
        if !bytes.isEmpty { inner.write(bytes) }
    }
}

/// Reads events without handing anything back until told to.
private final class SlowReader: Sendable {
    let delivered = Locked(0)
    private let reader: Task<Void, Never>

    init(_ driver: LinkDriver) {
        let delivered = self.delivered
        reader = Task {
            for await event in driver.events {
                if case .data(_, let bytes) = event { delivered.withLock { $0 += bytes.count } }
            }
        }
    }

    deinit { reader.cancel() }

    func wait(seconds: Double = 10, until done: @Sendable (Int) -> Bool) async -> Int {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline, !delivered.withLock({ done($0) }) {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return delivered.withLock { $0 }
    }
}

@Suite(.serialized) struct LinkDriverWriteTests {
    /// An accessory over `accessorySide` and a device over `deviceSide`,
    /// started and with the link up; the device's events collected.
    private func connected(over accessorySide: Transport, and deviceSide: Transport) async
        -> (accessory: LinkDriver, device: LinkDriver, deviceEvents: EventCollector) {
        let accessory = LinkDriver(configuration: LinkConfiguration(role: .accessory), transport: accessorySide)
        let device = LinkDriver(configuration: LinkConfiguration(role: .device), transport: deviceSide)
        let deviceEvents = EventCollector(device)
        let accessoryEvents = EventCollector(accessory)
        do {
            try device.start()
            try accessory.start()
        } catch {
            Issue.record("a loopback end did not start: \(error)")
        }
        let events = await accessoryEvents.wait { $0.contains(where: isUpEvent) }
        if !events.contains(where: isUpEvent) { Issue.record("the link did not come up: \(events)") }
        return (accessory, device, deviceEvents)
    }

    /// Brings a link up over a loopback whose accessory side records its
    /// writes, then sends 20,000 bytes in one call (five 4 KiB packets).
    private func sendOverRecordedLink(coalesced: Bool) async throws -> (writes: [[UInt8]], delivered: [UInt8]) {
        let (a, d) = LoopbackTransport.pair()
        let recorded = RecordingTransport(a, coalesced: coalesced)
        let (accessory, device, deviceEvents) = await connected(over: recorded, and: d)
        let before = recorded.writes.withLock { $0.count }
        let payload = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        try await accessory.send(payload, session: 1)
        let events = await deviceEvents.wait { received($0, session: 1).count >= payload.count }
        await accessory.close()
        await device.close()
        #expect(received(events, session: 1) == payload)
        return (Array(recorded.writes.withLock { $0 }.dropFirst(before)), received(events, session: 1))
    }

    /// Over a byte stream the packets one send makes go out as one write.
    /// A bare acknowledgement of the handshake may go out on its own
    /// before the send (its timer can fire first on a loaded machine), so
    /// the send's first write is the first one that carries data.
    @Test func aStreamTransportGetsThePacketsOfOneInputInOneWrite() async throws {
        let (writes, _) = try await sendOverRecordedLink(coalesced: true)
        let dataPacketCounts = writes.map { write -> Int in
            var decoder = LinkStreamDecoder()
            decoder.append(write)
            var packets = 0
            while let event = decoder.next() {
                if case .packet(let header, _, _) = event, header.payloadLength > 0 { packets += 1 }
            }
            return packets
        }
        guard let first = dataPacketCounts.firstIndex(where: { $0 > 0 }) else {
            Issue.record("no write carried data: \(writes.map(\.count)) bytes")
            return
        }
        #expect(dataPacketCounts[first] == 5,
                "the send's first data write held \(dataPacketCounts[first]) data packets (\(writes[first].count) bytes)")
    }

    /// Bytes on the control session may go up joined; datagrams (file
    /// transfer, external accessory) arrive one event each, even when one
    /// read brought several.
    @Test func datagramsArriveOneEventEach() async throws {
        let (a, d) = LoopbackTransport.pair()
        let holding = HoldingTransport(a)
        let (accessory, device, deviceEvents) = await connected(over: holding, and: d)
        let datagrams: [[UInt8]] = (1...5).map { [UInt8](repeating: UInt8($0), count: 10 * $0) }
        // All five packets reach the device in one read.
        holding.hold()
        for datagram in datagrams { try await accessory.send(datagram, session: 2) }
        holding.release()
        let events = await deviceEvents.wait { received($0, session: 2).count >= datagrams.joined().count }
        let delivered = events.compactMap { event -> [UInt8]? in if case .data(2, let bytes) = event { bytes } else { nil } }
        #expect(delivered == datagrams)
        await accessory.close()
        await device.close()
    }

    /// A packet transport (USB) gets exactly one link packet per write.
    @Test func aPacketTransportGetsOnePacketPerWrite() async throws {
        let (writes, _) = try await sendOverRecordedLink(coalesced: false)
        #expect(writes.count >= 5)
        for write in writes {
            #expect((try? LinkPacket(decoding: write)) != nil, "a write of \(write.count) bytes is not exactly one packet")
        }
    }

    /// A reader that hands nothing back holds the peer back at the receive
    /// buffer limit; handing the bytes back lets the rest through.
    @Test func aReaderThatFallsBehindHoldsThePeerBackUntilItHandsBytesBack() async throws {
        let (a, d) = LoopbackTransport.pair()
        let limit = 32 * 1024
        // No timer moves anything on (no retransmission within the test, no
        // keep-alive): only handing bytes back can release held packets.
        let quiet = LinkParameters(retransmitTimeout: .seconds(60))
        let accessory = LinkDriver(configuration: LinkConfiguration(role: .accessory, parameters: quiet, keepAliveInterval: nil, silenceLimit: nil),
                                   transport: a)
        let device = LinkDriver(configuration: LinkConfiguration(role: .device, parameters: quiet, keepAliveInterval: nil, silenceLimit: nil,
                                                                 receiveBufferLimit: limit), transport: d)
        let reader = SlowReader(device)
        let accessoryEvents = EventCollector(accessory)
        try device.start()
        try accessory.start()
        _ = await accessoryEvents.wait { $0.contains(where: isUpEvent) }
        let total = 200_000
        let sending = Task {
            var sent = 0
            while sent < total {
                try await accessory.send([UInt8](repeating: 7, count: 20_000), session: 1)
                sent += 20_000
            }
        }
        // Nothing handed back: delivery stops near the limit.
        _ = await reader.wait(seconds: 2) { $0 >= total }
        let held = reader.delivered.withLock { $0 }
        #expect(held < limit + 2 * 4096, "\(held) bytes delivered to a reader that handed none back (limit \(limit))")
        // Handed back bit by bit, as a reader catching up does: everything arrives.
        var handedBack = 0
        let deadline = ContinuousClock.now + .seconds(20)
        while handedBack < total, ContinuousClock.now < deadline {
            let delivered = reader.delivered.withLock { $0 }
            if delivered > handedBack {
                device.consumed(delivered - handedBack)
                handedBack = delivered
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        #expect(handedBack == total, "only \(handedBack) of \(total) bytes arrived after the reader caught up")
        // Closed first: a sender still waiting for room is let go, not left hanging.
        await accessory.close()
        await device.close()
        if handedBack == total { try await sending.value } else { _ = await sending.result }
    }
}
