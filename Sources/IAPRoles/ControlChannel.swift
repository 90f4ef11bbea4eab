import IAPWire

/// A control message that was started and will not be finished: its bytes
/// were dropped and the channel resynchronised after its first byte.
public struct IncompleteMessage: Hashable, Sendable, CustomStringConvertible {
    public enum Reason: Hashable, Sendable {
        /// Held longer than the channel's silence bound without completing.
        case waited(Duration)
        /// Its header declares more than the channel accepts: it can never complete.
        case overBound(maximum: Int)
    }

    /// The message id, when its header had arrived.
    public var id: UInt16?
    /// Bytes of it held when it was dropped.
    public var held: Int
    /// Its declared length, when the length field had arrived.
    public var expected: Int?
    public var reason: Reason

    public init(id: UInt16?, held: Int, expected: Int?, reason: Reason) {
        self.id = id
        self.held = held
        self.expected = expected
        self.reason = reason
    }

    public var description: String {
        let name = id.map { "message 0x" + String($0, radix: 16, uppercase: true) } ?? "a message (id not yet received)"
        let of = expected.map { "\(held) of \($0) bytes" } ?? "\(held) bytes"
        switch reason {
        case .waited(let duration):
            return "\(name) incomplete after \(duration) (\(of) held): dropped"
        case .overBound(let maximum):
            return "\(name) declares \(expected ?? 0) bytes, over the \(maximum)-byte maximum (\(held) held): dropped"
        }
    }
}

/// The control session as messages: bytes from the link are reassembled
/// into messages (whatever the packet boundaries), messages to send are
/// encoded, and the diagnostic ping is answered here, so that both roles
/// always answer it.
///
/// A message started and never finished would hold the session silently:
/// every later message would be taken as its continuation. The channel gives
/// up on a partial message when its header declares more than
/// `maximumMessageLength`, or (when the caller passes the time, sans-IO) when
/// it has been held for longer than `silenceBound` since its first byte
/// arrived; it reports an `IncompleteMessage` (also as a `.problem` input),
/// drops the partial and resynchronises on the bytes after its first byte, so
/// messages that were taken for its continuation are still delivered.
public struct ControlChannel: Sendable {
    public enum Input: Sendable, Equatable {
        case message(ControlMessage)
        /// Bytes that did not form a message, with the reason.
        case problem(String)
    }

    /// What one call produced.
    public struct Output: Sendable, Equatable {
        /// Messages and problems, in stream order.
        public var inputs: [Input] = []
        /// Ping answers to send back at once.
        public var replies: [ControlMessage] = []
        /// Partial messages given up on (each also in `inputs` as a `.problem`).
        public var incomplete: [IncompleteMessage] = []
    }

    /// The link's default silence limit (`LinkConfiguration.silenceLimit`).
    public static let defaultSilenceBound: Duration = .seconds(10)

    public let maximumMessageLength: Int
    public let silenceBound: Duration
    private var decoder: ControlMessageDecoder
    /// The pending message being timed: its stream offset and when it was first seen.
    private var pendingSince: (offset: Int, at: LinkInstant)?

    public init(maximumMessageLength: Int = ControlMessage.maximumLength, silenceBound: Duration = ControlChannel.defaultSilenceBound) {
        decoder = ControlMessageDecoder(maximumMessageLength: maximumMessageLength)
        self.maximumMessageLength = decoder.maximumMessageLength
        self.silenceBound = silenceBound
    }

    /// Feeds bytes delivered on the control session; returns the messages
    /// completed and, separately, ping answers to send back at once. Without
    /// the time, a partial message is given up only when over the length bound.
    public mutating func receive(_ bytes: [UInt8]) -> (inputs: [Input], replies: [ControlMessage]) {
        decoder.append(bytes)
        var output = Output()
        drain(into: &output)
        return (output.inputs, output.replies)
    }

    /// Feeds bytes delivered at `now`; a partial message held for longer
    /// than `silenceBound` is given up.
    public mutating func receive(_ bytes: [UInt8], now: LinkInstant) -> Output {
        decoder.append(bytes)
        var output = Output()
        drain(into: &output)
        expire(now: now, into: &output)
        return output
    }

    /// Gives up a partial message held for longer than `silenceBound` at
    /// `now`. Call it at `deadline` (or on any tick) when no bytes arrive.
    public mutating func expire(now: LinkInstant) -> Output {
        var output = Output()
        expire(now: now, into: &output)
        return output
    }

    /// When the partial message held now will be given up, if none completes it.
    public var deadline: LinkInstant? {
        guard let pendingSince, decoder.pendingMessage?.offset == pendingSince.offset else { return nil }
        return pendingSince.at + silenceBound
    }

    /// The partial message held, if any.
    public var pendingMessage: ControlMessageDecoder.PendingMessage? { decoder.pendingMessage }

    /// Starts over (a new connection).
    public mutating func reset() {
        decoder = ControlMessageDecoder(maximumMessageLength: maximumMessageLength)
        pendingSince = nil
    }

    private mutating func expire(now: LinkInstant, into output: inout Output) {
        while let pending = decoder.pendingMessage {
            guard let since = pendingSince, since.offset == pending.offset else {
                pendingSince = (pending.offset, now)
                return
            }
            let waited = now - since.at
            // At the deadline itself: a caller ticking at `deadline` must see it expire.
            guard waited >= silenceBound else { return }
            let incomplete = IncompleteMessage(id: pending.id, held: pending.held, expected: pending.expected, reason: .waited(waited))
            output.incomplete.append(incomplete)
            output.inputs.append(.problem(incomplete.description))
            decoder.abandonPendingMessage()
            // Messages inside the dropped bytes arrived at `since` at the earliest: a
            // partial one among them is timed from then, not given a fresh bound.
            drain(into: &output)
            guard let next = decoder.pendingMessage else { break }
            // Abandoning always moves past the dropped message's first byte.
            guard next.offset > pending.offset else { pendingSince = nil; return }
            pendingSince = (next.offset, since.at)
        }
        pendingSince = nil
    }

    private mutating func drain(into output: inout Output) {
        while let event = decoder.next() {
            switch event {
            case .message(let message, _):
                if let answer = DiagnosticPing.answer(to: message) {
                    output.replies.append(answer)
                } else {
                    output.inputs.append(.message(message))
                }
            case .malformed(let id, _, let length, let error):
                output.inputs.append(.problem("malformed message 0x\(String(id, radix: 16, uppercase: true)) (\(length) bytes): \(error.detail)"))
            case .oversized(let id, _, let length):
                // The decoder stops at the oversized header when it reports it.
                let held = min(decoder.bufferedByteCount, length)
                let incomplete = IncompleteMessage(id: id, held: held, expected: length, reason: .overBound(maximum: maximumMessageLength))
                output.incomplete.append(incomplete)
                output.inputs.append(.problem(incomplete.description))
            case .skipped(let skipped):
                output.inputs.append(.problem("\(skipped.count) bytes on the control session that start no message (\(skipped.reason.rawValue))"))
            }
        }
    }
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

    /// A ping carrying a sequence number (u32) and `size` bytes of padding.
    public static func request(sequence: UInt32, size: Int) -> ControlMessage {
        var parameters = [Parameter.uint32(ParameterID.DiagnosticPing.sequence, sequence)]
        if size > 0 {
            // Written in place: a `map` over the range took about 35 µs for 60,000 bytes.
            let padding = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                for index in 0..<size { buffer[index] = UInt8(truncatingIfNeeded: index) }
                count = size
            }
            parameters.append(.blob(ParameterID.DiagnosticPing.padding, padding))
        }
        return ControlMessage(id: defaultRequestID, parameters: parameters)
    }

    /// The sequence number of an answer to `request(sequence:size:)`.
    public static func sequence(ofAnswer message: ControlMessage) -> UInt32? {
        guard message.id == defaultRequestID + 1 else { return nil }
        return try? message.parameter(ParameterID.DiagnosticPing.sequence)?.integer(as: UInt32.self)
    }
}
