import IAPLink
import IAPRoles
import IAPWire

/// What both ends of a `Connection` share on one link: which session
/// carries control messages and which carries files, the control channel's
/// reassembly, where the session stands, the outputs of the input being
/// handled and the link's problem budget.
struct SessionChannels: Sendable {
    private(set) var link: NegotiatedLink?
    private(set) var controlSession: UInt8?
    private(set) var fileSession: UInt8?
    var control = ControlChannel()
    private(set) var stage = Connection.Stage.disconnected
    private var outputs: [Connection.Output] = []
    private var problemsOnLink = 0

    var isMediaConnected: Bool {
        if case .identified = stage { return true }
        return false
    }

    /// A new link: the sessions it carries, nothing kept of the last one.
    mutating func up(_ link: NegotiatedLink) {
        problemsOnLink = 0
        self.link = link
        controlSession = link.sessions.first { $0.type == .control }?.id
        fileSession = link.sessions.first { $0.type == .fileTransfer }?.id
        control.reset()
    }

    /// The link went down; false if none was up. The problems counted past
    /// the budget are reported once, in a sum.
    mutating func down() -> Bool {
        guard link != nil else { return false }
        if problemsOnLink > Connection.problemsReportedPerLink {
            outputs.append(.event(.problem("\(problemsOnLink) problems on this link, the last \(problemsOnLink - Connection.problemsReportedPerLink) of them not reported one by one")))
        }
        problemsOnLink = 0
        link = nil
        controlSession = nil
        fileSession = nil
        control.reset()
        return true
    }

    /// Messages either end may send at any stage, whatever the lists declared.
    static func isAlwaysSendable(_ id: UInt16) -> Bool {
        MessageID.authentication.contains(id) || MessageID.identification.contains(id) || DiagnosticPing.requestIDs.contains(id)
    }

    /// Sends a message on the control session, once an end has let it out.
    mutating func sendOnControl(_ message: ControlMessage) {
        guard let session = controlSession else {
            emit(.problem("cannot send \(Connection.name(message.id)): the link is not up"))
            return
        }
        do {
            outputs.append(.send(session: session, try message.encoded()))
        } catch {
            emit(.problem("cannot send \(Connection.name(message.id)): \(error.detail)"))
        }
    }

    mutating func sendOnFileSession(_ bytes: [UInt8]) {
        guard let fileSession else { return }
        outputs.append(.send(session: fileSession, bytes))
    }

    /// The media message a control message holds; nil (and reported) for a
    /// message no role knows. Throws what made a known message malformed.
    mutating func typed(_ message: ControlMessage) throws(WireError) -> MediaMessage? {
        guard let typed = try MediaMessage(message) else {
            emit(.unhandled(message))
            return nil
        }
        return typed
    }

    mutating func append(_ output: Connection.Output) { outputs.append(output) }

    mutating func setStage(_ stage: Connection.Stage) {
        guard self.stage != stage else { return }
        self.stage = stage
        emit(.stage(stage))
    }

    mutating func fail(_ reason: String) {
        log(reason)
        setStage(.failed(reason))
    }

    mutating func emit(_ event: Connection.Event) {
        if case .problem = event {
            problemsOnLink += 1
            if problemsOnLink > Connection.problemsReportedPerLink {
                // Powers of two past the budget: 64, 128, 256…
                guard problemsOnLink & (problemsOnLink - 1) == 0 else { return }
                outputs.append(.event(.problem("\(problemsOnLink) problems on this link so far; past the first \(Connection.problemsReportedPerLink) they are counted, not reported one by one")))
                return
            }
        }
        outputs.append(.event(event))
    }

    mutating func log(_ line: String) { emit(.log(line)) }

    /// The outputs of one input, in order. Handed over and replaced by an
    /// empty list: emptying the list while the caller holds its storage
    /// allocated a new buffer at every input, even one that outputs nothing.
    mutating func take() -> [Connection.Output] {
        defer { outputs = [] }
        return outputs
    }
}

/// One end of a `Connection` (`PhoneConnection`, `HeadUnitConnection`):
/// the shared channels, and what the end does with a message or a
/// file-transfer datagram at its stage.
protocol SessionEnd {
    var channels: SessionChannels { get set }
    /// Sends a message once the declared lists and the stage let it out.
    mutating func send(_ message: ControlMessage)
    /// A whole control message from the peer, other than a diagnostic ping's.
    mutating func handle(_ message: ControlMessage, now: LinkInstant)
    mutating func handle(_ datagram: FileTransferDatagram, now: LinkInstant) throws
}

extension SessionEnd {
    /// Bytes delivered in order on a link session.
    mutating func deliver(session: UInt8, _ bytes: [UInt8], now: LinkInstant) {
        if session == channels.controlSession {
            controlInputs(channels.control.receive(bytes, now: now), now: now)
        } else if session == channels.fileSession {
            do {
                try handle(try FileTransferDatagram(decoding: bytes), now: now)
            } catch {
                channels.emit(.problem("file-transfer session: \(error)"))
            }
        } else {
            channels.emit(.problem("\(bytes.count) bytes on session \(session), which carries nothing this end uses"))
        }
    }

    /// What the control channel made of the bytes: ping answers go back at
    /// once; a message that never completes is reported and dropped.
    mutating func controlInputs(_ output: ControlChannel.Output, now: LinkInstant) {
        for reply in output.replies { send(reply) }
        for input in output.inputs {
            switch input {
            case .problem(let problem): channels.emit(.problem("control session: \(problem)"))
            case .message(let message):
                // Answers to this end's diagnostic pings, at any stage.
                if DiagnosticPing.requestIDs.contains(message.id) {
                    channels.emit(.unhandled(message))
                } else {
                    handle(message, now: now)
                }
            }
        }
    }

    mutating func roleOutput(_ output: RoleOutput) {
        switch output {
        case .send(let message): send(message)
        case .log(let line): channels.log(line)
        }
    }
}

/// The earliest of two deadlines, if either is set.
func earliest(_ first: LinkInstant?, _ second: LinkInstant?) -> LinkInstant? {
    guard let first else { return second }
    guard let second else { return first }
    return min(first, second)
}
