import IAPWire

/// One end of an iAP2 link as a pure state machine.
///
/// Feed it what happens (`start`, `receive`, `send`, `tick`, `reset`), each
/// with the current time; it answers with actions (bytes to write, bytes
/// delivered per session, events) and tells when it next needs a `tick`
/// (`nextDeadline`). It owns no thread, timer, clock or transport.
///
/// The link part (sequence numbers, window, acknowledgement, retransmission)
/// and the session part (per-session byte queues with a bound) are separate
/// concerns: sessions only ever see ordered bytes in and bounded queues out.
public struct LinkEnd: Sendable {
    public let configuration: LinkConfiguration
    public private(set) var statistics = LinkStatistics()

    private enum State: Sendable {
        case idle
        /// Accessory: detect sent, waiting for the echo.
        case detecting(attempts: Int, next: LinkInstant)
        /// Device: waiting for detect or SYN.
        case listening
        /// Accessory: SYN sent, waiting for SYN+ACK.
        case synchronizing(proposal: LinkSynchronization, attempts: Int, next: LinkInstant, renegotiating: Bool)
        /// Device: SYN+ACK sent, waiting for the ACK that completes the
        /// handshake; the SYN+ACK goes again at `next` (nil on a zero-ACK
        /// link, whose transport loses nothing).
        case answered(link: NegotiatedLink, renegotiating: Bool, synAck: LinkPacket, attempts: Int, next: LinkInstant?)
        case connected(NegotiatedLink)
        /// Accessory after a failure, or after its link went down with the
        /// transport open: starts over at `at`.
        case restarting(at: LinkInstant)
        /// Accessory after the link went down or failed: `start` begins again.
        case closed
    }

    private struct Outgoing: Sendable {
        var sequence: UInt8
        /// The packet as first sent; a retransmission carries the
        /// acknowledgement of its own time instead.
        var packet: [UInt8]
        /// When it is due for retransmission (last sent + the timeout).
        var deadline: LinkInstant
        var retransmissions: Int
        /// The peer listed it in an EAK: it holds it out of order.
        var heldByPeer: Bool
    }

    /// A session's bytes waiting for the window. The control session is a
    /// byte stream (messages may be split across packets); file-transfer and
    /// external-accessory sessions carry datagrams, one per packet, whose
    /// boundaries the receiver relies on.
    private struct SessionQueue: Sendable {
        // `take` is only called with a positive maximum: negotiation refuses
        // packet lengths that cannot carry a payload byte.
        var bytes: [UInt8] = []
        var head = 0
        /// Datagram lengths in order, for datagram sessions.
        var datagrams: [Int] = []
        var blocked = false
        var count: Int { bytes.count - head }
        var longestDatagram: Int { datagrams.max() ?? 0 }

        /// The next payload (at most `maximum` bytes, or the next datagram)
        /// encoded as a data packet straight from the queue: one buffer,
        /// one copy.
        mutating func takePacket(_ maximum: Int, sequence: UInt8, acknowledgement: UInt8, session: UInt8) -> [UInt8] {
            let length = datagrams.isEmpty ? min(maximum, count) : datagrams.removeFirst()
            let end = head + length
            let packetLength = LinkPacket.headerLength + length + 1
            var packet: [UInt8] = []
            packet.reserveCapacity(packetLength)
            packet += [0xFF, 0x5A, UInt8(truncatingIfNeeded: packetLength >> 8), UInt8(truncatingIfNeeded: packetLength),
                       LinkControl.ack.rawValue, sequence, acknowledgement, session]
            packet.append(Checksum.of(packet))
            let payload = bytes[head..<end]
            packet += payload
            packet.append(Checksum.of(payload))
            head = end
            if head == bytes.count {
                bytes.removeAll(keepingCapacity: true)
                head = 0
            }
            return packet
        }

        /// Queues `message`. Into an empty queue it is taken as it is (no
        /// copy); bytes already sent are dropped from the front only when
        /// more arrive and they are most of the buffer, so a message sent
        /// while nothing else arrives is never moved.
        mutating func enqueue(_ message: [UInt8]) {
            if count == 0 {
                bytes = message
                head = 0
                return
            }
            if head > 4096 && head * 2 > bytes.count {
                bytes.removeSubrange(0..<head)
                head = 0
            }
            bytes += message
        }
    }

    /// Where a packet's acknowledgement sits: after FF 5A, the length (2),
    /// the control byte and the sequence number.
    private static let acknowledgementOffset = 6

    private var state = State.idle {
        didSet {
            if case .connected(let link) = state {
                isUp = true
                negotiated = link
            } else if isUp {
                isUp = false
                negotiated = nil
            }
        }
    }
    private var decoder: LinkStreamDecoder
    private var sendSequence: UInt8
    private var receivedSequence: UInt8 = 0
    /// Accessory: the sequence number of the last SYN it sent.
    private var lastSYNSequence: UInt8?
    private var unacked: [Outgoing] = []
    /// Packets received and not yet delivered: out of order, or in order but
    /// held while the reader is behind. Bounded by the receive window.
    private var held: [UInt8: (session: UInt8, payload: [UInt8])] = [:]
    /// Bytes delivered that the reader has not handed back with `consumed`.
    private var unconsumed = 0
    /// Violation kinds already reported on this connection.
    private var reportedViolations: Set<String> = []
    /// The accessory's next restart delay.
    private var restartDelay: Duration?
    private var pendingAcks = 0
    private var ackDeadline: LinkInstant?
    private var ackNow = false
    /// A due acknowledgement waits for the caller's data of this turn (see
    /// `receive(_:now:deferringAcknowledgement:)`).
    private var holdsAcknowledgement = false
    private var queues: [UInt8: SessionQueue] = [:]
    private var sessionOrder: [UInt8] = []
    private var nextSessionIndex = 0
    private var lastSent = LinkInstant.zero
    private var lastReceived = LinkInstant.zero
    /// When this end last sent or resent a data packet.
    private var lastDataSent: LinkInstant?
    /// Whether the peer has sent a keep-alive on this connection: a bare
    /// ACK that nothing of ours prompted. Only then does its silence mean it
    /// is gone; phones and accessories that send nothing on an idle link
    /// are common, and their links must stay up.
    private var peerKeepsAlive = false
    /// Since when the decoder has held an incomplete packet, and the stream
    /// offset its buffered bytes reached then: candidates starting before it
    /// have waited the whole timeout.
    private var partialSince: LinkInstant?
    private var partialUntil = 0
    /// The accessory waits for its packets in flight before renegotiating.
    private var renegotiationRequested = false
    /// The zero-ACK link a renegotiation started from, read while its SYN is
    /// unanswered: data the peer sent before it saw the SYN still arrives,
    /// and nothing would ever resend it.
    private var zeroAckLinkBeingRenegotiated: NegotiatedLink?
    /// A head unit identified in iAP1 (device with `answersIAP1` only): its
    /// frames are reported, and `sendLegacy` answers it, while the device
    /// listens; an iAP2 detect ends it.
    private var legacyPeer = false
    private var actions: [LinkAction] = []

    public init(configuration: LinkConfiguration) {
        self.configuration = configuration
        self.sendSequence = configuration.initialSequence
        // Before the link is up any length is possible (a SYN can exceed the
        // limit it announces); after, the negotiated receive limit applies.
        self.decoder = LinkStreamDecoder(configuration: .init(maximumPacketLength: LinkPacket.maximumLength,
                                                              recognizesIAP1: configuration.role == .accessory || configuration.answersIAP1))
    }

    // MARK: - Public state

    // What a driver reads after every input is stored, kept current as the
    // end changes, not computed by a getter: called from another module, a
    // getter of this struct works on a copy of the whole end (about 1 KB).

    /// Whether the link is up (connected).
    public private(set) var isUp = false
    /// The parameters both ends run with while the link is up; nil otherwise.
    public private(set) var negotiated: NegotiatedLink?

    /// Bytes queued on a session and not yet sent.
    public func queuedBytes(session: UInt8) -> Int { queues[session]?.count ?? 0 }
    /// Data packets sent and not yet acknowledged.
    public var unacknowledgedCount: Int { unacked.count }
    /// Whether the next packet in order is held until the reader hands
    /// delivered bytes back with `consumed`.
    public var isHoldingForReader: Bool { readerStalled }

    /// When `tick` must next be called, if ever.
    public private(set) var nextDeadline: LinkInstant?

    /// Brings `nextDeadline` up to date; every public mutating method ends with it.
    private mutating func refreshDeadline() { nextDeadline = computedDeadline }

    private var computedDeadline: LinkInstant? {
        let linkDeadline = self.linkDeadline
        guard let partialSince else { return linkDeadline }
        let abandon = partialSince + configuration.partialPacketTimeout
        return linkDeadline.map { min($0, abandon) } ?? abandon
    }

    private var linkDeadline: LinkInstant? {
        switch state {
        case .idle, .closed, .listening:
            return nil
        case .answered(_, _, _, _, let next):
            return next
        case .restarting(let at):
            return at
        case .detecting(_, let next), .synchronizing(_, _, let next, _):
            return next
        case .connected(let link):
            var deadline: LinkInstant?
            func consider(_ instant: LinkInstant?) {
                guard let instant else { return }
                deadline = deadline.map { min($0, instant) } ?? instant
            }
            if !link.zeroAck {
                consider(unacked.lazy.filter { !$0.heldByPeer }.map(\.deadline).min())
                consider(unacked.lazy.filter { $0.heldByPeer }.map { $0.deadline + link.retransmitTimeout }.min())
                consider(ackDeadline)
            }
            if let interval = configuration.keepAliveInterval { consider(lastSent + interval) }
            if peerKeepsAlive, let limit = configuration.silenceLimit { consider(lastReceived + limit) }
            return deadline
        }
    }

    // MARK: - Inputs

    /// Begins: the accessory sends detect (or SYN when `skipDetect`); the
    /// device starts listening. Also restarts a closed accessory end.
    public mutating func start(now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        resetLinkState()
        begin(now: now)
        return takeActions()
    }

    private mutating func begin(now: LinkInstant) {
        switch configuration.role {
        case .device:
            state = .listening
        case .accessory:
            if configuration.skipDetect {
                sendSYN(now: now, attempts: 1, renegotiating: false)
            } else {
                emit(DetectSequence.bytes, now: now)
                state = .detecting(attempts: 1, next: now + configuration.detectInterval)
            }
        }
    }

    /// Bytes from the transport.
    ///
    /// With `deferringAcknowledgement`, an acknowledgement that falls due
    /// is not sent as a bare ACK yet: data the caller sends before it calls
    /// `flushAcknowledgement(now:)` (the answer to what was delivered, in
    /// the same turn) carries it, and the bare ACK is sent only if none did.
    public mutating func receive(_ bytes: some Collection<UInt8>, now: LinkInstant, deferringAcknowledgement: Bool = false) -> [LinkAction] {
        defer { refreshDeadline() }
        switch state {
        case .idle, .closed, .restarting: return []
        default: break
        }
        holdsAcknowledgement = deferringAcknowledgement
        // An array is taken as it is when nothing is buffered (a transport's read).
        if let whole = bytes as? [UInt8] { decoder.append(whole) } else { decoder.append(bytes) }
        decodeBuffered(now: now)
        flush(now: now)
        return takeActions()
    }

    /// Ends what `receive(_:now:deferringAcknowledgement:)` began: the
    /// acknowledgement still due (no data carried it) goes out now.
    public mutating func flushAcknowledgement(now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        guard holdsAcknowledgement else { return [] }
        holdsAcknowledgement = false
        flush(now: now)
        return takeActions()
    }

    private mutating func decodeBuffered(now: LinkInstant) {
        while let event = decoder.next() {
            switch event {
            case .detect:
                lastReceived = now
                // An iAP2 peer: no more legacy answers.
                legacyPeer = false
                detectReceived(now: now)
            case .packet(let header, _, let valid):
                guard valid else {
                    statistics.corruptPacketsReceived += 1
                    continue
                }
                lastReceived = now
                statistics.packetsReceived += 1
                packetReceived(header, payload: Array(decoder.payload), now: now)
            case .iap1(let frame, _):
                // Only a real iAP1 answer to the detect means the peer speaks
                // nothing else: noise (or a corrupted echo) can look like a frame.
                let payload = decoder.payload
                if case .detecting = state, configuration.role == .accessory, frame.checksumValid, Self.isIAP1AnswerToDetect(payload) {
                    fail(.iap1OnlyPeer(lingo: payload.first ?? 0, command: UInt16(payload.dropFirst().first ?? 0)), now: now)
                } else if configuration.role == .device, configuration.answersIAP1, frame.checksumValid, case .listening = state,
                          legacyPeer || IAP1Packet.isIdentification(payload)
                            || frame.hasSync && (payload.first == IAP1Packet.generalLingo || payload.first == IAP1Packet.extendedInterfaceLingo) {
                    // An identification, or a request on a lingo the phone
                    // serves framed with its sync byte (older head units ask
                    // before they identify): noise matches one by chance
                    // about once in 2^31 positions and starts nothing.
                    legacyPeer = true
                    lastReceived = now
                    statistics.legacyFramesReceived += 1
                    // Frames count against the reader's budget as delivered
                    // data does, until handed back with `consumed`. iAP1 has
                    // no acknowledgement to hold back: a frame the reader has
                    // no room for is dropped, and counted.
                    if readerHasRoom(for: payload.count) {
                        unconsumed += payload.count
                        actions.append(.event(.legacyFrame(Array(payload))))
                    } else {
                        statistics.legacyFramesDropped += 1
                    }
                } else if frame.checksumValid {
                    statistics.bytesSkipped += frame.encodedLength
                }
            case .skipped(let skipped):
                statistics.bytesSkipped += skipped.count
                if skipped.reason == .badLength, case .connected(let link) = state {
                    // A header that checks out but claims more than this end advertised.
                    statistics.oversizedPacketsReceived += 1
                    violation(.oversizedPacket(limit: link.receivePacketLength))
                } else if skipped.reason == .truncated, isUp {
                    violation(.incompletePacketAbandoned(bytes: skipped.count))
                }
            }
            switch state {
            case .closed, .restarting: break
            default: continue
            }
            break
        }
        if decoder.bufferedByteCount == 0 {
            partialSince = nil
        } else if partialSince == nil {
            partialSince = now
            partialUntil = decoder.offset + decoder.bufferedByteCount
        }
    }

    /// An iAP1-only device answers the detect (lingo 0, command 0xEE) with
    /// an iPodAck naming command 0xEE, or with RequestIdentify (IAP-FACTS.md).
    static func isIAP1AnswerToDetect(_ payload: some Collection<UInt8>) -> Bool {
        let bytes = Array(payload.prefix(4))
        guard bytes.count >= 2, bytes[0] == 0x00 else { return false }
        if bytes[1] == 0x02 { return bytes.count == 4 && bytes[3] == DetectSequence.bytes[4] }
        return bytes[1] == 0x00 && payload.count == 2
    }

    /// Writes a framed iAP1 packet to the head unit that identified in iAP1:
    /// the device's answers to a peer that speaks nothing else. `queued`:
    /// bytes written earlier that the transport still holds (the head unit
    /// has not taken them); iAP1 has no window, so they are what the send
    /// queue limit bounds, as a session's queue: past it the frame is
    /// refused (`.legacyQueueFull`) and counted, never queued.
    public mutating func sendLegacy(_ frame: [UInt8], queued: Int = 0, now: LinkInstant) throws(LinkSendError) -> [LinkAction] {
        defer { refreshDeadline() }
        guard legacyPeer, case .listening = state else { throw LinkSendError(kind: .noLegacyPeer) }
        guard queued == 0 || queued + frame.count <= configuration.sendQueueLimit else {
            statistics.legacyFramesRefused += 1
            throw LinkSendError(kind: .legacyQueueFull(queued: queued, limit: configuration.sendQueueLimit))
        }
        emit(frame, now: now)
        return takeActions()
    }

    /// Queues bytes on a session; they go out as the window allows, split
    /// into packets of the negotiated size. Throws instead of queueing when
    /// the link is down, the session unknown or its queue full.
    public mutating func send(_ bytes: [UInt8], session: UInt8, now: LinkInstant) throws(LinkSendError) -> [LinkAction] {
        defer { refreshDeadline() }
        guard case .connected(let link) = state else { throw LinkSendError(kind: .linkNotUp) }
        guard link.session(session) != nil else { throw LinkSendError(kind: .unknownSession(session)) }
        let limit = configuration.sendQueueLimit
        guard bytes.count <= limit else { throw LinkSendError(kind: .tooLarge(size: bytes.count, limit: limit)) }
        let isDatagram = link.session(session)?.type != .control
        if isDatagram {
            guard !bytes.isEmpty, bytes.count <= link.maximumPayload else {
                throw LinkSendError(kind: .datagramSize(size: bytes.count, limit: link.maximumPayload))
            }
        }
        let queued = queues[session]?.count ?? 0
        guard queued + bytes.count <= limit else {
            queues[session]?.blocked = true
            throw LinkSendError(kind: .queueFull(session: session, queued: queued, limit: limit))
        }
        queues[session, default: SessionQueue()].enqueue(bytes)
        if isDatagram { queues[session]?.datagrams.append(bytes.count) }
        flush(now: now)
        return takeActions()
    }

    /// Whether `count` more bytes fit in the session's queue right now.
    public func canSend(_ count: Int, session: UInt8) -> Bool {
        guard isUp, negotiated?.session(session) != nil else { return false }
        return (queues[session]?.count ?? 0) + count <= configuration.sendQueueLimit
    }

    /// Timers: detect and SYN repetition, retransmission, delayed
    /// acknowledgement, keep-alive and the silence limit.
    public mutating func tick(now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        if let since = partialSince, now >= since + configuration.partialPacketTimeout {
            // Stale bytes that look like the start of a long packet: stop
            // waiting for every candidate that has waited the whole timeout
            // at once (headers may be stacked) and look for packets inside.
            decoder.abandonCandidates(before: partialUntil)
            partialSince = nil
            decodeBuffered(now: now)
            flush(now: now)
        }
        switch state {
        case .restarting(let at) where now >= at:
            statistics.restarts += 1
            resetLinkState()
            begin(now: now)
        case .detecting(let attempts, let next) where now >= next:
            if let limit = configuration.detectAttempts, attempts >= limit {
                // The caller bounded the attempts: stop for good.
                fail(.detectUnanswered(attempts: attempts), now: now, restarting: false)
            } else {
                emit(DetectSequence.bytes, now: now)
                state = .detecting(attempts: attempts + 1, next: now + configuration.detectInterval)
            }
        case .synchronizing(let proposal, let attempts, let next, let renegotiating) where now >= next:
            let limit = max(1, configuration.parameters.maximumRetransmissions)
            if attempts > limit {
                if renegotiating {
                    goDown(.retransmissionsExhausted(sequence: sendSequence, attempts: attempts - 1), now: now)
                } else {
                    fail(.synchronizationUnanswered(attempts: attempts), now: now)
                }
            } else {
                emitPacket(LinkPacket(control: .syn, sequence: sendSequence, payload: proposal.encoded()), now: now)
                state = .synchronizing(proposal: proposal, attempts: attempts + 1, next: now + configuration.parameters.retransmitTimeout,
                                       renegotiating: renegotiating)
            }
        case .answered(let link, let renegotiating, let synAck, let attempts, let next?) where now >= next:
            // The ACK that completes the handshake has not come (lost, or
            // the accessory waits for our messages): answer the SYN again,
            // as the accessory repeats a SYN that gets no answer.
            if attempts > max(1, link.maximumRetransmissions) {
                if renegotiating {
                    goDown(.retransmissionsExhausted(sequence: synAck.sequence, attempts: attempts - 1), now: now)
                } else {
                    fail(.handshakeUnacknowledged(attempts: attempts), now: now)
                }
            } else {
                emitPacket(synAck, now: now)
                state = .answered(link: link, renegotiating: renegotiating, synAck: synAck, attempts: attempts + 1, next: now + link.retransmitTimeout)
            }
        case .connected(let link):
            connectedTick(link, now: now)
        default:
            break
        }
        return takeActions()
    }

    /// Sends RST and ends the connection (reported as `.down(.localReset)`
    /// when it was up, renegotiating included, as `transportClosed` does).
    public mutating func reset(now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        switch state {
        case .idle, .closed:
            return []
        case .restarting:
            closeQuietly()
            return takeActions()
        case .connected, .answered(_, true, _, _, _), .synchronizing(_, _, _, true):
            emitPacket(LinkPacket(control: .rst, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
            goDown(.localReset, now: now, restarting: false)
            return takeActions()
        default:
            emitPacket(LinkPacket(control: .rst, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
            closeQuietly()
            return takeActions()
        }
    }

    /// The transport is gone. A connected link goes down (reported once);
    /// any other state simply stops.
    public mutating func transportClosed(_ why: String, now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        switch state {
        case .idle, .closed:
            return []
        case .connected, .answered(_, true, _, _, _), .synchronizing(_, _, _, true):
            goDown(.transportClosed(why), now: now, restarting: false)
        default:
            closeQuietly()
        }
        state = .closed
        return takeActions()
    }

    /// The accessory proposes its parameters again on a connected link. New
    /// data waits while the packets in flight are acknowledged; then SYN goes
    /// out. Sequence numbers carry on across the renegotiation, so nothing in
    /// flight either way is lost or delivered twice. Nothing happens when
    /// the SYN or the device's SYN+ACK (which echoes the sessions) would be
    /// longer than the packet lengths negotiated: the other end would drop
    /// it as oversized and the link would go down after the retries.
    public mutating func renegotiate(now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        guard configuration.role == .accessory, case .connected(let link) = state else { return [] }
        let synLength = LinkPacket.headerLength + configuration.parameters.synchronization.encodedLength + 1
        guard synLength <= min(link.sendPacketLength, link.receivePacketLength) else { return [] }
        renegotiationRequested = true
        flush(now: now)
        return takeActions()
    }

    // MARK: - Handshake

    private mutating func detectReceived(now: LinkInstant) {
        switch (configuration.role, state) {
        case (.accessory, .detecting):
            sendSYN(now: now, attempts: 1, renegotiating: false)
        case (.accessory, _):
            break
        case (.device, .connected), (.device, .answered(_, true, _, _, _)):
            goDown(.peerRestarted, now: now)
            emit(DetectSequence.bytes, now: now)
        case (.device, _):
            emit(DetectSequence.bytes, now: now)
        }
    }

    private mutating func sendSYN(now: LinkInstant, attempts: Int, renegotiating: Bool) {
        lastSYNSequence = sendSequence
        let proposal = configuration.parameters.synchronization
        emitPacket(LinkPacket(control: .syn, sequence: sendSequence, payload: proposal.encoded()), now: now)
        state = .synchronizing(proposal: proposal, attempts: attempts + 1, next: now + configuration.parameters.retransmitTimeout,
                               renegotiating: renegotiating)
    }

    private mutating func packetReceived(_ header: LinkPacketHeader, payload: [UInt8], now: LinkInstant) {
        let control = header.control
        if control.contains(.rst) {
            switch state {
            case .connected, .answered(_, true, _, _, _): goDown(.peerReset, now: now)
            case .synchronizing(_, _, _, false): fail(.peerReset, now: now)
            case .synchronizing(_, _, _, true): goDown(.peerReset, now: now)
            default: break
            }
            return
        }
        if control.contains(.syn) {
            synReceived(header, payload: payload, now: now)
            return
        }
        if control.contains(.slp) { actions.append(.event(.peerSleeping)) }

        switch state {
        case .answered(let link, let renegotiating, _, _, _):
            // The accessory's ACK of our SYN+ACK completes the handshake (on a
            // renegotiation it may still lag behind packets in flight).
            let acknowledged = renegotiating ? Int(sendSequence &- header.acknowledgement) < 128 : header.acknowledgement == sendSequence
            guard control.contains(.ack), acknowledged else {
                if !payload.isEmpty { emitReset(now: now) }
                return
            }
            becomeConnected(link, renegotiated: renegotiating, now: now)
            connectedPacket(header, payload: payload, link: link, now: now)
        case .connected(let link):
            if !peerKeepsAlive, control == .ack, payload.isEmpty, unacked.isEmpty,
               lastDataSent.map({ now - $0 >= link.retransmitTimeout }) ?? true {
                // A bare ACK with nothing of ours in flight or just resent to
                // answer (the ACK completing a handshake comes before this).
                peerKeepsAlive = true
            }
            connectedPacket(header, payload: payload, link: link, now: now)
        case .synchronizing(_, _, _, true):
            // An acknowledged peer resends what it sent meanwhile; a zero-ACK
            // one never does, so its data is taken as the old link carried it.
            if let link = zeroAckLinkBeingRenegotiated, !control.contains(.eak) {
                connectedPacket(header, payload: payload, link: link, now: now)
            }
        case .listening:
            // Traffic for a connection this end does not have (it restarted):
            // tell the peer at once rather than letting it time out.
            if !payload.isEmpty || control.contains(.ack) { emitReset(now: now) }
        default:
            break
        }
    }

    private mutating func synReceived(_ header: LinkPacketHeader, payload: [UInt8], now: LinkInstant) {
        let sync: LinkSynchronization
        do {
            sync = try LinkSynchronization(decoding: payload)
        } catch {
            if configuration.role == .device { refuseSYN([error.detail], now: now) }
            return
        }
        switch configuration.role {
        case .device:
            // A renegotiation's SYN takes the number after the last packet
            // received (the accessory waits for its packets in flight first;
            // a peer that reuses the last number is taken at its word too).
            // Any other SYN on a connected link means the peer started over,
            // or is an old SYN arriving late: the link goes down and the SYN
            // starts a new one. Renegotiating on it would set the received
            // sequence back and deliver again what came after that number.
            if case .connected = state, header.sequence != receivedSequence &+ 1, header.sequence != receivedSequence {
                goDown(.peerRestarted, now: now)
            }
            let renegotiating: Bool
            switch state {
            case .connected: renegotiating = true
            case .answered(_, let again, _, _, _): renegotiating = again
            default: renegotiating = false
            }
            switch LinkNegotiation.answer(to: sync, limits: configuration.parameters) {
            case .failure(let failure):
                refuseSYN(failure.reasons, now: now)
            case .success(let (answer, peer, adjustments)):
                if renegotiating, let reason = uncarried(on: LinkNegotiation.negotiated(own: answer, peer: peer, timers: answer)) {
                    refuseSYN([reason], now: now)
                    return
                }
                if !adjustments.isEmpty { actions.append(.event(.negotiationAdjusted(adjustments))) }
                // A first SYN+ACK takes the initial sequence number; on a
                // renegotiation it names the last one sent and consumes none,
                // so packets in flight keep their numbers.
                if !renegotiating { sendSequence = configuration.initialSequence }
                receivedSequence = header.sequence
                let synAck = LinkPacket(control: [.syn, .ack], sequence: sendSequence, acknowledgement: header.sequence, payload: answer.encoded())
                emitPacket(synAck, now: now)
                let link = LinkNegotiation.negotiated(own: answer, peer: peer, timers: answer)
                state = .answered(link: link, renegotiating: renegotiating, synAck: synAck, attempts: 1,
                                  next: link.zeroAck ? nil : now + link.retransmitTimeout)
            }
        case .accessory:
            if case .connected = state, header.control.contains(.ack), header.acknowledgement == lastSYNSequence {
                // The device answers our SYN again: it did not get the ACK
                // that completed the handshake. Acknowledge again.
                emitPacket(LinkPacket(control: .ack, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
                return
            }
            guard case .synchronizing(let proposal, _, _, let renegotiating) = state, header.control.contains(.ack),
                  header.acknowledgement == sendSequence else { return }
            switch LinkNegotiation.reading(answer: sync, proposal: proposal) {
            case .failure(let failure):
                emitPacket(LinkPacket(control: .rst, sequence: sendSequence), now: now)
                if renegotiating {
                    goDown(.localReset, now: now)
                } else {
                    fail(.negotiationRefused(failure.reasons), now: now)
                }
            case .success(let (link, adjustments)):
                if renegotiating, let reason = uncarried(on: link) {
                    emitPacket(LinkPacket(control: .rst, sequence: sendSequence), now: now)
                    actions.append(.event(.proposalRefused([reason])))
                    goDown(.localReset, now: now)
                    return
                }
                if !adjustments.isEmpty { actions.append(.event(.negotiationAdjusted(adjustments))) }
                // On a renegotiation the receive sequence carries on: the
                // device's packets in flight arrive with their old numbers.
                if !renegotiating { receivedSequence = header.sequence }
                becomeConnected(link, renegotiated: renegotiating, now: now)
                // The ACK that completes the handshake goes out even on a
                // zero-ACK link.
                emitPacket(LinkPacket(control: .ack, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
            }
        }
    }

    /// The device refuses a SYN with RST, which ends for the peer whatever
    /// link or handshake there was: it ends here too (a link that was up goes
    /// down), so that a later ACK cannot complete a handshake the peer was
    /// told is over.
    private mutating func refuseSYN(_ reasons: [String], now: LinkInstant) {
        actions.append(.event(.proposalRefused(reasons)))
        emitReset(now: now)
        switch state {
        case .connected, .answered(_, true, _, _, _): goDown(.localReset, now: now)
        case .answered: closeQuietly()
        default: break
        }
    }

    /// What a renegotiated link could not carry: a packet in flight (resent
    /// as it was first sent) or a queued datagram (sent whole) longer than
    /// the peer now takes. Sending it would break the peer's limit, and
    /// dropping it would lose data without a word, so such a renegotiation
    /// is refused and the link reset.
    private func uncarried(on link: NegotiatedLink) -> String? {
        // Packets in flight are resent as they were sent: the new limits must
        // cover them, in number as in length.
        if !link.zeroAck, unacked.count > link.sendWindow {
            return "max outstanding packets \(link.sendWindow) cannot cover the \(unacked.count) packets in flight, which are resent as they were sent"
        }
        if !link.zeroAck, let longest = unacked.lazy.map(\.packet.count).max(), longest > link.sendPacketLength {
            return "max packet length \(link.sendPacketLength) cannot carry the \(longest)-byte packet in flight, which is resent as it was sent"
        }
        for id in link.sessions.map(\.id) {
            if let longest = queues[id]?.longestDatagram, longest > link.maximumPayload {
                return "max packet length \(link.sendPacketLength) cannot carry the \(longest)-byte datagram queued on session \(id)"
            }
        }
        return nil
    }

    private mutating func becomeConnected(_ link: NegotiatedLink, renegotiated: Bool, now: LinkInstant) {
        state = .connected(link)
        held.removeAll()
        // A zero-ACK link neither acknowledges nor retransmits: packets in
        // flight from before a renegotiation to zero-ACK are done with.
        if link.zeroAck { unacked.removeAll() }
        pendingAcks = 0
        ackDeadline = nil
        lastReceived = now
        restartDelay = nil
        if !renegotiated {
            reportedViolations.removeAll()
            peerKeepsAlive = false
        }
        let ids = link.sessions.map(\.id)
        for id in ids where queues[id] == nil { queues[id] = SessionQueue() }
        sessionOrder = ids
        // From now on only iAP2 packets within the advertised limit are expected.
        decoder.configuration = .init(maximumPacketLength: link.receivePacketLength, recognizesIAP1: false)
        actions.append(.event(renegotiated ? .renegotiated(link) : .up(link)))
    }

    // MARK: - Connected

    private mutating func connectedPacket(_ header: LinkPacketHeader, payload: [UInt8], link: NegotiatedLink, now: LinkInstant) {
        if header.control.contains(.ack) && !link.zeroAck { acknowledge(header.acknowledgement, link: link) }
        if header.control.contains(.eak) {
            statistics.eaksReceived += 1
            extendedAcknowledgement(payload, link: link, now: now)
            return
        }
        guard !payload.isEmpty else { return }
        if link.zeroAck {
            // Nothing holds a zero-ACK peer back: what the reader has no room
            // for is dropped and counted.
            receivedSequence = header.sequence
            if readerHasRoom(for: payload.count) {
                deliver(session: header.session, payload, link: link)
            } else {
                statistics.bytesDroppedForReader += payload.count
            }
            return
        }
        let distance = Int(header.sequence &- receivedSequence)
        if distance >= 1 && distance <= link.receiveWindow {
            if held[header.sequence] != nil {
                // A copy of a packet already held: the peer missed our answer.
                // Re-ACK (an EAK per copy makes a peer that reads EAK lists as
                // missing packets resend them all again, forever).
                statistics.duplicatesReceived += 1
                if !readerStalled { ackNow = true }
                return
            }
            held[header.sequence] = (header.session, payload)
            if distance == 1 {
                deliverHeld(link: link, now: now)
                if readerStalled { statistics.packetsHeldForReader += 1 }
            } else {
                statistics.outOfOrderReceived += 1
                if !readerStalled { sendEAK(link: link, now: now) }
            }
        } else {
            // Already delivered: the peer missed our acknowledgement.
            statistics.duplicatesReceived += 1
            ackNow = true
        }
    }

    /// Whether the reader can take `count` more bytes now. A reader that has
    /// caught up always gets at least one packet.
    private func readerHasRoom(for count: Int) -> Bool {
        unconsumed == 0 || unconsumed + count <= configuration.receiveBufferLimit
    }

    /// The next packet in order is held because the reader is behind.
    private var readerStalled: Bool { held[receivedSequence &+ 1] != nil }

    /// Delivers held packets in order while the reader has room, and
    /// schedules their acknowledgement.
    private mutating func deliverHeld(link: NegotiatedLink, now: LinkInstant) {
        var delivered = 0
        while let next = held[receivedSequence &+ 1], readerHasRoom(for: next.payload.count) {
            held[receivedSequence &+ 1] = nil
            receivedSequence &+= 1
            deliver(session: next.session, next.payload, link: link)
            delivered += 1
        }
        guard delivered > 0 else { return }
        pendingAcks += delivered
        // Acknowledge by half the window at the latest, whatever count the
        // peer allows: a sender streaming a long message then never sits
        // with a full window waiting for the ACK of its last packet.
        if pendingAcks >= max(1, min(link.maximumCumulativeAcks, link.receiveWindow / 2)) {
            ackNow = true
        } else if ackDeadline == nil {
            ackDeadline = now + link.cumulativeAckTimeout
        }
    }

    /// The reader has handled `count` delivered bytes: packets held for it
    /// are delivered and acknowledged.
    public mutating func consumed(_ count: Int, now: LinkInstant) -> [LinkAction] {
        defer { refreshDeadline() }
        unconsumed = max(0, unconsumed - count)
        if case .connected(let link) = state, !link.zeroAck, readerStalled {
            deliverHeld(link: link, now: now)
            if !readerStalled { ackNow = true }
            flush(now: now)
        }
        return takeActions()
    }

    private mutating func deliver(session: UInt8, _ payload: [UInt8], link: NegotiatedLink) {
        guard link.session(session) != nil else {
            statistics.unknownSessionPackets += 1
            violation(.unknownSession(session))
            return
        }
        unconsumed += payload.count
        actions.append(.deliver(session: session, payload))
    }

    /// Removes every packet up to and including `sequence` from the
    /// retransmission queue. An acknowledgement of a number not yet sent is
    /// ignored: it would drop packets the peer never received.
    private mutating func acknowledge(_ sequence: UInt8, link: NegotiatedLink) {
        let ahead = Int(sequence &- sendSequence)
        if ahead != 0 && ahead < 128 {
            statistics.invalidAcknowledgements += 1
            violation(.acknowledgementNotSent(sequence))
            return
        }
        var count = 0
        for packet in unacked {
            // In the window, `sequence - packet` is small; for later packets it wraps past 127.
            guard Int(sequence &- packet.sequence) < 128 else { break }
            count += 1
        }
        if count > 0 { unacked.removeFirst(count) }
    }

    /// The peer holds the listed packets out of order: everything older that
    /// it does not list is missing and goes again now. A list that does not
    /// match the packets in flight (too long, repeated or unknown numbers) is
    /// ignored; a packet resent within half a timeout is not resent again
    /// for a repeated EAK; every resend counts against the retransmission limit.
    private mutating func extendedAcknowledgement(_ payload: [UInt8], link: NegotiatedLink, now: LinkInstant) {
        let listed = Set(payload)
        let inFlight = Set(unacked.lazy.map(\.sequence))
        guard !payload.isEmpty, payload.count <= link.sendWindow, listed.count == payload.count, listed.isSubset(of: inFlight) else {
            statistics.invalidEAKs += 1
            violation(.invalidExtendedAcknowledgement(listed: payload.count, inFlight: unacked.count))
            return
        }
        guard let newest = unacked.lastIndex(where: { listed.contains($0.sequence) }) else { return }
        for index in unacked.indices where index <= newest {
            if listed.contains(unacked[index].sequence) {
                unacked[index].heldByPeer = true
                continue
            }
            // Resent less than half a timeout ago: this EAK was sent before our copy arrived.
            if unacked[index].retransmissions > 0 && unacked[index].deadline - now > link.retransmitTimeout / 2 { continue }
            if unacked[index].retransmissions >= link.maximumRetransmissions {
                goDown(.retransmissionsExhausted(sequence: unacked[index].sequence, attempts: unacked[index].retransmissions), now: now)
                return
            }
            retransmit(index, link: link, now: now)
        }
    }

    /// Lists the held packets nearest first, as many as fit one packet the
    /// peer can receive (a window can hold more than that).
    private mutating func sendEAK(link: NegotiatedLink, now: LinkInstant) {
        let list = held.keys.sorted { ($0 &- receivedSequence) < ($1 &- receivedSequence) }.prefix(max(0, link.maximumPayload))
        statistics.eaksSent += 1
        emitPacket(LinkPacket(control: [.eak, .ack], sequence: sendSequence, acknowledgement: receivedSequence, payload: Array(list)), now: now)
        pendingAcks = 0
        ackDeadline = nil
    }

    private mutating func retransmit(_ index: Int, link: NegotiatedLink, now: LinkInstant) {
        var packet = unacked[index].packet
        unacked[index].retransmissions += 1
        unacked[index].deadline = now + link.retransmitTimeout
        lastDataSent = now
        statistics.retransmissions += 1
        statistics.packetsSent += 1
        // The current acknowledgement, and the header checksum over it.
        packet[Self.acknowledgementOffset] = receivedSequence
        packet[LinkPacket.headerLength - 1] = Checksum.of(packet[0..<LinkPacket.headerLength - 1])
        emit(packet, now: now)
        pendingAcks = 0
        ackDeadline = nil
    }

    private mutating func connectedTick(_ link: NegotiatedLink, now: LinkInstant) {
        if peerKeepsAlive, let limit = configuration.silenceLimit, now - lastReceived >= limit {
            goDown(.peerSilent(now - lastReceived), now: now)
            return
        }
        if !link.zeroAck {
            for index in unacked.indices {
                let due = unacked[index].heldByPeer ? unacked[index].deadline + link.retransmitTimeout : unacked[index].deadline
                guard now >= due else { continue }
                if unacked[index].retransmissions >= link.maximumRetransmissions {
                    goDown(.retransmissionsExhausted(sequence: unacked[index].sequence, attempts: unacked[index].retransmissions), now: now)
                    return
                }
                unacked[index].heldByPeer = false
                retransmit(index, link: link, now: now)
            }
            if let deadline = ackDeadline, now >= deadline { ackNow = true }
        }
        flush(now: now)
        if let interval = configuration.keepAliveInterval, now - lastSent >= interval {
            emitPacket(LinkPacket(control: .ack, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
        }
    }

    /// Sends queued session data while the window allows (each packet
    /// carrying the current acknowledgement), then a bare ACK if one is due.
    private mutating func flush(now: LinkInstant) {
        guard case .connected(let link) = state else {
            ackNow = false
            return
        }
        while !renegotiationRequested, link.maximumPayload > 0, link.zeroAck || unacked.count < link.sendWindow,
              let session = nextSessionWithData() {
            sendSequence &+= 1
            let packet = queues[session]!.takePacket(link.maximumPayload, sequence: sendSequence, acknowledgement: receivedSequence, session: session)
            statistics.packetsSent += 1
            emit(packet, now: now)
            lastDataSent = now
            if !link.zeroAck {
                unacked.append(Outgoing(sequence: sendSequence, packet: packet, deadline: now + link.retransmitTimeout, retransmissions: 0, heldByPeer: false))
            }
            pendingAcks = 0
            ackDeadline = nil
            ackNow = false
            if let queue = queues[session], queue.blocked, queue.count * 2 <= configuration.sendQueueLimit {
                queues[session]?.blocked = false
                actions.append(.event(.sessionWritable(session)))
            }
        }
        if ackNow && !holdsAcknowledgement {
            if !link.zeroAck {
                emitPacket(LinkPacket(control: .ack, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
                pendingAcks = 0
                ackDeadline = nil
            }
            ackNow = false
        }
        if renegotiationRequested && unacked.isEmpty {
            renegotiationRequested = false
            zeroAckLinkBeingRenegotiated = link.zeroAck ? link : nil
            sendSequence &+= 1
            sendSYN(now: now, attempts: 1, renegotiating: true)
        }
    }

    /// Round-robin over sessions, so one busy session cannot starve another.
    private mutating func nextSessionWithData() -> UInt8? {
        guard !sessionOrder.isEmpty else { return nil }
        for offset in 0..<sessionOrder.count {
            let index = (nextSessionIndex + offset) % sessionOrder.count
            let session = sessionOrder[index]
            if (queues[session]?.count ?? 0) > 0 {
                nextSessionIndex = (index + 1) % sessionOrder.count
                return session
            }
        }
        return nil
    }

    // MARK: - Endings

    /// The link that was up is gone. An accessory whose transport stays open
    /// starts over after a delay unless this end ended it (`restarting: false`).
    private mutating func goDown(_ reason: LinkDownReason, now: LinkInstant, restarting: Bool = true) {
        actions.append(.event(.down(reason)))
        resetLinkState()
        afterEnding(now: now, restarting: restarting)
    }

    private mutating func fail(_ failure: LinkFailure, now: LinkInstant, restarting: Bool = true) {
        actions.append(.event(.failed(failure)))
        resetLinkState()
        afterEnding(now: now, restarting: restarting)
    }

    private mutating func afterEnding(now: LinkInstant, restarting: Bool) {
        switch configuration.role {
        case .device:
            state = .listening
        case .accessory:
            guard restarting, let policy = configuration.restart else {
                state = .closed
                return
            }
            let delay = restartDelay ?? policy.initialDelay
            restartDelay = min(delay * 2, policy.maximumDelay)
            state = .restarting(at: now + delay)
            actions.append(.event(.restartScheduled(after: delay)))
        }
    }

    /// Reports a kind of violation once per connection.
    private mutating func violation(_ violation: LinkViolation) {
        guard reportedViolations.insert(violation.kind).inserted else { return }
        actions.append(.event(.peerViolation(violation)))
    }

    private mutating func closeQuietly() {
        resetLinkState()
        state = configuration.role == .device ? .listening : .closed
    }

    private mutating func resetLinkState() {
        unacked.removeAll()
        held.removeAll()
        unconsumed = 0
        queues.removeAll()
        sessionOrder.removeAll()
        pendingAcks = 0
        ackDeadline = nil
        ackNow = false
        renegotiationRequested = false
        sendSequence = configuration.initialSequence
        decoder.reset()
        decoder.configuration = .init(maximumPacketLength: LinkPacket.maximumLength,
                                      recognizesIAP1: configuration.role == .accessory || configuration.answersIAP1)
        partialSince = nil
        legacyPeer = false
    }

    private mutating func emitReset(now: LinkInstant) {
        emitPacket(LinkPacket(control: .rst, sequence: sendSequence, acknowledgement: receivedSequence), now: now)
    }

    // MARK: - Output

    private mutating func emitPacket(_ packet: LinkPacket, now: LinkInstant) {
        // Payloads are bounded by the negotiated length before they get here.
        guard let bytes = try? packet.encoded() else { return }
        statistics.packetsSent += 1
        emit(bytes, now: now)
    }

    private mutating func emit(_ bytes: [UInt8], now: LinkInstant) {
        lastSent = now
        actions.append(.send(bytes))
    }

    /// Handed over and replaced by an empty list: emptying the list while
    /// the caller holds its storage allocated a new buffer at every call,
    /// even one that acts on nothing.
    private mutating func takeActions() -> [LinkAction] {
        defer { actions = [] }
        return actions
    }
}
