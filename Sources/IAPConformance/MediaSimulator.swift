import IAPDemo
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import IAPWire

/// A phone and a head-unit connection core over a simulated link in
/// virtual time: the whole session end to end (authentication,
/// identification, media), deterministic for a seed, with any faults on
/// the wire. A thin driver: the session is `IAPSession.Connection`, the edge
/// `VirtualTimeEdge`.
public struct MediaSimulator: Sendable {
    public struct Line: Hashable, Sendable {
        public var time: LinkInstant
        public var who: String
        public var text: String
    }

    public var link: LinkSimulator
    public private(set) var phoneConnection: Connection
    public private(set) var headUnitConnection: Connection
    public var edge: VirtualTimeEdge
    public var app: SampleApp { edge.app }
    public private(set) var transcript: [Line] = []
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

    /// Control messages an end never sends, by id: a peer that leaves a
    /// step out, for conformance cases.
    public var withheld: [LinkRole: Set<UInt16>] = [:]
    /// Control message ids each end sent, in order (withheld ones left out).
    public private(set) var sentMessageIDs: [LinkRole: [UInt16]] = [:]

    private var seenRecords = 0
    private var seenDeliveries: [LinkRole: [UInt8: Int]] = [:]
    private var sentDecoders: [LinkRole: ControlMessageDecoder] = [:]

    public init(app: SampleApp = SampleApp(), feedback: Bool = false, faults: WireFaults = .none, seed: UInt64 = 1,
                limits: HeadUnitLimits = .audioApps, phone: Connection.Configuration = .init(role: .phone),
                headUnit: Connection.Configuration = .init(role: .headUnit)) {
        edge = VirtualTimeEdge(app: app)
        phoneConnection = edge.phoneConnection(phone, feedback: feedback)
        headUnitConnection = Connection(headUnit, headUnit: HeadUnitMediaRole(limits: limits))
        var parameters = LinkParameters(maximumPacketLength: 1024, retransmitTimeout: .milliseconds(300),
                                        cumulativeAckTimeout: .milliseconds(30), maximumRetransmissions: 30)
        parameters.maximumOutstandingPackets = 8
        var accessory = LinkConfiguration(role: .accessory, parameters: parameters, initialSequence: 0x2B)
        var device = LinkConfiguration(role: .device, parameters: parameters, initialSequence: 0x40)
        accessory.silenceLimit = .seconds(30)
        device.silenceLimit = .seconds(30)
        link = LinkSimulator(accessory: accessory, device: device, outbound: faults, inbound: faults, seed: seed)
    }

    public var now: LinkInstant { link.now }
    public var phone: PhoneMediaRole { phoneConnection.phone }
    public var headUnit: HeadUnitMediaRole { headUnitConnection.headUnit }

    /// Rounds of `run` allowed without virtual time advancing (a session
    /// timer that fires without moving on would otherwise spin forever).
    public var roundsPerInstantBudget = 100_000
    private var mediaBudgetFailure: String?

    /// Why the simulation stopped early (its own budget or the link's), if it did.
    public var budgetFailure: String? { mediaBudgetFailure ?? link.budgetFailure }

    public mutating func note(_ who: String, _ text: String) {
        transcript.append(Line(time: link.now, who: who, text: text))
    }

    /// Plugs in (the first time: starts the link) and runs until both ends
    /// are identified and the head unit knows the app.
    @discardableResult
    public mutating func connect(within limit: Duration = .seconds(60)) -> Bool {
        if link.records.isEmpty && link.wireLog.isEmpty { link.start() } else { link.plug() }
        let target = connections + 1
        return run(for: limit) { $0.connections >= target && $0.headUnit.appName != nil }
    }

    /// Pulls the cable: both ends see the transport close.
    public mutating func unplug() {
        link.unplug()
        processLink()
    }

    /// A head-unit action, run now; its messages go out at once.
    public mutating func headUnitDoes(_ what: String, _ action: (inout HeadUnitMediaRole, LinkInstant) -> [HeadUnitMediaRole.Output]) {
        note("head unit", what)
        let outputs = headUnitConnection.headUnitDoes(now: link.now, action)
        serve(outputs, at: .accessory)
    }

    /// A change on the phone side (the app updating its command set, say).
    public mutating func phoneDoes(_ what: String, _ action: (inout PhoneMediaRole, SampleApp, LinkInstant) -> [PhoneMediaRole.Output]) {
        note("phone", what)
        app.setTime(link.now)
        let app = self.app
        let outputs = phoneConnection.phoneDoes(now: link.now) { phone, now in action(&phone, app, now) }
        serve(outputs, at: .device)
    }

    /// A message from an end behind its core's back, as a peer that does
    /// not follow the rules would send it.
    public mutating func inject(_ message: ControlMessage, from role: LinkRole) {
        note(role == .device ? "phone" : "head unit", "sends \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))") behind its core's back")
        guard let bytes = try? message.encoded() else { return }
        sendControl(bytes, from: role)
    }

    /// Advances virtual time, moving bytes between the two ends, until
    /// `limit` has passed or `done` holds. Returns whether `done` held.
    @discardableResult
    public mutating func run(for limit: Duration, until done: (MediaSimulator) -> Bool = { _ in false }) -> Bool {
        let end = link.now + limit
        var rounds = 0
        var instant = link.now
        while link.now < end {
            if done(self) { return true }
            if budgetFailure != nil { return false }
            if link.now > instant {
                instant = link.now
                rounds = 0
            }
            rounds += 1
            if rounds > roundsPerInstantBudget {
                mediaBudgetFailure = "virtual time stopped at \(link.now.nanoseconds / 1_000_000) ms: \(roundsPerInstantBudget) rounds without it advancing"
                    + " (phone deadline \(phoneConnection.nextDeadline.map { "\($0)" } ?? "none"), head-unit deadline \(headUnitConnection.nextDeadline.map { "\($0)" } ?? "none"))"
                note("simulator", mediaBudgetFailure ?? "")
                return false
            }
            var step = link.now + .milliseconds(1)
            for deadline in [phoneConnection.nextDeadline, headUnitConnection.nextDeadline].compactMap({ $0 }) where deadline < step {
                step = max(deadline, link.now)
            }
            link.run(until: min(step, end))
            // The app's command handlers act at the app's time: a stale clock
            // would date a pause or a track change back to the last load.
            app.setTime(link.now)
            processLink()
            if let deadline = phoneConnection.nextDeadline, deadline <= link.now { serve(phoneConnection.tick(now: link.now), at: .device) }
            if let deadline = headUnitConnection.nextDeadline, deadline <= link.now { serve(headUnitConnection.tick(now: link.now), at: .accessory) }
        }
        return done(self)
    }

    // MARK: Plumbing

    /// Link events and delivered bytes since the last look, handed to the cores.
    private mutating func processLink() {
        let records = link.records
        while seenRecords < records.count {
            let record = records[seenRecords]
            seenRecords += 1
            switch record.event {
            case .up(let negotiated):
                serve(record.role == .device ? phoneConnection.linkUp(negotiated, now: link.now) : headUnitConnection.linkUp(negotiated, now: link.now),
                      at: record.role)
            case .down(let reason):
                note(record.role == .device ? "phone" : "head unit", "link down: \(reason)")
                // Whatever this connection left half-delivered is stale for the next.
                skipDeliveries(of: record.role)
                serve(record.role == .device ? phoneConnection.linkDown(now: link.now) : headUnitConnection.linkDown(now: link.now), at: record.role)
            default:
                break
            }
        }
        for role in [LinkRole.device, .accessory] {
            let isUp = role == .device ? link.device.isUp : link.accessory.isUp
            let deliveries = link.deliveries[role] ?? [:]
            for session in deliveries.keys.sorted() {
                let datagrams = deliveries[session] ?? []
                let seen = seenDeliveries[role]?[session] ?? 0
                guard datagrams.count > seen else { continue }
                seenDeliveries[role, default: [:]][session] = datagrams.count
                guard isUp else { continue }
                for bytes in datagrams[seen...] {
                    serve(role == .device ? phoneConnection.received(session: session, bytes, now: link.now)
                                          : headUnitConnection.received(session: session, bytes, now: link.now), at: role)
                }
            }
        }
    }

    private mutating func skipDeliveries(of role: LinkRole) {
        for (session, datagrams) in link.deliveries[role] ?? [:] { seenDeliveries[role, default: [:]][session] = datagrams.count }
    }

    /// A core's outputs: bytes onto the simulated link, events into the
    /// transcript, the edge's answers back into the core.
    private mutating func serve(_ outputs: [Connection.Output], at role: LinkRole) {
        var sends: [(UInt8, [UInt8])] = []
        var events: [Connection.Event] = []
        if role == .device {
            edge.serve(outputs, &phoneConnection, now: link.now, send: { sends.append(($0, $1)) }, event: { events.append($0) })
        } else {
            edge.serve(outputs, &headUnitConnection, now: link.now, send: { sends.append(($0, $1)) }, event: { events.append($0) })
        }
        let who = role == .device ? "phone" : "head unit"
        for event in events { record(event, who: who, role: role) }
        for (session, bytes) in sends {
            if session == controlSession(role) {
                sendControl(bytes, from: role)
            } else {
                send(bytes, session: session, from: role)
            }
        }
    }

    private func controlSession(_ role: LinkRole) -> UInt8? {
        (role == .device ? link.device.negotiated : link.accessory.negotiated)?.sessions.first { $0.type == .control }?.id
    }

    /// Control-session bytes: recorded as message ids, withheld ones dropped.
    private mutating func sendControl(_ bytes: [UInt8], from role: LinkRole) {
        guard let session = controlSession(role) else { return }
        var decoder = sentDecoders[role] ?? ControlMessageDecoder()
        decoder.append(bytes)
        var ids: [UInt16] = []
        while let event = decoder.next() {
            if case .message(let message, _) = event { ids.append(message.id) }
        }
        sentDecoders[role] = decoder
        if let id = ids.first, withheld[role]?.contains(id) == true { return }
        sentMessageIDs[role, default: []] += ids
        send(bytes, session: session, from: role)
    }

    private mutating func send(_ bytes: [UInt8], session: UInt8, from role: LinkRole) {
        do {
            try link.send(bytes, session: session, from: role)
        } catch {
            note(role == .device ? "phone" : "head unit", "cannot send \(bytes.count) bytes on session \(session): \(error)")
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
            note(who, MediaEventText.describe(media, headUnit: headUnit, now: link.now))
        case .fileReceived(let id, let bytes): transfers[id] = bytes
        case .unhandled(let message): note(who, "received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16))")")
        case .log(let line): note(who, line)
        case .problem(let problem): note(who, "problem: \(problem)")
        }
    }
}
