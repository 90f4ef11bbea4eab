import Foundation
import Synchronization
import Testing
import IAPEndpoint
import IAPLink
import IAPSession
import IAPTransport
import IAPWire

/// The edge's verifier answers after a while (a trust store, a coprocessor
/// on the other end): an answer made for a link that has since gone down
/// must not be taken for the next link's. Otherwise one accessory's
/// certificate verdict passes for another's.
@Suite struct StaleVerdictTests {
    /// Verifier calls the test answers when it chooses.
    final class HeldVerifier: Sendable {
        let calls = Mutex<[(request: VerificationRequest, answer: CheckedContinuation<VerificationAnswer, Never>)]>([])

        func verify(_ request: VerificationRequest) async -> VerificationAnswer {
            await withCheckedContinuation { continuation in calls.withLock { $0.append((request, continuation)) } }
        }

        /// Waits (at most 10 s) until `count` calls have come.
        func waitForCalls(_ count: Int) -> Bool {
            for _ in 0..<2_000 {
                if calls.withLock({ $0.count }) >= count { return true }
                usleep(5_000)
            }
            return false
        }

        func answer(_ index: Int, with answer: VerificationAnswer) {
            calls.withLock { $0[index].answer }.resume(returning: answer)
        }
    }

    /// The control messages in what the phone wrote, packet by packet.
    static func messages(in bytes: [UInt8]) -> [UInt16] {
        var ids: [UInt16] = []
        var offset = 0
        while offset + LinkPacket.headerLength <= bytes.count {
            guard bytes[offset] == 0xFF, bytes[offset + 1] == 0x5A else { offset += 1; continue }
            let length = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            guard length >= LinkPacket.headerLength, offset + length <= bytes.count else { break }
            if let packet = try? LinkPacket(decoding: Array(bytes[offset..<offset + length])), packet.session == 1,
               let message = try? ControlMessage(decoding: packet.payload) {
                ids.append(message.id)
            }
            offset += length
        }
        return ids
    }

    @Test func aCertificateVerdictForAnEarlierLinkIsNotTakenForTheNext() throws {
        let instant = WireFaults(delay: .zero)
        let (peer, side) = LoopbackTransport.pair(towardsSecond: instant, towardsFirst: instant)
        let verifier = HeldVerifier()
        let phone = MediaEndpoint(kind: .phone, transport: side,
                                  authentication: EndpointAuthentication(policy: .required, verifier: { await verifier.verify($0) }),
                                  logger: .discarding("phone"))
        let written = Mutex<[UInt8]>([])
        try peer.start { event in if case .received(let bytes) = event { written.withLock { $0 += bytes } } }
        try phone.start()

        /// The accessory's half of a handshake and its certificate, by hand:
        /// detect, SYN, the ACK of the SYN+ACK, then AuthenticationCertificate.
        func connect(synSequence: UInt8, certificate: [UInt8]) throws {
            let before = written.withLock { $0.count }
            peer.write(DetectSequence.bytes)
            peer.write(try LinkPacket(control: .syn, sequence: synSequence, payload: LinkParameters().synchronization.encoded()).encoded())
            let answer = written.withLock { Array($0[before...]) }
            guard let start = answer.indices.first(where: { answer[$0] == 0xFF && answer[$0 + 1] == 0x5A }),
                  let synAck = try? LinkPacket(decoding: Array(answer[start..<start + (Int(answer[start + 2]) << 8 | Int(answer[start + 3]))])) else {
                Issue.record("no SYN+ACK in \(answer)")
                return
            }
            peer.write(try LinkPacket(control: .ack, sequence: synSequence, acknowledgement: synAck.sequence).encoded())
            let message = try ControlMessage(id: MessageID.authenticationCertificate,
                                             parameters: [.blob(ParameterID.AuthenticationCertificate.certificate, certificate)]).encoded()
            peer.write(try LinkPacket(control: .ack, sequence: synSequence &+ 1, acknowledgement: synAck.sequence &+ 1, session: 1, payload: message).encoded())
        }

        try connect(synSequence: 0x10, certificate: Array("the first accessory".utf8))
        try #require(verifier.waitForCalls(1), "the phone never asked to verify the first certificate")
        // The accessory starts over (a detect on a connected link), and the
        // next one presents its own certificate while the first verdict is
        // still out.
        let secondLink = written.withLock { $0.count }
        try connect(synSequence: 0x20, certificate: Array("the second accessory".utf8))
        try #require(verifier.waitForCalls(2), "the phone never asked to verify the second certificate")
        #expect(verifier.calls.withLock { $0[1].request } == .certificate(Array("the second accessory".utf8)))

        // The first accessory's verdict arrives late: it is dropped.
        verifier.answer(0, with: .certificateAccepted(summary: "the first accessory", challenge: [1, 2, 3]))
        // The second's is a rejection: the phone fails authentication.
        verifier.answer(1, with: .certificateRejected("not a certificate"))
        var sent: [UInt16] = []
        for _ in 0..<2_000 {
            sent = Self.messages(in: written.withLock { Array($0[secondLink...]) })
            if sent.contains(MessageID.authenticationFailed) { break }
            usleep(5_000)
        }
        #expect(!sent.contains(MessageID.requestAuthenticationChallengeResponse), "the second accessory was challenged on the first one's verdict: \(sent)")
        #expect(sent == [MessageID.requestAuthenticationCertificate, MessageID.authenticationFailed], "\(sent)")
        Task { await phone.close() }
    }
}
