import Testing
import IAPConformance
import IAPRoles
import IAPTransport

@Suite struct DemoTests {
    @Test func theDriveCompletesAndFaultsDoNotChangeTheEnd() {
        let clean = DemoDrive.run()
        #expect(clean.final.failedSteps.isEmpty, "\(clean.final.failedSteps)")
        #expect(clean.final.title == "All Blues")
        #expect(clean.final.state == .paused)
        #expect(clean.final.repeatMode == .all && clean.final.shuffleMode == .items)
        #expect(clean.final.rate == 1.5)
        #expect(clean.final.connections == 2 && clean.final.disconnections == 1)
        #expect(clean.final.tabs == ["Library", "Radio", "Recently Played", "Podcasts"])
        var faults = WireFaults(loss: 0.1, duplication: 0.05, reordering: 0.05, corruption: 0.03)
        faults.fragmentation = 0.1
        let lossy = DemoDrive.run(faults: faults, seed: 7)
        #expect(lossy.final == clean.final, "\(lossy.final)")
    }
}

@Suite struct InProcessPairTests {
    @Test func browsesThroughTheWholeStackAtOneInstant() {
        var pair = InProcessMediaPair()
        #expect(pair.isConnected)
        #expect(pair.browse("album:kind-of-blue") == 6)
        for _ in 0..<100 {
            #expect(pair.browse("library") == 4)
            pair.settle()
        }
    }
}
