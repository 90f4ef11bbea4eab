import Synchronization
import Testing
import IAPConformance
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// A device end over a transport that answers pings (or not), for running
/// the against-suite in-process: a link probe (`MediaEndpoint(linkProbe:)`)
/// whose control-session bytes go through a control channel, each ping
/// answered on the session it came on.
final class PingPeer: Sendable {
    let endpoint: MediaEndpoint

    /// The control channel, shared by the endpoint's two handlers.
    private final class Channel: Sendable {
        let channel = Mutex(ControlChannel())
    }

    init(transport: Transport, answersPings: Bool) throws {
        endpoint = MediaEndpoint(linkProbe: transport, link: LinkConfiguration(role: .device))
        let box = Channel()
        endpoint.onLinkEvent { event in
            if case .up = event { box.channel.withLock { $0.reset() } }
        }
        endpoint.onSessionData { [weak endpoint] session, bytes in
            let (_, replies) = box.channel.withLock { $0.receive(bytes) }
            guard answersPings, let endpoint else { return }
            for reply in replies {
                if let encoded = try? reply.encoded() { endpoint.send(encoded, session: session) }
            }
        }
        try endpoint.start()
    }
}

/// These run in real time, possibly on a loaded machine: the suite's waits
/// poll on Swift concurrency's pool, which other tests may keep busy for
/// seconds. Every wait for something that should happen is therefore
/// bounded generously (a wait ends as soon as it is met, so this costs
/// nothing when all is well); only waits for answers that must not come
/// are short.
@Suite(.serialized) struct AgainstTests {
    static let generous: Duration = .seconds(60)

    @Test func againstAConformingPeerEveryCasePasses() async throws {
        let (ours, theirs) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .zero), towardsFirst: WireFaults(delay: .zero))
        let peer = try PingPeer(transport: theirs, answersPings: true)
        let results = await AgainstSuite(transport: ours, timeout: Self.generous).run(seed: 1) { _ in }
        #expect(results.map(\.name) == AgainstSuite.caseNames)
        for result in results { #expect(result.passed, "\(result.name): \(result.failures)") }
        await peer.endpoint.close()
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
        await peer.endpoint.close()
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
