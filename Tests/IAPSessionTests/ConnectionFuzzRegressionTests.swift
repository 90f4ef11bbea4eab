import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// Findings of the FuzzSession fuzz target (Fuzz/, Docs/Fuzzing.md), each
/// with its minimised input, on one phone core fed the accessory's bytes.
@Suite struct ConnectionFuzzRegressionTests {
    let identification: [UInt8]

    init() throws {
        identification = try AccessoryIdentity.devKitHeadUnit.message.encoded()
    }

    func linkedPhone(_ authentication: AuthenticationPolicy) throws -> Connection {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        var phone = Connection(.init(role: .device, authentication: authentication))
        _ = phone.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
        return phone
    }

    func events(_ outputs: [Connection.Output]) -> [Connection.Event] {
        outputs.compactMap { if case .event(let event) = $0 { event } else { nil } }
    }

    func sent(_ outputs: [Connection.Output]) -> [UInt16] {
        outputs.compactMap { if case .send(_, let bytes) = $0 { try? ControlMessage(decoding: bytes).id } else { nil } }
    }

    /// `00 00 0C 00 07 01 00 07 04 0E 06`: link up, an AuthenticationCertificate
    /// without a certificate (authentication fails), IdentificationInformation,
    /// then 60 s. The late identification armed the identification timer
    /// although identification never started, and the phone failed a second
    /// time, "no IdentificationInformation within 10 s of StartIdentification".
    /// Found as "the phone went from failed: … to failed: …".
    @Test func anIdentificationAfterAFailedAuthenticationIsIgnored() throws {
        var phone = try linkedPhone(.required)
        _ = phone.received(session: 1, try ControlMessage(id: MessageID.authenticationCertificate, parameters: [.blob(0, [])]).encoded(), now: .zero)
        let failed = phone.stage
        guard case .failed = failed else {
            Issue.record("authentication did not fail: \(failed)")
            return
        }
        let late = phone.received(session: 1, identification, now: .milliseconds(5))
        #expect(sent(late).isEmpty)
        #expect(problems(events(late)).contains { $0.contains("after the session failed") }, "\(events(late))")
        #expect(phone.nextDeadline == nil)
        #expect(stages(events(phone.tick(now: .milliseconds(60_000)))).isEmpty)
        #expect(phone.stage == failed)
    }

    /// `01 00 0C 00 0E 06 07 04`: without authentication, StartIdentification
    /// unanswered for 60 s (identification fails), then IdentificationInformation.
    /// The phone accepted it after it had failed and served media on a link it
    /// had given up. Found as "the phone sent IdentificationAccepted while
    /// failed: no IdentificationInformation within 10.0 seconds".
    @Test func aLateIdentificationAfterTheTimeoutIsIgnored() throws {
        var phone = try linkedPhone(.off)
        _ = phone.tick(now: .milliseconds(10_000))
        let failed = phone.stage
        guard case .failed = failed else {
            Issue.record("identification did not time out: \(failed)")
            return
        }
        let late = phone.received(session: 1, identification, now: .milliseconds(60_000))
        #expect(!sent(late).contains(MessageID.identificationAccepted), "\(sent(late))")
        #expect(phone.stage == failed)
        #expect(!phone.phone.isConnected)
    }

    /// `01 00 0C 00 12 07 04 0E 06`: without authentication, identified, then
    /// the accessory sends IdentificationInformation again. It armed the
    /// identification timer, and 10 s later the phone failed the session it
    /// was serving. Found as "the phone went from identified as iap-devkit head
    /// unit to failed: no IdentificationInformation within 10.0 seconds".
    @Test func anIdentificationRepeatedAfterSuccessDoesNotEndTheSession() throws {
        var phone = try linkedPhone(.off)
        _ = phone.received(session: 1, identification, now: .zero)
        #expect(phone.stage == .identified(AccessoryIdentity.devKitHeadUnit.name))
        _ = phone.received(session: 1, identification, now: .milliseconds(10))
        #expect(phone.nextDeadline == nil)
        #expect(stages(events(phone.tick(now: .milliseconds(11_000)))).isEmpty)
        #expect(phone.stage == .identified(AccessoryIdentity.devKitHeadUnit.name))
    }
}
