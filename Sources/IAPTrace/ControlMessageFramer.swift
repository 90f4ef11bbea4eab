import IAPWire

/// Finds control messages in one session's reassembled byte stream. It
/// reports what IAPWire's `ControlMessageDecoder` reports for a trace (the
/// same messages, malformed candidates and skipped runs, with the same
/// offsets and reasons) but decodes no parameters: a message is its id and
/// where its bytes lie, and its parameter list is only walked in place to
/// see that it fills the message exactly. So `--stats` counts messages
/// without allocating, and only a renderer that shows parameters decodes them.
///
/// A header's 16-bit length can never exceed `ControlMessage.maximumLength`,
/// the longest the trace decoder accepts, so no candidate is oversized.
struct ControlMessageFramer {
    typealias SkipReason = ControlMessageDecoder.SkipReason

    struct Skipped: Equatable {
        var offset: Int
        var count: Int
        var reason: SkipReason
    }

    enum Event {
        /// A whole message; `body` (its parameter bytes) stays valid until the next `append`.
        case message(id: UInt16, offset: Int, length: Int, body: ArraySlice<UInt8>)
        /// A candidate whose parameters do not fill its length; scanning
        /// resumes after its header, so one bad message never hides the next.
        case malformed(id: UInt16, offset: Int, length: Int, body: ArraySlice<UInt8>)
        case skipped(Skipped)
    }

    private var buffer: [UInt8] = []
    private var start = 0
    private var bufferOffset = 0
    private var pendingSkip: Skipped?
    private var suspectEnd = 0
    private var suspectReason = SkipReason.garbage
    private var finished = false

    mutating func append(_ bytes: ArraySlice<UInt8>) {
        if start > 0 {
            buffer.removeSubrange(0..<start)
            bufferOffset += start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// No more bytes will come: candidates still waiting for their end are
    /// reported as truncated.
    mutating func finish() { finished = true }

    mutating func next() -> Event? {
        let headerLength = ControlMessage.headerLength
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
                if available < 2 || (buffer[start + 1] == 0x40 && available < headerLength) {
                    if !finished { return nil }
                    suspectEnd = bufferOffset + buffer.count
                    suspectReason = .truncated
                    skip = (1, .truncated)
                } else if buffer[start + 1] == 0x40 {
                    let length = Int(buffer[start + 2]) << 8 | Int(buffer[start + 3])
                    let id = UInt16(buffer[start + 4]) << 8 | UInt16(buffer[start + 5])
                    if length < headerLength {
                        skip = (1, .badLength)
                    } else if available < length {
                        if !finished { return nil }
                        suspectEnd = bufferOffset + buffer.count
                        suspectReason = .truncated
                        skip = (1, .truncated)
                    } else {
                        if let pending = pendingSkip {
                            pendingSkip = nil
                            return .skipped(pending)
                        }
                        let body = buffer[start + headerLength..<start + length]
                        if Self.isParameterList(body) {
                            start += length
                            return .message(id: id, offset: absolute, length: length, body: body)
                        }
                        start += headerLength
                        if absolute + length > suspectEnd || suspectReason != .truncated {
                            suspectEnd = max(suspectEnd, absolute + length)
                            suspectReason = .malformedMessage
                        }
                        return .malformed(id: id, offset: absolute, length: length, body: body)
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

    /// Whether `bytes` is exactly a list of parameters (the test
    /// `Parameter.list(decoding:)` applies), walking their headers in place.
    static func isParameterList(_ bytes: ArraySlice<UInt8>) -> Bool {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let remaining = bytes.endIndex - index
            guard remaining >= Parameter.headerLength else { return false }
            let length = Int(bytes[index]) << 8 | Int(bytes[index + 1])
            guard length >= Parameter.headerLength, length <= remaining else { return false }
            index += length
        }
        return true
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
