import Synchronization
import Testing
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// A transport that records every write it is handed, then passes it on.
/// Like a USB device, whether it takes several packets in one write is
/// known only once it has started: false before.
private final class RecordingTransport: Transport {
    let inner: LoopbackTransport
    private let coalesced: Bool
    private let sizing: LinkPacketSizing?
    private let started = Mutex(false)
    let writes = Mutex<[[UInt8]]>([])
    var name: String { inner.name }
    var acceptsCoalescedWrites: Bool { started.withLock { $0 } && coalesced }
    var linkPacketSizing: LinkPacketSizing? { started.withLock { $0 } ? sizing : nil }

    init(_ inner: LoopbackTransport, coalesced: Bool, sizing: LinkPacketSizing? = nil) {
        self.inner = inner
        self.coalesced = coalesced
        self.sizing = sizing
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        try inner.start(handler)
        started.withLock { $0 = true }
    }
    func write(_ bytes: [UInt8]) {
        writes.withLock { $0.append(bytes) }
        inner.write(bytes)
    }
    func close() { inner.close() }
}

/// What the endpoint hands its transport: the packets of one input as one
/// write over a byte stream (USB bulk included), one packet per write over
/// a packet transport (USB HID), as the transport's
/// `acceptsCoalescedWrites` says once it has started.
@Suite(.serialized) struct EndpointWriteTests {
    /// A pinger whose writes are recorded and a responder, over a loopback:
    /// a 20,000-byte ping (five 4 KiB packets) goes out and its answer comes
    /// back. Returns every write the pinger made, and the ping.
    private func pingOverRecordedLink(coalesced: Bool) async throws -> (writes: [[UInt8]], ping: [UInt8]) {
        let (a, b) = LoopbackTransport.pair()
        let recorded = RecordingTransport(a, coalesced: coalesced)
        let pinger = MediaEndpoint(kind: .pinger, transport: recorded, logger: .discarding("pinger"))
        let responder = MediaEndpoint(kind: .responder, transport: b, logger: .discarding("responder"))
        let request = DiagnosticPing.request(sequence: 1, size: 20_000)
        let answer = Mutex<ControlMessage?>(nil)
        pinger.onUnhandledMessage { message in
            if DiagnosticPing.sequence(ofAnswer: message) == 1 { answer.withLock { $0 = message } }
        }
        pinger.stop(when: { _ in answer.withLock { $0 } != nil })
        // Sent before the start: it waits for the link, and for the
        // responder to clear the head unit to send (identification).
        pinger.sendFromOutside(request)
        try responder.start()
        try pinger.start()
        await runUntilOneStops([pinger, responder], timeout: .seconds(60))
        #expect(answer.withLock { $0 }?.parameters == request.parameters, "the ping was not answered with identical parameters")
        return (recorded.writes.withLock { $0 }, try request.encoded())
    }

    /// Over a byte stream the packets one send makes go out as one write.
    /// Other writes may go first (the handshake, a bare acknowledgement
    /// whose timer fired, the identification the responder starts), so the
    /// write checked is the first one that carries the ping's data.
    @Test func aStreamTransportGetsThePacketsOfOneInputInOneWrite() async throws {
        let (writes, ping) = try await pingOverRecordedLink(coalesced: true)
        // The data packets' payloads of each write, in order.
        let payloads = writes.map { write -> [ArraySlice<UInt8>] in
            var decoder = LinkStreamDecoder()
            decoder.append(write)
            var payloads: [ArraySlice<UInt8>] = []
            while let event = decoder.next() {
                if case .packet(let header, _, true) = event, header.payloadLength > 0, !header.control.contains(.syn) {
                    payloads.append(decoder.payload)
                }
            }
            return payloads
        }
        guard let first = payloads.firstIndex(where: { $0.contains { $0.starts(with: ping.prefix(6)) } }),
              let start = payloads[first].firstIndex(where: { $0.starts(with: ping.prefix(6)) }) else {
            Issue.record("no write carried the ping: \(writes.map(\.count)) bytes")
            return
        }
        // The ping's packets follow one another in that write.
        var carried: [UInt8] = []
        var packets = 0
        for payload in payloads[first][start...] where carried.count < ping.count {
            carried += payload
            packets += 1
        }
        // Compared here, not by #expect: a failure would print 20 KB twice.
        let whole = carried.starts(with: ping)
        #expect(whole, "the write that began the ping (\(writes[first].count) bytes, \(packets) data packets) carried \(carried.count) of its \(ping.count) bytes")
        #expect(packets == 5, "the ping's first data write held \(packets) of its packets")
    }

    /// What one turn writes goes out in one write, but no more than
    /// `coalescedWriteLimit` is held for it: 24 pings of 6,000 bytes sent
    /// from the first answer's handler are inputs of that same turn (as
    /// `iapctl ping` sends its next), and the link's window lets about 100
    /// KB of them out at once; they leave in writes of at most the limit
    /// and one input's packets, not in one write at the turn's end.
    @Test func aTurnHoldsAtMostTheWriteLimit() async throws {
        let (a, b) = LoopbackTransport.pair()
        let recorded = RecordingTransport(a, coalesced: true)
        let pinger = MediaEndpoint(kind: .pinger, transport: recorded, logger: .discarding("pinger"))
        let responder = MediaEndpoint(kind: .responder, transport: b, logger: .discarding("responder"))
        let burst = 24
        let answered = Mutex(Set<UInt32>())
        pinger.onUnhandledMessage { [pinger] message in
            guard let sequence = DiagnosticPing.sequence(ofAnswer: message) else { return }
            answered.withLock { _ = $0.insert(sequence) }
            if sequence == 1 {
                for next in 2...(burst + 1) { pinger.sendFromOutside(DiagnosticPing.request(sequence: UInt32(next), size: 6_000)) }
            }
        }
        pinger.stop(when: { _ in answered.withLock { $0.count } == burst + 1 })
        pinger.sendFromOutside(DiagnosticPing.request(sequence: 1, size: 10))
        try responder.start()
        try pinger.start()
        await runUntilOneStops([pinger, responder], timeout: .seconds(60))
        #expect(answered.withLock { $0.count } == burst + 1, "answered: \(answered.withLock { $0.sorted() })")
        let sizes = recorded.writes.withLock { $0.map(\.count) }
        // One input here writes one 6,000-byte ping: two packets and their headers.
        let bound = MediaEndpoint.coalescedWriteLimit + 8 * 1024
        #expect(sizes.allSatisfy { $0 <= bound }, "writes of \(sizes.filter { $0 > bound }) bytes, over \(bound)")
        #expect(sizes.contains { $0 > 4 * 4_096 }, "no write carried several pings: \(sizes)")
    }

    /// The link packets a transport suits (known once it has started, as
    /// over USB) are what an endpoint over it proposes, and a length or
    /// window given at construction wins over the transport's: the pinger
    /// is given 20,000-byte packets and keeps the transport's window of 6,
    /// the responder takes the transport's 8,192 bytes and 6. The pinger's
    /// 20,000-byte ping then leaves in 8,192-byte packets at most.
    @Test func anEndpointProposesItsTransportsLinkPacketsUnlessGivenOthers() async throws {
        let (a, b) = LoopbackTransport.pair()
        let sizing = LinkPacketSizing(maximumPacketLength: 8_192, maximumOutstandingPackets: 6)
        let recorded = RecordingTransport(a, coalesced: true, sizing: sizing)
        let pinger = MediaEndpoint(kind: .pinger, transport: recorded, linkPacketLength: 20_000, logger: .discarding("pinger"))
        let responder = MediaEndpoint(kind: .responder, transport: RecordingTransport(b, coalesced: true, sizing: sizing), logger: .discarding("responder"))
        let negotiated = Mutex<NegotiatedLink?>(nil)
        let answered = Mutex(false)
        pinger.onUnhandledMessage { message in
            if DiagnosticPing.sequence(ofAnswer: message) == 1 { answered.withLock { $0 = true } }
        }
        pinger.stop(when: { status in
            if let link = status.negotiated { negotiated.withLock { $0 = link } }
            return answered.withLock { $0 }
        })
        pinger.sendFromOutside(DiagnosticPing.request(sequence: 1, size: 20_000))
        try responder.start()
        try pinger.start()
        await runUntilOneStops([pinger, responder], timeout: .seconds(60))
        let link = try #require(negotiated.withLock { $0 }, "the link never came up")
        #expect(link.receivePacketLength == 20_000, "the pinger proposed \(link.receivePacketLength) bytes, not the 20,000 it was given")
        #expect(link.receiveWindow == 6, "the pinger proposed a window of \(link.receiveWindow), not its transport's 6")
        #expect(link.sendPacketLength == 8_192 && link.sendWindow == 6, "the responder proposed \(link.sendPacketLength) bytes and \(link.sendWindow)")
        #expect(answered.withLock { $0 }, "the ping was not answered")
        let largest = recorded.writes.withLock { writes in
            writes.flatMap { write -> [Int] in
                var decoder = LinkStreamDecoder()
                decoder.append(write)
                var lengths: [Int] = []
                while let event = decoder.next() {
                    if case .packet(let header, _, true) = event { lengths.append(header.length) }
                }
                return lengths
            }.max() ?? 0
        }
        #expect(largest == 8_192, "the pinger's largest packet was \(largest) bytes, not the responder's limit")
    }

    /// Over TCP both ends propose the largest link packets (65,535 bytes,
    /// 5 outstanding: `LinkPacketSizing.large`), so a 60,000-byte ping is
    /// one packet each way; and the proposal holds from the start, though a
    /// socket opens on the transport's own thread after `start` returns.
    @Test func tcpEndsProposeTheLargestLinkPackets() async throws {
        let listener = try TCPTransport.listener(host: "127.0.0.1", port: 0)
        let responder = MediaEndpoint(kind: .responder, transport: listener.nextConnection(), logger: .discarding("responder"))
        let pinger = MediaEndpoint(kind: .pinger, transport: TCPTransport.connect(host: "127.0.0.1", port: listener.port), logger: .discarding("pinger"))
        let negotiated = Mutex<NegotiatedLink?>(nil)
        let answered = Mutex(false)
        pinger.onUnhandledMessage { message in
            if DiagnosticPing.sequence(ofAnswer: message) == 1 { answered.withLock { $0 = true } }
        }
        pinger.stop(when: { status in
            if let link = status.negotiated { negotiated.withLock { $0 = link } }
            return answered.withLock { $0 }
        })
        pinger.sendFromOutside(DiagnosticPing.request(sequence: 1, size: 60_000))
        try responder.start()
        try pinger.start()
        await runUntilOneStops([pinger, responder], timeout: .seconds(60))
        let link = try #require(negotiated.withLock { $0 }, "the link never came up")
        #expect(link.sendPacketLength == 65_535 && link.sendWindow == 5, "the responder proposed \(link.sendPacketLength) bytes, \(link.sendWindow) outstanding")
        #expect(link.receivePacketLength == 65_535 && link.receiveWindow == 5, "the pinger proposed \(link.receivePacketLength) bytes, \(link.receiveWindow) outstanding")
        #expect(answered.withLock { $0 }, "the ping was not answered")
        // In 4,096-byte packets the ping alone is 15.
        #expect(pinger.statistics.packetsSent < 15, "\(pinger.statistics.packetsSent) packets sent for the handshake, identification and one ping")
    }

    /// A packet transport (USB HID) gets exactly one link packet per write.
    @Test func aPacketTransportGetsOnePacketPerWrite() async throws {
        let (writes, _) = try await pingOverRecordedLink(coalesced: false)
        let packets = writes.filter { $0 != DetectSequence.bytes }
        #expect(packets.count >= 5)
        for write in packets {
            #expect((try? LinkPacket(decoding: write)) != nil, "a write of \(write.count) bytes is not exactly one packet")
        }
    }
}
