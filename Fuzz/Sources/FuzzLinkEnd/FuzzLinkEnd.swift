// Fuzz entry point for LinkEnd, the sans-IO link state machine.
//
// The first input byte picks the mode:
// - even: a script of operations against one link end, run once as the
//   device and once as the accessory, with the harness as the peer (raw
//   chunks, well-formed SYN, SYN+ACK, ACK, EAK, RST, data, detect and iAP1
//   frames built from input bytes), the application (send, consumed, reset,
//   renegotiate, transportClosed, start) and the clock (ticks at deadlines);
// - odd: a device and an accessory link end joined by a wire that drops,
//   duplicates, reorders, splits and corrupts what it carries as the input
//   says, with application data both ways, then a healed wire and time
//   running on.
// Invariants are checked after every step; see Docs/Fuzzing.md.
import FuzzSupport
import Glibc
import IAPLink
import IAPWire

/// `FUZZ_TRACE=1` with a replayed input: every operation, every byte the
/// peer feeds and every action of the end, on standard error.
let tracing = getenv("FUZZ_TRACE") != nil
func trace(_ line: @autoclosure () -> String) { if tracing { fputs(line() + "\n", stderr) } }

func describe(_ bytes: [UInt8]) -> String {
    if let packet = try? LinkPacket(decoding: bytes) {
        return "\(packet.control) seq \(packet.sequence) ack \(packet.acknowledgement) session \(packet.session) payload \(hexString(packet.payload.prefix(16)))\(packet.payload.count > 16 ? "… (\(packet.payload.count))" : "")"
    }
    return hexString(bytes.prefix(32))
}

// MARK: - Input

/// Bytes that can neither start a packet (FF) nor a payload tag (A5).
func sanitized(_ bytes: [UInt8]) -> [UInt8] {
    bytes.map { $0 == 0xFF || $0 == 0xA5 ? $0 ^ 0x01 : $0 }
}

func encode(_ packet: LinkPacket) -> [UInt8] {
    guard let bytes = try? packet.encoded() else { fatalError("harness built an unencodable packet") }
    return bytes
}

func derivedConfiguration(role: LinkRole, _ script: inout Script, pair: Bool) -> LinkConfiguration {
    let a = script.byte(), b = script.byte(), c = script.byte(), d = script.byte(), e = script.byte(), f = script.byte()
    var parameters = LinkParameters()
    parameters.maximumOutstandingPackets = (pair ? [1, 2, 3, 4, 8, 16, 32, 5] : [1, 2, 4, 8, 16, 127, 3, 32])[Int(a & 7)]
    parameters.maximumPacketLength = [24, 25, 29, 40, 64, 128, 512, 4096][Int(b & 7)]
    parameters.zeroAck = !pair && a & 0xC0 == 0xC0
    parameters.retransmitTimeout = .milliseconds([20, 50, 200, 1000][Int(c & 3)])
    parameters.cumulativeAckTimeout = .milliseconds([10, 25, 50, 5][Int((c >> 2) & 3)])
    parameters.maximumRetransmissions = [1, 2, 5, 10, 30, 3, 0, 4][Int((c >> 4) & 7)]
    parameters.maximumCumulativeAcks = [0, 1, 4, 8][Int(d & 3)]
    parameters.sessions = [
        LinkParameters.standardSessions,
        [LinkSessionDescriptor(id: 1, type: .control)],
        [LinkSessionDescriptor(id: 7, type: .control), LinkSessionDescriptor(id: 9, type: .externalAccessory)],
        LinkParameters.standardSessions,
    ][Int((d >> 2) & 3)]
    var configuration = LinkConfiguration(role: role, parameters: parameters)
    configuration.detectInterval = .milliseconds([100, 1000, 7, 250][Int((d >> 4) & 3)])
    configuration.detectAttempts = pair ? nil : [nil, 1, 3, nil][Int((d >> 6) & 3)]
    configuration.skipDetect = e & 1 != 0
    configuration.keepAliveInterval = [.seconds(2), nil, .milliseconds(50), .milliseconds(700)][Int((e >> 1) & 3)]
    configuration.silenceLimit = [.seconds(10), nil, .milliseconds(300), .seconds(3)][Int((e >> 3) & 3)]
    configuration.sendQueueLimit = [64 * 1024, 1, 64, 1000][Int((e >> 5) & 3)]
    configuration.initialSequence = f
    configuration.partialPacketTimeout = .milliseconds([500, 20, 100, 3000][Int(f & 3)])
    configuration.receiveBufferLimit = [256 * 1024, 0, 1, 100, 1000, 5000, 40, 256 * 1024][Int((b >> 3) & 7)]
    // A device that answers a head unit identifying in iAP1 (single mode only).
    configuration.answersIAP1 = role == .device && !pair && b & 0x40 != 0
    configuration.restart = pair ? nil : [LinkRestartPolicy(), nil, LinkRestartPolicy(initialDelay: .milliseconds(1), maximumDelay: .milliseconds(5)),
                                          LinkRestartPolicy(initialDelay: .milliseconds(300), maximumDelay: .seconds(2))][Int((a >> 3) & 3)]
    return configuration
}

/// Every write must be the detect sequence or one valid link packet, within
/// the peer's advertised limit while a link is up. `who` is built only for a
/// message: interpolating a role goes through reflection, which took a
/// quarter of every run when it was built for each packet.
func checkWrite(_ bytes: [UInt8], link: NegotiatedLink?, who: @autoclosure () -> String) -> LinkPacket? {
    if bytes == DetectSequence.bytes { return nil }
    guard let packet = try? LinkPacket(decoding: bytes) else {
        fatalError("FUZZ INVARIANT BROKEN: \(who()) wrote bytes that are neither detect nor a valid packet: \(hexString(bytes.prefix(64)))")
    }
    // A device's SYN+ACK answers the peer's own SYN and echoes its sessions:
    // the peer chose its length.
    if let link, packet.control != [.syn, .ack] {
        require(bytes.count <= link.sendPacketLength,
                "\(who()) wrote a \(bytes.count)-byte packet (\(packet.control)) over the peer's \(link.sendPacketLength)-byte limit")
    }
    return packet
}

/// What the application sends: the bytes 0, 1, 2, … built once. libFuzzer
/// instruments every comparison in the harness, and building up to 200,000
/// bytes one by one for each send took a tenth of a run.
let sendPattern: [UInt8] = (0..<200_000).map { UInt8(truncatingIfNeeded: $0) }

/// `list.contains(byte)` through memchr, for the same reason.
func holds(_ list: [UInt8], _ byte: UInt8) -> Bool {
    list.withUnsafeBufferPointer { buffer in
        guard let start = buffer.baseAddress else { return false }
        return memchr(start, Int32(byte), buffer.count) != nil
    }
}

// MARK: - One link end against a scripted peer

let tagMagic: [UInt8] = [0xA5, 0x96]

struct Slot {
    var session: UInt8
    var payload: [UInt8]
    /// False for a number consumed by a renegotiating SYN.
    var isData: Bool
    var sessionKnown: Bool
}

struct SingleRun {
    var end: LinkEnd
    let role: LinkRole
    let configuration: LinkConfiguration
    var now = LinkInstant.zero
    /// The connection as the events tell it (up/renegotiated until down/failed).
    var link: NegotiatedLink?

    // Accounting for the output bound.
    var received = 0, appSent = 0, written = 0, steps = 0
    var unconsumed = 0

    // What the peer knows of the end's packets.
    var endSyn: UInt8 = 0
    var endProposal: LinkSynchronization?
    var endLatest: UInt8 = 0
    var endInFlight: [UInt8] = []

    // The peer's own sequence numbers.
    var junk = false
    var acceptedHandshake: UInt8?
    var handshakeCandidate: UInt8?
    var epoch = 0
    var honest = false
    var base: UInt8 = 0
    var slots: [Slot] = []
    var lastDelivered = 0
    var refused = false
    /// Legacy iAP1 frames the end reported, and the answer being written.
    var legacyFrames = 0
    var legacyAnswer: [UInt8]?

    init(configuration: LinkConfiguration) {
        self.configuration = configuration
        role = configuration.role
        end = LinkEnd(configuration: configuration)
    }

    var who: String { "\(role) end" }

    mutating func handle(_ actions: [LinkAction]) {
        for action in actions {
            if tracing {
                if case .send(let bytes) = action { trace("  \(who) sends \(describe(bytes))") } else { trace("  \(who): \(action)") }
            }
            switch action {
            case .send(let bytes):
                written += bytes.count
                if let answer = legacyAnswer, bytes == answer {
                    legacyAnswer = nil
                    continue
                }
                guard let packet = checkWrite(bytes, link: link, who: who) else { continue }
                if packet.control.contains(.syn) {
                    endSyn = packet.sequence
                    endLatest = packet.sequence
                    endInFlight = []
                    if !packet.control.contains(.ack) { endProposal = try? LinkSynchronization(decoding: packet.payload) }
                } else if !packet.payload.isEmpty && !packet.control.contains(.eak) {
                    if !holds(endInFlight, packet.sequence) { endInFlight.append(packet.sequence) }
                    if endInFlight.count > 256 { endInFlight.removeFirst() }
                    let ahead = packet.sequence &- endLatest
                    if ahead >= 1 && ahead < 128 { endLatest = packet.sequence }
                }
            case .deliver(let session, let bytes):
                guard let current = link else { fatalError("FUZZ INVARIANT BROKEN: \(who) delivered \(bytes.count) bytes with no link up") }
                require(current.session(session) != nil, "\(who) delivered on session \(session), which the link did not negotiate")
                unconsumed += bytes.count
                require(unconsumed <= configuration.receiveBufferLimit + current.receivePacketLength,
                        "\(who): \(unconsumed) bytes delivered and not consumed, limit \(configuration.receiveBufferLimit) + one packet of \(current.receivePacketLength)")
                checkOrder(session: session, bytes, link: current)
            case .event(let event):
                switch event {
                case .up(let newLink):
                    require(link == nil, "\(who) reported up twice without down")
                    link = newLink
                    epoch += 1
                    slots = []
                    lastDelivered = 0
                    unconsumed = 0
                    honest = !junk && handshakeCandidate != nil
                    base = handshakeCandidate ?? 0
                case .renegotiated(let newLink):
                    require(link != nil, "\(who) renegotiated a link that was not up")
                    link = newLink
                case .down:
                    require(link != nil, "\(who) reported down with no link up")
                    connectionEnded()
                case .failed:
                    require(link == nil, "\(who) reported a failure while up")
                    connectionEnded()
                case .proposalRefused:
                    refused = true
                case .legacyFrame(let payload):
                    require(role == .device && configuration.answersIAP1, "\(who) reported an iAP1 frame without answersIAP1")
                    // The end's state is read after the whole input: a handshake the
                    // same bytes completed later must not count.
                    require(link == nil, "\(who) reported an iAP1 frame with a link up")
                    require(legacyFrames > 0 || IAP1Packet.isIdentification(payload) || payload.first == 0 || payload.first == 4,
                            "\(who) took an iAP1 frame that is neither an identification nor on a served lingo for a legacy head unit")
                    require(payload.count >= 2, "\(who) reported an iAP1 payload of \(payload.count) bytes")
                    legacyFrames += 1
                default:
                    break
                }
            }
        }
    }

    mutating func connectionEnded() {
        link = nil
        honest = false
        junk = false
        acceptedHandshake = nil
        handshakeCandidate = nil
    }

    mutating func checkOrder(session: UInt8, _ bytes: [UInt8], link: NegotiatedLink) {
        guard honest else { return }
        // A zero-ACK link keeps no order to check, and what it delivered is
        // not counted: a renegotiation away from zero-ACK cannot be checked
        // either.
        if link.zeroAck {
            honest = false
            return
        }
        guard bytes.count >= 8, Array(bytes[0..<2]) == tagMagic else {
            honest = false  // Data the harness did not tag (raw or untagged packets).
            return
        }
        let tagEpoch = Int(bytes[2]) << 8 | Int(bytes[3])
        let n = Int(bytes[4]) << 24 | Int(bytes[5]) << 16 | Int(bytes[6]) << 8 | Int(bytes[7])
        require(tagEpoch == epoch % 65536, "\(who) delivered a packet of connection \(tagEpoch) on connection \(epoch)")
        require(n >= 1 && n <= slots.count, "\(who) delivered data number \(n), never sent (\(slots.count) sent)")
        let slot = slots[n - 1]
        require(slot.payload == bytes && slot.session == session, "\(who) delivered data number \(n) altered or on the wrong session")
        require(n > lastDelivered, "\(who) delivered data number \(n) after \(lastDelivered): duplicate or out of order")
        for skipped in lastDelivered + 1..<n {
            let gap = slots[skipped - 1]
            require(!gap.isData || !gap.sessionKnown || link.session(gap.session) == nil,
                    "\(who) delivered data number \(n) after \(lastDelivered), skipping \(skipped)")
        }
        lastDelivered = n
    }

    func check() {
        if let link {
            require(end.unacknowledgedCount <= link.sendWindow, "\(who): \(end.unacknowledgedCount) unacknowledged, window \(link.sendWindow)")
            if link.zeroAck { require(end.unacknowledgedCount == 0, "\(who): zero-ACK link keeps packets for retransmission") }
        } else {
            require(!end.isUp, "\(who) is up but reported no up event")
        }
        for session: UInt8 in [0, 1, 2, 3, 7, 9] {
            require(end.queuedBytes(session: session) <= configuration.sendQueueLimit,
                    "\(who): \(end.queuedBytes(session: session)) bytes queued on session \(session), limit \(configuration.sendQueueLimit)")
        }
        let budget = 16 * received + 31 * 11 * appSent + 256 * (steps + 1) + 1024
        require(written <= budget, "\(who) wrote \(written) bytes for \(received) received, \(appSent) sent by the app and \(steps) steps")
    }

    // MARK: Peer

    mutating func feed(_ bytes: [UInt8]) {
        trace("peer feeds \(describe(bytes)) at \(now)")
        received += bytes.count
        if let link, bytes.count > link.receivePacketLength { junk = true }
        handle(end.receive(bytes, now: now))
    }

    mutating func peerAck(_ script: inout Script) -> UInt8 {
        switch script.byte() % 4 {
        case 0, 1:
            endInFlight = []
            return endLatest
        case 2:
            let back = script.byte() % 8
            if endInFlight.count > Int(back) { endInFlight.removeFirst(endInFlight.count - Int(back)) }
            return endLatest &- back
        default: return script.byte()
        }
    }

    func synchronization(_ script: inout Script) -> [UInt8] {
        let mode = script.byte()
        if mode < 0x30 { return script.take(Int(script.byte() % 40)) }
        let windows: [UInt8] = [1, 2, 4, 8, 16, 127, 200, 0]
        let lengths: [UInt16] = [24, 29, 64, 512, 4096, 23, 10, 65535]
        var sync = LinkSynchronization(
            maximumOutstandingPackets: windows[Int(mode & 7)], maximumPacketLength: lengths[Int((mode >> 3) & 7)],
            retransmitTimeoutMilliseconds: [20, 100, 1000, 0][Int(script.byte() & 3)],
            cumulativeAckTimeoutMilliseconds: [10, 25, 1000, 0][Int(script.byte() & 3)],
            maximumRetransmissions: [1, 3, 30, 0, 31][Int(script.byte() % 5)],
            maximumCumulativeAcks: [0, 1, 4, 200][Int(script.byte() & 3)],
            sessions: LinkParameters.standardSessions)
        if mode & 0x40 != 0 {
            sync.retransmitTimeoutMilliseconds = 0
            sync.cumulativeAckTimeoutMilliseconds = 0
            sync.maximumRetransmissions = 0
            sync.maximumCumulativeAcks = 0
        }
        switch script.byte() % 8 {
        case 0: sync.sessions = [LinkSessionDescriptor(id: 1, type: .control)]
        case 1: sync.sessions = [LinkSessionDescriptor(id: 7, type: .control), LinkSessionDescriptor(id: 9, type: .externalAccessory)]
        case 2: sync.sessions = (0..<Int(script.byte() % 6)).map { _ in LinkSessionDescriptor(id: script.byte(), type: SessionType(rawValue: script.byte() % 4)) }
        case 3: sync.version = script.byte()
        default: break
        }
        return sync.encoded()
    }

    mutating func peerStep(_ op: UInt8, _ script: inout Script) {
        switch op {
        case 0:  // raw bytes
            junk = true
            handshakeCandidate = nil
            feed(sanitized(script.take(Int(script.byte() % 64))))
        case 1:
            feed(DetectSequence.bytes)
        case 2:  // SYN, as an accessory would send it
            let sequence: UInt8
            let renegotiating = link != nil
            if renegotiating && script.byte() & 1 == 0 {
                sequence = base &+ UInt8(truncatingIfNeeded: slots.count + 1)
            } else {
                sequence = script.byte()
            }
            refused = false
            feed(encode(LinkPacket(control: .syn, sequence: sequence, payload: synchronization(&script))))
            guard role == .device, !refused else { return }
            if renegotiating, link != nil {
                // An accepted renegotiation: the SYN takes a number.
                let undelivered = slots[lastDelivered...].contains { $0.isData && $0.sessionKnown }
                if sequence == base &+ UInt8(truncatingIfNeeded: slots.count + 1) && !undelivered {
                    slots.append(Slot(session: 0, payload: [], isData: false, sessionKnown: false))
                } else {
                    honest = false
                }
            } else if !junk {
                handshakeCandidate = sequence
            }
        case 3:  // SYN+ACK, as a device would answer
            let sequence = script.byte()
            let acknowledgement = script.byte() & 7 == 0 ? script.byte() : endSyn
            var payload: [UInt8]
            if script.byte() & 3 != 0, let proposal = endProposal {
                var limits = LinkParameters()
                limits.maximumOutstandingPackets = Int(script.byte() % 20)
                limits.maximumPacketLength = Int(script.u16() % 5000)
                switch LinkNegotiation.answer(to: proposal, limits: limits) {
                case .success(let result): payload = result.answer.encoded()
                case .failure: payload = synchronization(&script)
                }
            } else {
                payload = synchronization(&script)
            }
            if script.byte() & 15 == 0, !payload.isEmpty { payload[Int(script.byte()) % payload.count] ^= script.byte() | 1 }
            let wasUp = link != nil
            if !wasUp && !junk { handshakeCandidate = sequence }
            // A connected device takes a SYN+ACK for a renegotiating SYN,
            // which may take a number the harness does not account for.
            if wasUp && role == .device { honest = false }
            feed(encode(LinkPacket(control: [.syn, .ack], sequence: sequence, acknowledgement: acknowledgement, payload: payload)))
        case 4:  // ACK
            let sequence = link != nil ? base &+ UInt8(truncatingIfNeeded: slots.count) : (handshakeCandidate ?? script.byte())
            var acknowledgement = peerAck(&script)
            if link == nil && role == .device { acknowledgement = script.byte() & 7 == 0 ? script.byte() : endSyn }
            feed(encode(LinkPacket(control: script.byte() & 15 == 0 ? [.ack, .slp] : .ack, sequence: sequence, acknowledgement: acknowledgement)))
        case 5:  // EAK
            var list: [UInt8]
            if script.byte() & 3 == 0 {
                list = script.take(Int(script.byte() % 10))
            } else {
                let mask = script.byte()
                list = endInFlight.enumerated().filter { $0.offset < 8 && mask & (1 << $0.offset) != 0 }.map(\.element)
            }
            let acknowledgement = script.byte() & 1 == 0 ? endLatest &- UInt8(truncatingIfNeeded: endInFlight.count) : script.byte()
            feed(encode(LinkPacket(control: [.eak, .ack], sequence: base &+ UInt8(truncatingIfNeeded: slots.count), acknowledgement: acknowledgement, payload: list)))
        case 6:  // RST
            feed(encode(LinkPacket(control: LinkControl(rawValue: 0x10 | (script.byte() & 0x4F)), sequence: script.byte(), acknowledgement: script.byte())))
        case 7, 8:  // new tagged data
            guard let link else {
                // Data can complete a handshake and take the number the
                // first tagged packet would use (even on a session the link
                // drops, which it acknowledges): that link's order is not
                // the harness's to check.
                handshakeCandidate = nil
                feed(encode(LinkPacket(control: .ack, sequence: script.byte(), acknowledgement: script.byte(), session: script.byte(),
                                       payload: sanitized(script.take(1 + Int(script.byte() % 16))))))
                return
            }
            let choice = script.byte()
            let session = choice & 7 == 7 ? script.byte() : link.sessions[Int(choice) % link.sessions.count].id
            let n = slots.count + 1
            let beyondWindow = n - lastDelivered > link.receiveWindow
            if beyondWindow && choice & 0x80 == 0 { return }  // an honest peer waits
            if beyondWindow || n - lastDelivered > 100 { honest = false }
            let room = max(0, link.receivePacketLength - LinkPacket.headerLength - 1 - 8)
            let filler = sanitized(script.take(min(room, Int(script.byte()))))
            let payload = tagMagic + [UInt8(truncatingIfNeeded: epoch >> 8), UInt8(truncatingIfNeeded: epoch),
                                      UInt8(truncatingIfNeeded: n >> 24), UInt8(truncatingIfNeeded: n >> 16),
                                      UInt8(truncatingIfNeeded: n >> 8), UInt8(truncatingIfNeeded: n)] + filler
            slots.append(Slot(session: session, payload: payload, isData: true, sessionKnown: link.session(session) != nil))
            sendSlot(n, &script)
        case 9:  // resend an earlier number
            guard link != nil, !slots.isEmpty else { return }
            let back = Int(script.byte()) % min(slots.count, 128)
            sendSlot(slots.count - back, &script)
        case 10:  // untagged data with any header
            let packet = LinkPacket(control: LinkControl(rawValue: script.byte() & 0x48), sequence: script.byte(), acknowledgement: script.byte(),
                                    session: script.byte(), payload: sanitized(script.take(Int(script.byte() % 32))))
            // Data can take a sequence number the peer's tagged data uses
            // (even on a session the link drops, which it acknowledges) or
            // be held out of order in its place: an honest peer never
            // sends two packets under one number.
            if link != nil && !packet.payload.isEmpty { honest = false }
            feed(encode(packet))
        case 11:  // iAP1 frame
            junk = true
            handshakeCandidate = nil
            let kind = script.byte()
            var payload = kind & 0x10 != 0 ? [0x00, 0x02, 0x00, 0xEE] : script.take(Int(script.byte()) + (kind & 0x20 != 0 ? 200 : 0))
            if kind & 0x40 != 0 { payload = [0x00, 0x00] }
            let length: [UInt8] = payload.count <= 255 && kind & 0x80 == 0 ? [UInt8(payload.count)] : [0x00, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
            var frame: [UInt8] = (kind & 1 != 0 ? [0xFF, 0x55] : [0x55]) + length + payload
            let sum = (length + payload).reduce(UInt8(0)) { $0 &+ $1 }
            frame.append((0 &- sum) &+ (kind & 2 != 0 ? 1 : 0))
            feed(frame)
        default:  // a packet cut short
            junk = true
            handshakeCandidate = nil
            let bytes = encode(LinkPacket(control: LinkControl(rawValue: script.byte()), sequence: script.byte(), acknowledgement: script.byte(),
                                          session: script.byte(), payload: script.take(Int(script.byte() % 40))))
            feed(Array(bytes.prefix(Int(script.byte()) % bytes.count)))
        }
    }

    mutating func sendSlot(_ n: Int, _ script: inout Script) {
        let slot = slots[n - 1]
        guard slot.isData else { return }
        let control: LinkControl = [.ack, [], [.ack, .slp], .ack][Int(script.byte() & 3)]
        feed(encode(LinkPacket(control: control, sequence: base &+ UInt8(truncatingIfNeeded: n), acknowledgement: peerAck(&script),
                               session: slot.session, payload: slot.payload)))
    }

    // MARK: Application and clock

    mutating func appStep(_ op: UInt8, _ script: inout Script) {
        switch op {
        case 0, 1:  // send
            let choice = script.byte()
            let session: UInt8
            if let link, choice & 7 != 7 { session = link.sessions[Int(choice) % link.sessions.count].id } else { session = script.byte() }
            let maximum = link?.maximumPayload ?? 100
            let count = [0, 1, 5, maximum, maximum + 1, 3 * maximum + 7, configuration.sendQueueLimit, configuration.sendQueueLimit + 1][Int(choice >> 5)]
            let bytes = Array(sendPattern.prefix(count))
            do {
                handle(try end.send(bytes, session: session, now: now))
                appSent += bytes.count
            } catch {
                if case .linkNotUp = error.kind { require(!end.isUp, "\(who) refused a send as not up while up") }
            }
        case 2, 3:  // the reader hands bytes back
            let part = Int(script.byte())
            let count = part == 255 ? unconsumed : unconsumed * part / 255
            unconsumed -= count
            handle(end.consumed(count, now: now))
        case 4:
            handle(end.reset(now: now))
            junk = false
            handshakeCandidate = nil
        case 5:
            handle(end.renegotiate(now: now))
        case 6:
            handle(end.transportClosed("fuzz", now: now))
            junk = false
            handshakeCandidate = nil
        case 7:
            // Starting over is for an end without a connection.
            guard link == nil else { return }
            handle(end.start(now: now))
            junk = false
            handshakeCandidate = nil
        case 8:  // a tick between deadlines
            handle(end.tick(now: now))
        case 9:  // an answer to a legacy head unit
            guard let frame = try? IAP1Packet(lingo: 0, command: 2, data: [0, script.byte()]).encoded(sync: true) else { return }
            legacyAnswer = frame
            do {
                handle(try end.sendLegacy(frame, now: now))
                require(legacyFrames > 0 && link == nil, "\(who) wrote an iAP1 answer with no legacy head unit")
            } catch {
                legacyAnswer = nil
            }
            require(legacyAnswer == nil, "\(who) took an iAP1 answer and did not write it")
        default:  // time runs on
            let unit: [Int64] = [0, 1, 10, 100, 1000, 10_000, 30, 3]
            let choice = script.byte()
            let milliseconds = unit[Int(choice & 7)] * Int64(1 + (choice >> 3))
            let target = now + .milliseconds(milliseconds)
            // No timer of this configuration or the protocol fires more
            // often than every millisecond.
            let tickLimit = 8 * Int(milliseconds) + 1000
            var ticks = 0
            while let deadline = end.nextDeadline, deadline <= target {
                now = max(now, deadline)
                handle(end.tick(now: now))
                ticks += 1
                if let next = end.nextDeadline {
                    require(next > now, "\(who): deadline \(next) not after a tick at \(now) (busy loop)")
                }
                require(ticks <= tickLimit, "\(who): \(ticks) ticks in \(milliseconds) ms")
            }
            now = max(now, target)
            steps += ticks
        }
    }

    mutating func run(_ script: inout Script) {
        handle(end.start(now: now))
        check()
        var operations = 0
        while !script.atEnd && operations < 2000 {
            operations += 1
            steps += 1
            let op = script.byte()
            trace(op < 0xA0 ? "peer operation \(op % 13)" : "application operation \((op - 0xA0) % 12)")
            if op < 0xA0 {
                peerStep(op % 13, &script)
            } else {
                appStep((op - 0xA0) % 12, &script)
            }
            check()
        }
    }
}

// MARK: - Two link ends over a faulty wire

struct PairRun {
    /// Writes the wire holds in each direction.
    static let wireCapacity = 4096
    var ends: [LinkEnd]
    let configurations: [LinkConfiguration]
    var now = LinkInstant.zero
    var links: [NegotiatedLink?] = [nil, nil]
    /// In flight towards end 0 (device) and end 1 (accessory).
    var wire: [[[UInt8]]] = [[], []]
    /// Whether the next write towards each end is the rest of a write that
    /// was split, its first part already delivered. That rest is neither
    /// dropped nor swapped: a packet cut short and followed at once by the
    /// next one is taken, corrupted, whenever the one-byte payload checksum
    /// happens to match (one time in 256), which no iAP2 end can tell.
    var splitRest = [false, false]
    /// Per end and session: bytes the application sent, and how many of the
    /// other end's have been delivered here.
    var sent: [[UInt8: [UInt8]]] = [[:], [:]]
    var deliveredCount: [[UInt8: Int]] = [[:], [:]]
    var unconsumed = [0, 0]
    var ended = false
    var everUp = false

    init(_ script: inout Script) {
        let device = derivedConfiguration(role: .device, &script, pair: true)
        var accessory = derivedConfiguration(role: .accessory, &script, pair: true)
        // Both ends must offer the same sessions for data to flow.
        accessory.parameters.sessions = device.parameters.sessions
        configurations = [device, accessory]
        ends = configurations.map { LinkEnd(configuration: $0) }
    }

    func name(_ side: Int) -> String { side == 0 ? "device" : "accessory" }

    mutating func handle(_ actions: [LinkAction], side: Int) {
        for action in actions {
            if tracing {
                if case .send(let bytes) = action { trace("  \(name(side)) sends \(describe(bytes))") } else { trace("  \(name(side)): \(action)") }
            }
            switch action {
            case .send(let bytes):
                _ = checkWrite(bytes, link: links[side], who: name(side))
                // Like a transport's buffer, the wire holds only so much:
                // an end that writes while the script delivers nothing (a
                // detect every 7 ms for minutes) loses what does not fit,
                // which the ends must recover from like any loss, instead
                // of queueing more than the healed wire's rounds can carry.
                if wire[1 - side].count < Self.wireCapacity {
                    wire[1 - side].append(bytes)
                } else {
                    trace("  (the wire to \(name(1 - side)) is full: lost)")
                }
            case .deliver(let session, let bytes):
                guard let link = links[side] else { fatalError("FUZZ INVARIANT BROKEN: \(name(side)) delivered with no link up") }
                unconsumed[side] += bytes.count
                require(unconsumed[side] <= configurations[side].receiveBufferLimit + link.receivePacketLength,
                        "\(name(side)): \(unconsumed[side]) bytes delivered and not consumed")
                let stream = sent[1 - side][session] ?? []
                let from = deliveredCount[side][session] ?? 0
                require(from + bytes.count <= stream.count && Array(stream[from..<from + bytes.count]) == bytes,
                        "\(name(side)) delivered \(bytes.count) bytes on session \(session) at offset \(from) that are not what the other end sent next (\(stream.count) sent)")
                deliveredCount[side][session] = from + bytes.count
            case .event(let event):
                switch event {
                case .up(let link):
                    require(links[side] == nil, "\(name(side)) up twice")
                    links[side] = link
                    everUp = true
                case .renegotiated(let link):
                    links[side] = link
                case .down, .failed, .restartScheduled, .proposalRefused:
                    // The allowed way out: the link says it could not go on.
                    links[side] = nil
                    ended = true
                default:
                    break
                }
            }
        }
    }

    func check() {
        for side in 0..<2 {
            if let link = links[side] {
                require(ends[side].unacknowledgedCount <= link.sendWindow, "\(name(side)): unacknowledged over the window")
            }
            for session: UInt8 in [1, 2, 3, 7, 9] {
                require(ends[side].queuedBytes(session: session) <= configurations[side].sendQueueLimit, "\(name(side)): queue over its limit")
            }
        }
    }

    mutating func deliver(to side: Int, fault: UInt8, _ script: inout Script) {
        guard !wire[side].isEmpty else { return }
        var chunk = wire[side].removeFirst()
        var fault = fault % 8
        if splitRest[side] {
            splitRest[side] = false
            if fault == 1 || fault == 4 { fault = 0 }
        }
        switch fault {
        case 1:  // dropped
            trace("wire to \(name(side)) at \(now) drops \(describe(chunk))")
            return
        case 2: wire[side].insert(chunk, at: 0)  // duplicated
        case 3: chunk[Int(script.byte()) % chunk.count] ^= script.byte() | 1  // one byte corrupted
        case 4:  // reordered
            if !wire[side].isEmpty { swap(&chunk, &wire[side][0]) }
        case 5:  // split
            let cut = Int(script.byte()) % chunk.count
            if cut > 0 {
                wire[side].insert(Array(chunk[cut...]), at: 0)
                splitRest[side] = true
                chunk = Array(chunk[..<cut])
            }
        default: break
        }
        trace("wire to \(name(side)) (fault \(fault)) at \(now): \(describe(chunk))")
        handle(ends[side].receive(chunk, now: now), side: side)
    }

    mutating func send(side: Int, _ script: inout Script) {
        guard let link = links[side], ends[side].isUp else { return }
        let choice = script.byte()
        let session = link.sessions[Int(choice) % link.sessions.count]
        let isDatagram = session.type != .control
        var count = [1, 7, link.maximumPayload, 3 * link.maximumPayload + 1, 40, 200, 1000, 2][Int(choice >> 5)]
        if isDatagram { count = min(count, link.maximumPayload) }
        let already = sent[side][session.id]?.count ?? 0
        // Never FF: no packet can start inside application data.
        let bytes = (0..<count).map { UInt8((already + $0) % 251) }
        do {
            trace("\(name(side)) application sends \(bytes.count) bytes on session \(session.id) at \(now)")
            handle(try ends[side].send(bytes, session: session.id, now: now), side: side)
            sent[side][session.id, default: []] += bytes
        } catch {}
    }

    mutating func consume(side: Int, part: Int) {
        let count = part >= 255 ? unconsumed[side] : unconsumed[side] * part / 255
        unconsumed[side] -= count
        trace("\(name(side)) application consumes \(count) bytes at \(now)")
        handle(ends[side].consumed(count, now: now), side: side)
    }

    /// Ticks both ends at every deadline up to `target`, in time order.
    mutating func advance(to target: LinkInstant) {
        var ticks = 0
        while true {
            let deadlines = ends.map(\.nextDeadline)
            guard let soonest = deadlines.compactMap({ $0 }).min(), soonest <= target else { break }
            now = max(now, soonest)
            for side in 0..<2 where deadlines[side].map({ $0 <= now }) ?? false {
                handle(ends[side].tick(now: now), side: side)
                if let next = ends[side].nextDeadline { require(next > now, "\(name(side)): deadline not after a tick at \(now) (busy loop)") }
            }
            ticks += 1
            require(ticks <= 40_000, "more than 40000 ticks in one step")
        }
        now = max(now, target)
    }

    mutating func run(_ script: inout Script) {
        for side in 0..<2 { handle(ends[side].start(now: now), side: side) }
        var operations = 0
        while !script.atEnd && !ended && operations < 2000 {
            operations += 1
            let op = script.byte()
            switch op % 8 {
            case 0, 1, 2: deliver(to: Int(op >> 3) & 1, fault: op >> 4, &script)
            case 3: send(side: Int(op >> 3) & 1, &script)
            case 4: consume(side: Int(op >> 3) & 1, part: Int(script.byte()))
            case 5: advance(to: now + .milliseconds([0, 1, 5, 20, 100, 500, 2000, 10_000][Int(op >> 5)]))
            case 6: if op & 0x80 != 0 { handle(ends[1].renegotiate(now: now), side: 1) } else { deliver(to: Int(op >> 3) & 1, fault: 0, &script) }
            default: handle(ends[Int(op >> 3) & 1].tick(now: now), side: Int(op >> 3) & 1)
            }
            check()
        }
        guard !ended else { return }
        // The wire heals: everything in flight arrives in order, the readers
        // keep up, and time runs on until all is delivered or the link ends.
        let healStart = now
        var rounds = 0
        while !ended {
            rounds += 1
            require(rounds <= 100_000, "no progress after 100000 rounds of a healed wire")
            if !wire[0].isEmpty || !wire[1].isEmpty {
                let side = wire[0].isEmpty ? 1 : 0
                let chunk = wire[side].removeFirst()
                splitRest[side] = false
                trace("healed wire to \(name(side)) at \(now): \(describe(chunk))")
                handle(ends[side].receive(chunk, now: now), side: side)
                for side in 0..<2 where unconsumed[side] > 0 { consume(side: side, part: 255) }
                check()
                continue
            }
            if allDelivered || now - healStart > .seconds(600) { break }
            guard let soonest = ends.compactMap(\.nextDeadline).min() else { break }
            advance(to: soonest)
            check()
        }
        guard !ended else { return }
        require(allDelivered, "healed wire, \(now - healStart) later: not everything sent was delivered and the link did not go down "
                + "(sent \(sent.map { $0.mapValues(\.count) }), delivered \(deliveredCount))")
    }

    var allDelivered: Bool {
        for side in 0..<2 {
            for (session, stream) in sent[side] where (deliveredCount[1 - side][session] ?? 0) != stream.count { return false }
        }
        return true
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    guard let mode = input.first else { return 0 }
    if mode & 1 == 0 {
        for role in [LinkRole.device, .accessory] {
            var script = Script(Array(input.dropFirst()))
            var run = SingleRun(configuration: derivedConfiguration(role: role, &script, pair: false))
            run.run(&script)
        }
    } else {
        var script = Script(Array(input.dropFirst()))
        var run = PairRun(&script)
        run.run(&script)
    }
    return 0
}
