import Testing
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPWire

/// A responder's endpoint core in virtual time: what it writes is kept,
/// time moves only when the test runs it, the core ticked at its deadlines.
private struct VirtualResponder {
    var core = EndpointCore(kind: .responder, app: nil, authentication: .off)
    private(set) var now = LinkInstant.zero
    private(set) var written: [UInt8] = []

    mutating func start() { keep(core.handle(.start, now: now)) }

    mutating func write(_ bytes: [UInt8]) { keep(core.handle(.received(bytes), now: now)) }

    mutating func run(for duration: Duration) {
        let end = now + duration
        while let deadline = core.nextDeadline, deadline <= end {
            now = max(now, deadline)
            keep(core.handle(.tick, now: now))
        }
        now = end
    }

    /// A responder asks the edge for nothing: only its writes matter.
    private mutating func keep(_ outputs: [EndpointCore.Output]) {
        for case .write(let bytes) in outputs { written += bytes }
    }
}

/// The accessory's view of what the responder wrote: its acknowledgement of
/// our packets, and its answers on the control session, each packet once.
private struct ResponderReader {
    /// The last of our packets the responder acknowledged (our SYN's, at first).
    var acknowledged: UInt8
    /// The sequence number the responder's next data packet will carry.
    var nextAnswerPacket: UInt8 = 1
    private(set) var answered = Set<UInt32>()
    private var decoder = LinkStreamDecoder()
    private var messages = ControlMessageDecoder()
    private var read = 0

    init(acknowledged: UInt8) { self.acknowledged = acknowledged }

    mutating func read(_ written: [UInt8], control: UInt8) {
        decoder.append(written[read...])
        read = written.count
        while let event = decoder.next() {
            guard case .packet(let header, _, true) = event else { continue }
            if header.control.contains(.ack) { acknowledged = header.acknowledgement }
            // Retransmissions of a packet already read are skipped.
            guard header.payloadLength > 0, header.session == control, header.sequence == nextAnswerPacket else { continue }
            nextAnswerPacket &+= 1
            messages.append(decoder.payload)
            while case .message(let message, _)? = messages.next() {
                if let sequence = DiagnosticPing.sequence(ofAnswer: message) { answered.insert(sequence) }
            }
        }
    }
}

/// A session that falls behind (its answers wait for a peer that does not
/// take them) leaves what arrives unhandled: the link's receive budget
/// fills, the link holds the peer's packets unacknowledged, and the peer,
/// its window full, is held back. Once the peer takes the answers, the
/// session catches up, hands the bytes back to the link, and the rest comes
/// through. (The endpoint's side of what `LinkEnd` does for a reader that
/// falls behind; HostilePeerLinkTests has the link's own.)
@Suite struct FallingBehindTests {
    @Test func aSessionThatFallsBehindHoldsThePeerBackUntilItCatchesUp() throws {
        var responder = VirtualResponder()
        responder.start()
        // The accessory's half of the handshake by hand: detect, a SYN
        // letting the responder send one packet at a time, the ACK of its
        // SYN+ACK (sequence 0).
        var proposal = LinkParameters().synchronization
        proposal.maximumOutstandingPackets = 1
        responder.write(DetectSequence.bytes)
        responder.write(try Self.packet(.syn, sequence: 0x10, payload: proposal.encoded()))
        responder.write(try Self.packet(.ack, sequence: 0x10, acknowledgement: 0))
        guard let link = responder.core.link.negotiated, let control = link.sessions.first(where: { $0.type == .control })?.id else {
            Issue.record("the link did not come up")
            return
        }
        let window = link.receiveWindow
        let budget = responder.core.configuration.link.receiveBufferLimit
        // 600 pings of 1 KB: more than the receive budget (256 KiB) and the
        // link's send queue (64 KiB) of answers together.
        let total = 600
        var reader = ResponderReader(acknowledged: 0x10)
        var sent = 0
        func sequence(_ ping: Int) -> UInt8 { 0x10 &+ UInt8(truncatingIfNeeded: ping) }
        var outstanding: Int { Int(sequence(sent) &- reader.acknowledged) }
        func sendPing(acknowledging acknowledgement: UInt8) throws {
            sent += 1
            let ping = try DiagnosticPing.request(sequence: UInt32(sent), size: 1_000).encoded()
            responder.write(try Self.packet(.ack, sequence: sequence(sent), acknowledgement: acknowledgement, session: control, payload: ping))
        }

        // The peer sends within the responder's window and takes no answer.
        var heldBack = false
        while sent < total {
            reader.read(responder.written, control: control)
            if outstanding < window {
                try sendPing(acknowledging: 0)
                continue
            }
            // The window is full: time for the responder's cumulative
            // acknowledgement (50 ms), if it has room for what it got.
            responder.run(for: .milliseconds(200))
            reader.read(responder.written, control: control)
            if outstanding >= window {
                heldBack = true
                break
            }
        }
        #expect(heldBack, "all \(sent) requests were acknowledged although no answer was taken")
        #expect(sent < total)
        let held = responder.core.waiting
        #expect(held.messages <= 1, "answers made for a peer that takes none: \(held.messages)")
        #expect(held.receivedBytes <= budget && held.receivedBytes > budget - 2 * 1024,
                "\(held.receivedBytes) bytes of requests held unhandled, not about the receive budget of \(budget)")
        #expect(responder.core.link.statistics.packetsHeldForReader >= 1)

        // The peer takes the answers: it acknowledges each one as it comes,
        // and sends the rest of its requests as the window opens.
        let deadline = responder.now + .seconds(60)
        var lastAcknowledged: UInt8 = 0
        while reader.answered.count < total && responder.now < deadline {
            let acknowledgement = reader.nextAnswerPacket &- 1
            if sent < total && outstanding < window {
                try sendPing(acknowledging: acknowledgement)
            } else if acknowledgement != lastAcknowledged {
                responder.write(try Self.packet(.ack, sequence: sequence(sent), acknowledgement: acknowledgement))
            }
            lastAcknowledged = acknowledgement
            responder.run(for: .milliseconds(1))
            reader.read(responder.written, control: control)
        }
        let everyOne = reader.answered == Set(1...UInt32(total))
        #expect(everyOne, "\(reader.answered.count) of \(total) requests answered once the peer read")
        #expect(responder.core.waiting == (0, 0), "still waiting after the peer read everything: \(responder.core.waiting)")
        #expect(responder.core.link.isUp)
    }

    private static func packet(_ control: LinkControl, sequence: UInt8, acknowledgement: UInt8 = 0, session: UInt8 = 0, payload: [UInt8] = []) throws -> [UInt8] {
        try LinkPacket(control: control, sequence: sequence, acknowledgement: acknowledgement, session: session, payload: payload).encoded()
    }
}
