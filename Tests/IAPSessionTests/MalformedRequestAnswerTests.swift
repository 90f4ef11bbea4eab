import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// The connection core hands a request it cannot decode to the phone role,
/// which answers it: the head unit is not left waiting for its timeout.
@Suite struct MalformedRequestAnswerTests {
    @Test func aRemoteCommandOfAnUnknownKindGetsAFailedRequestStatus() throws {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        var phone = Connection(.init(role: .device, authentication: .off))
        _ = phone.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
        _ = phone.received(session: 1, try AccessoryIdentity.devKitHeadUnit.message.encoded(), now: .zero)
        #expect(phone.phone.isConnected)

        let command = ControlMessage(id: MessageID.remoteCommand, parameters: [
            .integer(ParameterID.RemoteCommand.requestIdentifier, UInt32(77)), .integer(ParameterID.RemoteCommand.command, UInt8(200)),
        ])
        let outputs = phone.received(session: 1, try command.encoded(), now: .milliseconds(10))
        let answers = try outputs.compactMap { output -> MediaMessage? in
            guard case .send(_, let bytes) = output else { return nil }
            return try MediaMessage(try ControlMessage(decoding: bytes))
        }
        #expect(answers.count == 1, "\(answers)")
        guard case .requestStatus(77, .commandFailed, let error?)? = answers.first else {
            Issue.record("expected a failed RequestStatus for request 77, got \(answers)")
            return
        }
        #expect(error.contains("unknown command 200"))
        // The problem is still reported.
        let problems = outputs.compactMap { if case .event(.problem(let text)) = $0 { text } else { nil } }
        #expect(problems.contains { $0.contains("malformed") }, "\(problems)")
    }
}
