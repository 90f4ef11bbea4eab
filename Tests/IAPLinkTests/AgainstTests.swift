import Testing
import IAPConformance
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// A device end over a transport that answers pings (or not), for running
/// the against-suite in-process.
final class PingPeer: Sendable {
    let driver: LinkDriver
    private let task: Task<Void, Never>

    init(transport: Transport, answersPings: Bool, deliversDuplicates: Bool = false) throws {
        driver = LinkDriver(configuration: LinkConfiguration(role: .device), transport: transport)
        let driver = self.driver
        task = Task {
            var channel = ControlChannel()
            for await event in driver.events {
                switch event {
                case .link(.up):
                    channel.reset()
                case .data(let session, let bytes):
                    let (_, replies) = channel.receive(bytes)
                    guard answersPings else { continue }
                    for reply in replies { try? await driver.send(reply.encoded(), session: session) }
                default:
                    break
                }
            }
        }
        try driver.start()
    }

    deinit { task.cancel() }
}

@Suite(.serialized) struct AgainstTests {
    @Test func againstAConformingPeerEveryCasePasses() async throws {
        let (ours, theirs) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let peer = try PingPeer(transport: theirs, answersPings: true)
        let results = await AgainstSuite(transport: ours, timeout: .seconds(5)).run(seed: 1) { _ in }
        #expect(results.map(\.name) == AgainstSuite.caseNames)
        for result in results { #expect(result.passed, "\(result.name): \(result.failures)") }
        peer.driver.close()
    }

    @Test func aPeerThatDoesNotAnswerPingsFailsWithAReason() async throws {
        let (ours, theirs) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let peer = try PingPeer(transport: theirs, answersPings: false)
        let results = await AgainstSuite(transport: ours, timeout: .milliseconds(300)).run(seed: 1) { _ in }
        let ping = try #require(results.first { $0.name == "ping" })
        #expect(!ping.passed)
        #expect(ping.failures.first?.contains("was not answered") == true)
        #expect(results.first { $0.name == "detect" }?.passed == true)
        peer.driver.close()
    }

    @Test func nothingAtTheOtherEndFailsTheHandshake() async throws {
        let (ours, _) = LoopbackTransport.pair()
        let results = await AgainstSuite(transport: ours, timeout: .milliseconds(300)).run(seed: 1) { _ in }
        #expect(results.first?.name == "garbage-before-syn")
        #expect(results.first?.passed == false)
        #expect(results.allSatisfy { !$0.passed })
    }
}
