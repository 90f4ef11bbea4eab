import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// The phone role (with the sample app) and the head-unit role over a
/// simulated link in virtual time: the whole media protocol end to end,
/// deterministic for a seed, with any faults on the wire.
public struct MediaSimulator: Sendable {
    public struct Line: Hashable, Sendable {
        public var time: LinkInstant
        public var who: String
        public var text: String
    }

    public var link: LinkSimulator
    public private(set) var phone: PhoneMediaRole
    public private(set) var headUnit: HeadUnitMediaRole
    public let app: SampleApp
    public private(set) var transcript: [Line] = []
    /// Head-unit events in order, for checks.
    public private(set) var headUnitEvents: [HeadUnitMediaRole.Event] = []
    public private(set) var connections = 0
    public private(set) var disconnections = 0
    /// Files the head unit received over the file-transfer session, by transfer id.
    public private(set) var transfers: [UInt8: [UInt8]] = [:]
    private var fileSenders: [UInt8: FileTransferSender] = [:]
    private var fileReceiver = FileTransferReceiver()
    private var datagramsSeen: [LinkRole: Int] = [.accessory: 0, .device: 0]
    private let fileSession: UInt8 = 2

    private var channels: [LinkRole: ControlChannel] = [.accessory: ControlChannel(), .device: ControlChannel()]
    private var consumed: [LinkRole: Int] = [.accessory: 0, .device: 0]
    private var seenRecords = 0
    private var loads: [(at: LinkInstant, token: UInt32, result: PhoneMediaRole.LoadResult)] = []
    private var up: [LinkRole: Bool] = [.accessory: false, .device: false]
    private let controlSession: UInt8 = 1

    public init(app: SampleApp = SampleApp(), feedback: Bool = false, faults: WireFaults = .none, seed: UInt64 = 1,
                limits: HeadUnitLimits = .audioApps) {
        self.app = app
        var commands = app.commandCenter()
        if feedback { app.registerFeedback(&commands) }
        phone = PhoneMediaRole(appName: app.appName, commands: commands, offersContent: true)
        headUnit = HeadUnitMediaRole(limits: limits)
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

    /// Rounds of `run` allowed without virtual time advancing (a role timer
    /// that fires without moving on would otherwise spin forever).
    public var roundsPerInstantBudget = 100_000
    private var mediaBudgetFailure: String?

    /// Why the simulation stopped early (its own budget or the link's), if it did.
    public var budgetFailure: String? { mediaBudgetFailure ?? link.budgetFailure }

    public mutating func note(_ who: String, _ text: String) {
        transcript.append(Line(time: link.now, who: who, text: text))
    }

    /// Plugs in (the first time: starts the link) and runs until both roles
    /// are connected.
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
        let outputs = action(&headUnit, link.now)
        dispatchHeadUnit(outputs)
    }

    /// A change on the phone side (the app updating its command set, say).
    public mutating func phoneDoes(_ what: String, _ action: (inout PhoneMediaRole, SampleApp, LinkInstant) -> [PhoneMediaRole.Output]) {
        note("phone", what)
        app.setTime(link.now)
        let outputs = action(&phone, app, link.now)
        dispatchPhone(outputs)
        syncNowPlaying()
    }

    /// Advances virtual time, moving messages between the roles, until
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
                    + " (phone deadline \(phone.nextDeadline.map { "\($0)" } ?? "none"), head-unit deadline \(headUnit.nextDeadline.map { "\($0)" } ?? "none"))"
                note("simulator", mediaBudgetFailure ?? "")
                return false
            }
            var step = link.now + .milliseconds(1)
            for deadline in [phone.nextDeadline, headUnit.nextDeadline, loads.map(\.at).min()].compactMap({ $0 }) where deadline < step {
                step = max(deadline, link.now)
            }
            link.run(until: min(step, end))
            processLink()
            completeLoads()
            if let deadline = phone.nextDeadline, deadline <= link.now { dispatchPhone(phone.tick(now: link.now)) }
            if let deadline = headUnit.nextDeadline, deadline <= link.now { dispatchHeadUnit(headUnit.tick(now: link.now)) }
        }
        return done(self)
    }

    // MARK: Plumbing

    private mutating func processLink() {
        // Link events: connect and disconnect the roles exactly once each.
        let records = link.records
        while seenRecords < records.count {
            let record = records[seenRecords]
            seenRecords += 1
            switch record.event {
            case .up:
                up[record.role] = true
                if record.role == .device {
                    connections += 1
                    note("phone", "connected (connection \(connections))")
                    app.setTime(link.now)
                    dispatchPhone(phone.connect(now: link.now))
                    syncNowPlaying()
                } else {
                    dispatchHeadUnit(headUnit.connect(now: link.now))
                }
            case .down(let reason):
                up[record.role] = false
                // Whatever this connection left half-delivered is stale for the next.
                channels[record.role] = ControlChannel()
                consumed[record.role] = link.deliveredBytes(to: record.role, session: controlSession).count
                if record.role == .device {
                    disconnections += 1
                    note("phone", "disconnected: \(reason)")
                    let outputs = phone.disconnect(now: link.now)
                    if outputs.contains(.pausePlayback) { app.pause(at: link.now) }
                    dispatchPhone(outputs.filter { $0 != .pausePlayback })
                    loads.removeAll()
                    fileSenders.removeAll()
                } else {
                    note("head unit", "disconnected: \(reason)")
                    headUnit.disconnect()
                    fileReceiver = FileTransferReceiver()
                }
            default:
                break
            }
        }
        for role in [LinkRole.device, .accessory] where up[role] == true {
            let delivered = link.deliveredBytes(to: role, session: controlSession)
            let start = consumed[role] ?? 0
            consumed[role] = delivered.count
            // With the time, so that a message started and never finished is given up.
            let output = delivered.count > start
                ? channels[role, default: ControlChannel()].receive(Array(delivered[start...]), now: link.now)
                : channels[role, default: ControlChannel()].expire(now: link.now)
            for reply in output.replies { sendControl(reply, from: role) }
            for input in output.inputs {
                switch input {
                case .problem(let problem):
                    note(role == .device ? "phone" : "head unit", "control session: \(problem)")
                case .message(let message):
                    receive(message, at: role)
                }
            }
        }
        for role in [LinkRole.device, .accessory] {
            let datagrams = link.deliveredDatagrams(to: role, session: fileSession)
            let seen = datagramsSeen[role] ?? 0
            guard datagrams.count > seen else { continue }
            datagramsSeen[role] = datagrams.count
            guard up[role] == true else { continue }
            for bytes in datagrams[seen...] { fileDatagram(bytes, at: role) }
        }
    }

    /// The file-transfer session: the phone sends, the head unit receives.
    private mutating func fileDatagram(_ bytes: [UInt8], at role: LinkRole) {
        let who = role == .device ? "phone" : "head unit"
        do {
            let datagram = try FileTransferDatagram(decoding: bytes)
            if role == .device {
                guard var sender = fileSenders[datagram.transferID] else { return note(who, "file-transfer datagram for unknown transfer \(datagram.transferID)") }
                let output = try sender.handle(.received(datagram))
                fileSenders[datagram.transferID] = sender
                for outgoing in output.datagrams { try? link.send(outgoing.encoded(), session: fileSession, from: .device) }
                if case .finished = output.state { fileSenders[datagram.transferID] = nil }
            } else {
                for output in try fileReceiver.receive(datagram) {
                    switch output {
                    case .send(let answer): try? link.send(answer.encoded(), session: fileSession, from: .accessory)
                    case .completed(let id, let file, _):
                        transfers[id] = file
                        note(who, "file transfer \(id): \(file.count) bytes received")
                    case .cancelled(let id, let reason): note(who, "file transfer \(id) cancelled: \(reason)")
                    case .paused: break
                    }
                }
            }
        } catch {
            note(who, "file-transfer session: \(error)")
        }
    }

    private mutating func receive(_ message: ControlMessage, at role: LinkRole) {
        let typed: MediaMessage?
        do {
            typed = try MediaMessage(message)
        } catch {
            note(role == .device ? "phone" : "head unit", "malformed \(MessageCatalog.name(of: message.id) ?? "message"): \(error.detail)")
            return
        }
        guard let typed else { return }
        if role == .device {
            app.setTime(link.now)
            let outputs = phone.receive(typed, now: link.now)
            dispatchPhone(outputs)
            syncNowPlaying()
        } else {
            dispatchHeadUnit(headUnit.receive(typed, now: link.now))
        }
    }

    private mutating func completeLoads() {
        let due = loads.filter { $0.at <= link.now }
        loads.removeAll { $0.at <= link.now }
        for load in due {
            app.setTime(link.now)
            dispatchPhone(phone.complete(token: load.token, with: load.result, now: link.now))
            syncNowPlaying()
        }
    }

    /// The app's state may have changed: the now-playing center decides
    /// whether that is worth an update.
    private mutating func syncNowPlaying() {
        guard phone.isConnected else { return }
        dispatchPhone(phone.setNowPlaying(app.nowPlaying(at: link.now), now: link.now))
    }

    private mutating func dispatchPhone(_ outputs: [PhoneMediaRole.Output]) {
        for output in outputs {
            switch output {
            case .send(let message): sendControl(message.controlMessage, from: .device)
            case .load(let token, let request):
                app.setTime(link.now)
                let (result, delay) = app.load(request, now: link.now)
                loads.append((link.now + delay, token, result))
            case .transferFile(let id, let bytes):
                guard let payload = link.device.negotiated?.maximumPayload else { continue }
                do {
                    var sender = try FileTransferSender(transferID: id, file: bytes, maximumDataPerDatagram: payload - FileTransferSender.datagramHeaderSize)
                    let setup = try sender.start()
                    fileSenders[id] = sender
                    try link.send(setup.encoded(), session: fileSession, from: .device)
                } catch {
                    note("phone", "file transfer \(id) failed to start: \(error)")
                }
            case .pausePlayback: app.pause(at: link.now)
            case .connected, .disconnected: break
            case .log(let text): note("phone", text)
            }
        }
    }

    private mutating func dispatchHeadUnit(_ outputs: [HeadUnitMediaRole.Output]) {
        for output in outputs {
            switch output {
            case .send(let message): sendControl(message.controlMessage, from: .accessory)
            case .event(let event):
                headUnitEvents.append(event)
                note("head unit", MediaEventText.describe(event, headUnit: headUnit, now: link.now))
            }
        }
    }

    private mutating func sendControl(_ message: ControlMessage, from role: LinkRole) {
        guard let bytes = try? message.encoded() else {
            note(role == .device ? "phone" : "head unit", "cannot encode \(MessageCatalog.name(of: message.id) ?? "a message"): too large")
            return
        }
        do {
            try link.send(bytes, session: controlSession, from: role)
        } catch {
            note(role == .device ? "phone" : "head unit", "cannot send \(MessageCatalog.name(of: message.id) ?? "a message"): \(error)")
        }
    }

}
