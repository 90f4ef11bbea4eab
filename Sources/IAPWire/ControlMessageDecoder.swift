/// Finds control-session messages in a session's byte stream: one message
/// may span several link packets, and one packet may hold the end of one
/// message and the start of the next. It decodes no parameters (a message
/// is its id and where its bytes lie, its parameter list checked in place),
/// so a trace can count messages without allocating; `ControlMessageDecoder`
/// is this framer with each message decoded.
///
/// A candidate must start with `40 40`, claim a length within the maximum and
/// hold a parameter list that fills that length exactly. A candidate whose
/// parameters do not fit is reported as `.malformed` and scanning resumes
/// after its header, so one bad message never hides the next. Bytes that start
/// no message (a trace that begins mid-message) are reported as skipped.
///
/// A candidate that declares more than the maximum length is reported as
/// `.oversized` (naming its id) and scanning resumes one byte on. A candidate
/// still waiting for its end is visible as `pendingMessage`; a caller that
/// decides it will never complete (it has waited too long) calls
/// `abandonPendingMessage()` and the decoder reports its bytes as truncated
/// and resynchronises on the bytes after its first.
public struct ControlMessageFramer: Sendable {
    public enum SkipReason: String, Hashable, Sendable {
        case garbage
        case badLength = "bad_length"
        /// Bytes inside the span of a malformed message.
        case malformedMessage = "malformed_message"
        case truncated
    }

    public struct Skipped: Hashable, Sendable {
        public var offset: Int
        public var count: Int
        public var reason: SkipReason
    }

    public enum Event: Hashable, Sendable {
        /// A whole message: its id, where it lies, and its parameter bytes
        /// (valid until the next `append`; a well-formed parameter list).
        case message(id: UInt16, offset: Int, length: Int, body: ArraySlice<UInt8>)
        case malformed(id: UInt16, offset: Int, length: Int, error: WireError)
        /// A header declaring more than `maximumMessageLength` bytes: it can
        /// never be accepted. Reported as soon as its header has arrived
        /// (`bufferedByteCount` then counts from its first byte); its bytes
        /// are then reported as skipped (`bad_length` for the first).
        case oversized(id: UInt16, offset: Int, length: Int)
        case skipped(Skipped)
    }

    /// The candidate message `next()` is waiting on.
    public struct PendingMessage: Hashable, Sendable {
        /// Offset of its first byte in the stream.
        public var offset: Int
        /// Its id, once its 6-byte header has arrived.
        public var id: UInt16?
        /// Bytes of it held so far.
        public var held: Int
        /// Its declared length, once the length field has arrived.
        public var expected: Int?
    }

    public let maximumMessageLength: Int
    private var buffer: [UInt8] = []
    private var start = 0
    private var bufferOffset = 0
    private var pendingSkip: Skipped?
    private var suspectEnd = 0
    private var suspectReason = SkipReason.garbage
    private var finished = false
    private var abandonedOffset: Int?
    private var oversizedReportedOffset: Int?

    public init(maximumMessageLength: Int = ControlMessage.maximumLength) {
        self.maximumMessageLength = max(ControlMessage.headerLength, min(maximumMessageLength, ControlMessage.maximumLength))
    }

    public var bufferedByteCount: Int { buffer.count - start }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends an array; with nothing buffered it is taken as it is, not
    /// copied. The rest of a message arriving in pieces (a link packet
    /// each) gets room for the whole message at once, not regrown piece by
    /// piece (its declared length is bounded by `maximumMessageLength`).
    public mutating func append(_ bytes: [UInt8]) {
        guard start < buffer.count else {
            bufferOffset += buffer.count
            start = 0
            buffer = bytes
            return
        }
        compact()
        if let expected = pendingMessage?.expected { buffer.reserveCapacity(max(expected, buffer.count + bytes.count)) }
        buffer += bytes
    }

    /// The same for a slice, without going through a generic sequence.
    public mutating func append(_ bytes: ArraySlice<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    private mutating func compact() {
        guard start > 0 else { return }
        buffer.removeSubrange(0..<start)
        bufferOffset += start
        start = 0
    }

    /// After `next()` returned a message that filled the whole buffer (it
    /// began at its start and nothing came after it): hands the buffer
    /// over, so the message can keep it as its own instead of a copy, and
    /// starts an empty one. Nil otherwise; nothing changes then.
    mutating func takeBuffer(holdingOnly message: Range<Int>) -> [UInt8]? {
        guard message.lowerBound == ControlMessage.headerLength, message.upperBound == buffer.count, start == buffer.count else { return nil }
        bufferOffset += buffer.count
        start = 0
        defer { buffer = [] }
        return buffer
    }

    public mutating func finish() { finished = true }

    /// The incomplete candidate message held (after `next()` returned nil), if any.
    public var pendingMessage: PendingMessage? {
        guard !finished, start < buffer.count, buffer[start] == 0x40 else { return nil }
        let available = buffer.count - start
        if available >= 2, buffer[start + 1] != 0x40 { return nil }
        var expected: Int?
        if available >= 4 {
            let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
            guard length >= ControlMessage.headerLength, length <= maximumMessageLength, available < length else { return nil }
            expected = length
        }
        let id = available >= ControlMessage.headerLength ? UInt16(buffer[start + 4]) << 8 | UInt16(buffer[start + 5]) : nil
        return PendingMessage(offset: bufferOffset + start, id: id, held: available, expected: expected)
    }

    /// Gives up on the pending message: `next()` reports its bytes as
    /// truncated and looks for the next message from its second byte on, as
    /// it does at the end of the stream.
    public mutating func abandonPendingMessage() {
        guard let pending = pendingMessage else { return }
        abandonedOffset = pending.offset
    }

    public mutating func next() -> Event? {
        while true {
            guard start < buffer.count else {
                if finished, let skip = pendingSkip {
                    pendingSkip = nil
                    return .skipped(skip)
                }
                return nil
            }
            let absolute = bufferOffset + start
            let available = buffer.count - start
            var skip: (count: Int, reason: SkipReason)?

            if buffer[start] == 0x40 {
                if available < 2 || (buffer[start + 1] == 0x40 && available < ControlMessage.headerLength) {
                    if !finished && abandonedOffset != absolute { return nil }
                    suspectEnd = bufferOffset + buffer.count
                    suspectReason = .truncated
                    skip = (1, .truncated)
                } else if buffer[start + 1] == 0x40 {
                    let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
                    let id = UInt16(buffer[start + 4]) << 8 | UInt16(buffer[start + 5])
                    if length > maximumMessageLength, oversizedReportedOffset != absolute {
                        if let pending = pendingSkip {
                            pendingSkip = nil
                            return .skipped(pending)
                        }
                        oversizedReportedOffset = absolute
                        return .oversized(id: id, offset: absolute, length: length)
                    }
                    if length < ControlMessage.headerLength || length > maximumMessageLength {
                        skip = (1, .badLength)
                    } else if available < length {
                        if !finished && abandonedOffset != absolute { return nil }
                        suspectEnd = bufferOffset + buffer.count
                        suspectReason = .truncated
                        skip = (1, .truncated)
                    } else {
                        if let pending = pendingSkip {
                            pendingSkip = nil
                            return .skipped(pending)
                        }
                        let body = buffer[start + ControlMessage.headerLength..<start + length]
                        do {
                            // Checked in place, without copying.
                            _ = try ParameterList(validating: buffer, in: body.indices)
                            start += length
                            return .message(id: id, offset: absolute, length: length, body: body)
                        } catch {
                            start += ControlMessage.headerLength
                            if absolute + length > suspectEnd || suspectReason != .truncated {
                                suspectEnd = max(suspectEnd, absolute + length)
                                suspectReason = .malformedMessage
                            }
                            return .malformed(id: id, offset: absolute, length: length, error: error)
                        }
                    }
                }
            }
            let (count, reason) = skip ?? scanToNextCandidate(from: absolute)
            start += count
            if var pending = pendingSkip, pending.reason == reason, pending.offset + pending.count == absolute {
                pending.count += count
                pendingSkip = pending
                continue
            }
            let previous = pendingSkip
            pendingSkip = Skipped(offset: absolute, count: count, reason: reason)
            if let previous { return .skipped(previous) }
        }
    }

    /// Bytes up to the next `40`, stopping at the edge of a suspect region so
    /// that each byte gets one reason.
    private func scanToNextCandidate(from absolute: Int) -> (Int, SkipReason) {
        let inSuspect = absolute < suspectEnd
        var limit = buffer.count
        if inSuspect { limit = min(limit, suspectEnd - bufferOffset) }
        var index = start + 1
        while index < limit, buffer[index] != 0x40 { index += 1 }
        return (index - start, inSuspect ? suspectReason : .garbage)
    }
}

/// Reassembles control-session messages from a session's byte stream:
/// `ControlMessageFramer`, each message whole given a buffer of its own.
public struct ControlMessageDecoder: Sendable {
    public typealias SkipReason = ControlMessageFramer.SkipReason
    public typealias Skipped = ControlMessageFramer.Skipped
    public typealias PendingMessage = ControlMessageFramer.PendingMessage

    public enum Event: Hashable, Sendable {
        case message(ControlMessage, offset: Int)
        case malformed(id: UInt16, offset: Int, length: Int, error: WireError)
        /// A header declaring more than `maximumMessageLength` bytes (see `ControlMessageFramer.Event.oversized`).
        case oversized(id: UInt16, offset: Int, length: Int)
        case skipped(Skipped)
    }

    private var framer: ControlMessageFramer

    public init(maximumMessageLength: Int = ControlMessage.maximumLength) {
        framer = ControlMessageFramer(maximumMessageLength: maximumMessageLength)
    }

    public var maximumMessageLength: Int { framer.maximumMessageLength }
    public var bufferedByteCount: Int { framer.bufferedByteCount }
    public var pendingMessage: PendingMessage? { framer.pendingMessage }

    public mutating func append(_ bytes: some Sequence<UInt8>) { framer.append(bytes) }
    public mutating func append(_ bytes: ArraySlice<UInt8>) { framer.append(bytes) }
    public mutating func append(_ bytes: [UInt8]) { framer.append(bytes) }
    public mutating func finish() { framer.finish() }
    public mutating func abandonPendingMessage() { framer.abandonPendingMessage() }

    public mutating func next() -> Event? {
        switch framer.next() {
        case nil: return nil
        case .message(let id, let offset, _, let body)?:
            // A message that was the whole buffer (a long one, as the link
            // delivered it) takes the buffer itself. Any other gets a buffer
            // of its own (one allocation): views into the stream's buffer
            // would keep it alive and make it copy itself on the next append.
            if let whole = framer.takeBuffer(holdingOnly: body.indices) {
                return .message(ControlMessage(id: id, parameters: ParameterList(wellFormed: whole, in: body.indices)), offset: offset)
            }
            return .message(ControlMessage(id: id, parameters: ParameterList(wellFormed: Array(body))), offset: offset)
        case .malformed(let id, let offset, let length, let error)?: return .malformed(id: id, offset: offset, length: length, error: error)
        case .oversized(let id, let offset, let length)?: return .oversized(id: id, offset: offset, length: length)
        case .skipped(let skip)?: return .skipped(skip)
        }
    }
}
