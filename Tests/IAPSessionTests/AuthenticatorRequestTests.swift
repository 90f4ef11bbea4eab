import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// The head unit's authenticator works on one request at a time: a device
/// that repeats RequestAuthenticationChallengeResponse must not queue a
/// signature per message (each was a task at the edge, and a coprocessor
/// takes hundreds of milliseconds for one).
@Suite struct AuthenticatorRequestTests {
    func requests(_ outputs: [Connection.Output]) -> [AuthenticatorRequest] {
        outputs.compactMap { if case .authenticator(let request) = $0 { request } else { nil } }
    }

    func challengeRequest(_ challenge: [UInt8]) throws -> [UInt8] {
        try ControlMessage(id: MessageID.requestAuthenticationChallengeResponse,
                           parameters: [.blob(ParameterID.RequestAuthenticationChallengeResponse.challenge, challenge)]).encoded()
    }

    @Test func repeatedChallengesAskTheAuthenticatorOnceAtATimeAndTheLatestIsAnswered() throws {
        var headUnit = try linkedHeadUnit()
        var asked: [AuthenticatorRequest] = []
        for index in 0..<100 {
            asked += requests(headUnit.received(session: 1, try challengeRequest([UInt8(index), 1, 2, 3]), now: .zero))
        }
        #expect(asked == [.response(challenge: [0, 1, 2, 3])])
        // The answer to the first challenge is not sent: the device has asked
        // with another since. The latest challenge goes to the authenticator.
        let first = headUnit.authenticatorAnswered(.response([0xAA]), now: .milliseconds(1))
        #expect(sent(first).isEmpty, "\(sent(first))")
        #expect(requests(first) == [.response(challenge: [99, 1, 2, 3])])
        let latest = headUnit.authenticatorAnswered(.response([0xBB]), now: .milliseconds(2))
        #expect(sent(latest).map(\.id) == [MessageID.authenticationResponse])
        #expect(sent(latest).first?.parameter(ParameterID.AuthenticationResponse.response)?.data == [0xBB])
        #expect(requests(latest).isEmpty)
        // Nothing is left to ask.
        #expect(sent(headUnit.authenticatorAnswered(.response([0xCC]), now: .milliseconds(3))).isEmpty)
    }

    @Test func aChallengeAskedBeforeTheCertificateIsAnsweredWaitsForIt() throws {
        var headUnit = try linkedHeadUnit()
        let certificateRequest = try ControlMessage(id: MessageID.requestAuthenticationCertificate).encoded()
        #expect(requests(headUnit.received(session: 1, certificateRequest, now: .zero)) == [.certificate])
        #expect(requests(headUnit.received(session: 1, try challengeRequest([7, 7]), now: .zero)).isEmpty)
        let certificate = headUnit.authenticatorAnswered(.certificate([0x30, 0x00]), now: .milliseconds(1))
        #expect(sent(certificate).map(\.id) == [MessageID.authenticationCertificate])
        #expect(requests(certificate) == [.response(challenge: [7, 7])])
        let response = headUnit.authenticatorAnswered(.response([0x01]), now: .milliseconds(2))
        #expect(sent(response).map(\.id) == [MessageID.authenticationResponse])
    }
}
