/// Splits a byte stream into iAP2 link packets, detect sequences and iAP1
/// frames, whatever the read boundaries were.
///
/// Feed bytes with `append`, then call `next()` until it returns nil ("need
/// more bytes"). At the end of the stream call `finish()` and drain `next()`
/// once more: a packet cut off by the end is then reported as skipped.
///
/// The decoder never trusts a length: a candidate start must carry a valid
/// header checksum and a length within `maximumPacketLength` before any bytes
/// are waited for, and memory holds at most one such candidate plus whatever
/// the caller appended. Bytes that do not form a packet are reported as
/// `.skipped` events (consecutive bytes with the same reason are merged) and
/// counted in `statistics`. Output depends only on the bytes, never on how
/// they were split across `append` calls.
///
/// A packet whose payload checksum fails is reported with
/// `payloadChecksumValid == false`, and scanning resumes right after its
/// header: if the packet was truncated by a lost read, the packets that follow
/// it are still found. Bytes of its claimed payload that do not form a packet
/// are reported as skipped with reason `.badPayloadChecksum`.
public struct LinkStreamDecoder: Sendable {
    public struct Configuration: Hashable, Sendable {
        /// Packets longer than this are refused (the negotiated or configured maximum).
        public var maximumPacketLength: Int
        /// Recognise iAP1 frames (`FF 55 ...`, and `55 ...` in the short form) as
        /// well as iAP2 packets, as the accessory end must to notice an iAP1-only
        /// peer and as a trace decoder must for legacy traffic.
        public var recognizesIAP1: Bool

        public init(maximumPacketLength: Int = LinkPacket.maximumLength, recognizesIAP1: Bool = true) {
            self.maximumPacketLength = max(LinkPacket.headerLength, min(maximumPacketLength, LinkPacket.maximumLength))
            self.recognizesIAP1 = recognizesIAP1
        }
    }

    public enum SkipReason: String, Hashable, Sendable, CaseIterable {
        /// Bytes that start no packet.
        case garbage
        /// `FF 5A` followed by a header whose checksum does not match.
        case badHeaderChecksum = "bad_header_checksum"
        /// A header with a valid checksum whose length is impossible or over the maximum.
        case badLength = "bad_length"
        /// Bytes inside the claimed span of a packet whose payload checksum failed.
        case badPayloadChecksum = "bad_payload_checksum"
        /// A packet cut off by the end of the stream.
        case truncated
    }

    public struct Skipped: Hashable, Sendable {
        public var offset: Int
        public var count: Int
        public var reason: SkipReason
    }

    /// An iAP1 frame found in the stream. Its payload (lingo, command, data) is
    /// available from `payload` until the next call.
    public struct IAP1FrameInfo: Hashable, Sendable {
        /// The frame started with the `FF` sync byte.
        public var hasSync: Bool
        /// The three-byte length form (`00 hi lo`) was used.
        public var largeForm: Bool
        /// Length of lingo + command + data.
        public var payloadLength: Int
        public var checksumValid: Bool
        /// Bytes the frame occupies, sync and checksum included.
        public var encodedLength: Int
    }

    public enum Event: Hashable, Sendable {
        case detect(offset: Int)
        case packet(LinkPacketHeader, offset: Int, payloadChecksumValid: Bool)
        case iap1(IAP1FrameInfo, offset: Int)
        case skipped(Skipped)
    }

    public struct Statistics: Hashable, Sendable {
        public var packets = 0
        public var detects = 0
        public var iap1Frames = 0
        /// Header and payload checksum failures (iAP2 and iAP1).
        public var checksumErrors = 0
        fileprivate var skipped = [Int](repeating: 0, count: SkipReason.allCases.count)

        public func skippedBytes(_ reason: SkipReason) -> Int { skipped[reason.index] }
        public var totalSkippedBytes: Int { skipped.reduce(0, +) }
    }

    /// May be changed between calls (a link tightens the maximum once it is
    /// negotiated); it applies to candidates examined from then on.
    public var configuration: Configuration
    public private(set) var statistics = Statistics()

    @usableFromInline internal private(set) var buffer: [UInt8] = []
    private var start = 0
    /// Stream offset of `buffer[0]`.
    private var bufferOffset = 0
    private var pendingSkip: Skipped?
    /// Bytes before this stream offset are reported with `suspectReason`
    /// instead of `.garbage`.
    private var suspectEnd = 0
    private var suspectReason = SkipReason.garbage
    @usableFromInline internal private(set) var payloadRange = 0..<0
    private var finished = false
    /// Candidates starting before this stream offset are skipped instead of
    /// waited for.
    private var abandonBefore: Int?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// Stream offset of the next byte not yet consumed.
    public var offset: Int { bufferOffset + start }
    /// Bytes held waiting for more input.
    public var bufferedByteCount: Int { buffer.count - start }

    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        compact()
        buffer.append(contentsOf: bytes.bindMemory(to: UInt8.self))
    }

    public mutating func append(_ bytes: some Sequence<UInt8>) {
        compact()
        buffer.append(contentsOf: bytes)
    }

    /// Appends an array; with nothing buffered it is taken as it is, not
    /// copied (and the old buffer is let go rather than emptied: emptying
    /// an array another holder shares allocates a new one).
    public mutating func append(_ bytes: [UInt8]) {
        guard start < buffer.count else {
            bufferOffset += buffer.count
            start = 0
            payloadRange = 0..<0
            buffer = bytes
            return
        }
        compact()
        buffer += bytes
    }

    /// Marks the end of the stream: whatever is still buffered is decoded or
    /// reported as truncated by the following `next()` calls.
    public mutating func finish() {
        finished = true
    }

    /// Starts over, as after a reconnect; statistics are kept.
    public mutating func reset() {
        buffer.removeAll(keepingCapacity: true)
        bufferOffset += start
        start = 0
        pendingSkip = nil
        suspectEnd = 0
        abandonBefore = nil
        finished = false
    }

    /// Gives up on the candidate the decoder is waiting to complete (its
    /// first byte is skipped as `.truncated`) so that scanning resumes inside
    /// it. A live link calls this when a partial packet has not completed for
    /// a while: stale bytes left in an endpoint can look like the header of a
    /// long packet, and waiting for its length of new traffic would stall the
    /// link. Returns whether there was anything to give up.
    @discardableResult
    public mutating func abandonCandidate() -> Bool {
        abandonCandidates(before: offset + 1)
    }

    /// Gives up on every incomplete candidate that starts before stream
    /// offset `end`, not only the first: stale headers may be stacked, and
    /// giving them up one timeout at a time would stall the bytes behind
    /// them. Candidates from `end` on are waited for as usual. Returns
    /// whether there was anything to give up.
    @discardableResult
    public mutating func abandonCandidates(before end: Int) -> Bool {
        guard start < buffer.count, end > offset else { return false }
        abandonBefore = end
        return true
    }

    /// The payload of the last `.packet` (without its checksum) or `.iap1`
    /// (lingo, command and data) event. Valid until the next `append` or `next`.
    public var payload: ArraySlice<UInt8> { buffer[payloadRange] }

    /// Calls `body` with the last payload in place, without copying it.
    @inlinable
    public func withPayload<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try buffer.withUnsafeBufferPointer { all in
            try body(UnsafeBufferPointer(rebasing: all[payloadRange]))
        }
    }

    private mutating func compact() {
        guard start > 0 else { return }
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
        } else {
            buffer.removeSubrange(0..<start)
        }
        bufferOffset += start
        payloadRange = 0..<0
        start = 0
    }

    private enum Finding {
        case needMore
        case detect
        case packet(LinkPacketHeader, valid: Bool)
        case iap1(IAP1FrameInfo, headerLength: Int)
        case skip(count: Int, reason: SkipReason)
    }

    /// The next event, or nil when more bytes are needed (or, after `finish()`,
    /// when everything has been reported).
    public mutating func next() -> Event? {
        if pendingSkip == nil, abandonBefore == nil, let event = nextWholePacket() { return event }
        return nextGeneral()
    }

    /// Everything but a whole valid packet at the current position. Kept out
    /// of line so that the common case in `next()` stays small.
    @inline(never)
    private mutating func nextGeneral() -> Event? {
        while true {
            let position = start
            let finding: Finding
            if position == buffer.count {
                if finished, let skip = pendingSkip {
                    pendingSkip = nil
                    return .skipped(skip)
                }
                return nil
            }
            var found = buffer.withUnsafeBufferPointer { examine($0, at: position) }
            if let end = abandonBefore {
                if bufferOffset + position >= end {
                    abandonBefore = nil
                } else if case .needMore = found {
                    found = .skip(count: 1, reason: .truncated)
                }
            }
            if case .needMore = found {
                guard finished else { return nil }
                // The stream ended inside a candidate: give up its first byte and
                // label what follows, up to the end, as truncated.
                suspectEnd = bufferOffset + buffer.count
                suspectReason = .truncated
                finding = .skip(count: 1, reason: .truncated)
            } else {
                finding = found
            }
            let absolute = bufferOffset + position

            switch finding {
            case .needMore:
                return nil
            case .skip(let count, let reason):
                start += count
                statistics.skipped[reason.index] += count
                if reason == .badHeaderChecksum { statistics.checksumErrors += 1 }
                if var pending = pendingSkip, pending.reason == reason, pending.offset + pending.count == absolute {
                    pending.count += count
                    pendingSkip = pending
                    continue
                }
                let previous = pendingSkip
                pendingSkip = Skipped(offset: absolute, count: count, reason: reason)
                if let previous { return .skipped(previous) }
            case .detect:
                if let skip = takePendingSkip() { return .skipped(skip) }
                start += DetectSequence.bytes.count
                statistics.detects += 1
                return .detect(offset: absolute)
            case .packet(let header, let valid):
                if let skip = takePendingSkip() { return .skipped(skip) }
                statistics.packets += 1
                let payloadStart = position + LinkPacket.headerLength
                payloadRange = payloadStart..<payloadStart + header.payloadLength
                if valid {
                    start += header.length
                } else {
                    statistics.checksumErrors += 1
                    start = payloadStart
                    markSuspect(until: absolute + header.length, reason: .badPayloadChecksum)
                }
                return .packet(header, offset: absolute, payloadChecksumValid: valid)
            case .iap1(let info, let headerLength):
                if let skip = takePendingSkip() { return .skipped(skip) }
                statistics.iap1Frames += 1
                let payloadStart = position + headerLength
                payloadRange = payloadStart..<payloadStart + info.payloadLength
                if info.checksumValid {
                    start += info.encodedLength
                } else {
                    statistics.checksumErrors += 1
                    start = payloadStart
                    markSuspect(until: absolute + info.encodedLength, reason: .badPayloadChecksum)
                }
                return .iap1(info, offset: absolute)
            }
        }
    }

    /// Fast path for the common case: a complete link packet with valid
    /// checksums at `start`. Anything else (or a failed check) returns nil and
    /// is handled by the general path, which reaches the same result.
    @inline(__always)
    private mutating func nextWholePacket() -> Event? {
        let position = start
        let maximum = configuration.maximumPacketLength
        let found: LinkPacketHeader? = buffer.withUnsafeBufferPointer { bytes in
            guard bytes.count - position >= LinkPacket.headerLength, let base = bytes.baseAddress else { return nil }
            let word = UInt64(littleEndian: UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self))
            // FF 5A, then the header checksum: bytes 0...8 sum to 0 mod 256.
            guard word & 0xFFFF == 0x5AFF else { return nil }
            let pairs = (word & 0x00FF_00FF_00FF_00FF) &+ ((word >> 8) & 0x00FF_00FF_00FF_00FF)
            let headerSum = UInt8(truncatingIfNeeded: (pairs &* 0x0001_0001_0001_0001) >> 48)
            guard headerSum &+ base[position + 8] == 0 else { return nil }
            let length = Int(UInt16(truncatingIfNeeded: word >> 16).byteSwapped)
            guard length >= LinkPacket.headerLength, length <= maximum, bytes.count - position >= length else { return nil }
            if length > LinkPacket.headerLength {
                let payloadSum = Checksum.sum(bytes, from: position + LinkPacket.headerLength, count: length - LinkPacket.headerLength)
                guard payloadSum == 0 else { return nil }
            }
            return LinkPacketHeader(length: length, control: LinkControl(rawValue: UInt8(truncatingIfNeeded: word >> 32)),
                                    sequence: UInt8(truncatingIfNeeded: word >> 40), acknowledgement: UInt8(truncatingIfNeeded: word >> 48),
                                    session: UInt8(truncatingIfNeeded: word >> 56))
        }
        guard let header = found else { return nil }
        statistics.packets += 1
        let payloadStart = position + LinkPacket.headerLength
        payloadRange = payloadStart..<payloadStart + header.payloadLength
        start = position + header.length
        return .packet(header, offset: bufferOffset + position, payloadChecksumValid: true)
    }

    private mutating func takePendingSkip() -> Skipped? {
        defer { pendingSkip = nil }
        return pendingSkip
    }

    private mutating func markSuspect(until end: Int, reason: SkipReason) {
        if end > suspectEnd || suspectReason != .truncated {
            suspectEnd = max(suspectEnd, end)
            suspectReason = reason
        }
    }

    private func examine(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int) -> Finding {
        let available = bytes.count - position
        let first = bytes[position]
        if first == 0xFF {
            guard available >= 2 else { return .needMore }
            let second = bytes[position + 1]
            if second == 0x5A { return examineLinkPacket(bytes, at: position, available: available) }
            if second == 0x55 {
                // The detect sequence is also an iAP1 frame; name it as detect.
                let detect = DetectSequence.bytes
                var matched = 2
                while matched < detect.count, matched < available, bytes[position + matched] == detect[matched] {
                    matched += 1
                }
                if matched == detect.count { return .detect }
                if matched == available { return .needMore }
                if configuration.recognizesIAP1 {
                    return examineIAP1(bytes, at: position, available: available, hasSync: true)
                }
            }
            return skipRun(bytes, from: position)
        }
        if first == 0x55, configuration.recognizesIAP1 {
            return examineIAP1(bytes, at: position, available: available, hasSync: false)
        }
        return skipRun(bytes, from: position)
    }

    private func examineLinkPacket(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int, available: Int) -> Finding {
        guard available >= LinkPacket.headerLength else { return .needMore }
        let headerSum = Checksum.sum(bytes, from: position, count: 8)
        guard headerSum &+ bytes[position + 8] == 0 else {
            return .skip(count: 1, reason: .badHeaderChecksum)
        }
        let length = Int(bytes[position + 2]) << 8 | Int(bytes[position + 3])
        guard LinkPacket.isValidLength(length), length <= configuration.maximumPacketLength else {
            return .skip(count: 1, reason: .badLength)
        }
        guard available >= length else { return .needMore }
        let header = LinkPacketHeader(
            length: length, control: LinkControl(rawValue: bytes[position + 4]),
            sequence: bytes[position + 5], acknowledgement: bytes[position + 6], session: bytes[position + 7])
        if length == LinkPacket.headerLength { return .packet(header, valid: true) }
        let payloadSum = Checksum.sum(bytes, from: position + LinkPacket.headerLength, count: length - LinkPacket.headerLength)
        return .packet(header, valid: payloadSum == 0)
    }

    /// iAP1: `[FF] 55 len lingo cmd data checksum`, or with `len` = `00 hi lo`.
    /// Without the sync byte only the short form is recognised in a stream, so
    /// that a stray `55 00` cannot make the decoder wait for 64 KiB.
    private func examineIAP1(_ bytes: UnsafeBufferPointer<UInt8>, at position: Int, available: Int, hasSync: Bool) -> Finding {
        let lengthIndex = position + (hasSync ? 2 : 1)
        guard bytes.count > lengthIndex else { return .needMore }
        var payloadLength = Int(bytes[lengthIndex])
        var lengthBytes = 1
        if payloadLength == 0 {
            guard hasSync else { return skipRun(bytes, from: position) }
            guard bytes.count > lengthIndex + 2 else { return .needMore }
            payloadLength = Int(bytes[lengthIndex + 1]) << 8 | Int(bytes[lengthIndex + 2])
            lengthBytes = 3
        }
        let headerLength = lengthIndex - position + lengthBytes
        let total = headerLength + payloadLength + 1
        guard payloadLength >= 2, total <= configuration.maximumPacketLength else {
            return hasSync ? .skip(count: 1, reason: .badLength) : skipRun(bytes, from: position)
        }
        guard available >= total else { return .needMore }
        let sum = Checksum.sum(bytes, from: lengthIndex, count: lengthBytes + payloadLength + 1)
        let info = IAP1FrameInfo(hasSync: hasSync, largeForm: lengthBytes == 3, payloadLength: payloadLength,
                                 checksumValid: sum == 0, encodedLength: total)
        if sum != 0 && !hasSync { return skipRun(bytes, from: position) }
        return .iap1(info, headerLength: headerLength)
    }

    /// Skips from `position` up to the next byte that could start something,
    /// stopping at the edge of a suspect region so each byte gets one reason.
    private func skipRun(_ bytes: UnsafeBufferPointer<UInt8>, from position: Int) -> Finding {
        let absolute = bufferOffset + position
        let inSuspect = absolute < suspectEnd
        var limit = bytes.count
        if inSuspect { limit = min(limit, suspectEnd - bufferOffset) }
        var index = position + 1
        let iap1 = configuration.recognizesIAP1
        while index < limit {
            let byte = bytes[index]
            if byte == 0xFF || (iap1 && byte == 0x55) { break }
            index += 1
        }
        return .skip(count: index - position, reason: inSuspect ? suspectReason : .garbage)
    }
}

extension LinkStreamDecoder.SkipReason {
    fileprivate var index: Int {
        switch self {
        case .garbage: 0
        case .badHeaderChecksum: 1
        case .badLength: 2
        case .badPayloadChecksum: 3
        case .truncated: 4
        }
    }
}
