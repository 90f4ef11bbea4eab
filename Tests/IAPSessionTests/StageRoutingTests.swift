import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// Each end takes a message by where its session stands, and is due when
/// the earliest of its own timers ends.
@Suite struct StageRoutingTests {
    func link() throws -> NegotiatedLink {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        return try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get()
    }

    func problems(_ outputs: [Connection.Output]) -> [String] {
        outputs.compactMap { if case .event(.problem(let problem)) = $0 { problem } else { nil } }
    }

    @Test func aPhoneAuthenticatingTakesNothingButAuthentication() throws {
        var phone = Connection(.init(role: .device))
        _ = phone.linkUp(try link(), now: .zero)
        #expect(phone.stage == .authenticating)
        let early = try ControlMessage(id: MessageID.identificationInformation).encoded()
        let outputs = phone.received(session: 1, early, now: .milliseconds(5))
        #expect(problems(outputs) == ["the accessory sent IdentificationInformation before authentication finished; ignored"])
        #expect(outputs.allSatisfy { if case .send = $0 { false } else { true } }, "answered identification while authenticating")
        #expect(phone.stage == .authenticating)
    }

    @Test func aPhoneIdentifyingIsDueWhenItsStepEndsWhateverElseWaits() throws {
        var phone = Connection(.init(role: .device, authentication: .off, stepTimeout: .seconds(10)))
        _ = phone.linkUp(try link(), now: .zero)
        #expect(phone.stage == .identifying)
        #expect(phone.nextDeadline == .zero + .seconds(10))
        // The start of a 65,520-byte message: the control channel gives it
        // up 10 s later, after the identification step has ended.
        _ = phone.received(session: 1, [0x40, 0x40, 0xFF, 0xF0, 0x1D, 0x01, 0x00, 0x10], now: .milliseconds(5_000))
        #expect(phone.nextDeadline == .zero + .seconds(10))
        _ = phone.tick(now: .zero + .seconds(10))
        guard case .failed(let reason) = phone.stage else {
            Issue.record("still \(phone.stage) after the identification step ended")
            return
        }
        #expect(reason.hasPrefix("no IdentificationInformation within"))
        #expect(phone.nextDeadline == .milliseconds(15_000), "the partial message is still due")
    }

    @Test func aHeadUnitReportsADeviceThatStartsNothingAtItsStep() throws {
        var headUnit = Connection(.init(role: .accessory, stepTimeout: .seconds(10)))
        _ = headUnit.linkUp(try link(), now: .zero)
        #expect(headUnit.nextDeadline == .zero + .seconds(10))
        let outputs = headUnit.tick(now: .zero + .seconds(10))
        #expect(problems(outputs) == ["the device has not started authentication or identification 10.0 seconds after link up; still waiting"])
        #expect(headUnit.nextDeadline == nil)
    }
}
