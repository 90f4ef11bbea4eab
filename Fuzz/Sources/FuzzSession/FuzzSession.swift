// Fuzz entry point for the session level above the link: the control
// channel, identification and the phone and head-unit media roles, driven
// as Sources/IAPEndpoint/MediaEndpoint.swift drives them.
//
// The input is a script: control-session bytes and messages for either end
// (raw bytes, messages built from input bytes, typed media messages, and
// what the other end's roles actually sent, delivered whole, dropped,
// duplicated, split or with a byte changed), link up and down, the
// head-unit user's actions, the phone app's answers (right, wrong, failed,
// late or never), and time with ticks at the roles' deadlines. See
// Docs/Fuzzing.md for the invariants.
import FuzzSupport
import IAPLink
import IAPRoles
import IAPWire

enum Side: Int {
    case phone = 0, headUnit = 1
    var other: Side { self == .phone ? .headUnit : .phone }
}

/// Both ends' session level. `received(_:at:)` is the one function that
/// drives the roles with what the control session delivers; a connection
/// core will take its place.
struct SessionPair {
    var channels = [ControlChannel(), ControlChannel()]
    var phoneIdentification = PhoneIdentificationRole()
    var headIdentification = HeadUnitIdentificationRole()
    let app = SampleApp()
    var phone: PhoneMediaRole
    var headUnit = HeadUnitMediaRole()
    var mediaConnected = [false, false]
    var up = false
    var now = LinkInstant.milliseconds(1)
    /// Encoded messages each end sent, not yet delivered to the other.
    var outbox: [[[UInt8]]] = [[], []]
    /// Loads the phone asked the app for: token and when.
    var loads: [UInt32: (request: PhoneMediaRole.LoadRequest, at: LinkInstant)] = [:]
    var opened: Set<String> = [""]
    var knownIDs: [String] = ["library", "radio", "album:0", ""]
    var fileReceiver = FileTransferReceiver()

    init() {
        phone = PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true)
        headIdentification.subscribesToNowPlaying = false
    }

    // MARK: Driving (as MediaEndpoint does)

    /// Bytes delivered on the control session at `side`.
    mutating func received(_ bytes: [UInt8], at side: Side) {
        let (inputs, replies) = channels[side.rawValue].receive(bytes)
        for reply in replies { send(reply, from: side) }
        for case .message(let message) in inputs {
            checkRoundTrip(message)
            switch side {
            case .phone:
                let identification = (0x1D00...0x1D06).contains(message.id)
                if identification || !mediaConnected[0] {
                    perform(phoneIdentification.received(message), from: .phone)
                    if case .identified = phoneIdentification.state, !mediaConnected[0] {
                        mediaConnected[0] = true
                        app.setTime(now)
                        perform(phone.connect(now: now))
                        syncNowPlaying()
                    }
                    continue
                }
                guard case .identified(let identity) = phoneIdentification.state, identity.messagesSent.contains(message.id),
                      let typed = (try? MediaMessage(message)) ?? nil else { continue }
                app.setTime(now)
                perform(phone.receive(typed, now: now))
                syncNowPlaying()
            case .headUnit:
                if (0x1D00...0x1D06).contains(message.id) {
                    perform(headIdentification.received(message), from: .headUnit)
                    if message.id == MessageID.identificationAccepted {
                        mediaConnected[1] = true
                        perform(headUnit.connect(now: now))
                    }
                    continue
                }
                guard let typed = (try? MediaMessage(message)) ?? nil else { continue }
                perform(headUnit.receive(typed, now: now))
            }
        }
    }

    mutating func linkUp() {
        guard !up else { return }
        up = true
        channels = [ControlChannel(), ControlChannel()]
        perform(phoneIdentification.linkUp(), from: .phone)
    }

    mutating func linkDown() {
        guard up else { return }
        up = false
        outbox = [[], []]
        channels = [ControlChannel(), ControlChannel()]
        perform(phoneIdentification.linkDown(), from: .phone)
        if mediaConnected[0] {
            let outputs = phone.disconnect(now: now)
            if outputs.contains(.pausePlayback) { app.pause(at: now) }
            perform(outputs.filter { $0 != .pausePlayback })
        }
        headIdentification.linkDown()
        headUnit.disconnect()
        mediaConnected = [false, false]
        loads = [:]
    }

    mutating func syncNowPlaying() {
        guard mediaConnected[0] else { return }
        perform(phone.setNowPlaying(app.nowPlaying(at: now), now: now))
    }

    // MARK: Outputs

    mutating func send(_ message: ControlMessage, from side: Side) {
        guard let bytes = try? message.encoded() else {
            fatalError("FUZZ INVARIANT BROKEN: the \(side) sent message 0x\(String(message.id, radix: 16)) that does not encode")
        }
        if up { outbox[side.rawValue].append(bytes) }
    }

    mutating func perform(_ outputs: [RoleOutput], from side: Side) {
        for case .send(let message) in outputs { send(message, from: side) }
    }

    mutating func perform(_ outputs: [PhoneMediaRole.Output]) {
        for output in outputs {
            switch output {
            case .send(let message): send(message.controlMessage, from: .phone)
            case .load(let token, let request):
                require(loads[token] == nil, "the phone reused load token \(token)")
                loads[token] = (request, now)
                let waiting = loads.values.filter { $0.at + phone.loadTimeout > now }.count
                require(waiting <= PhoneMediaRole.maximumPendingRequests, "the phone waits for \(waiting) loads")
            case .pausePlayback: app.pause(at: now)
            default: break
            }
        }
    }

    mutating func perform(_ outputs: [HeadUnitMediaRole.Output]) {
        for output in outputs {
            switch output {
            case .send(let message): send(message.controlMessage, from: .headUnit)
            case .event(.appInformation(_, true)): perform(headUnit.openRoot(now: now))
            case .event(.tabs(let items)): remember(items)
            case .event(.page(let container)): remember(headUnit.containers[container]?.items ?? [])
            default: break
            }
        }
    }

    mutating func remember(_ items: [ContentItem]) {
        for item in items.prefix(8) where !knownIDs.contains(item.id) {
            knownIDs.append(item.id)
            if let image = item.imageID { knownIDs.append(image) }
        }
        if knownIDs.count > 64 { knownIDs.removeFirst(knownIDs.count - 64) }
    }

    /// A media message that decodes must come out the same after encoding
    /// and decoding again. Not NowPlayingUpdate: it decodes partial updates
    /// but encodes whole ones only (MediaMessages.swift says so).
    func checkRoundTrip(_ message: ControlMessage) {
        guard let typed = (try? MediaMessage(message)) ?? nil else { return }
        if case .nowPlayingUpdate = typed { return }
        let again = typed.controlMessage
        guard let bytes = try? again.encoded() else {
            fatalError("FUZZ INVARIANT BROKEN: decoded \(typed) does not encode again")
        }
        let decoded: MediaMessage?
        do {
            decoded = try MediaMessage(ControlMessage(decoding: bytes))
        } catch {
            fatalError("FUZZ INVARIANT BROKEN: \(typed) re-encoded does not decode: \(error)")
        }
        require(decoded == typed, "media message round trip differs: \(typed) became \(String(describing: decoded))")
    }

    // MARK: Checks

    func check() {
        require(headUnit.containers.count <= opened.count + 1, "the head unit keeps \(headUnit.containers.count) containers for \(opened.count) opened")
        require(fileReceiver.activeTransferIDs.count <= fileReceiver.limits.maximumConcurrentTransfers, "file receiver over its transfer limit")
        for id in fileReceiver.activeTransferIDs {
            if let progress = fileReceiver.progress(of: id) {
                require(progress.received <= max(progress.announced, fileReceiver.limits.maximumFileSize), "file transfer \(id) over its size")
            }
        }
        require(!mediaConnected[0] || phone.isConnected, "media connected but the phone role is not")
    }

    mutating func advance(by duration: Duration) {
        let target = now + duration
        var ticks = 0
        while true {
            let soonest = [phone.nextDeadline, headUnit.nextDeadline].compactMap { $0 }.min()
            guard let soonest, soonest <= target else { break }
            now = max(now, soonest)
            app.setTime(now)
            perform(phone.tick(now: now))
            perform(headUnit.tick(now: now))
            loads = loads.filter { $0.value.at + phone.loadTimeout > now }
            for deadline in [phone.nextDeadline, headUnit.nextDeadline] {
                if let deadline { require(deadline > now, "a role's deadline \(deadline) is not after a tick at \(now)") }
            }
            ticks += 1
            require(ticks <= 10_000, "more than 10000 ticks in one step")
        }
        now = target
        if mediaConnected[0] { syncNowPlaying() }
    }
}

// MARK: - Script

extension Script {
    mutating func string(_ known: [String]) -> String {
        let choice = byte()
        if choice < 0xC0, !known.isEmpty { return known[Int(choice) % known.count] }
        return String(decoding: take(Int(choice & 0x3F)), as: UTF8.self)
    }
    mutating func small() -> UInt32 {
        let choice = byte()
        return choice < 0xF0 ? UInt32(choice & 0x3F) : u32()
    }
}

extension SessionPair {
    mutating func parameters(_ script: inout Script, depth: Int = 0) -> [Parameter] {
        var parameters: [Parameter] = []
        for _ in 0..<Int(script.byte() % 6) {
            let id = UInt16(script.byte() % 32)
            switch script.byte() % 5 {
            case 0: parameters.append(.uint32(id, script.small()))
            case 1: parameters.append(.string(id, script.string(knownIDs)))
            case 2 where depth < 3:
                if let group = try? Parameter.group(id, self.parameters(&script, depth: depth + 1)) { parameters.append(group) }
            case 3: parameters.append(.uint8(id, script.byte()))
            default: parameters.append(.blob(id, script.take(Int(script.byte() % 24))))
            }
        }
        return parameters
    }

    mutating func command(_ script: inout Script) -> RemoteCommand {
        let choice = script.byte()
        let commands: [RemoteCommand] = [
            .play, .pause, .stop, .togglePlayPause, .nextTrack, .previousTrack, .changePlaybackPosition(milliseconds: script.small() &* 1000),
            .seekForward(begin: choice & 0x80 != 0), .seekBackward(begin: choice & 0x80 != 0), .skipForward(milliseconds: script.small()),
            .skipBackward(milliseconds: script.small()), .changeRepeatMode(RepeatMode.allCases[Int(choice >> 5) % RepeatMode.allCases.count]),
            .changeShuffleMode(ShuffleMode.allCases[Int(choice >> 5) % ShuffleMode.allCases.count]), .changePlaybackRate,
            .like(choice & 0x80 != 0), .dislike(choice & 0x80 != 0), .bookmark(choice & 0x80 != 0),
        ]
        return commands[Int(choice) % commands.count]
    }

    /// A media message as the head unit could send it, from input bytes.
    mutating func headUnitMessage(_ script: inout Script) -> MediaMessage {
        switch script.byte() % 12 {
        case 0: return .browseRequest(requestID: script.small(), containerID: script.string(knownIDs), offset: script.small(), count: UInt16(truncatingIfNeeded: script.small()))
        case 1: return .playItem(requestID: script.small(), itemID: script.string(knownIDs), imageRowEntryID: script.byte() & 1 == 0 ? nil : script.string(knownIDs))
        case 2: return .remoteCommand(requestID: script.small(), command(&script))
        case 3: return .limits(HeadUnitLimits(maximumTabs: Int(script.byte() % 10), maximumPageSize: Int(script.byte()), maximumImageRowImages: Int(script.byte() % 10), imageScale: Int(script.byte() % 5)))
        case 4: return .queueRequest(requestID: script.small(), offset: script.small(), count: UInt16(truncatingIfNeeded: script.small()))
        case 5: return .imageRequest(requestID: script.small(), imageID: script.string(knownIDs), scale: script.byte() % 5)
        case 6: return .startNowPlayingUpdates
        case 7: return .stopNowPlayingUpdates
        case 8: return .setNowPlayingInformation(elapsedMilliseconds: script.byte() & 1 == 0 ? nil : script.small() &* 997, queueIndex: script.byte() & 1 == 0 ? nil : script.small())
        case 9:
            let descriptor = script.byte() & 1 == 0 ? HIDRemote.reportDescriptor : script.take(Int(script.byte()))
            return .startHID(StartHIDMessage(componentIdentifier: UInt16(script.byte() % 12), vendorIdentifier: 0x1209, productIdentifier: 1, reportDescriptor: descriptor))
        case 10: return .accessoryHIDReport(AccessoryHIDReportMessage(componentIdentifier: UInt16(script.byte() % 12), report: script.take(Int(script.byte() % 5))))
        default: return .stopHID(StopHIDMessage(componentIdentifier: UInt16(script.byte() % 12)))
        }
    }

    mutating func userAction(_ script: inout Script) {
        let choice = script.byte()
        switch choice % 9 {
        case 0: perform(headUnit.openRoot(now: now))
        case 1:
            let id = script.string(knownIDs)
            if opened.count < 256 { opened.insert(id) } else { return }
            perform(headUnit.open(id, now: now))
        case 2: perform(headUnit.loadMore(script.string(Array(opened)), now: now))
        case 3: perform(headUnit.retry(script.string(Array(opened)), now: now))
        case 4: perform(headUnit.select(script.string(knownIDs), imageRowEntryID: choice & 0x80 != 0 ? script.string(knownIDs) : nil, now: now))
        case 5: perform(headUnit.send(command(&script), now: now))
        case 6: perform(headUnit.requestQueue(now: now))
        case 7: perform(headUnit.requestImage(script.string(knownIDs), now: now))
        default: perform(headUnit.press(HIDRemote.Button.allCases[Int(choice >> 4) % HIDRemote.Button.allCases.count]))
        }
    }

    mutating func appAnswer(_ script: inout Script) {
        guard !loads.isEmpty else { return }
        let tokens = loads.keys.sorted()
        let choice = script.byte()
        // Now and then a token that was never handed out.
        let token = choice & 0x0F == 0x0F ? script.u32() : tokens[Int(script.byte()) % tokens.count]
        let request = loads[token]?.request ?? .tabs
        loads[token] = nil
        let result: PhoneMediaRole.LoadResult
        switch choice >> 4 {
        case 0, 1, 2, 3, 4, 5: result = app.load(request, now: now).0
        case 6: result = .failed(RequestStatus(rawValue: script.byte() % 8) ?? .commandFailed, script.string([]))
        case 7: result = .done
        case 8: result = .image(script.byte() & 1 == 0 ? Array("GIF89a".utf8) + script.take(4) : script.take(Int(script.byte())))
        case 9:
            let count = Int(script.byte())
            let items = (0..<count).map { ContentItem(id: "i\($0)", kind: .playable, text: String(repeating: "x", count: Int(script.byte()) * 4)) }
            result = .page(items: items, sections: [], totalCount: Int(script.small()))
        case 10: result = .queue(items: [], totalCount: Int(script.small()), currentIndex: Int(script.small()))
        default: result = app.load(request, now: now).0
        }
        app.setTime(now)
        perform(phone.complete(token: token, with: result, now: now))
        syncNowPlaying()
    }

    /// The next message one end sent reaches the other, perhaps damaged.
    mutating func deliver(from side: Side, _ script: inout Script) {
        guard !outbox[side.rawValue].isEmpty else { return }
        var bytes = outbox[side.rawValue].removeFirst()
        let fault = script.byte()
        switch fault % 8 {
        case 1: return
        case 2: outbox[side.rawValue].insert(bytes, at: 0)
        case 3: if !bytes.isEmpty { bytes[Int(script.byte()) % bytes.count] ^= script.byte() | 1 }
        case 4:
            let cut = bytes.isEmpty ? 0 : Int(script.byte()) % bytes.count
            received(Array(bytes[..<cut]), at: side.other)
            bytes = Array(bytes[cut...])
        case 5: bytes = Array(bytes.prefix(Int(script.byte()) % max(1, bytes.count)))
        default: break
        }
        received(bytes, at: side.other)
    }

    mutating func step(_ script: inout Script) {
        let op = script.byte()
        let side: Side = op & 0x80 == 0 ? .phone : .headUnit
        switch op % 16 {
        case 0, 1, 2, 3: deliver(from: side, &script)
        case 4: received(script.take(Int(script.byte() % 64)), at: side)
        case 5:
            let ids: [UInt16] = MediaMessage.phoneSends + MediaMessage.headUnitSends + [0x1D00, 0x1D01, 0x1D02, 0x1D03, 0xFE00, 0xFE02, 0x5000, 0x5001]
            let choice = script.byte()
            let id = choice < 0xF0 ? ids[Int(choice) % ids.count] : UInt16(script.byte()) << 8 | UInt16(script.byte())
            if let bytes = try? ControlMessage(id: id, parameters: parameters(&script)).encoded() { received(bytes, at: side) }
        case 6:
            if let bytes = try? headUnitMessage(&script).controlMessage.encoded() { received(bytes, at: .phone) }
        case 7, 8: userAction(&script)
        case 9: appAnswer(&script)
        case 10: if op & 0x10 == 0 { linkUp() } else { linkDown() }
        case 11:
            let units: [Int64] = [1, 10, 100, 1000, 5000, 9000, 60_000, 0]
            advance(by: .milliseconds(units[Int(script.byte() & 7)] * Int64(1 + (op >> 4 & 7))))
        case 12:
            app.setTime(now)
            _ = app.perform(command(&script))
            syncNowPlaying()
        case 13: _ = try? fileReceiver.receive(encoded: script.take(Int(script.byte() % 40)))
        default:
            // Both ends exchange everything they have sent, intact.
            var rounds = 0
            while !outbox[0].isEmpty || !outbox[1].isEmpty {
                rounds += 1
                require(rounds <= 10_000, "the ends keep answering each other (more than 10000 messages)")
                let from: Side = outbox[0].isEmpty ? .headUnit : .phone
                received(outbox[from.rawValue].removeFirst(), at: from.other)
            }
        }
        check()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var script = Script(Array(UnsafeRawBufferPointer(start: start, count: count)))
    var pair = SessionPair()
    var steps = 0
    while !script.atEnd && steps < 2000 {
        steps += 1
        pair.step(&script)
    }
    return 0
}
