import Testing
import IAPRoles
import IAPWire

@Suite struct IdentificationTests {
    /// Runs the two roles against each other, message by message, through
    /// their control channels' wire encoding.
    func converse(phone: inout PhoneIdentificationRole, headUnit: inout HeadUnitIdentificationRole) throws -> [String] {
        var log: [String] = []
        var toHeadUnit: [ControlMessage] = []
        var toPhone: [ControlMessage] = []
        func route(_ outputs: [RoleOutput], from role: String, into queue: inout [ControlMessage]) {
            for output in outputs {
                switch output {
                case .send(let message): queue.append(message)
                case .log(let line): log.append("\(role): \(line)")
                }
            }
        }
        route(phone.linkUp(), from: "phone", into: &toHeadUnit)
        var rounds = 0
        while (!toHeadUnit.isEmpty || !toPhone.isEmpty) && rounds < 20 {
            rounds += 1
            for message in toHeadUnit {
                let decoded = try ControlMessage(decoding: try message.encoded())
                route(headUnit.received(decoded), from: "head unit", into: &toPhone)
            }
            toHeadUnit.removeAll()
            for message in toPhone {
                let decoded = try ControlMessage(decoding: try message.encoded())
                route(phone.received(decoded), from: "phone", into: &toHeadUnit)
            }
            toPhone.removeAll()
        }
        return log
    }

    @Test func theHeadUnitIdentifiesAndIsAccepted() throws {
        var phone = PhoneIdentificationRole()
        var headUnit = HeadUnitIdentificationRole()
        let log = try converse(phone: &phone, headUnit: &headUnit)
        guard case .identified(let identity) = phone.state else {
            Issue.record("not identified: \(log)")
            return
        }
        #expect(identity == AccessoryIdentity.devKitHeadUnit)
        #expect(headUnit.identified)
        #expect(log.contains("head unit: identification accepted"), "\(log)")
    }

    /// A device reading the declared lists sees each id once, and every
    /// message the head unit's roles send or take is declared.
    @Test func theDevKitHeadUnitDeclaresEachMessageOnce() {
        let identity = AccessoryIdentity.devKitHeadUnit
        #expect(Set(identity.messagesSent).count == identity.messagesSent.count, "\(identity.messagesSent.map { String($0, radix: 16) })")
        #expect(Set(identity.messagesReceived).count == identity.messagesReceived.count)
        #expect(Set(MediaMessage.headUnitSends).isSubset(of: identity.messagesSent))
        #expect(Set(MediaMessage.phoneSends).isSubset(of: identity.messagesReceived))
    }

    @Test func missingAndMalformedParametersAreEachNamed() throws {
        typealias Information = ParameterID.IdentificationInformation
        var message = AccessoryIdentity.devKitHeadUnit.message
        message.parameters.removeAll { $0.id == Information.manufacturer || $0.id == Information.supportedLanguage }
        message.parameters = ParameterList(message.parameters.map {  // current: 1 byte
            $0.id == Information.maximumCurrentDrawnFromDevice ? Parameter(id: Information.maximumCurrentDrawnFromDevice, data: [1]) : $0
        })
        message.parameters = ParameterList(message.parameters.map { $0.id == Information.name ? Parameter(id: Information.name, data: Array("no nul".utf8)) : $0 })
        guard case .failure(let problems) = AccessoryIdentity.validate(message) else {
            Issue.record("a broken identification was accepted")
            return
        }
        let expected: Set<UInt16> = [Information.name, Information.manufacturer, Information.maximumCurrentDrawnFromDevice, Information.supportedLanguage]
        #expect(Set(problems.problems.map(\.parameter)) == expected)
        #expect(problems.description.contains("Manufacturer (2) missing"))
        #expect(problems.description.contains("MaximumCurrentDrawnFromDevice (9) malformed"))
        #expect(problems.rejection.id == 0x1D03)
        #expect(Set(problems.rejection.parameters.map(\.id)) == expected)
        #expect(problems.rejection.parameters.allSatisfy { $0.data.isEmpty })
        // Without any transport component the rejection says so.
        var bare = AccessoryIdentity.devKitHeadUnit.message
        let transports = [Information.serialTransportComponent, Information.usbDeviceTransportComponent, Information.usbHostTransportComponent,
                          Information.bluetoothTransportComponent]
        bare.parameters.removeAll { transports.contains($0.id) }
        guard case .failure(let noTransport) = AccessoryIdentity.validate(bare) else {
            Issue.record("identification without a transport component was accepted")
            return
        }
        #expect(noTransport.description.contains("no transport component"))
    }

    @Test func phoneRejectsAndHeadUnitReportsTheParameters() throws {
        var phone = PhoneIdentificationRole()
        _ = phone.linkUp()
        var message = AccessoryIdentity.devKitHeadUnit.message
        message.parameters.removeAll { $0.id == ParameterID.IdentificationInformation.serialNumber }
        let outputs = phone.received(message)
        guard case .send(let rejection)? = outputs.first else {
            Issue.record("no rejection sent")
            return
        }
        var headUnit = HeadUnitIdentificationRole()
        let logged = headUnit.received(rejection)
        #expect(logged == [.log("identification rejected; the device objects to: SerialNumber")])
        #expect(phone.state == .awaitingIdentification)
    }

    @Test func undeclaredMessagesAndEarlyMessagesAreRefused() throws {
        var phone = PhoneIdentificationRole()
        _ = phone.linkUp()
        let early = phone.received(ControlMessage(id: MessageID.startNowPlayingUpdates))
        #expect(early == [.log("error: StartNowPlayingUpdates before identification; ignored")])
        _ = phone.received(AccessoryIdentity.devKitHeadUnit.message)
        let undeclared = phone.received(ControlMessage(id: 0xAE00))  // StartPowerUpdates: not declared
        #expect(undeclared.count == 1)
        guard case .log(let line)? = undeclared.first else {
            Issue.record("expected a log line for an undeclared message, got \(undeclared)")
            return
        }
        #expect(line.contains("did not declare"))
    }

    /// The id lists are read from the decoded message's own bytes, where
    /// they sit at an offset: each id as sent, the longest lists one message
    /// can carry included (reading them once cost a copy of the list per
    /// byte, quadratic; Benchmarks/identification-loop measures it).
    @Test func longMessageListsAreReadInPlaceAndWhole() throws {
        var identity = AccessoryIdentity.devKitHeadUnit
        identity.messagesSent = (0..<16_000).map { UInt16(truncatingIfNeeded: $0 &* 2_654_435_761 >> 7) }
        identity.messagesReceived = [0x5001, 0xAB00, 0x0102]
        let decoded = try ControlMessage(decoding: try identity.message.encoded())
        guard case .success(let read) = AccessoryIdentity.validate(decoded) else {
            Issue.record("an identity with 16,000 messages sent was not accepted: \(AccessoryIdentity.validate(decoded))")
            return
        }
        #expect(read.messagesSent == identity.messagesSent)
        #expect(read.messagesReceived == identity.messagesReceived)
    }

    @Test func pingIsAnsweredWithIdenticalParameters() throws {
        var channel = ControlChannel()
        let ping = DiagnosticPing.request(sequence: 7, size: 300)
        let bytes = try ping.encoded()
        var replies: [ControlMessage] = []
        for chunk in stride(from: 0, to: bytes.count, by: 17).map({ Array(bytes[$0..<min(bytes.count, $0 + 17)]) }) {
            let result = channel.receive(chunk)
            #expect(result.inputs.isEmpty)
            replies += result.replies
        }
        #expect(replies.count == 1)
        #expect(replies.first?.id == 0xFE01)
        #expect(replies.first?.parameters == ping.parameters)
        #expect(replies.first.flatMap(DiagnosticPing.sequence(ofAnswer:)) == 7)
        // Odd ids and ids outside the range are not pings.
        #expect(DiagnosticPing.answer(to: ControlMessage(id: 0xFE01)) == nil)
        #expect(DiagnosticPing.answer(to: ControlMessage(id: 0xFF00)) == nil)
        #expect(DiagnosticPing.answer(to: ControlMessage(id: 0xFEFE))?.id == 0xFEFF)
    }
}
