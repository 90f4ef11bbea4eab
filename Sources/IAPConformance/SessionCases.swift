import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// Session-level cases: the whole session (authentication, identification,
/// media) between a phone and a head-unit connection core, in virtual time,
/// with one end misbehaving the way real peers do.
extension ConformanceCase {
    static let sessionCases: [ConformanceCase] = [
        sessionAuthenticated, sessionBadSignature, sessionCertificateGarbage, sessionStepTimeouts,
        sessionIdentificationCorrected, sessionUndeclaredMessage,
    ]

    static let sessionAuthenticated = ConformanceCase(name: "session-authenticated", purpose: "authentication, then identification, then media, in that order, on both ends") { s in
        var sim = s.startSession()
        let connected = sim.connect(within: .seconds(10)) && sim.run(for: .seconds(2)) { !$0.headUnit.tabs.isEmpty }
        s.expect(connected, "the session did not reach media, with the root tabs shown, within 12 s")
        let phone = sim.sentMessageIDs[.device] ?? []
        s.expect(Array(phone.prefix(5)) == [0xAA00, 0xAA02, 0xAA05, 0x1D00, 0x1D02],
                 "the phone's first messages were \(names(phone.prefix(5))), not RequestAuthenticationCertificate, RequestAuthenticationChallengeResponse, AuthenticationSucceeded, StartIdentification, IdentificationAccepted")
        let headUnit = sim.sentMessageIDs[.accessory] ?? []
        s.expect(Array(headUnit.prefix(3)) == [0xAA01, 0xAA03, 0x1D01], "the head unit's first messages were \(names(headUnit.prefix(3)))")
        let firstMedia = phone.firstIndex { !MessageID.authentication.contains($0) && !MessageID.identification.contains($0) }
        s.expect(firstMedia.map { $0 >= 5 } ?? false, "a media message went out before authentication and identification were done")
        s.expect(sim.phoneSessionEvents.contains { if case .accessoryCertificate = $0 { true } else { false } }, "the phone did not report the accessory certificate")
        s.note("\(phone.count) phone and \(headUnit.count) head-unit messages; tabs: \(sim.headUnit.tabs.map(\.text).joined(separator: ", "))")
        s.session = sim
    }

    static let sessionBadSignature = ConformanceCase(name: "session-bad-signature", purpose: "a tampered challenge response ends in AuthenticationFailed, with no identification") { s in
        s.runAuthenticatorFault(.tamperedSignature, expecting: [0xAA00, 0xAA02], reason: "does not verify")
    }

    static let sessionCertificateGarbage = ConformanceCase(name: "session-certificate-garbage", purpose: "a certificate that is no certificate ends in AuthenticationFailed naming the problem") { s in
        s.runAuthenticatorFault(.garbageCertificate, expecting: [0xAA00], reason: "certificate cannot be used")
    }

    static let sessionStepTimeouts = ConformanceCase(name: "session-step-timeouts", purpose: "each step a peer leaves out times out on its own, named (certificate, response, identification)") { s in
        let steps: [(withheld: UInt16, expected: [UInt16], reason: String)] = [
            (0xAA01, [0xAA00, 0xAA04], "waiting for AuthenticationCertificate"),
            (0xAA03, [0xAA00, 0xAA02, 0xAA04], "waiting for AuthenticationResponse"),
            (0x1D01, [0xAA00, 0xAA02, 0xAA05, 0x1D00], "no IdentificationInformation"),
        ]
        for step in steps {
            var sim = s.startSession()
            sim.withheld[.accessory] = [step.withheld]
            sim.start()
            sim.run(for: .seconds(9))
            s.expect(!stages(sim.phoneSessionEvents).contains { if case .failed = $0 { true } else { false } },
                     "withholding \(names([step.withheld])): the phone gave up before its 10 s step timeout")
            sim.run(for: .seconds(3))
            let phone = sim.sentMessageIDs[.device] ?? []
            s.expect(phone == step.expected, "withholding \(names([step.withheld])): the phone sent \(names(phone)), expected \(names(step.expected))")
            guard case .failed(let reason)? = stages(sim.phoneSessionEvents).last else {
                s.expect(false, "withholding \(names([step.withheld])): the phone did not fail the step")
                continue
            }
            s.expect(reason.contains(step.reason), "withholding \(names([step.withheld])): the failure says \"\(reason)\"")
            s.session = sim
        }
        s.note("certificate, response and identification each timed out after 10 s")
    }

    static let sessionIdentificationCorrected = ConformanceCase(name: "session-identification-corrected", purpose: "an identification missing a parameter is rejected naming it; a corrected one is accepted") { s in
        var incomplete = AccessoryIdentity.devKitHeadUnit
        incomplete.supportedLanguages = []
        var sim = s.startSession(headUnit: Connection.Configuration(role: .accessory, identity: incomplete))
        sim.start()
        sim.run(for: .seconds(2))
        let phone = sim.sentMessageIDs[.device] ?? []
        s.expect(phone.last == MessageID.identificationRejected, "the phone did not reject the incomplete identification: \(names(phone))")
        s.expect(sim.transcript.contains { $0.who == "phone" && $0.text.contains("SupportedLanguage") && $0.text.contains("missing") },
                 "the rejection does not name the missing SupportedLanguage parameter")
        sim.inject(AccessoryIdentity.devKitHeadUnit.message, from: .accessory)
        sim.run(for: .seconds(2))
        s.expect(sim.sentMessageIDs[.device]?.contains(MessageID.identificationAccepted) == true, "the corrected identification was not accepted")
        s.expect(sim.connections == 1, "the phone did not open its media connection after the correction")
        s.session = sim
    }

    static let sessionUndeclaredMessage = ConformanceCase(name: "session-undeclared-message", purpose: "messages outside the declared lists are neither sent nor acted on, and each is named") { s in
        var identity = AccessoryIdentity.devKitHeadUnit
        let queueResponse = MessageID.queueResponse
        identity.messagesReceived.removeAll { $0 == queueResponse }
        var sim = s.startSession(headUnit: Connection.Configuration(role: .accessory, identity: identity))
        s.expect(sim.connect(within: .seconds(10)), "the session did not reach media")
        // The phone must not answer with a message the accessory cannot receive.
        sim.headUnitDoes("open up next") { $0.requestQueue(now: $1) }
        sim.run(for: .seconds(2))
        s.expect(!(sim.sentMessageIDs[.device] ?? []).contains(queueResponse), "the phone sent QueueResponse, which the accessory did not declare")
        s.expect(problems(sim.phoneSessionEvents).contains { $0.contains("not sending QueueResponse") }, "the phone did not name the message it withheld")
        // The accessory sends a message it did not declare: the phone ignores it, saying so.
        sim.inject(ControlMessage(id: 0xAE00), from: .accessory)
        sim.run(for: .seconds(1))
        s.expect(problems(sim.phoneSessionEvents).contains { $0.contains("did not declare in MessagesSentByAccessory") },
                 "an undeclared message from the accessory was not reported")
        s.session = sim
    }
}

extension Scenario {
    /// A session simulation for this case's seed.
    func startSession(headUnit: Connection.Configuration = .init(role: .accessory)) -> MediaSimulator {
        var sim = MediaSimulator(seed: seed, headUnit: headUnit)
        sim.stepBudget = stepBudget
        return sim
    }

    /// Runs the session with the accessory's authenticator misbehaving and
    /// expects the phone to end authentication after `expected`, saying why.
    mutating func runAuthenticatorFault(_ fault: VirtualTimeEdge.AuthenticatorFault, expecting expected: [UInt16], reason: String) {
        var sim = startSession()
        sim.edge.fault = fault
        sim.start()
        sim.run(for: .seconds(5))
        expectAuthenticationFailed(sim, after: expected, reason: reason)
        session = sim
    }

    mutating func expectAuthenticationFailed(_ sim: MediaSimulator, after expected: [UInt16], reason: String) {
        let phone = sim.sentMessageIDs[.device] ?? []
        expect(phone == expected + [0xAA04], "the phone sent \(names(phone)); expected \(names(expected + [0xAA04]))")
        expect(!phone.contains(MessageID.startIdentification), "identification started after a failed authentication")
        guard case .failed(let why)? = stages(sim.phoneSessionEvents).last else {
            expect(false, "the phone did not fail: \(stages(sim.phoneSessionEvents))")
            return
        }
        expect(why.contains(reason), "the failure says \"\(why)\", not why (\(reason))")
        expect(stages(sim.headUnitSessionEvents).last.map { if case .failed = $0 { true } else { false } } ?? false,
               "the head unit did not hear of the failure")
        note(why)
    }
}

func names(_ ids: some Sequence<UInt16>) -> String {
    "[" + ids.map { MessageCatalog.name(of: $0) ?? "0x\(String($0, radix: 16))" }.joined(separator: ", ") + "]"
}

func stages(_ events: [Connection.Event]) -> [Connection.Stage] {
    events.compactMap { if case .stage(let stage) = $0 { stage } else { nil } }
}

func problems(_ events: [Connection.Event]) -> [String] {
    events.compactMap { if case .problem(let problem) = $0 { problem } else { nil } }
}
