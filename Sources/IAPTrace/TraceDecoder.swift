import IAPWire

/// Turns byte streams (one per direction, or per USB endpoint) into trace
/// events: link packets with their SYN and EAK payloads, control messages
/// reassembled per session, file-transfer and external-accessory datagrams,
/// iAP1 frames, and every skipped byte with its reason.
///
/// Pure: the caller reads files and hands bytes over with `ingest`; events go
/// to the `emit` closure in the order found.
public struct TraceDecoder {
    public struct Options: Sendable {
        /// Treat each chunk as a USB HID report carrying iAP1 (`[report id][link control][data]`).
        public var hid: Bool
        public var maximumPacketLength: Int
        /// Streams that must show an iAP packet before their events are
        /// reported (usbmon endpoints that may carry other traffic).
        public var requireIdentification: Bool
        /// A note on a message's top-level parameter (what an accessory
        /// certificate says, say), from a caller that can read more than
        /// this standard-library-only decoder; nil for none.
        public var annotate: (@Sendable (_ messageID: UInt16, _ parameter: InterpretedParameter) -> String?)?
        /// Decode and interpret each message's parameters
        /// (`MessageInfo.parameters`). Without it a message is found, checked
        /// and counted just the same, but its parameters stay empty and
        /// nothing is allocated for it: for counting (`--stats`).
        public var decodesParameters: Bool

        public init(hid: Bool = false, maximumPacketLength: Int = LinkPacket.maximumLength, requireIdentification: Bool = false,
                    annotate: (@Sendable (_ messageID: UInt16, _ parameter: InterpretedParameter) -> String?)? = nil,
                    decodesParameters: Bool = true) {
            self.hid = hid
            self.maximumPacketLength = maximumPacketLength
            self.requireIdentification = requireIdentification
            self.annotate = annotate
            self.decodesParameters = decodesParameters
        }
    }

    /// Identifies a byte stream: one direction of one link.
    public struct StreamKey: Hashable, Sendable {
        public var link: LinkKey
        public var direction: TraceDirection?
        public var endpoint: CaptureEndpoint?

        public init(link: LinkKey, direction: TraceDirection?, endpoint: CaptureEndpoint? = nil) {
            self.link = link
            self.direction = direction
            self.endpoint = endpoint
        }
    }

    /// Identifies a link: both directions between two ends share session
    /// types and iAP1 transaction mode.
    public struct LinkKey: Hashable, Sendable {
        public var bus: UInt16
        public var device: UInt8
        public init(bus: UInt16 = 0, device: UInt8 = 0) {
            self.bus = bus
            self.device = device
        }
    }

    /// Limits on how many streams are tracked, so a hostile capture cannot
    /// grow memory without bound.
    public static let maximumStreams = 256
    /// Skipped events held per stream while waiting to see whether it carries iAP at all.
    static let maximumHeldEvents = 64

    private struct LinkState {
        var sessionTypes: [UInt8: SessionType] = [:]
        var transactions = IAP1TransactionTracker()
    }

    private struct StreamState {
        var decoder: LinkStreamDecoder
        /// The control sessions seen since the last SYN or RST, in the order
        /// seen (a link has a handful: a short array beats a dictionary).
        var sessions: [(id: UInt8, framer: ControlMessageFramer)] = []
        var lastDataSequence: UInt8?
        var identified: Bool
        var held: [TraceEvent] = []
        var heldBytes = 0
        var hid = IAPHIDReassembler()
        var hidOffset = 0
    }

    public let options: Options
    private var links: [LinkKey: LinkState] = [:]
    /// Where each stream's state is in `states` (and its key in `streamOrder`).
    private var streamIndices: [StreamKey: Int] = [:]
    /// In the order the streams were first seen. A state is moved out (nil)
    /// while it is worked on: a copy left in place would make every append
    /// to its buffers copy them whole.
    private var states: [StreamState?] = []
    private var streamOrder: [StreamKey] = []
    /// The two streams looked up last, tried before `streamIndices`: a
    /// capture's records mostly alternate between one OUT and one IN endpoint.
    private var recentStreams: (StreamKey, Int)?
    private var previousStreams: (StreamKey, Int)?
    /// Bytes of streams that never showed iAP traffic (other USB functions).
    public private(set) var unidentifiedBytes = 0
    public private(set) var droppedStreams = 0
    /// HID reports fed (with `hid`), whatever they turned out to hold.
    public private(set) var hidReports = 0

    public init(options: Options = Options()) {
        self.options = options
    }

    /// Feeds bytes of one stream. `frame` and `line` locate them in the
    /// input; `time` is the capture time (`TraceEvent.time`).
    public mutating func ingest(_ bytes: some Collection<UInt8>, stream key: StreamKey, frame: Int? = nil, line: Int? = nil,
                                time: Int64? = nil, emit: (TraceEvent) -> Void) {
        if options.hid { hidReports += 1 }
        guard let index = streamIndex(key) else {
            unidentifiedBytes += bytes.count
            return
        }
        var state = takeState(index)
        let context = Context(key: key, frame: frame, line: line, time: time)
        if options.hid {
            ingestReport(Array(bytes), state: &state, context: context, emit: emit)
        } else {
            // The raw-buffer append is not generic: no per-call metadata lookup.
            if bytes.withContiguousStorageIfAvailable({ state.decoder.append(UnsafeRawBufferPointer($0)) }) == nil {
                state.decoder.append(bytes)
            }
            drain(&state, context: context, emit: emit)
        }
        states[index] = consume state
    }

    /// Reports bytes the capture says moved but did not record.
    public mutating func gap(_ count: Int, stream key: StreamKey, frame: Int?, time: Int64? = nil, emit: (TraceEvent) -> Void) {
        guard let index = streamIndex(key) else { return }
        var state = takeState(index)
        let context = Context(key: key, frame: frame, line: nil, time: time)
        let event = context.event(.skipped(SkippedInfo(count: count, reason: "not_captured", detail: "the capture holds fewer bytes than the transfer moved")),
                                  offset: options.hid ? state.hidOffset : state.decoder.offset)
        output(event, state: &state, emit: emit)
        states[index] = consume state
    }

    /// Ends every stream: truncated packets and messages are reported.
    public mutating func finish(emit: (TraceEvent) -> Void) {
        for (index, key) in streamOrder.enumerated() {
            var state = takeState(index)
            let context = Context(key: key, frame: nil, line: nil, time: nil)
            if !options.hid {
                state.decoder.finish()
                drain(&state, context: context, emit: emit)
                for sessionIndex in state.sessions.indices.sorted(by: { state.sessions[$0].id < state.sessions[$1].id }) {
                    state.sessions[sessionIndex].framer.finish()
                    drainMessages(&state, sessionIndex: sessionIndex, context: context, emit: emit)
                }
            }
            if !state.identified { unidentifiedBytes += state.heldBytes }
            states[index] = consume state
        }
    }

    // MARK: - Streams

    private struct Context {
        var key: StreamKey
        var frame: Int?
        var line: Int?
        var time: Int64?

        func event(_ body: TraceEvent.Body, offset: Int, base: TraceEvent.OffsetBase = .stream) -> TraceEvent {
            TraceEvent(body: body, direction: key.direction, offset: offset, frame: frame, line: line, endpoint: key.endpoint,
                       offsetBase: base, time: time)
        }
    }

    /// The stream's place in `states`, made on first sight; nil once
    /// `maximumStreams` are tracked.
    private mutating func streamIndex(_ key: StreamKey) -> Int? {
        if let (recent, index) = recentStreams, recent == key { return index }
        if let (previous, index) = previousStreams, previous == key {
            swap(&recentStreams, &previousStreams)
            return index
        }
        guard let index = lookUpStream(key) else { return nil }
        previousStreams = recentStreams
        recentStreams = (key, index)
        return index
    }

    private mutating func lookUpStream(_ key: StreamKey) -> Int? {
        if let index = streamIndices[key] { return index }
        guard states.count < Self.maximumStreams else {
            droppedStreams += 1
            return nil
        }
        let configuration = LinkStreamDecoder.Configuration(maximumPacketLength: options.maximumPacketLength)
        streamIndices[key] = states.count
        streamOrder.append(key)
        states.append(StreamState(decoder: LinkStreamDecoder(configuration: configuration), identified: !options.requireIdentification))
        return states.count - 1
    }

    /// Moves a stream's state out of `states`; the caller moves it back.
    private mutating func takeState(_ index: Int) -> StreamState {
        states[index].take()!
    }

    private mutating func output(_ event: TraceEvent, state: inout StreamState, emit: (TraceEvent) -> Void) {
        if state.identified {
            emit(event)
            return
        }
        if identifies(event) {
            state.identified = true
            for held in state.held { emit(held) }
            state.held.removeAll()
            state.heldBytes = 0
            emit(event)
            return
        }
        // Not yet known to be iAP: hold a bounded number of events, folding
        // further skipped bytes into the last one.
        if case .skipped(let info) = event.body { state.heldBytes += info.count }
        if state.held.count < Self.maximumHeldEvents {
            state.held.append(event)
        } else if case .skipped(let info) = event.body, case .skipped(var last) = state.held[state.held.count - 1].body {
            last.count += info.count
            if last.reason != info.reason { last.reason = "garbage" }
            state.held[state.held.count - 1].body = .skipped(last)
        }
    }

    /// Whether an event proves that its stream carries iAP traffic: a detect
    /// sequence or a link packet with both checksums right (a chance match in
    /// other data is about one in 2^32 positions); for HID reports, an iAP1
    /// frame whose checksum holds; in a byte stream (a serial link's, or a
    /// phone answering a legacy head unit over bulk endpoints), an iAP1
    /// frame with its sync byte, its checksum right and a lingo and command
    /// the catalog names (about one in 2^33).
    private func identifies(_ event: TraceEvent) -> Bool {
        switch event.body {
        case .detect, .message: true
        case .link(let info): info.checksumsOK
        case .iap1(let info): info.checksumOK && (options.hid || info.name != nil)
        case .skipped: false
        }
    }

    private mutating func drain(_ state: inout StreamState, context: Context, emit: (TraceEvent) -> Void) {
        while let found = state.decoder.next() {
            switch found {
            case .detect(let offset):
                output(context.event(.detect, offset: offset), state: &state, emit: emit)
            case .skipped(let skip):
                output(context.event(.skipped(SkippedInfo(count: skip.count, reason: skip.reason.rawValue, detail: nil)), offset: skip.offset),
                       state: &state, emit: emit)
            case .iap1(let info, let offset):
                let payload = state.decoder.payload
                let event = context.event(.iap1(iap1Info(payload: payload, checksumOK: info.checksumValid, link: context.key.link)), offset: offset)
                if !info.checksumValid || info.hasSync || state.identified {
                    output(event, state: &state, emit: emit)
                } else {
                    // A bare `55` frame alone does not prove a stream is iAP.
                    output(context.event(.skipped(SkippedInfo(count: info.encodedLength, reason: "garbage", detail: nil)), offset: offset),
                           state: &state, emit: emit)
                }
            case .packet(let header, let offset, let valid):
                link(header: header, offset: offset, valid: valid, state: &state, context: context, emit: emit)
            }
        }
    }

    private mutating func link(header: LinkPacketHeader, offset: Int, valid: Bool, state: inout StreamState, context: Context,
                               emit: (TraceEvent) -> Void) {
        var info = LinkInfo(header: header, checksumsOK: valid, retransmission: false)
        let payload = state.decoder.payload
        var session: UInt8?
        if valid {
            if header.control.contains(.syn) {
                state.lastDataSequence = header.sequence
                state.sessions.removeAll()
                if !payload.isEmpty {
                    do {
                        let sync = try LinkSynchronization(decoding: payload)
                        info.sync = sync
                        for entry in sync.sessions { links[context.key.link, default: LinkState()].sessionTypes[entry.id] = entry.type }
                    } catch {
                        info.syncError = error.detail
                    }
                }
            } else if header.control.contains(.rst) {
                state.lastDataSequence = nil
                state.sessions.removeAll()
            } else if header.control.contains(.eak) {
                info.eak = Array(payload)
            } else if !payload.isEmpty {
                if let last = state.lastDataSequence, (header.sequence &- last) == 0 || (header.sequence &- last) >= 128 {
                    info.retransmission = true
                } else {
                    state.lastDataSequence = header.sequence
                    session = header.session
                }
            }
        }
        if let session {
            let type = sessionType(session, payload: payload, link: context.key.link)
            switch type {
            case .control:
                break
            case .fileTransfer:
                var datagram = DatagramInfo(sessionType: type, length: payload.count)
                do { datagram.fileTransfer = try FileTransferDatagram(decoding: payload) } catch { datagram.error = error.detail }
                info.datagram = datagram
            default:
                var datagram = DatagramInfo(sessionType: type, length: payload.count)
                if type == .externalAccessory {
                    if payload.count >= 2 {
                        // Only the session id is shown: read in place, not by decoding (which copies the data).
                        datagram.externalAccessorySession = UInt16(payload[payload.startIndex]) << 8 | UInt16(payload[payload.startIndex + 1])
                    } else {
                        do { _ = try ExternalAccessoryDatagram(decoding: payload) } catch { datagram.error = error.detail }
                    }
                }
                info.datagram = datagram
            }
            output(context.event(.link(info), offset: offset), state: &state, emit: emit)
            if type == .control {
                var index = state.sessions.count
                if let known = state.sessions.firstIndex(where: { $0.id == session }) {
                    index = known
                } else {
                    state.sessions.append((session, ControlMessageFramer()))
                }
                state.sessions[index].framer.append(payload)
                drainMessages(&state, sessionIndex: index, context: context, emit: emit)
            }
        } else {
            output(context.event(.link(info), offset: offset), state: &state, emit: emit)
        }
    }

    /// The session's type from the link's SYN; without one (a trace that
    /// starts after link-up), a session whose data starts a control message
    /// is taken as the control session.
    private mutating func sessionType(_ session: UInt8, payload: ArraySlice<UInt8>, link: LinkKey) -> SessionType {
        if let known = links[link]?.sessionTypes[session] { return known }
        if payload.count >= 2, payload[payload.startIndex] == 0x40, payload[payload.startIndex + 1] == 0x40 {
            links[link, default: LinkState()].sessionTypes[session] = .control
            return .control
        }
        return SessionType(rawValue: 0xFF)
    }

    private mutating func drainMessages(_ state: inout StreamState, sessionIndex: Int, context: Context, emit: (TraceEvent) -> Void) {
        let session = state.sessions[sessionIndex].id
        while let found = state.sessions[sessionIndex].framer.next() {
            switch found {
            case .message(let id, let offset, let length, let body):
                var info = MessageInfo(session: session, id: id, name: MessageCatalog.name(of: id), length: length, parameters: [])
                if options.decodesParameters {
                    let parameters: [Parameter]
                    do {
                        parameters = try Parameter.list(decoding: body)
                    } catch {
                        // Only if IAPWire's rules for a parameter list grow
                        // stricter than the framer's check: report it as malformed.
                        output(malformedMessage(id: id, offset: offset, length: length, session: session, error: error, context: context),
                               state: &state, emit: emit)
                        continue
                    }
                    let message = ControlMessage(id: id, parameters: parameters)
                    info.parameters = MessageCatalog.interpret(message)
                    if let annotate = options.annotate {
                        for parameter in info.parameters {
                            if let note = annotate(id, parameter) { info.annotations[parameter.id] = note }
                        }
                    }
                }
                output(context.event(.message(info), offset: offset, base: .session(session)), state: &state, emit: emit)
            case .malformed(let id, let offset, let length, let error):
                output(malformedMessage(id: id, offset: offset, length: length, session: session, error: error, context: context),
                       state: &state, emit: emit)
            case .oversized(let id, let offset, let length):
                // Never at the framer's default maximum, which no 16-bit length exceeds.
                output(malformedMessage(id: id, offset: offset, length: length, session: session,
                                        error: WireError(.badLength, "longer than \(ControlMessage.maximumLength) bytes"), context: context),
                       state: &state, emit: emit)
            case .skipped(let skip):
                output(context.event(.skipped(SkippedInfo(count: skip.count, reason: skip.reason.rawValue, detail: "session \(session) stream")), offset: skip.offset,
                                     base: .session(session)),
                       state: &state, emit: emit)
            }
        }
    }

    private func malformedMessage(id: UInt16, offset: Int, length: Int, session: UInt8, error: WireError, context: Context) -> TraceEvent {
        let name = MessageCatalog.name(of: id).map { " (\($0))" } ?? ""
        let detail = "message 0x\(hex16(id))\(name) of \(length) bytes on session \(session): \(error.detail)"
        return context.event(.skipped(SkippedInfo(count: ControlMessage.headerLength, reason: "malformed_message", detail: detail)), offset: offset,
                             base: .session(session))
    }

    private mutating func iap1Info(payload: some Collection<UInt8>, checksumOK: Bool, link: LinkKey) -> IAP1Info {
        let bytes = Array(payload)
        do {
            let packet = try links[link, default: LinkState()].transactions.packet(fromPayload: bytes)
            return IAP1Info(lingo: packet.lingo, command: packet.command, name: packet.name, transaction: packet.transactionID,
                            checksumOK: checksumOK, data: packet.data)
        } catch {
            return IAP1Info(lingo: bytes.first ?? 0, command: 0, name: nil, transaction: nil, checksumOK: checksumOK, data: [], error: error.detail)
        }
    }

    // MARK: - HID reports

    private mutating func ingestReport(_ report: [UInt8], state: inout StreamState, context: Context, emit: (TraceEvent) -> Void) {
        switch state.hid.append(report: report) {
        case .pending:
            return
        case .rejected(let reason, let bytes):
            output(context.event(.skipped(SkippedInfo(count: bytes, reason: "hid_report", detail: reason)), offset: state.hidOffset), state: &state, emit: emit)
            state.hidOffset += bytes
        case .complete(let packet):
            var index = 0
            var skippedStart: Int?
            func flushSkipped(upTo end: Int, state: inout StreamState) {
                guard let start = skippedStart else { return }
                skippedStart = nil
                let bytes = packet[start..<end]
                // Reports are zero-padded to their fixed size: zeros are padding.
                if bytes.allSatisfy({ $0 == 0 }) { return }
                output(context.event(.skipped(SkippedInfo(count: bytes.count, reason: "garbage", detail: nil)), offset: state.hidOffset + start),
                       state: &state, emit: emit)
            }
            while index < packet.count {
                if packet[index] == 0x55 || (packet[index] == 0xFF && index + 1 < packet.count && packet[index + 1] == 0x55),
                   let frame = IAP1Frame.parse(packet, at: index) {
                    flushSkipped(upTo: index, state: &state)
                    let info = iap1Info(payload: packet[frame.payloadRange], checksumOK: frame.checksumValid, link: context.key.link)
                    output(context.event(.iap1(info), offset: state.hidOffset + index), state: &state, emit: emit)
                    index += frame.checksumValid ? frame.encodedLength : 1
                } else {
                    if skippedStart == nil { skippedStart = index }
                    index += 1
                }
            }
            flushSkipped(upTo: packet.count, state: &state)
            state.hidOffset += packet.count
        }
    }
}

func hex16(_ value: UInt16) -> String {
    let digits = String(value, radix: 16, uppercase: true)
    return String(repeating: "0", count: 4 - digits.count) + digits
}
