import Testing
import IAPConformance

@Suite struct ConformanceTests {
    /// Every named case passes, for several seeds of the fault injection.
    @Test(arguments: ConformanceCase.all.map(\.name))
    func casePasses(_ name: String) throws {
        let conformanceCase = try #require(ConformanceCase.named(name))
        for seed: UInt64 in 1...5 {
            let result = conformanceCase.run(seed: seed)
            #expect(result.passed, "\(name) seed \(seed): \(result.failures.joined(separator: "; "))")
        }
    }

    @Test func sameSeedSameRun() throws {
        let conformanceCase = try #require(ConformanceCase.named("duplicates-reordering"))
        #expect(conformanceCase.run(seed: 42) == conformanceCase.run(seed: 42))
    }
}
