import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// A device that rejects the head unit's declared message lists (one that
/// knows standard iAP2 only and refuses the dev-kit extension's ids) gets a
/// second identification with the standard messages only, and the head unit
/// then keeps to those lists.
@Suite struct IdentificationFallbackTests {
    /// The control messages a batch of outputs sends.
    func sentMessages(_ outputs: [Connection.Output]) throws -> [ControlMessage] {
        var decoder = ControlMessageDecoder()
        var messages: [ControlMessage] = []
        for case .send(session: 1, let bytes) in outputs {
            decoder.append(bytes)
            while let event = decoder.next() {
                if case .message(let message, _) = event { messages.append(message) } else { Issue.record("the head unit sent \(event)") }
            }
        }
        return messages
    }

    func declaredSent(_ message: ControlMessage) throws -> Set<UInt16> {
        let bytes = try #require(message.parameter(ParameterID.IdentificationInformation.messagesSentByAccessory)?.data)
        return Set(stride(from: 0, to: bytes.count - 1, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) })
    }

    func deliver(_ message: ControlMessage, to connection: inout Connection) throws -> [Connection.Output] {
        connection.received(session: 1, try message.encoded(), now: .milliseconds(10))
    }

    @Test func rejectedListsAreDeclaredAgainWithStandardMessagesOnly() throws {
        var headUnit = try linkedHeadUnit(authentication: .off)
        let first = try sentMessages(try deliver(ControlMessage(id: MessageID.startIdentification), to: &headUnit))
        try #require(first.map(\.id) == [MessageID.identificationInformation])
        #expect(try declaredSent(first[0]).contains(MessageID.browseRequest))

        let rejection = ControlMessage(id: MessageID.identificationRejected, parameters: [.none(ParameterID.IdentificationInformation.messagesSentByAccessory)])
        let second = try sentMessages(try deliver(rejection, to: &headUnit))
        try #require(second.map(\.id) == [MessageID.identificationInformation], "\(second)")
        let declared = try declaredSent(second[0])
        #expect(declared.contains(MessageID.startNowPlayingUpdates))
        #expect(declared.contains(MessageID.accessoryHIDReport))
        #expect(!declared.contains { MessageID.devKitExtension.contains($0) || (0xFE00...0xFEFF).contains($0) }, "\(declared.sorted())")

        // Accepted: the head unit sends only what it declared the second time.
        let accepted = try deliver(ControlMessage(id: MessageID.identificationAccepted), to: &headUnit)
        #expect(headUnit.isMediaConnected)
        let ids = try sentMessages(accepted).map(\.id)
        #expect(ids.contains(MessageID.startNowPlayingUpdates), "\(ids)")
        #expect(!ids.contains(MessageID.headUnitLimits), "sent an extension message it no longer declares: \(ids)")
        // Asked for later, an extension message is refused by name: only the
        // configured lists declared it, not the ones the device accepted.
        let asked = headUnit.send(ControlMessage(id: MessageID.headUnitLimits), now: .milliseconds(20))
        #expect(try sentMessages(asked).isEmpty, "sent HeadUnitLimits after declaring standard messages only")
        let refusals = asked.compactMap { if case .event(.problem(let problem)) = $0 { problem } else { nil } }
        #expect(refusals == ["not sending HeadUnitLimits: this head unit did not declare it in MessagesSentByAccessory"])
    }

    @Test func aSecondRejectionIsReportedNotRetried() throws {
        var headUnit = try linkedHeadUnit(authentication: .off)
        _ = try deliver(ControlMessage(id: MessageID.startIdentification), to: &headUnit)
        let rejection = ControlMessage(id: MessageID.identificationRejected, parameters: [.none(ParameterID.IdentificationInformation.messagesReceivedFromDevice)])
        #expect(try sentMessages(try deliver(rejection, to: &headUnit)).count == 1)
        #expect(try sentMessages(try deliver(rejection, to: &headUnit)).isEmpty)
    }

    /// A rejection of something else (the name, say) is not about the lists:
    /// sending the same lists again would not help, and nothing is sent.
    @Test func aRejectionOfOtherParametersIsNotRetried() throws {
        var headUnit = try linkedHeadUnit(authentication: .off)
        _ = try deliver(ControlMessage(id: MessageID.startIdentification), to: &headUnit)
        let rejection = ControlMessage(id: MessageID.identificationRejected, parameters: [.none(ParameterID.IdentificationInformation.name)])
        #expect(try sentMessages(try deliver(rejection, to: &headUnit)).isEmpty)
    }

    /// The next connection starts from the configured identity again.
    @Test func theFallbackLastsOneConnection() throws {
        var role = HeadUnitIdentificationRole()
        _ = role.received(ControlMessage(id: MessageID.startIdentification))
        _ = role.received(ControlMessage(id: MessageID.identificationRejected, parameters: [.none(ParameterID.IdentificationInformation.messagesSentByAccessory)]))
        #expect(role.identity == AccessoryIdentity.devKitHeadUnit.standardOnly)
        role.linkDown()
        #expect(role.identity == AccessoryIdentity.devKitHeadUnit)
    }
}
