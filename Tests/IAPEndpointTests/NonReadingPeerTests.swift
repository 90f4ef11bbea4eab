import Synchronization
import Testing
@testable import IAPEndpoint
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// A peer that sends requests and never acknowledges the answers: the
/// endpoint answers what the link has room for, then leaves the rest of the
/// requests unhandled (within the link's receive budget) instead of making
/// answers nobody takes, so its memory does not grow with the flood.
@Suite struct NonReadingPeerTests {
    @Test func aPeerThatNeverTakesTheAnswersGetsNoMoreMadeForIt() throws {
        let instant = WireFaults(delay: .zero)
        let (peer, side) = LoopbackTransport.pair(towardsSecond: instant, towardsFirst: instant)
        let responder = MediaEndpoint(kind: .responder, transport: side, logger: .discarding("endpoint"))
        let received = Mutex(0)
        try peer.start { event in if case .received(let bytes) = event { received.withLock { $0 += bytes.count } } }
        try responder.start()
        // The accessory's half of the handshake by hand (the loopback hands
        // bytes over inside write, so each answer is there when it returns):
        // detect, a SYN letting the responder send one packet at a time, the
        // ACK of its SYN+ACK (sequence 0).
        peer.write(DetectSequence.bytes)
        var proposal = LinkParameters().synchronization
        proposal.maximumOutstandingPackets = 1
        peer.write(try LinkPacket(control: .syn, sequence: 0x10, payload: proposal.encoded()).encoded())
        peer.write(try LinkPacket(control: .ack, sequence: 0x10, acknowledgement: 0).encoded())
        #expect(responder.isUp)
        // 200 pings of 1 KB (200 KB, within the 256 KiB receive budget),
        // each acknowledging only the SYN+ACK: no answer is ever taken.
        let requests = 200
        for n in 1...requests {
            let ping = try DiagnosticPing.request(sequence: UInt32(n), size: 1_000).encoded()
            peer.write(try LinkPacket(control: .ack, sequence: UInt8(truncatingIfNeeded: 0x10 + n), acknowledgement: 0, session: 1, payload: ping).encoded())
        }
        let observed = Mutex<(messages: Int, receivedBytes: Int)?>(nil)
        for _ in 0..<200 where observed.withLock({ $0 == nil }) {
            responder.withConnection { _, _ in
                let waiting = responder.waiting
                observed.withLock { $0 = waiting }
                return []
            }
        }
        guard let (messages, receivedBytes) = observed.withLock({ $0 }) else {
            Issue.record("the endpoint never handled the action")
            return
        }
        // The link's queue (64 KiB) holds about 60 answers; one more waits
        // in the backlog; the rest of the requests wait unhandled.
        #expect(messages <= 1, "answers made for a peer that takes none: \(messages)")
        #expect(receivedBytes > 100_000, "requests held unhandled: \(receivedBytes) bytes")
        #expect(received.withLock { $0 } < 8_000, "the responder sent more than its window allowed")
    }
}
