import Testing
import IAPConformance
import IAPLink
import IAPWire
import IAPTransport

/// A virtual-time simulation that runs out of its step budget, or whose
/// time stops advancing (a timer that fires and is not moved on), fails with
/// a clear reason instead of spinning. Each test bounds its own loop, so a
/// simulator that spins fails the test rather than hanging the suite.
@Suite struct StepBudgetTests {
    static func configuration(_ role: LinkRole) -> LinkConfiguration {
        LinkConfiguration(role: role, parameters: LinkParameters(), initialSequence: role == .accessory ? 0x2B : 0x40)
    }

    /// Drives `simulation` the way the conformance cases do: run in short
    /// slices until a deadline, at most `rounds` slices.
    static func drive(_ simulation: inout LinkSimulator, for duration: Duration, rounds: Int = 100_000) -> Int {
        let deadline = simulation.now + duration
        var slices = 0
        while simulation.now < deadline && slices < rounds {
            try? simulation.send([UInt8](repeating: 0x42, count: 256), session: 1, from: .accessory)
            simulation.run(until: min(deadline, simulation.now + .milliseconds(5)))
            slices += 1
        }
        return slices
    }

    @Test func runningOutOfStepsFailsAndEnds() {
        var simulation = LinkSimulator(accessory: Self.configuration(.accessory), device: Self.configuration(.device),
                                       outbound: WireFaults(loss: 0.2), inbound: WireFaults(loss: 0.2), seed: 3)
        simulation.stepBudget = 40
        simulation.start()
        let slices = Self.drive(&simulation, for: .seconds(60))
        #expect(slices < 100_000, "the simulation spun instead of ending")
        #expect(simulation.now == .milliseconds(60_000))
        #expect(simulation.steps == 40)
        let failure = simulation.budgetFailure
        #expect(failure?.contains("step budget (40 steps)") == true, "\(failure ?? "no failure")")
    }

    @Test func timeThatStopsAdvancingFails() {
        // With no wire delay the handshake takes several steps at instant 0.
        var simulation = LinkSimulator(accessory: Self.configuration(.accessory), device: Self.configuration(.device),
                                       outbound: WireFaults(delay: .zero), inbound: WireFaults(delay: .zero), seed: 1)
        simulation.stepsPerInstantBudget = 2
        simulation.start()
        let up = simulation.run(until: .milliseconds(1000)) { $0.accessory.isUp && $0.device.isUp }
        #expect(!up)
        #expect(simulation.budgetFailure?.contains("virtual time stopped at 0 ms") == true, "\(simulation.budgetFailure ?? "no failure")")
        // Without the bound the same handshake completes.
        var unbounded = LinkSimulator(accessory: Self.configuration(.accessory), device: Self.configuration(.device),
                                      outbound: WireFaults(delay: .zero), inbound: WireFaults(delay: .zero), seed: 1)
        unbounded.start()
        let unboundedUp = unbounded.run(until: .milliseconds(1000)) { $0.accessory.isUp && $0.device.isUp }
        #expect(unboundedUp)
        #expect(unbounded.budgetFailure == nil)
    }

    @Test func conformanceCaseReportsTheBudget() throws {
        let conformanceCase = try #require(ConformanceCase.named("message-spanning-packets"))
        #expect(conformanceCase.run(seed: 1).passed)
        let starved = conformanceCase.run(seed: 1, stepBudget: 5)
        #expect(!starved.passed)
        #expect(starved.failures.contains { $0.contains("step budget (5 steps)") }, "\(starved.failures)")
    }

    @Test func mediaSimulatorReportsEitherBudget() {
        var starved = MediaSimulator()
        starved.stepBudget = 5
        let starvedUp = starved.connect(within: .seconds(60))
        #expect(!starvedUp)
        #expect(starved.budgetFailure?.contains("step budget (5 steps)") == true, "\(starved.budgetFailure ?? "no failure")")
        var stuck = MediaSimulator()
        stuck.roundsPerInstantBudget = 0
        let stuckUp = stuck.connect(within: .seconds(60))
        #expect(!stuckUp)
        #expect(stuck.budgetFailure?.contains("virtual time stopped") == true, "\(stuck.budgetFailure ?? "no failure")")
        let reason = stuck.budgetFailure
        let transcript = stuck.transcript
        #expect(transcript.contains { $0.text == reason })
    }
}
