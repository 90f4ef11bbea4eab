import Testing
import IAPEndpoint
import IAPLink
import IAPSession
import IAPWire

/// The endpoint core on its own, two of them joined by a direct wire in
/// virtual time, the test playing the edge.
@Suite struct EndpointCoreTests {
    /// A phone (a responder that authenticates) and a head unit, each
    /// core's outputs kept per side; writes handed to the other core in order.
    struct Pair {
        var cores = [EndpointCore(kind: .responder, app: nil, authentication: .required),
                     EndpointCore(kind: .headUnit, app: nil, authentication: .required)]
        var outputs: [[EndpointCore.Output]] = [[], []]
        var now = LinkInstant.milliseconds(1)

        init() { cores[1].recordsSentMessages = true }

        mutating func handle(_ input: EndpointCore.Input, at side: Int) {
            var pending = [(side, input)]
            while !pending.isEmpty {
                let (side, input) = pending.removeFirst()
                for output in cores[side].handle(input, now: now) {
                    outputs[side].append(output)
                    if case .write(let bytes) = output { pending.append((1 - side, .received(bytes))) }
                }
            }
        }

        /// The head unit's authenticator requests, with the link each was asked on.
        var authenticatorLinks: [Int] {
            outputs[1].compactMap { if case .authenticator(_, let link) = $0 { link } else { nil } }
        }

        var headUnitSentCertificate: Bool { outputs[1].contains(.sentMessage(0xAA01)) }
    }

    @Test func anAuthenticatorAnswerForAnEarlierLinkIsDropped() throws {
        var pair = Pair()
        pair.handle(.start, at: 0)
        pair.handle(.start, at: 1)
        let first = try #require(pair.authenticatorLinks.last, "the head unit was not asked for its certificate")
        // The cable comes out and back in before the authenticator answers.
        pair.handle(.transportClosed("unplugged"), at: 0)
        pair.handle(.transportClosed("unplugged"), at: 1)
        pair.handle(.restart, at: 0)
        pair.handle(.restart, at: 1)
        let second = try #require(pair.authenticatorLinks.last)
        #expect(second != first, "the new link asked under the old link's number")
        pair.outputs[1] = []
        pair.handle(.authenticatorAnswered(.certificate(Array("stale".utf8)), link: first), at: 1)
        #expect(!pair.headUnitSentCertificate, "an answer made for the earlier link went out on the new one")
        pair.handle(.authenticatorAnswered(.certificate(Array("fresh".utf8)), link: second), at: 1)
        #expect(pair.headUnitSentCertificate, "the answer for the current link was not sent")
    }
}
