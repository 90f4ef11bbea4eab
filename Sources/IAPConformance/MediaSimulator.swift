import IAPDemo
import IAPEndpointCore
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import IAPWire

/// A phone and a head unit, each an endpoint core (`EndpointCore`), joined
/// by a simulated wire in virtual time: the whole session end to end
/// (link, authentication, identification, media), deterministic for a
/// seed, with any faults on the wire. A thin driver of the same core the
/// real-time endpoint runs; the edge is `VirtualTimeEdge`.
public struct MediaSimulator: Sendable {
    public struct Line: Hashable, Sendable {
        public var time: LinkInstant
        public var who: String
        public var text: String
    }

    /// A link event of one end, when it happened.
    public struct LinkRecord: Hashable, Sendable {
        public var time: LinkInstant
        public var role: LinkRole
        public var event: LinkEvent
    }

    public private(set) var phoneCore: EndpointCore
    public private(set) var headUnitCore: EndpointCore
    /// Head unit to phone, and phone to head unit.
    public var towardsPhone: FaultyWire
    public var towardsHeadUnit: FaultyWire
    public var edge: VirtualTimeEdge
    public var app: SampleApp { edge.app }
    public private(set) var now: LinkInstant = .zero
    public private(set) var transcript: [Line] = []
    /// Every link event of each end, in order.
    public private(set) var linkRecords: [LinkRecord] = []
    /// Head-unit events in order, for checks.
    public private(set) var headUnitEvents: [HeadUnitMediaRole.Event] = []
    /// Every session event of each end, in order.
    public private(set) var phoneSessionEvents: [Connection.Event] = []
    public private(set) var headUnitSessionEvents: [Connection.Event] = []
    /// Media connections the phone opened (identified) and closed.
    public private(set) var connections = 0
    public private(set) var disconnections = 0
    /// Files the head unit received over the file-transfer session, by transfer id.
    public private(set) var transfers: [UInt8: [UInt8]] = [:]
    /// Every write each end made, with the time it was made, in order.
    public private(set) var wireLog: [(time: LinkInstant, role: LinkRole, bytes: [UInt8])] = []
    /// Control message ids each end sent, in order (withheld ones left out).
    public private(set) var sentMessageIDs: [LinkRole: [UInt16]] = [:]

    /// Steps taken (each an instant at which something happened), to bound runaway scenarios.
    public private(set) var steps = 0
    /// Steps allowed in all.
    public var stepBudget = 2_000_000
    /// Steps allowed without virtual time advancing: more means a timer
    /// that fires and is not moved on.
    public var roundsPerInstantBudget = 200_000
    /// Why the simulation stopped early, once a budget ran out. From then on
    /// `run` no longer steps: it moves time to the limit it is given.
    public private(set) var budgetFailure: String?
    private var stepsAtInstant = 0
    private var started = false

    public init(app: SampleApp = SampleApp(), feedback: Bool = false, faults: WireFaults = .none, seed: UInt64 = 1,
                limits: HeadUnitLimits = .audioApps, phone: Connection.Configuration = .init(role: .device),
                headUnit: Connection.Configuration = .init(role: .accessory)) {
        edge = VirtualTimeEdge(app: app)
        var parameters = LinkParameters(maximumPacketLength: 1024, retransmitTimeout: .milliseconds(300),
                                        cumulativeAckTimeout: .milliseconds(30), maximumRetransmissions: 30)
        parameters.maximumOutstandingPackets = 8
        var accessory = LinkConfiguration(role: .accessory, parameters: parameters, initialSequence: 0x2B)
        var device = LinkConfiguration(role: .device, parameters: parameters, initialSequence: 0x40)
        accessory.silenceLimit = .seconds(30)
        device.silenceLimit = .seconds(30)
        // Each link packet its own write, as over USB (and as the trace shows them).
        phoneCore = edge.phoneCore(link: device, phone, feedback: feedback, coalescesWrites: false)
        phoneCore.recordsSentMessages = true
        headUnitCore = EndpointCore(configuration: EndpointCore.Configuration(link: accessory, coalescesWrites: false),
                                    connection: Connection(headUnit, headUnit: HeadUnitMediaRole(limits: limits)), app: nil)
        headUnitCore.recordsSentMessages = true
        towardsPhone = FaultyWire(faults: faults, seed: seed &* 2 &+ 1)
        towardsHeadUnit = FaultyWire(faults: faults, seed: seed &* 2 &+ 2)
    }

    public var phoneConnection: Connection { phoneCore.connection }
    public var headUnitConnection: Connection { headUnitCore.connection }
    public var phone: PhoneMediaRole { phoneCore.connection.phone }
    public var headUnit: HeadUnitMediaRole { headUnitCore.connection.headUnit }

    /// Control messages an end never sends, by id: a peer that leaves a
    /// step out, for conformance cases.
    public var withheld: [LinkRole: Set<UInt16>] {
        get { [.device: phoneCore.withheldMessages, .accessory: headUnitCore.withheldMessages] }
        set {
            phoneCore.withheldMessages = newValue[.device] ?? []
            headUnitCore.withheldMessages = newValue[.accessory] ?? []
        }
    }

    public mutating func note(_ who: String, _ text: String) {
        transcript.append(Line(time: now, who: who, text: text))
    }

    /// Starts both link ends (the cable is in).
    public mutating func start() {
        started = true
        serve(phoneCore.handle(.start, now: now), at: .device)
        serve(headUnitCore.handle(.start, now: now), at: .accessory)
    }

    /// Plugs in (the first time: starts the link; later, both ends start
    /// over as fresh link ends) and runs until both ends are identified and
    /// the head unit knows the app.
    @discardableResult
    public mutating func connect(within limit: Duration = .seconds(60)) -> Bool {
        if !started {
            start()
        } else {
            serve(phoneCore.handle(.restart, now: now), at: .device)
            serve(headUnitCore.handle(.restart, now: now), at: .accessory)
        }
        let target = connections + 1
        return run(for: limit) { $0.connections >= target && $0.headUnit.appName != nil }
    }

    /// Pulls the cable: both ends see their transport close, and whatever
    /// was on the wire is lost.
    public mutating func unplug() {
        _ = towardsPhone.arrivals(upTo: LinkInstant(nanoseconds: .max))
        _ = towardsHeadUnit.arrivals(upTo: LinkInstant(nanoseconds: .max))
        serve(headUnitCore.handle(.transportClosed("cable unplugged"), now: now), at: .accessory)
        serve(phoneCore.handle(.transportClosed("cable unplugged"), now: now), at: .device)
    }

    /// A head-unit action, run now; its messages go out at once.
    public mutating func headUnitDoes(_ what: String, _ action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) {
        note("head unit", what)
        serve(headUnitCore.act(now: now) { connection, now in connection.headUnitDoes(now: now, action) }, at: .accessory)
    }

    /// A change on the phone side (the app updating its command set, say).
    public mutating func phoneDoes(_ what: String, _ action: (inout PhoneMediaRole, SampleApp, LinkInstant) -> [PhoneMediaRole.Output]) {
        note("phone", what)
        let app = self.app
        serve(phoneCore.act(now: now) { connection, now in connection.phoneDoes(now: now) { phone, now in action(&phone, app, now) } }, at: .device)
    }

    /// A message from an end behind its core's back, as a peer that does
    /// not follow the rules would send it.
    public mutating func inject(_ message: ControlMessage, from role: LinkRole) {
        note(role == .device ? "phone" : "head unit", "sends \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))") behind its core's back")
        guard let bytes = try? message.encoded(), let session = controlSession(role) else { return }
        sentMessageIDs[role, default: []].append(message.id)
        sendRaw(bytes, session: session, from: role)
    }

    /// Bytes on a session of one end behind its session's back.
    public mutating func sendRaw(_ bytes: [UInt8], session: UInt8, from role: LinkRole) {
        if role == .device {
            serve(phoneCore.handle(.sendRaw(session: session, bytes), now: now), at: .device)
        } else {
            serve(headUnitCore.handle(.sendRaw(session: session, bytes), now: now), at: .accessory)
        }
    }

    /// Advances virtual time, moving bytes between the two ends and ticking
    /// them at their deadlines, until `limit` has passed or `done` holds
    /// (looked at every simulated millisecond). Returns whether `done` held.
    @discardableResult
    public mutating func run(for limit: Duration, until done: (MediaSimulator) -> Bool = { _ in false }) -> Bool {
        let end = now + limit
        while now < end {
            if done(self) { return true }
            guard budgetFailure == nil else {
                now = end
                return done(self)
            }
            advance(until: min(now + .milliseconds(1), end))
        }
        return done(self)
    }

    // MARK: Plumbing

    /// Everything that happens up to `limit`, in time order: bytes arriving
    /// over the wire, the ends' deadlines.
    private mutating func advance(until limit: LinkInstant) {
        while budgetFailure == nil {
            let candidates = [phoneCore.nextDeadline, headUnitCore.nextDeadline, towardsPhone.nextArrival, towardsHeadUnit.nextArrival].compactMap { $0 }
            guard let next = candidates.min(), next <= limit else {
                now = max(now, limit)
                return
            }
            if steps >= stepBudget {
                fail("the simulation ran out of its step budget (\(stepBudget) steps) at \(now.nanoseconds / 1_000_000) ms of virtual time")
                break
            }
            if next > now { stepsAtInstant = 0 }
            stepsAtInstant += 1
            if stepsAtInstant > roundsPerInstantBudget {
                fail("virtual time stopped at \(now.nanoseconds / 1_000_000) ms: \(roundsPerInstantBudget) rounds without it advancing"
                     + " (phone deadline \(phoneCore.nextDeadline.map { "\($0)" } ?? "none"), head-unit deadline \(headUnitCore.nextDeadline.map { "\($0)" } ?? "none"))")
                break
            }
            steps += 1
            now = max(now, next)
            for bytes in towardsPhone.arrivals(upTo: now) { serve(phoneCore.handle(.received(bytes), now: now), at: .device) }
            for bytes in towardsHeadUnit.arrivals(upTo: now) { serve(headUnitCore.handle(.received(bytes), now: now), at: .accessory) }
            if let deadline = phoneCore.nextDeadline, deadline <= now { serve(phoneCore.handle(.tick, now: now), at: .device) }
            if let deadline = headUnitCore.nextDeadline, deadline <= now { serve(headUnitCore.handle(.tick, now: now), at: .accessory) }
        }
        now = max(now, limit)
    }

    private mutating func fail(_ reason: String) {
        budgetFailure = reason
        note("simulator", reason)
    }

    private func controlSession(_ role: LinkRole) -> UInt8? {
        (role == .device ? phoneCore : headUnitCore).link.negotiated?.sessions.first { $0.type == .control }?.id
    }

    /// A core's outputs: the edge's answers back in, bytes onto the wire,
    /// everything else into the records and the transcript.
    private mutating func serve(_ outputs: [EndpointCore.Output], at role: LinkRole) {
        var passed: [EndpointCore.Output] = []
        if role == .device {
            edge.serve(outputs, &phoneCore, now: now) { passed.append($0) }
        } else {
            edge.serve(outputs, &headUnitCore, now: now) { passed.append($0) }
        }
        let who = role == .device ? "phone" : "head unit"
        for output in passed {
            switch output {
            case .write(let bytes):
                wireLog.append((now, role, bytes))
                if role == .device { towardsHeadUnit.write(bytes, now: now) } else { towardsPhone.write(bytes, now: now) }
            case .link(let event):
                linkRecords.append(LinkRecord(time: now, role: role, event: event))
                if case .down(let reason) = event { note(who, "link down: \(reason)") }
            case .event(let event): record(event, who: who, role: role)
            case .sentMessage(let id): sentMessageIDs[role, default: []].append(id)
            case .legacyEvent(let event): note(who, "iAP1: \(event)")
            case .log(_, let line): note(who, line)
            case .authenticator, .verify, .legacyVerify, .load, .legacyLoad, .pausePlayback, .perform, .legacyPerform, .readNowPlaying: break // answered by the edge
            case .sessionData: break // only a link probe's core gives these
            }
        }
    }

    private mutating func record(_ event: Connection.Event, who: String, role: LinkRole) {
        if role == .device { phoneSessionEvents.append(event) } else { headUnitSessionEvents.append(event) }
        switch event {
        case .stage(let stage):
            note(who, stage.description)
            if role == .device, case .identified = stage {
                connections += 1
                note(who, "connected (connection \(connections))")
            }
            if role == .device, stage == .disconnected, connections > disconnections {
                disconnections += 1
            }
        case .accessoryCertificate: break // the core logs it with its summary
        case .media(let media):
            headUnitEvents.append(media)
            note(who, MediaEventText.describe(media, headUnit: headUnit, now: now))
        case .fileReceived(let id, let bytes): transfers[id] = bytes
        case .unhandled(let message): note(who, "received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))")")
        case .log(let line): note(who, line)
        case .problem(let problem): note(who, "problem: \(problem)")
        }
    }
}
