// Fuzz entry point for the phone's answers to an iAP1 head unit
// (IAPLegacy.LegacyPhone), with the harness as the head unit, the app and
// the verifier. The script decides what the head unit sends (identification
// with or without IDPS and its tokens, certificate sections, signatures,
// General and Extended Interface requests with data from the input, raw
// payloads), how the app answers its loads (pages, queues, failures, the
// wrong kind, never), the verifier's verdicts, what plays, and time.
// Verdicts come for the newest verification or a stale one, and the phone
// may authenticate the head unit only on a valid verdict on the newest.
// Invariants after every step: every packet sent frames; its transaction id
// is there exactly when the head unit identified through IDPS; loads are
// handed out once and bounded; a tick leaves no deadline due; what one input
// makes the phone send is bounded.
import FuzzSupport
import IAPLegacy
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

struct LegacyRun {
    var phone = LegacyPhone(appName: "Fuzz", verifies: true)
    /// The app's commands, as the edge runs them.
    let commands = {
        var commands = RemoteCommandCenter()
        for kind in RemoteCommand.Kind.allCases where kind != .seekForward { commands.register(kind) { _ in .success } }
        return commands
    }()
    var now = LinkInstant.milliseconds(1)
    /// Loads handed out and not answered, with when; the phone stops waiting
    /// for one after its timeout or when the head unit identifies again, and
    /// the harness may still answer it (the answer must change nothing).
    var loads: [(token: UInt32, request: PhoneMediaRole.LoadRequest, at: LinkInstant)] = []
    var identifiedAt = LinkInstant.zero
    var tokens: Set<UInt32> = []
    /// Verifications asked for and not answered yet, by id, and the newest.
    var verifications: [UInt32] = []
    var newestVerification: UInt32?
    /// Set while a valid verdict on the newest verification is handed over:
    /// the only way authentication may succeed.
    var validVerdictOnNewest = false

    mutating func take(_ outputs: [LegacyPhone.Output]) {
        var bytes = 0
        for output in outputs {
            switch output {
            case .send(let packet):
                guard let frame = try? packet.encoded(sync: true) else { broken("the phone sent a packet that does not frame: \(packet.payload.count) bytes") }
                bytes += frame.count
                require(packet.lingo == 0 || packet.lingo == 4, "the phone answered on lingo \(packet.lingo)")
                require((packet.transactionID != nil) == phone.usesTransactionIDs,
                        "transaction id \(String(describing: packet.transactionID)) with transaction ids \(phone.usesTransactionIDs ? "on" : "off")")
            case .load(let token, let request):
                require(tokens.insert(token).inserted, "load token \(token) handed out twice")
                loads.append((token, request, now))
                let waited = loads.filter { $0.at >= identifiedAt && $0.at + phone.loadTimeout > now }.count
                require(waited <= LegacyPhone.maximumPendingLoads, "the phone waits for \(waited) loads")
                if loads.count > 4 * LegacyPhone.maximumPendingLoads { loads.removeFirst() }
            case .verify(let id, _):
                require(!verifications.contains(id) && id != newestVerification, "verification id \(id) handed out twice")
                require(verifications.isEmpty, "verification \(id) started while \(verifications) still ran")
                verifications.append(id)
                newestVerification = id
                if verifications.count > 64 { verifications.removeFirst() }
            case .event(.authenticated):
                require(validVerdictOnNewest, "authenticated without a valid verdict on the newest verification")
            case .event(.identified):
                identifiedAt = now
            case .perform(let command, let reply):
                // The edge runs the handler at once, as every driver does.
                take(phone.performed(commands.perform(command), reply: reply))
            case .event(.authenticationFailed), .log:
                break
            }
        }
        // A retrieve answers at most a level of records, each at most a string and its index.
        require(bytes <= LegacyPhone.levelLimit * (LegacyPhone.maximumStringLength + 16) + 4096, "\(bytes) bytes sent for one input")
    }

    static func item(_ script: inout Script, _ index: Int) -> ContentItem {
        let shape = script.byte()
        let text = String(repeating: shape & 0x40 != 0 ? "é" : "t", count: Int(script.byte()) * (shape & 0x20 != 0 ? 8 : 1))
        return ContentItem(id: "item\(index)", kind: shape & 1 == 0 ? .container : .playable, text: text, isEnabled: shape & 2 == 0,
                           imageRow: shape & 4 != 0 ? .init(title: "row", entries: []) : nil)
    }

    mutating func step(_ script: inout Script) {
        let op = script.byte()
        switch op % 12 {
        case 0:  // IdentifyDeviceLingoes
            let options = UInt32(script.byte() & 3)
            let lingoes = UInt32(script.byte()) | 1 << (op & 0x10 != 0 ? 4 : 0)
            let device = script.byte() & 1 == 0 ? 0 : script.u32()
            take(phone.received([0x00, 0x13] + u32(lingoes) + u32(options) + u32(device), now: now))
        case 1:  // IDPS: StartIDPS, a token list, EndIDPS
            let id = script.u16()
            take(phone.received([0x00, 0x38] + u16(id), now: now))
            let identify: [UInt8] = [0x00, 0x00, 2, 0x00, 0x04] + u32(UInt32(script.byte() & 3)) + u32(script.u32())
            var tokens: [UInt8] = [script.byte() & 3]
            if op & 0x20 != 0 { tokens += [UInt8(identify.count)] + identify }
            tokens += script.take(Int(script.byte()))
            take(phone.received([0x00, 0x39] + u16(id &+ 1) + tokens, now: now))
            take(phone.received([0x00, 0x3B] + u16(id &+ 2) + [script.byte() & 3], now: now))
        case 2:  // an Extended Interface request
            let served: [UInt16] = [0x0002, 0x0012, 0x0014, 0x0016, 0x0017, 0x0018, 0x001A, 0x001C, 0x001E, 0x0020, 0x0022, 0x0024,
                                    0x0026, 0x0028, 0x0029, 0x002C, 0x002E, 0x002F, 0x0031, 0x0035, 0x0037, 0x0038, 0x003B]
            let command = op & 0x80 != 0 ? script.u16() : script.pick(served)
            take(phone.received([0x04] + u16(command) + (phone.usesTransactionIDs ? u16(script.u16()) : []) + script.take(Int(script.byte() % 12)), now: now))
        case 3:  // a General request
            take(phone.received([0x00, script.byte()] + (phone.usesTransactionIDs ? u16(script.u16()) : []) + script.take(Int(script.byte() % 16)), now: now))
        case 4:  // raw payload
            take(phone.received(script.take(Int(script.byte())), now: now))
        case 5:  // a certificate section
            let header: [UInt8] = [script.byte() & 0x80 != 0 ? 1 : 2, 0, script.byte() % 4, script.byte() % 4]
            take(phone.received([0x00, 0x15] + (phone.usesTransactionIDs ? u16(1) : []) + header + script.take(Int(script.byte()) * 4), now: now))
        case 6:  // a signature
            take(phone.received([0x00, 0x18] + (phone.usesTransactionIDs ? u16(2) : []) + script.take(Int(script.byte())), now: now))
        case 7:  // the app answers a load
            guard !loads.isEmpty else { return }
            let (token, _, _) = loads.remove(at: Int(script.byte()) % loads.count)
            let count = Int(script.byte())
            let items = (0..<(op & 0x40 != 0 ? count * 4 : count)).map { Self.item(&script, $0) }
            let results: [PhoneMediaRole.LoadResult] = [
                .page(items: items, sections: [], totalCount: Int(script.u16())), .queue(items: items, totalCount: count, currentIndex: 0),
                .done, .failed(.commandFailed, String(repeating: "e", count: count)), .image([1, 2]), .queue(items: [], totalCount: 0, currentIndex: 0),
            ]
            take(phone.complete(token: token, with: results[Int(op >> 4) % results.count], now: now))
        case 8:  // the verifier answers
            let answers: [VerificationAnswer] = [.certificateAccepted(summary: "fuzz", challenge: script.take(Int(script.byte() % 33))),
                                                 .certificateRejected("no"), .responseValid, .responseInvalid("no")]
            // The newest or any earlier one (a stale verdict must change nothing).
            guard !verifications.isEmpty else { return }
            let id = verifications.remove(at: script.byte() & 1 == 0 ? verifications.count - 1 : Int(script.byte()) % verifications.count)
            let answer = answers[Int(op >> 4) % answers.count]
            validVerdictOnNewest = id == newestVerification && answer == .responseValid
            take(phone.verified(id: id, answer, now: now))
            validVerdictOnNewest = false
        case 9:  // what plays
            let shape = script.byte()
            let states: [NowPlayingInfo.PlaybackState] = [.unknown, .playing, .paused, .stopped, .interrupted]
            let info = NowPlayingInfo(itemID: UInt64(script.byte()), title: shape & 1 == 0 ? nil : String(repeating: "t", count: Int(script.byte()) * 4),
                                      durationMilliseconds: shape & 2 == 0 ? nil : script.u32(), elapsedMilliseconds: script.u32(),
                                      queueIndex: shape & 4 == 0 ? nil : script.u32(), queueCount: shape & 8 == 0 ? nil : script.u32(),
                                      state: states[Int(shape >> 4) % states.count])
            take(phone.setNowPlaying(info, now: now))
        default:  // time runs on, with ticks at the deadlines
            let target = now + .milliseconds(Int64(script.byte()) * [1, 10, 100, 1000][Int(op >> 6)])
            var ticks = 0
            while let deadline = phone.nextDeadline, deadline <= target {
                now = max(now, deadline)
                take(phone.tick(now: now))
                ticks += 1
                if let next = phone.nextDeadline { require(next > now, "deadline \(next) not after a tick at \(now)") }
                require(ticks <= 100_000, "\(ticks) ticks in one step")
            }
            now = max(now, target)
        }
    }
}

func u16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(truncatingIfNeeded: value)] }
func u32(_ value: UInt32) -> [UInt8] { u16(UInt16(value >> 16)) + u16(UInt16(truncatingIfNeeded: value)) }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var script = Script(Array(UnsafeRawBufferPointer(start: start, count: count)))
    var run = LegacyRun()
    var steps = 0
    while !script.atEnd && steps < 2000 {
        steps += 1
        run.step(&script)
    }
    return 0
}
