// Fuzz entry point for the endpoint core (IAPEndpointCore.EndpointCore):
// a phone core serving the sample app (iAP2, and iAP1 to a head unit that
// speaks only that) and a head-unit core, with the harness as the wire and
// the edge. The script decides what each core hears (what the other core
// wrote, delivered whole, dropped, duplicated, cut short, with a byte
// changed, or held back as a peer that stops reading; raw bytes; iAP1
// frames), the transport closing and the cable coming back, the edge's
// answers (at once, late, for an earlier link, never), the head-unit
// user's actions, and time, with ticks at the cores' deadlines.
// Invariants after every step: a tick leaves no deadline due; what a core
// holds for a peer that does not read stays within the link's receive
// budget and one backlog; what one input makes a core write is bounded;
// the wire the harness keeps is bounded by what the cores may send.
import FuzzSupport
import IAPDemo
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

enum Side: Int {
    case phone = 0, headUnit = 1
}

struct EndpointRun {
    let app = SampleApp()
    var cores: [EndpointCore]
    var now = LinkInstant.milliseconds(1)
    /// What each core wrote that the other has not read yet.
    var unread: [[UInt8]] = [[], []]
    /// Requests of the edge not answered yet, per side: answered later, for
    /// an earlier link, or never.
    var requests: [[EndpointCore.Output]] = [[], []]

    init() {
        let app = self.app
        let phone = Connection(.init(role: .device, authentication: .off),
                               phone: PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true),
                               readsNowPlaying: true)
        cores = [
            EndpointCore(configuration: .init(link: LinkConfiguration(role: .device, answersIAP1: true)), connection: phone, app: app),
            EndpointCore(configuration: .init(link: LinkConfiguration(role: .accessory)), connection: Connection(.init(role: .accessory)), app: nil),
        ]
    }

    mutating func handle(_ input: EndpointCore.Input, at side: Side) {
        take(cores[side.rawValue].handle(input, now: now), at: side)
    }

    mutating func take(_ outputs: [EndpointCore.Output], at side: Side) {
        var written = 0
        for output in outputs {
            switch output {
            case .write(let bytes):
                written += bytes.count
                unread[side.rawValue] += bytes
            case .authenticator, .verify, .legacyVerify, .load, .legacyLoad, .perform, .legacyPerform, .readNowPlaying:
                requests[side.rawValue].append(output)
                if requests[side.rawValue].count > 64 { requests[side.rawValue].removeFirst() }
            case .link, .event, .legacyEvent, .pausePlayback, .sentMessage, .log, .sessionData:
                break
            }
        }
        // One input's writes: a window of the largest packets and the control
        // packets around them, or the iAP1 answers within the send queue limit.
        require(written <= 4 * 1024 * 1024, "one input made the \(side) write \(written) bytes")
        let core = cores[side.rawValue]
        let limit = core.configuration.link.receiveBufferLimit + 256 * LinkPacket.maximumLength
        require(core.waiting.receivedBytes <= limit, "the \(side) holds \(core.waiting.receivedBytes) received bytes for answers that wait")
        require(core.waiting.messages <= 100_000, "the \(side) backlog holds \(core.waiting.messages) messages")
    }

    mutating func step(_ script: inout Script) {
        let op = script.byte()
        let side = Side(rawValue: Int(op & 1)) ?? .phone
        let other: Side = side == .phone ? .headUnit : .phone
        switch (op >> 1) % 10 {
        case 0:  // the side reads what the other wrote, whole or in part, maybe changed
            var bytes = unread[other.rawValue]
            let cut = min(bytes.count, Int(script.u16()) % (bytes.count + 1) + (script.byte() & 1 == 0 ? bytes.count : 0))
            unread[other.rawValue].removeFirst(min(cut, unread[other.rawValue].count))
            bytes = Array(bytes.prefix(cut))
            switch script.byte() % 5 {
            case 0 where !bytes.isEmpty: bytes[Int(script.u16()) % bytes.count] ^= script.byte() | 1
            case 1: bytes += bytes.prefix(Int(script.byte()))  // duplicated in part
            case 2: bytes = Array(bytes.dropFirst(Int(script.byte())))  // lost at the front
            default: break
            }
            handle(.received(bytes), at: side)
        case 1:  // raw bytes from the input
            handle(.received(script.take(Int(script.byte()))), at: side)
        case 2:  // an iAP1 frame to the phone
            let lingo: UInt8 = script.byte() & 1 == 0 ? 0 : 4
            let command = lingo == 0 ? UInt16(script.byte() & 0x7F) : UInt16(script.byte() & 0x3F)
            if let frame = try? IAP1Packet(lingo: lingo, command: command, data: script.take(Int(script.byte() % 24))).encoded(sync: true) {
                handle(.received(frame), at: .phone)
            }
        case 3:  // the edge answers the oldest request, maybe for an earlier link
            guard !requests[side.rawValue].isEmpty else { return }
            let request = requests[side.rawValue].removeFirst()
            let shift = Int(script.byte() % 3)
            switch request {
            case .authenticator(_, let link):
                handle(.authenticatorAnswered(script.byte() & 1 == 0 ? .failed("fuzz") : .certificate(script.take(8)), link: link - shift), at: side)
            case .verify(_, let link):
                handle(.verified(script.pick([.responseValid, .responseInvalid("fuzz"), .certificateRejected("fuzz")]), link: link - shift), at: side)
            case .legacyVerify(let id, _, let link):
                handle(.legacyVerified(id: id, script.pick([.responseValid, .responseInvalid("fuzz")]), link: link - shift), at: side)
            case .load(let token, let request):
                let (result, delay) = app.load(request, now: now)
                handle(.loaded(token: token, result, readyAt: now + delay), at: side)
            case .legacyLoad(let token, let request):
                let (result, delay) = app.load(request, now: now)
                handle(.legacyLoaded(token: token, result, readyAt: now + delay), at: side)
            case .perform(let command, let origin):
                app.setTime(now)
                handle(.performed(command, origin, cores[side.rawValue].commands.perform(command)), at: side)
            case .legacyPerform(let command, let reply):
                app.setTime(now)
                handle(.legacyPerformed(reply, cores[side.rawValue].commands.perform(command)), at: side)
            case .readNowPlaying:
                handle(.nowPlaying(app.nowPlaying(at: now)), at: side)
            default:
                break
            }
        case 4:  // the head unit's user
            let containers = ["library", "radio", "recent", "podcasts", "album:kind-of-blue", "nothing"]
            let container = script.pick(containers)
            take(cores[Side.headUnit.rawValue].act(now: now) { connection, now in
                connection.headUnitDoes(now: now) { role, now in
                    switch script.byte() % 4 {
                    case 0: role.openRoot(now: now)
                    case 1: role.open(container, now: now)
                    case 2: role.requestQueue(now: now)
                    default: role.press(.playPause)
                    }
                }
            }, at: .headUnit)
        case 5:  // a ping from outside, on either end
            handle(.send(DiagnosticPing.request(sequence: script.u32(), size: Int(script.u16() % 2048))), at: side)
        case 6:  // the transport closes under one end, or both (a cable pulled)
            handle(.transportClosed("fuzz"), at: side)
            if script.byte() & 1 == 0 { handle(.transportClosed("fuzz"), at: other) }
            unread = [[], []]
        case 7:  // a fresh link end (the cable back)
            handle(.restart, at: side)
        case 8:  // RST
            handle(.reset, at: side)
        default:  // time runs on, with ticks at both cores' deadlines
            let target = now + .milliseconds(Int64(script.byte()) * [1, 10, 100, 1000][Int(op >> 6)])
            var ticks = 0
            while let deadline = [cores[0].nextDeadline, cores[1].nextDeadline].compactMap({ $0 }).min(), deadline <= target {
                now = max(now, deadline)
                for side in [Side.phone, .headUnit] where (cores[side.rawValue].nextDeadline.map { $0 <= now } ?? false) {
                    handle(.tick, at: side)
                    if let next = cores[side.rawValue].nextDeadline { require(next > now, "the \(side) deadline \(next) not after a tick at \(now)") }
                }
                ticks += 1
                require(ticks <= 100_000, "\(ticks) ticks in one step")
            }
            now = max(now, target)
        }
        // A peer that stops reading never makes the harness hold more than a
        // core may write before it is held back; beyond that it is cut.
        for index in 0..<2 where unread[index].count > 2 * 1024 * 1024 { unread[index].removeFirst(unread[index].count - 2 * 1024 * 1024) }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    var script = Script(Array(UnsafeRawBufferPointer(start: start, count: count)))
    var run = EndpointRun()
    run.handle(.start, at: .phone)
    run.handle(.start, at: .headUnit)
    var steps = 0
    while !script.atEnd && steps < 2000 {
        steps += 1
        run.step(&script)
    }
    return 0
}
