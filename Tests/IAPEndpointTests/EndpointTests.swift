import Synchronization
import Testing
import IAPDemo
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

final class Lines: Sendable {
    private let lines = Mutex<[String]>([])
    func add(_ line: String) { lines.withLock { $0.append(line) } }
    var all: [String] { lines.withLock { $0 } }
}

/// The phone and head-unit endpoints in real time over the loopback, the
/// head unit driven by a shell script, as `iapctl head-unit` runs them.
func drive(_ script: [String], faults: WireFaults = WireFaults(delay: .zero), seed: UInt64 = 1) async throws -> (phone: MediaEndpoint, headUnit: MediaEndpoint, log: Lines, shell: ShellDriver) {
    let log = Lines()
    let (a, b) = LoopbackTransport.pair(towardsSecond: faults, towardsFirst: faults, seed: seed)
    let headUnit = MediaEndpoint(kind: .headUnit, transport: a, logger: .lines("test") { log.add("head unit: " + $0) })
    let phone = MediaEndpoint(kind: .phone, transport: b, app: SampleApp(), logger: .lines("test") { log.add("phone: " + $0) })
    let shell = ShellDriver(endpoint: headUnit) { log.add("head unit: " + $0) }
    let stop: @Sendable (MediaEndpoint.Status) -> Bool = { _ in (shell.quit || shell.finished) && shell.nowPlayingUpdates > 0 }
    headUnit.stop(when: stop)
    phone.stop(when: stop)
    try phone.start()
    try headUnit.start()
    for line in script { shell.feed(line) }
    shell.feed(nil)
    await runUntilOneStops([headUnit, phone], timeout: .seconds(30))
    return (phone, headUnit, log, shell)
}

/// Runs the endpoints until one stops (or, against a hang, the timeout),
/// then closes them all.
func runUntilOneStops(_ endpoints: [MediaEndpoint], timeout: Duration) async {
    await withTaskGroup(of: Void.self) { group in
        for endpoint in endpoints { group.addTask { await endpoint.run() } }
        group.addTask { try? await Task.sleep(for: timeout) }
        await group.next()
        for endpoint in endpoints { await endpoint.close() }
        group.cancelAll()
        await group.waitForAll()
    }
}

@Suite(.serialized) struct EndpointTests {
    @Test func aShellScriptBrowsesPlaysAndControls() async throws {
        let (phone, headUnit, log, _) = try await drive(["cd 1", "cd 2", "play 4", "next", "repeat all", "shuffle songs", "press play-pause", "queue", "cd /", "cd 4", "retry", "quit"])
        let info = headUnit.headUnit.nowPlaying.info
        #expect(info.title == "All Blues", "\(log.all.suffix(60))")
        #expect(info.repeatMode == .all && info.shuffleMode == .items)
        #expect((phone.app as? SampleApp)?.snapshot.playback == .paused, "play/pause pressed over HID, then the head unit went away")
        #expect(headUnit.headUnit.containers["podcasts"]?.isComplete == true)
        #expect(log.all.contains { $0.contains("up next (success)") })
        #expect(log.all.contains { $0.contains("phone: identified iap-devkit head unit") })
        #expect(log.all.contains { $0.contains("HID play/pause pressed: toggle_play_pause success") })
    }

    @Test func theSameScriptOverALossyWireEndsTheSame() async throws {
        var faults = WireFaults(loss: 0.1, duplication: 0.05, reordering: 0.05, corruption: 0.02)
        faults.delay = .milliseconds(1)
        let (_, headUnit, log, _) = try await drive(["cd 1", "cd 2", "play 4", "next", "repeat one", "np", "quit"], faults: faults, seed: 5)
        let info = headUnit.headUnit.nowPlaying.info
        #expect(info.title == "All Blues", "\(log.all.suffix(60))")
        #expect(info.repeatMode == .one)
    }

    @Test func unknownShellCommandsSayWhatToDo() async throws {
        let (_, _, log, shell) = try await drive(["frobnicate", "cd 99", "play", "ls", "quit"])
        #expect(log.all.contains { $0.contains("unknown command frobnicate; `help` lists them") })
        #expect(log.all.contains { $0.contains("no row 99 here") })
        #expect(shell.mistakes == 2, "a script with these lines fails at its end; `play` alone (the play command), `ls` and `quit` are not mistakes")
    }

    /// A refused command says what the head unit can tell of why (the
    /// phone's answer is a bare status), and shuffle is told back in the
    /// shell's words: `shuffle songs` came back as "shuffle items".
    @Test func refusedCommandsSayWhyAndShuffleKeepsTheShellsWords() async throws {
        let (_, _, log, _) = try await drive(["cd 1", "cd 2", "play 2", "like", "seek 99999", "shuffle songs", "np", "quit"])
        let lines = log.all
        #expect(lines.contains("head unit: like: command_failed (the phone does not offer like now; `buttons` shows what it offers)"), "\(lines.suffix(12))")
        #expect(lines.contains("head unit: change_playback_position: command_failed (99999 s is past the end of the track, which is 562 s long)"), "\(lines.suffix(12))")
        let shuffled = lines.last { $0.hasPrefix("head unit: now playing: So What") && $0.contains("shuffle") }
        #expect(shuffled?.contains("shuffle songs") == true, "\(shuffled ?? "no now-playing line")")
        #expect(!lines.contains { $0.contains("shuffle items") })
    }
}

@Suite struct EndpointOutgoingTests {
    /// A pinging and a responding endpoint over a loopback with 2 ms each way, not started.
    static func pingPair() -> (pinger: MediaEndpoint, responder: MediaEndpoint) {
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .milliseconds(2)), towardsFirst: WireFaults(delay: .milliseconds(2)))
        return (MediaEndpoint(kind: .pinger, transport: a, logger: .discarding("endpoint")),
                MediaEndpoint(kind: .responder, transport: b, logger: .discarding("endpoint")))
    }

    /// A caller that sees the driver up may send before the endpoint's own
    /// task has handled link up (a USB ping's first message was lost so):
    /// messages from outside wait for the first link up instead.
    @Test func messagesSentBeforeLinkUpAreHeldNotLost() async throws {
        let (pinger, responder) = Self.pingPair()
        let answers = Lines()
        pinger.onUnhandledMessage { message in
            if let sequence = DiagnosticPing.sequence(ofAnswer: message) { answers.add("\(sequence)") }
        }
        pinger.stop(when: { _ in answers.all.count == 3 })
        // Sent before anything has started.
        for sequence in 1...3 { pinger.sendFromOutside(DiagnosticPing.request(sequence: UInt32(sequence), size: 16)) }
        try responder.start()
        try pinger.start()
        await runUntilOneStops([pinger, responder], timeout: .seconds(10))
        #expect(answers.all == ["1", "2", "3"])
    }

    /// Messages bigger together than the link's send queue (64 KiB) wait
    /// in the endpoint's backlog until the link has room, and go out whole
    /// and in order: nothing is dropped, nothing overtakes. The answers,
    /// as big, take the responder's backlog the same way.
    @Test func sendsTheLinkHasNoRoomForWaitAndGoInOrder() async throws {
        let (pinger, responder) = Self.pingPair()
        let answers = Lines()
        pinger.onUnhandledMessage { message in
            if let sequence = DiagnosticPing.sequence(ofAnswer: message) {
                answers.add("\(sequence) \(message.parameters.reduce(0) { $0 + $1.bytes.count })")
            }
        }
        let count = 12
        pinger.stop(when: { _ in answers.all.count == count })
        for sequence in 1...count { pinger.sendFromOutside(DiagnosticPing.request(sequence: UInt32(sequence), size: 30_000)) }
        let size = DiagnosticPing.request(sequence: 1, size: 30_000).parameters.reduce(0) { $0 + $1.bytes.count }
        try responder.start()
        try pinger.start()
        await runUntilOneStops([pinger, responder], timeout: .seconds(20))
        #expect(answers.all == (1...count).map { "\($0) \(size)" })
    }
}

@Suite struct EndpointRestartTests {
    /// The head unit outlives the phone program at the other end (a USB
    /// gadget's host, say): when the phone resets the link and a new one
    /// answers on the same transport, the head unit starts the link over by
    /// itself and identifies again.
    @Test func anAccessoryThatRestartsItsLinkIdentifiesAgainAfterRST() async throws {
        let log = Lines()
        let (a, b) = LoopbackTransport.pair(towardsSecond: WireFaults(delay: .milliseconds(1)), towardsFirst: WireFaults(delay: .milliseconds(1)))
        let headUnit = MediaEndpoint(kind: .headUnit, transport: a, logger: .lines("test") { log.add("head unit: " + $0) })
        let phone = MediaEndpoint(kind: .phone, transport: b, app: SampleApp(), logger: .lines("test") { log.add("phone: " + $0) })
        headUnit.stop(when: { _ in log.all.filter { $0 == "head unit: identification accepted" }.count == 2 })
        try phone.start()
        try headUnit.start()
        let reset = Task {
            while !log.all.contains("head unit: identification accepted") { try? await Task.sleep(for: .milliseconds(5)) }
            // What a phone program that is stopped sends, behind its link's back.
            phone.injectRaw(try LinkPacket(control: .rst).encoded())
        }
        await runUntilOneStops([headUnit, phone], timeout: .seconds(20))
        _ = await reset.result
        let lines = log.all
        #expect(lines.contains("head unit: starting the link over in 1.0 seconds"), "\(lines.suffix(15))")
        #expect(lines.filter { $0 == "head unit: identification accepted" }.count == 2, "\(lines.suffix(15))")
    }
}
