import Testing
import IAPConformance
import IAPLink
import IAPRoles
import IAPWire

/// End to end in virtual time: a phone that starts a control message and
/// never finishes it does not block the head unit's control session.
@Suite struct IncompleteMessageSimulationTests {
    @Test func headUnitGivesUpAPartialMessageAndGoesOn() throws {
        var sim = MediaSimulator()
        let connected = sim.connect()
        try #require(connected)
        // The start of a 65520-byte NowPlayingUpdate, then nothing more of it.
        sim.sendRaw([0x40, 0x40, 0xFF, 0xF0, 0x50, 0x01, 0x00, 0x10], session: 1, from: .device)
        let before = sim.headUnitEvents.count
        // A request the phone answers: its answer is taken for the partial's continuation at first.
        sim.headUnitDoes("browse the root") { $0.openRoot(now: $1) }
        let gaveUp = sim.run(for: .seconds(12)) { sim in sim.transcript.contains { $0.text.contains("incomplete after") } }
        #expect(gaveUp, "the partial message was never reported")
        let report = sim.transcript.first { $0.text.contains("incomplete after") }?.text ?? ""
        #expect(report.contains("0x5001") && report.contains("of 65520 bytes"), "\(report)")
        // The session works again (the first request timed out at the head
        // unit after 8 s, before the partial was given up at 10 s).
        sim.headUnitDoes("browse the root again") { $0.openRoot(now: $1) }
        let tabs = sim.run(for: .seconds(5)) { !$0.headUnit.tabs.isEmpty }
        #expect(tabs)
        #expect(sim.headUnitEvents.count > before)
        #expect(sim.budgetFailure == nil)
    }
}
