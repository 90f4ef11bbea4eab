@testable import IAPLegacy
import IAPSession
import IAPWire
import Testing

/// A head unit that repeats itself without end: what the phone holds and
/// what it reports stay bounded, counted, not timed.
@Suite struct LegacyFloodTests {
    /// Identify and a certificate, a thousand times, while the verifier has
    /// not answered: one check runs; the latest waits; the verdict on the
    /// first is dropped and only then is the latest checked.
    @Test func certificateAfterCertificateStartsOneCheckAtATime() {
        var harness = LegacyHarness(verifies: true)
        for n in 0..<1000 {
            harness.identify(options: 2, deviceID: 0x0200)
            harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0] + u32(UInt32(n))))
        }
        #expect(harness.verifications == [.certificate(u32(0))])
        let first = harness.verificationID
        harness.take(harness.phone.verified(id: first, .certificateAccepted(summary: "genuine", challenge: [1]), now: harness.now))
        // The latest certificate, never an earlier one, is checked next; the first verdict did not vouch for it.
        #expect(harness.verifications == [.certificate(u32(0)), .certificate(u32(999))])
        #expect(!harness.sent.contains { $0.command == 0x17 }, "a verdict on the first certificate was taken for the latest")
        harness.verdict(.certificateAccepted(summary: "latest", challenge: [2]))
        #expect(harness.sent.last == IAP1Packet(lingo: 0, command: 0x17, data: [2, 1]))
        #expect(harness.verifications.count == 2)
    }

    /// Identification repeated ten thousand times: the log lines and events
    /// given out grow with the logarithm of the count, and say how many there were.
    @Test func reportsPerConnectionAreCappedAndCounted() {
        var harness = LegacyHarness()
        let floods = 10_000
        for _ in 0..<floods { harness.receive(IAP1Packet(lingo: 0, command: 0x13, data: u32(0x01) + u32(0) + u32(0))) }
        // Each identification naming General only gives an event and a log line.
        let given = harness.events.count + harness.logs.count
        #expect(given <= LegacyPhone.reportsPerConnection + 10, "\(given) reports for \(floods) identifications")
        #expect(harness.logs.last == "16384 log lines and events for this iAP1 head unit so far; past the first 32 they are counted, not given one by one")
        // Every identification was still answered.
        #expect(harness.sent.count == floods)
    }
}
