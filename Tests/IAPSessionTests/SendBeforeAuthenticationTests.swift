import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// The head unit sends nothing but authentication messages until the device
/// has said AuthenticationSucceeded (or skipped authentication by starting
/// identification): a real device ignores anything earlier, so `iapctl
/// ping`'s first ping used to be lost. What is asked for earlier waits, in
/// order, and goes out then; it is dropped, named, when authentication fails
/// or the link ends, and more than a few are refused.
@Suite struct SendBeforeAuthenticationTests {
    func problems(_ outputs: [Connection.Output]) -> [String] {
        outputs.compactMap { if case .event(.problem(let text)) = $0 { text } else { nil } }
    }

    func pingSequences(_ messages: [ControlMessage]) -> [UInt32] {
        messages.compactMap { try? $0.parameter(ParameterID.DiagnosticPing.sequence)?.integer(as: UInt32.self) }
    }

    func deviceSends(_ id: UInt16, to headUnit: inout Connection) throws -> [Connection.Output] {
        headUnit.received(session: 1, try ControlMessage(id: id).encoded(), now: .milliseconds(5))
    }

    @Test func pingsAskedBeforeAuthenticationSucceededGoOutAfterItInOrder() throws {
        var headUnit = try linkedHeadUnit()
        let certificateRequest = try deviceSends(MessageID.requestAuthenticationCertificate, to: &headUnit)
        #expect(sent(certificateRequest).isEmpty)
        var early: [Connection.Output] = []
        for sequence in UInt32(1)...3 { early += headUnit.send(DiagnosticPing.request(sequence: sequence, size: 4), now: .milliseconds(1)) }
        #expect(sent(early).isEmpty, "sent before authentication: \(sent(early).map(\.id))")
        // Authentication messages still go out meanwhile.
        let certificate = headUnit.authenticatorAnswered(.certificate([0x30, 0x00]), now: .milliseconds(2))
        #expect(sent(certificate).map(\.id) == [MessageID.authenticationCertificate])
        let succeeded = try deviceSends(MessageID.authenticationSucceeded, to: &headUnit)
        #expect(pingSequences(sent(succeeded)) == [1, 2, 3])
        // From now on a ping goes out at once.
        #expect(pingSequences(sent(headUnit.send(DiagnosticPing.request(sequence: 4, size: 4), now: .milliseconds(6)))) == [4])
    }

    @Test func aDeviceThatStartsIdentificationWithoutAuthenticationGetsThePingsThen() throws {
        var headUnit = try linkedHeadUnit()
        #expect(sent(headUnit.send(DiagnosticPing.request(sequence: 1, size: 0), now: .milliseconds(1))).isEmpty)
        let started = sent(try deviceSends(MessageID.startIdentification, to: &headUnit))
        #expect(pingSequences(started) == [1])
        #expect(started.contains { $0.id == MessageID.identificationInformation })
    }

    @Test func whatWaitedIsDroppedAndNamedWhenAuthenticationFails() throws {
        var headUnit = try linkedHeadUnit()
        _ = headUnit.send(DiagnosticPing.request(sequence: 1, size: 0), now: .milliseconds(1))
        let failed = try deviceSends(MessageID.authenticationFailed, to: &headUnit)
        #expect(sent(failed).isEmpty)
        #expect(problems(failed).contains { $0.contains("authentication failed") && $0.contains("DiagnosticPing") }, "\(problems(failed))")
    }

    @Test func whatWaitedIsDroppedAndNamedWhenTheLinkGoesDown() throws {
        var headUnit = try linkedHeadUnit()
        _ = headUnit.send(DiagnosticPing.request(sequence: 1, size: 0), now: .milliseconds(1))
        let down = headUnit.linkDown(now: .milliseconds(2))
        #expect(problems(down).contains { $0.contains("link ended") && $0.contains("DiagnosticPing") }, "\(problems(down))")
    }

    @Test func moreThanTheCapAreRefusedByName() throws {
        var headUnit = try linkedHeadUnit()
        let cap = Connection.maximumHeldUntilAuthenticated
        var refused: [String] = []
        for sequence in 1...(cap + 1) {
            refused += problems(headUnit.send(DiagnosticPing.request(sequence: UInt32(sequence), size: 0), now: .milliseconds(1)))
        }
        #expect(refused.count == 1)
        #expect(refused.first?.contains("not sending DiagnosticPing") == true, "\(refused)")
        #expect(pingSequences(sent(try deviceSends(MessageID.authenticationSucceeded, to: &headUnit))) == (1...cap).map(UInt32.init))
    }
}
