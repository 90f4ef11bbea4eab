import Testing
import IAPRoles
import IAPWire

/// Every request from the head unit gets an answer (DOMAIN.md), even one the
/// phone cannot read, as long as its request identifier can be read.
@Suite struct MalformedRequestTests {
    static func phone() -> PhoneMediaRole {
        var phone = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(supportedRates: [1]), offersContent: true)
        _ = phone.connect(now: t0)
        return phone
    }

    /// Decodes `message` as the phone's connection core does and hands the
    /// failure to the role.
    static func answers(to message: ControlMessage, phone: PhoneMediaRole = phone()) -> [MediaMessage] {
        do {
            _ = try MediaMessage(message)
            Issue.record("message \(message.id) decoded; the test wants one that does not")
            return []
        } catch {
            return sent(phone.receiveMalformed(message, error))
        }
    }

    @Test func anUnknownRemoteCommandIsAnsweredNamingIt() throws {
        let message = ControlMessage(id: MessageID.remoteCommand, parameters: [
            .integer(ParameterID.RemoteCommand.requestIdentifier, UInt32(41)), .integer(ParameterID.RemoteCommand.command, UInt8(99)),
        ])
        let answers = Self.answers(to: message)
        #expect(answers.count == 1)
        guard case .requestStatus(41, .commandFailed, let error?)? = answers.first else {
            Issue.record("expected a failed RequestStatus for request 41, got \(answers)")
            return
        }
        #expect(error.contains("unknown command 99"))
    }

    @Test func aModeOutOfRangeIsAnswered() throws {
        let repeatKind = RemoteCommand.changeRepeatMode(.off).kind.rawValue
        let message = ControlMessage(id: MessageID.remoteCommand, parameters: [
            .integer(ParameterID.RemoteCommand.requestIdentifier, UInt32(42)), .integer(ParameterID.RemoteCommand.command, repeatKind),
            .integer(ParameterID.RemoteCommand.mode, UInt8(7)),
        ])
        guard case .requestStatus(42, .commandFailed, let error?)? = Self.answers(to: message).first else {
            Issue.record("repeat mode 7 was not answered")
            return
        }
        #expect(error.contains("repeat mode 7"))
    }

    @Test func eachRequestIsAnsweredWithItsOwnResponse() throws {
        // Each request with its identifier and nothing else: a required parameter is missing.
        let browse = Self.answers(to: ControlMessage(id: MessageID.browseRequest, parameters: [.integer(0, UInt32(1))]))
        let play = Self.answers(to: ControlMessage(id: MessageID.playItemRequest, parameters: [.integer(0, UInt32(2))]))
        let queue = Self.answers(to: ControlMessage(id: MessageID.queueRequest, parameters: [.integer(0, UInt32(3))]))
        let image = Self.answers(to: ControlMessage(id: MessageID.imageRequest, parameters: [.integer(0, UInt32(4))]))
        guard case .browseResponse(let response)? = browse.first, response.requestID == 1, response.status == .commandFailed else {
            Issue.record("browse request: \(browse)")
            return
        }
        guard case .requestStatus(2, .commandFailed, _)? = play.first else { Issue.record("play request: \(play)"); return }
        guard case .queueResponse(let queued)? = queue.first, queued.requestID == 3, queued.status == .commandFailed else {
            Issue.record("queue request: \(queue)")
            return
        }
        guard case .imageResponse(4, .commandFailed, nil, _)? = image.first else { Issue.record("image request: \(image)"); return }
    }

    @Test func withoutARequestIdentifierOrAConnectionNothingCanBeAnswered() throws {
        let unreadable = ControlMessage(id: MessageID.remoteCommand, parameters: [.integer(ParameterID.RemoteCommand.command, UInt8(99))])
        #expect(Self.answers(to: unreadable).isEmpty)
        let message = ControlMessage(id: MessageID.remoteCommand, parameters: [
            .integer(ParameterID.RemoteCommand.requestIdentifier, UInt32(9)), .integer(ParameterID.RemoteCommand.command, UInt8(99)),
        ])
        let notConnected = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(supportedRates: [1]), offersContent: true)
        #expect(Self.answers(to: message, phone: notConnected).isEmpty)
    }
}
