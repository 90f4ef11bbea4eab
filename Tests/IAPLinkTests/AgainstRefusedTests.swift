import Testing
import IAPConformance
import IAPTransport

/// The against-suite over a transport that closes before any link (a
/// connection refused) stops at once with the transport's reason, however
/// long its link timeout: a wait that ignored the closed transport would
/// hang here for ten minutes.
@Suite struct AgainstRefusedTests {
    @Test func aRefusedConnectionEndsTheSuiteAtOnceWithItsReason() async throws {
        let port = try TCPTransport.listener(host: "127.0.0.1", port: 0).port
        let suite = AgainstSuite(transport: TCPTransport.connect(host: "127.0.0.1", port: port), timeout: .seconds(600))
        let results = await suite.run(seed: 1) { _ in }
        #expect(results.map(\.name) == ["garbage-before-syn", "detect"])
        let reason = results.first?.failures.first ?? ""
        #expect(reason.contains("the transport closed") && reason.contains("refused"), "\(reason)")
    }
}
