import Testing
import IAPDemo
import IAPConformance
import IAPEndpoint
import IAPRoles
import IAPSession
import IAPTransport

/// The real-time session cases, with this project's other end as the peer.
@Suite struct SessionConformanceTests {
    /// Software authentication at both ends, in memory.
    static func authentication() -> (phone: EndpointAuthentication, headUnit: EndpointAuthentication) {
        let edge = VirtualTimeEdge(app: SampleApp())
        let authenticator = edge.authenticator
        let verifier = edge.verifier
        return (EndpointAuthentication(policy: .required, verifier: { await verifier.answer($0) }),
                EndpointAuthentication(policy: .required, authenticator: { await authenticator.answer($0) }))
    }

    static func run(as kind: EndKind, peer: EndpointAuthentication, ours: EndpointAuthentication) async throws -> [ConformanceResult] {
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .milliseconds(1)), towardsFirst: WireFaults(delay: .milliseconds(1)))
        let counterpart = MediaEndpoint(kind: kind == .phone ? .headUnit : .phone, transport: b, app: kind == .phone ? nil : SampleApp(), authentication: peer, logger: .discarding("endpoint"))
        try counterpart.start()
        let loop = Task { await counterpart.run() }
        let results = await SessionConformance(kind: kind, transport: a, authentication: ours, timeout: .seconds(20), observation: .seconds(1))
            .run(seed: 1) { _ in }
        await counterpart.close()
        loop.cancel()
        return results
    }

    @Test func eachEndChecksAConformingPeer() async throws {
        let auth = Self.authentication()
        let asPhone = try await Self.run(as: .phone, peer: auth.headUnit, ours: auth.phone)
        #expect(asPhone.map(\.name) == SessionConformance.caseNames(as: .phone))
        for result in asPhone { #expect(result.passed, "\(result.name): \(result.failures)") }
        #expect(asPhone.first { $0.name == "accessory-authentication" }?.summary.contains("EC P-256 key") == true)
        let asHeadUnit = try await Self.run(as: .headUnit, peer: auth.phone, ours: auth.headUnit)
        #expect(asHeadUnit.map(\.name) == SessionConformance.caseNames(as: .headUnit))
        for result in asHeadUnit { #expect(result.passed, "\(result.name): \(result.failures)") }
    }

    /// An accessory that cannot authenticate fails the authentication case,
    /// and identification with it; the reason is named.
    @Test func anAccessoryWithoutAnAuthenticatorFails() async throws {
        let auth = Self.authentication()
        let results = try await Self.run(as: .phone, peer: .off, ours: auth.phone)
        let authentication = try #require(results.first { $0.name == "accessory-authentication" })
        #expect(!authentication.passed)
        #expect(authentication.failures.first?.contains("waiting for AuthenticationCertificate") == true, "\(authentication.failures)")
        #expect(results.first { $0.name == "accessory-identification" }?.passed == false)
    }
}
