import IAPWire

/// The control session as messages: bytes from the link are reassembled
/// into messages (whatever the packet boundaries), messages to send are
/// encoded, and the diagnostic ping is answered here, so that both roles
/// always answer it.
public struct ControlChannel: Sendable {
    public enum Input: Sendable, Equatable {
        case message(ControlMessage)
        /// Bytes that did not form a message, with the reason.
        case problem(String)
    }

    private var decoder = ControlMessageDecoder()

    public init() {}

    /// Feeds bytes delivered on the control session; returns the messages
    /// completed and, separately, ping answers to send back at once.
    public mutating func receive(_ bytes: [UInt8]) -> (inputs: [Input], replies: [ControlMessage]) {
        decoder.append(bytes)
        var inputs: [Input] = []
        var replies: [ControlMessage] = []
        while let event = decoder.next() {
            switch event {
            case .message(let message, _):
                if let answer = DiagnosticPing.answer(to: message) {
                    replies.append(answer)
                } else {
                    inputs.append(.message(message))
                }
            case .malformed(let id, _, let length, let error):
                inputs.append(.problem("malformed message 0x\(String(id, radix: 16, uppercase: true)) (\(length) bytes): \(error.detail)"))
            case .skipped(let skipped):
                inputs.append(.problem("\(skipped.count) bytes on the control session that start no message (\(skipped.reason.rawValue))"))
            }
        }
        return (inputs, replies)
    }

    /// Starts over (a new connection).
    public mutating func reset() { decoder = ControlMessageDecoder() }
}

/// The diagnostic ping both ends always answer: a control message with an
/// even id in 0xFE00...0xFEFE is answered with id + 1 and byte-identical
/// parameters. The range is used by no public iAP2 message table.
public enum DiagnosticPing {
    public static let requestIDs: ClosedRange<UInt16> = 0xFE00...0xFEFE
    /// The id `iapctl ping` sends.
    public static let defaultRequestID: UInt16 = 0xFE00

    public static func isRequest(_ id: UInt16) -> Bool { requestIDs.contains(id) && id % 2 == 0 }

    public static func answer(to message: ControlMessage) -> ControlMessage? {
        guard isRequest(message.id) else { return nil }
        return ControlMessage(id: message.id + 1, parameters: message.parameters)
    }

    /// A ping carrying a sequence number (parameter 0, u32) and `size` bytes
    /// of padding (parameter 1).
    public static func request(sequence: UInt32, size: Int) -> ControlMessage {
        var parameters = [Parameter.uint32(0, sequence)]
        if size > 0 { parameters.append(.blob(1, (0..<size).map { UInt8(truncatingIfNeeded: $0) })) }
        return ControlMessage(id: defaultRequestID, parameters: parameters)
    }

    /// The sequence number of an answer to `request(sequence:size:)`.
    public static func sequence(ofAnswer message: ControlMessage) -> UInt32? {
        guard message.id == defaultRequestID + 1 else { return nil }
        return try? message.parameter(0)?.integer(as: UInt32.self)
    }
}
