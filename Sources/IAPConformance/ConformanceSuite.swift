import IAPLink
import IAPTransport
import IAPWire

/// The outcome of one conformance case.
public struct ConformanceResult: Hashable, Sendable {
    public var name: String
    public var seed: UInt64
    /// What was checked and failed, in words; empty when the case passed.
    public var failures: [String]
    /// What happened, for the table (figures such as retransmissions).
    public var summary: String
    /// Virtual time for simulated cases; real elapsed time for cases run
    /// against another implementation.
    public var milliseconds: Int
    public var passed: Bool { failures.isEmpty }

    public init(name: String, seed: UInt64, failures: [String], summary: String, milliseconds: Int) {
        self.name = name
        self.seed = seed
        self.failures = failures
        self.summary = summary
        self.milliseconds = milliseconds
    }
}

/// A named scenario between two link ends over the simulated wire.
public struct ConformanceCase: Sendable {
    public let name: String
    public let purpose: String
    let body: @Sendable (inout Scenario) -> Void

    /// Runs the case. A simulation that runs out of `stepBudget` steps (or
    /// stops advancing virtual time) fails the case with that reason.
    public func run(seed: UInt64, stepBudget: Int = LinkSimulator.maximumSteps) -> ConformanceResult {
        var scenario = Scenario(seed: seed, stepBudget: stepBudget)
        body(&scenario)
        if let failure = scenario.session?.budgetFailure ?? scenario.simulation.budgetFailure { scenario.failures.append(failure) }
        let now = scenario.scriptedTime ?? scenario.session?.now ?? scenario.simulation.now
        return ConformanceResult(name: name, seed: seed, failures: scenario.failures, summary: scenario.notes.joined(separator: "; "),
                                 milliseconds: Int(now.nanoseconds / 1_000_000))
    }
}

/// The state a case works on: the simulation plus its findings.
struct Scenario: Sendable {
    let seed: UInt64
    var simulation: LinkSimulator
    /// Session-level cases run the whole session over their own simulated link.
    var session: MediaSimulator?
    /// Where a case against a scripted peer (`ScriptedPeer`) left virtual time.
    var scriptedTime: LinkInstant?
    var failures: [String] = []
    var notes: [String] = []

    let stepBudget: Int

    init(seed: UInt64, stepBudget: Int = LinkSimulator.maximumSteps) {
        self.seed = seed
        self.stepBudget = stepBudget
        simulation = LinkSimulator(accessory: Self.accessory(), device: Self.device(), seed: seed)
        simulation.stepBudget = stepBudget
    }

    static func accessory(_ parameters: LinkParameters = LinkParameters(), initialSequence: UInt8 = 0x2B) -> LinkConfiguration {
        LinkConfiguration(role: .accessory, parameters: parameters, initialSequence: initialSequence)
    }

    static func device(_ parameters: LinkParameters = LinkParameters(), initialSequence: UInt8 = 0x40) -> LinkConfiguration {
        LinkConfiguration(role: .device, parameters: parameters, initialSequence: initialSequence)
    }

    mutating func configure(accessory: LinkConfiguration = Scenario.accessory(), device: LinkConfiguration = Scenario.device(),
                            outbound: WireFaults = .none, inbound: WireFaults = .none) {
        simulation = LinkSimulator(accessory: accessory, device: device, outbound: outbound, inbound: inbound, seed: seed)
        simulation.stepBudget = stepBudget
    }

    mutating func expect(_ condition: Bool, _ message: String) {
        if !condition { failures.append(message) }
    }

    mutating func note(_ text: String) { notes.append(text) }

    /// Starts both ends and waits for both to be up.
    @discardableResult
    mutating func connect(within limit: Duration = .seconds(30)) -> Bool {
        simulation.start()
        let deadline = simulation.now + limit
        let up = simulation.run(until: deadline) { $0.accessory.isUp && $0.device.isUp }
        expect(up, "the link did not come up within \(limit.wholeMillisecondsText)")
        if up { note("up after \(simulation.now.nanoseconds / 1_000_000) ms") }
        return up
    }

    /// Sends `bytes` from each listed end on a session, waiting on
    /// backpressure, and checks they arrive intact within `limit`.
    mutating func transfer(_ transfers: [(from: LinkRole, session: UInt8, bytes: [UInt8])], within limit: Duration = .seconds(120)) {
        var offsets = transfers.map { _ in 0 }
        let before = transfers.map { simulation.deliveredBytes(to: $0.from == .accessory ? .device : .accessory, session: $0.session).count }
        let deadline = simulation.now + limit
        while simulation.now < deadline {
            for (index, transfer) in transfers.enumerated() where offsets[index] < transfer.bytes.count {
                let end = min(transfer.bytes.count, offsets[index] + 1024)
                do {
                    try simulation.send(Array(transfer.bytes[offsets[index]..<end]), session: transfer.session, from: transfer.from)
                    offsets[index] = end
                } catch {
                    if case .queueFull = error.kind { continue }
                    expect(false, "send failed: \(error)")
                    return
                }
            }
            let complete = transfers.indices.allSatisfy { index in
                let peer: LinkRole = transfers[index].from == .accessory ? .device : .accessory
                return simulation.deliveredBytes(to: peer, session: transfers[index].session).count - before[index] >= transfers[index].bytes.count
            }
            if complete { break }
            let sentAll = offsets.indices.allSatisfy { offsets[$0] == transfers[$0].bytes.count }
            if !simulation.accessory.isUp || !simulation.device.isUp { break }
            simulation.run(until: min(deadline, simulation.now + (sentAll ? .milliseconds(200) : .milliseconds(5))))
        }
        for (index, transfer) in transfers.enumerated() {
            let peer: LinkRole = transfer.from == .accessory ? .device : .accessory
            let got = Array(simulation.deliveredBytes(to: peer, session: transfer.session).dropFirst(before[index]))
            expect(got == transfer.bytes, "session \(transfer.session) from the \(transfer.from.rawValue): \(got.count) of \(transfer.bytes.count) bytes arrived\(got == Array(transfer.bytes.prefix(got.count)) ? " (intact so far)" : " and they differ")")
        }
    }

    func count(_ role: LinkRole, where predicate: (LinkEvent) -> Bool) -> Int {
        simulation.events(role).filter(predicate).count
    }

    static func payload(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed ^ 0xA5A5)
        return (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    }
}

extension Duration {
    var wholeMillisecondsText: String {
        let (seconds, attoseconds) = components
        return "\(seconds * 1000 + attoseconds / 1_000_000_000_000_000) ms"
    }
}

func isUp(_ event: LinkEvent) -> Bool { if case .up = event { true } else { false } }
func isDown(_ event: LinkEvent) -> Bool { if case .down = event { true } else { false } }
func isFailed(_ event: LinkEvent) -> Bool { if case .failed = event { true } else { false } }
