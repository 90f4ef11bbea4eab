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

/// These run in real time alongside the rest of the suite, possibly on a
/// loaded machine: both ends' event handling runs on Swift concurrency's
/// pool, which other tests may keep busy for seconds. Every wait for
/// something that should happen is therefore bounded generously (a wait
/// ends as soon as it is met, so this costs nothing when all is well); only
/// waits for answers that must not come are short.
@Suite(.serialized) struct AgainstTests {
    static let generous: Duration = .seconds(60)

    @Test func againstAConformingPeerEveryCasePasses() async throws {
        let (ours, theirs) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let peer = try PingPeer(transport: theirs, answersPings: true)
        let results = await AgainstSuite(transport: ours, timeout: Self.generous).run(seed: 1) { _ in }
        #expect(results.map(\.name) == AgainstSuite.caseNames)
        for result in results { #expect(result.passed, "\(result.name): \(result.failures)") }
        await peer.driver.close()
    }

    @Test func aPeerThatDoesNotAnswerPingsFailsWithAReason() async throws {
        let (ours, theirs) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let peer = try PingPeer(transport: theirs, answersPings: false)
        // The link must come up (generous); the unanswered ping is given 300 ms.
        let results = await AgainstSuite(transport: ours, timeout: .milliseconds(300), linkTimeout: Self.generous).run(seed: 1) { _ in }
        let ping = try #require(results.first { $0.name == "ping" })
        #expect(!ping.passed)
        #expect(ping.failures.first?.contains("was not answered") == true)
        #expect(results.first { $0.name == "detect" }?.passed == true)
        await peer.driver.close()
    }

    @Test func nothingAtTheOtherEndFailsTheHandshake() async throws {
        let (ours, _) = LoopbackTransport.pair()
        let results = await AgainstSuite(transport: ours, timeout: .milliseconds(300)).run(seed: 1) { _ in }
        #expect(results.first?.name == "garbage-before-syn")
        #expect(results.first?.passed == false)
        #expect(results.allSatisfy { !$0.passed })
    }
}

/// A transport that cannot be opened (nothing listens on the port) ends the
/// suite's wait for the link at once: it waited out the whole link timeout
/// (10 s by default) for a connection refused at the start. With a link
/// timeout of 90 s, only that makes the one-minute time limit.
@Test(.timeLimit(.minutes(1))) func theAgainstSuiteStopsWaitingWhenTheTransportCannotBeOpened() async throws {
    let port = try #require(unusedLoopbackPort())
    let suite = AgainstSuite(transport: TCPTransport.connect(host: "127.0.0.1", port: port), timeout: .seconds(90), linkTimeout: .seconds(90))
    let results = await suite.run(seed: 1) { _ in }
    #expect(results.map(\.name) == ["garbage-before-syn", "detect"])
    let failure = results.first?.failures.first ?? ""
    #expect(failure.contains("the transport closed") && failure.contains("cannot connect"), "\(failure)")
}

/// A loopback TCP port nothing listened on a moment ago, or nil.
private func unusedLoopbackPort() -> UInt16? {
    // The listener closes its socket when released, at the end of this function.
    guard let listener = try? TCPTransport.listener(host: "127.0.0.1", port: 0) else { return nil }
    return listener.port
}
