import Testing
import IAPLink
import IAPTransport

/// The fault injectors follow their seed: the same seed gives the same
/// faults, different seeds different ones (a failing run can be repeated,
/// and runs with several seeds cover different faults).
@Suite struct FaultSeedTests {
    static let faults = WireFaults(loss: 0.2, duplication: 0.1, reordering: 0.1, corruption: 0.2,
                                   delay: .milliseconds(2), jitter: .milliseconds(3), fragmentation: 0.2)

    /// Everything a wire delivers for 200 distinct 16-byte writes, 1 ms apart.
    static func run(seed: UInt64) -> [[UInt8]] {
        var wire = FaultyWire(faults: faults, seed: seed)
        for index in 0..<200 {
            wire.write((0..<16).map { UInt8(truncatingIfNeeded: index &+ $0) }, now: .milliseconds(Int64(index)))
        }
        return wire.arrivals(upTo: .milliseconds(10_000))
    }

    @Test func faultyWireFollowsItsSeed() {
        let first = Self.run(seed: 11)
        #expect(Self.run(seed: 11) == first, "the same seed gave different faults")
        for seed: UInt64 in [0, 12, 0xDEAD_BEEF] {
            #expect(Self.run(seed: seed) != first, "seed \(seed) gave the same faults as seed 11")
        }
        // Faults happened at all: not every write arrived once and intact.
        let clean = (0..<200).map { index in (0..<16).map { UInt8(truncatingIfNeeded: index &+ $0) } }
        #expect(first != clean)
    }

    /// Which of 64 writes survive a 50 % lossy loopback, for one seed. The
    /// wire's delay is 1 ms; the set is read once nothing more has arrived
    /// for 300 ms (so a loaded machine only makes the test slower).
    static func loopbackSurvivors(seed: UInt64) async throws -> Set<UInt8> {
        let (first, second) = LoopbackTransport.pair(towardsSecond: WireFaults(loss: 0.5), seed: seed)
        let arrived = Locked<[[UInt8]]>([])
        try second.start { event in
            if case .received(let bytes) = event { arrived.withLock { $0.append(bytes) } }
        }
        try first.start { _ in }
        for index in 0..<64 { first.write([UInt8(index)]) }
        var count = -1
        var quietSince = ContinuousClock.now
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            let now = arrived.withLock { $0.count }
            if now != count {
                count = now
                quietSince = ContinuousClock.now
            } else if ContinuousClock.now - quietSince >= .milliseconds(300) {
                break
            }
        }
        first.close()
        return Set(arrived.withLock { $0 }.flatMap { $0 })
    }

    @Test func loopbackFollowsItsSeed() async throws {
        let a = try await Self.loopbackSurvivors(seed: 5)
        let again = try await Self.loopbackSurvivors(seed: 5)
        let other = try await Self.loopbackSurvivors(seed: 6)
        #expect(a.count > 0 && a.count < 64, "a 50 % loss let \(a.count) of 64 through")
        #expect(again == a, "the same seed lost different writes")
        #expect(other != a, "seeds 5 and 6 lost the same writes")
    }
}
