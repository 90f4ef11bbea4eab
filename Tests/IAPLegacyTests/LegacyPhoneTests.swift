import Foundation
import IAPSampleApp
@testable import IAPLegacy
import IAPLink
import IAPRoles
import IAPSession
import IAPWire
import Synchronization
import Testing

/// A legacy phone driven the way an edge drives it: frames in, packets out,
/// the app's loads answered by the test (or by the sample app).
struct LegacyHarness {
    var phone: LegacyPhone
    var now = LinkInstant.milliseconds(1)
    var sent: [IAP1Packet] = []
    var loads: [(token: UInt32, request: PhoneMediaRole.LoadRequest)] = []
    var verifications: [VerificationRequest] = []
    var verificationID: UInt32 = 0
    var events: [LegacyPhone.Event] = []
    var logs: [String] = []

    /// The app's commands, as the edge runs them.
    var commands: RemoteCommandCenter

    init(commands: RemoteCommandCenter = RemoteCommandCenter(), verifies: Bool = false) {
        phone = LegacyPhone(appName: "Test", verifies: verifies)
        self.commands = commands
    }

    mutating func take(_ outputs: [LegacyPhone.Output]) {
        for output in outputs {
            switch output {
            case .send(let packet): sent.append(packet)
            case .load(let token, let request): loads.append((token, request))
            case .perform(let command, let reply):
                // The edge runs the handler at once, as every driver does.
                take(phone.performed(commands.perform(command), reply: reply))
            case .verify(let id, let request):
                verifications.append(request)
                verificationID = id
            case .event(let event): events.append(event)
            case .log(let line): logs.append(line)
            }
        }
    }

    /// Sends a packet as the head unit would frame it; returns what the phone sent in answer.
    @discardableResult
    mutating func receive(_ packet: IAP1Packet) -> [IAP1Packet] {
        let before = sent.count
        take(phone.received(packet.payload, now: now))
        return Array(sent[before...])
    }

    @discardableResult
    mutating func complete(_ token: UInt32, _ result: PhoneMediaRole.LoadResult) -> [IAP1Packet] {
        let before = sent.count
        take(phone.complete(token: token, with: result, now: now))
        return Array(sent[before...])
    }

    @discardableResult
    mutating func advance(_ duration: Duration) -> [IAP1Packet] {
        let before = sent.count
        now = now + duration
        take(phone.tick(now: now))
        return Array(sent[before...])
    }

    mutating func play(_ info: NowPlayingInfo) { take(phone.setNowPlaying(info, now: now)) }

    /// The verifier's answer to the last verification asked for.
    mutating func verdict(_ answer: VerificationAnswer) { take(phone.verified(id: verificationID, answer, now: now)) }

    /// IdentifyDeviceLingoes for General and Extended Interface.
    mutating func identify(options: UInt32 = 0, deviceID: UInt32 = 0) {
        receive(IAP1Packet(lingo: 0, command: 0x13, data: u32(0x11) + u32(options) + u32(deviceID)))
    }

    /// Answers every load waiting with what `app` loads.
    mutating func answerLoads(from app: SampleApp) {
        while !loads.isEmpty {
            let (token, request) = loads.removeFirst()
            let (result, _) = app.load(request, now: now)
            complete(token, result)
        }
    }
}

func extended(_ command: UInt16, _ data: [UInt8] = [], transactionID: UInt16? = nil) -> IAP1Packet {
    IAP1Packet(lingo: 4, command: command, transactionID: transactionID, data: data)
}

/// The status and command of an Extended Interface ACK, nil for anything else.
func ack(_ packet: IAP1Packet?) -> (status: UInt8, command: UInt16)? {
    guard let packet, packet.lingo == 4, packet.command == 0x0001, packet.data.count == 3 else { return nil }
    return (packet.data[0], UInt16(packet.data[1]) << 8 | UInt16(packet.data[2]))
}

/// Whether `packet` is an Extended Interface ACK of `command` with `status`.
func acked(_ packet: IAP1Packet?, _ status: UInt8, _ command: UInt16) -> Bool {
    guard let (got, of) = ack(packet) else { return false }
    return got == status && of == command
}

/// The string of a NUL-terminated answer.
func text(_ packet: IAP1Packet?) -> String? {
    guard let data = packet?.data, data.last == 0 else { return nil }
    return String(decoding: data.dropLast(), as: UTF8.self)
}

@Suite struct LegacyPhoneTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func bytes(_ hex: some StringProtocol) -> [UInt8] {
        hex.split(separator: " ").compactMap { UInt8($0, radix: 16) }
    }

    /// The frames of Fixtures/head-unit-exchange.txt, answered byte for byte.
    @Test func aHeadUnitsExchangeIsAnsweredByteForByte() throws {
        let script = try String(contentsOf: Self.fixtures.appendingPathComponent("head-unit-exchange.txt"), encoding: .utf8)
        var commands = RemoteCommandCenter()
        commands.register(.togglePlayPause) { _ in .success }
        var harness = LegacyHarness(commands: commands)
        var answers: [[UInt8]] = []
        var checked = 0
        for line in script.split(separator: "\n") {
            if line.hasPrefix("> ") {
                let frame = Self.bytes(line.dropFirst(2))
                guard let parsed = IAP1Frame.parse(frame, at: 0), parsed.checksumValid else {
                    Issue.record("the fixture's frame does not parse: \(line)")
                    continue
                }
                answers += try harness.receive(try IAP1Packet(payload: frame[parsed.payloadRange], hasTransactionID: false)).map { try $0.encoded(sync: true) }
            } else if line.hasPrefix("< ") {
                guard !answers.isEmpty else {
                    Issue.record("no answer for \(line)")
                    continue
                }
                #expect(answers.removeFirst() == Self.bytes(line.dropFirst(2)), "\(line)")
                checked += 1
            } else if line.hasPrefix("@ ") {
                let fields = line.dropFirst(2).split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
                harness.play(NowPlayingInfo(title: fields[0], durationMilliseconds: UInt32(fields[1]), elapsedMilliseconds: UInt32(fields[2]) ?? 0,
                                            state: fields[3] == "playing" ? .playing : .paused))
            }
        }
        #expect(checked == 3)
        #expect(answers.isEmpty, "answers the fixture does not list: \(answers)")
    }

    @Test func identificationNamesTheLingoesAndGatesTheExtendedInterface() {
        var harness = LegacyHarness()
        // Before any identification requests are refused as bad parameters (an older
        // head unit asks something first to see whether anything answers).
        #expect(acked(harness.receive(extended(0x0009)).first, 0x04, 0x0009))
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x07)).first?.data == [0x04, 0x07])
        #expect(harness.receive(IAP1Packet(lingo: 0x0A, command: 0x02)).isEmpty)

        // General only: the Extended Interface is refused.
        harness.receive(IAP1Packet(lingo: 0, command: 0x13, data: u32(0x01) + u32(0) + u32(0)))
        #expect(harness.events == [.identified(lingoes: [0], idps: false, authenticating: false)])
        #expect(acked(harness.receive(extended(0x001C)).first, 0x04, 0x001C))

        harness.identify()
        #expect(harness.events.last == .identified(lingoes: [0, 4], idps: false, authenticating: false))
        #expect(harness.receive(extended(0x001C)).first?.command == 0x001D)
        // Without the General lingo, identification fails.
        let refused = harness.receive(IAP1Packet(lingo: 0, command: 0x13, data: u32(0x10) + u32(0) + u32(0)))
        #expect(refused.first?.data == [0x02, 0x13])
    }

    /// The order of a public remote client for the older "AiR" mode
    /// (planeturban/pyidock): it asks on the Extended Interface lingo to see
    /// whether anything answers, identifies with the deprecated Identify
    /// naming lingo 4, resets the selection and reads; it never sends
    /// IdentifyDeviceLingoes.
    @Test func anAiRModeClientThatAsksBeforeIdentifyingIsServed() {
        let app = SampleApp()
        var harness = LegacyHarness(commands: app.commandCenter())
        #expect(!harness.receive(extended(0x0009)).isEmpty, "the probe before identification is answered")
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x01, data: [0x04])).isEmpty)
        #expect(harness.events == [.identified(lingoes: [0, 4], idps: false, authenticating: false)])
        #expect(harness.phone.isInRemoteUIMode)
        #expect(acked(harness.receive(extended(0x0016)).first, 0x00, 0x0016))
        harness.receive(extended(0x0018, [0x01]))
        harness.answerLoads(from: app)
        #expect(harness.sent.last?.command == 0x0019 && harness.sent.last?.data == u32(4))
        #expect(harness.receive(extended(0x001C)).first?.command == 0x001D)
        // Its play: notifications off first, then PlayControl.
        #expect(acked(harness.receive(extended(0x0026, [0])).first, 0x00, 0x0026))
        #expect(harness.receive(extended(0x0029, [0x01])).first.map { ack($0) != nil } == true)
    }

    @Test func theDeviceAnswersWhatItIs() {
        var harness = LegacyHarness()
        harness.identify()
        #expect(text(harness.receive(IAP1Packet(lingo: 0, command: 0x07)).first) == "iap-devkit phone")
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x09)).first?.data == [1, 0, 0])
        let model = harness.receive(IAP1Packet(lingo: 0, command: 0x0D)).first
        #expect(model?.command == 0x0E && model?.data.prefix(4).elementsEqual(u32(0x0001_0000)) == true)
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x0F, data: [4])).first?.data == [4, 1, 12])
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x0F, data: [9])).first?.data == [0x04, 0x0F])
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x05)).first?.data == [0x00, 0x05])
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x03)).first?.data == [1])
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x4B, data: [4])).first?.data == [4] + u64(1 << 2 | 1 << 6))
        // A command this phone does not serve is refused, never left unanswered.
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x64)).first?.data == [0x04, 0x64])
        // Traces name everything the phone sends (IAP1Catalog).
        #expect(harness.sent.filter { $0.name == nil }.isEmpty, "unnamed: \(harness.sent.filter { $0.name == nil }.map(\.command))")
    }

    /// IDPS: every packet carries a transaction id; answers echo it, and
    /// what the phone starts counts its own from 1.
    @Test func idpsIdentificationUsesTransactionIDs() {
        var harness = LegacyHarness()
        let started = harness.receive(IAP1Packet(lingo: 0, command: 0x38, transactionID: 7))
        #expect(started == [IAP1Packet(lingo: 0, command: 0x02, transactionID: 7, data: [0x00, 0x38])])
        #expect(harness.phone.usesTransactionIDs)

        let identifyToken: [UInt8] = [0x00, 0x00, 2, 0x00, 0x04] + u32(2) + u32(0x0200)
        let nameToken: [UInt8] = [0x00, 0x02, 0x01] + Array("Car".utf8) + [0]
        let unknownToken: [UInt8] = [0x00, 0x7F]
        var tokens: [UInt8] = [3]
        for token in [identifyToken, nameToken, unknownToken] { tokens += [UInt8(token.count)] + token }
        let acks = harness.receive(IAP1Packet(lingo: 0, command: 0x39, transactionID: 8, data: tokens))
        #expect(acks == [IAP1Packet(lingo: 0, command: 0x3A, transactionID: 8,
                                    data: [3, 3, 0x00, 0x00, 0x00, 4, 0x00, 0x02, 0x00, 0x01, 3, 0x00, 0x7F, 0x03])])

        let ended = harness.receive(IAP1Packet(lingo: 0, command: 0x3B, transactionID: 9, data: [0]))
        #expect(ended.first == IAP1Packet(lingo: 0, command: 0x3C, transactionID: 9, data: [0x00]))
        // The Identify token asked for authentication: GetDevAuthenticationInfo, with the phone's own first id.
        #expect(ended.dropFirst().first == IAP1Packet(lingo: 0, command: 0x14, transactionID: 1, data: []))
        #expect(harness.events == [.identified(lingoes: [0, 4], idps: true, authenticating: true)])
        let status = harness.receive(extended(0x001C, transactionID: 10))
        #expect(status.first?.command == 0x001D && status.first?.transactionID == 10)
    }

    @Test func anEndIDPSWithoutAnIdentifyTokenIsRefused() {
        var harness = LegacyHarness()
        harness.receive(IAP1Packet(lingo: 0, command: 0x38, transactionID: 1))
        harness.receive(IAP1Packet(lingo: 0, command: 0x39, transactionID: 2, data: [0]))
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x3B, transactionID: 3, data: [0])).first?.data == [0x02])
        #expect(!harness.phone.isIdentified)
    }

    @Test func malformedTokensAreAcknowledgedAsFarAsTheyParse() {
        var harness = LegacyHarness()
        harness.receive(IAP1Packet(lingo: 0, command: 0x38, transactionID: 1))
        // An Identify token too short for its lingo count, then a length running past the end.
        let acks = harness.receive(IAP1Packet(lingo: 0, command: 0x39, transactionID: 2, data: [2, 4, 0x00, 0x00, 5, 0x00, 0xFF, 0x00]))
        #expect(acks.first?.data == [1, 3, 0x00, 0x00, 0x01])
    }

    /// Authentication 2.0: the certificate in sections, checked by the edge,
    /// then a challenge signed and checked.
    @Test func authenticationRunsThroughTheVerifier() throws {
        var harness = LegacyHarness(verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        #expect(harness.sent.map(\.command) == [0x02, 0x14])
        let certificate = Array(0..<100).map { UInt8($0) }
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 1] + certificate[..<60])).first?.data == [0x00, 0x15])
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 1, 1] + certificate[60...])).isEmpty)
        #expect(harness.verifications == [.certificate(certificate)])

        let challenge = [UInt8](repeating: 0xAB, count: 20)
        harness.verdict(.certificateAccepted(summary: "Car accessory", challenge: challenge))
        #expect(harness.sent.suffix(2) == [IAP1Packet(lingo: 0, command: 0x16, data: [0x00]), IAP1Packet(lingo: 0, command: 0x17, data: challenge + [1])])
        // Before it is authenticated, commands from 0x003B on are refused.
        #expect(acked(harness.receive(extended(0x003B, [1])).first, 0x07, 0x003B))

        harness.receive(IAP1Packet(lingo: 0, command: 0x18, data: [9, 9, 9]))
        #expect(harness.verifications.last == .response([9, 9, 9], challenge: challenge, certificate: certificate))
        harness.verdict(.responseValid)
        #expect(harness.sent.last == IAP1Packet(lingo: 0, command: 0x19, data: [0x00]))
        #expect(harness.events.last == .authenticated("Car accessory"))
        #expect(harness.phone.isAuthenticated)
        #expect(acked(harness.receive(extended(0x003B, [1])).first, 0x00, 0x003B))
    }

    @Test func aRejectedCertificateOrSignatureFailsAuthentication() {
        var harness = LegacyHarness(verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 2, 3]))
        harness.verdict(.certificateRejected("not Apple's"))
        #expect(harness.sent.last == IAP1Packet(lingo: 0, command: 0x16, data: [0x0A]))
        #expect(harness.events.last == .authenticationFailed("certificate rejected: not Apple's"))

        var signed = LegacyHarness(verifies: true)
        signed.identify(options: 2, deviceID: 0x0200)
        signed.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 2, 3]))
        signed.verdict(.certificateAccepted(summary: "s", challenge: [1]))
        signed.receive(IAP1Packet(lingo: 0, command: 0x18, data: [0]))
        signed.verdict(.responseInvalid("bad signature"))
        #expect(signed.sent.last == IAP1Packet(lingo: 0, command: 0x19, data: [0x01]))
        #expect(!signed.phone.isAuthenticated)
        // Version 1.0 (no certificate) is not served; out-of-order sections are refused.
        var old = LegacyHarness(verifies: true)
        old.identify(options: 2, deviceID: 1)
        old.receive(IAP1Packet(lingo: 0, command: 0x15, data: [1, 0]))
        #expect(old.sent.last == IAP1Packet(lingo: 0, command: 0x16, data: [0x08]))
        var skipping = LegacyHarness(verifies: true)
        skipping.identify(options: 2, deviceID: 1)
        #expect(skipping.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 1, 1, 5])).first?.data == [0x04, 0x15])
    }

    /// A head unit that sends certificate sections without end is stopped
    /// at the limit, not held in memory.
    @Test func aCertificateOverTheLimitFailsAuthentication() {
        var harness = LegacyHarness(verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        let section = [UInt8](repeating: 0x30, count: 250)
        var sections = 0
        while sections < 255, harness.phone.isIdentified, !harness.events.contains(where: { if case .authenticationFailed = $0 { true } else { false } }) {
            harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, UInt8(sections), 255] + section))
            sections += 1
        }
        #expect(sections == LegacyPhone.maximumCertificateLength / section.count + 1)
        #expect(harness.sent.last == IAP1Packet(lingo: 0, command: 0x16, data: [0x04]))
        #expect(harness.verifications.isEmpty)
    }

    /// FuzzLegacyPhone: a head unit that identifies again while its first
    /// certificate is being checked. The verdict on the first must not pass
    /// for the second: a genuine accessory's public certificate would vouch
    /// for a forged one.
    @Test func aVerdictOnAnEarlierCertificateIsDropped() {
        var harness = LegacyHarness(verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 1, 1]))
        let first = harness.verificationID
        harness.identify(options: 2, deviceID: 0x0200)
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 6, 6, 6]))
        // The second certificate waits for the verifier to answer the first.
        #expect(harness.verifications == [.certificate([1, 1, 1])])
        let before = harness.sent.count
        harness.take(harness.phone.verified(id: first, .certificateAccepted(summary: "genuine", challenge: [1]), now: harness.now))
        #expect(harness.sent.count == before, "a verdict on the first certificate was taken for the second")
        #expect(harness.verifications == [.certificate([1, 1, 1]), .certificate([6, 6, 6])])
        #expect(harness.verificationID != first)
        harness.verdict(.certificateRejected("forged"))
        #expect(harness.sent.last == IAP1Packet(lingo: 0, command: 0x16, data: [0x0A]))
    }

    @Test func aPhoneThatDoesNotVerifyAcceptsUncheckedAndSaysSo() {
        var harness = LegacyHarness(verifies: false)
        harness.identify(options: 2, deviceID: 0x0200)
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 2, 3]))
        #expect(harness.verifications.isEmpty)
        #expect(harness.sent.suffix(2).map(\.command) == [0x16, 0x19])
        guard case .authenticated(let summary)? = harness.events.last else {
            Issue.record("no authentication event: \(harness.events)")
            return
        }
        #expect(summary.hasPrefix("not checked"))
    }

    @Test func playControlRunsTheAppsCommands() {
        let performed = Mutex<[RemoteCommand]>([])
        var commands = RemoteCommandCenter()
        for kind in [RemoteCommand.Kind.togglePlayPause, .nextTrack, .previousTrack, .play, .pause, .stop, .changeShuffleMode, .changeRepeatMode] {
            commands.register(kind) { command in
                performed.withLock { $0.append(command) }
                return .success
            }
        }
        var harness = LegacyHarness(commands: commands)
        harness.identify()
        for code: UInt8 in [0x01, 0x02, 0x03, 0x04, 0x08, 0x09, 0x0A, 0x0B] {
            #expect(acked(harness.receive(extended(0x0029, [code])).first, 0x00, 0x0029), "code \(code)")
        }
        #expect(performed.withLock { $0 } == [.togglePlayPause, .stop, .nextTrack, .previousTrack, .nextTrack, .previousTrack, .play, .pause])
        // Seeking the app does not offer fails; chapters do not exist; unknown codes are bad parameters.
        #expect(acked(harness.receive(extended(0x0029, [0x05])).first, 0x02, 0x0029))
        #expect(acked(harness.receive(extended(0x0029, [0x0C])).first, 0x02, 0x0029))
        #expect(acked(harness.receive(extended(0x0029, [0x7E])).first, 0x04, 0x0029))

        #expect(acked(harness.receive(extended(0x002E, [2])).first, 0x00, 0x002E))
        #expect(acked(harness.receive(extended(0x0031, [1])).first, 0x00, 0x0031))
        #expect(acked(harness.receive(extended(0x002E, [3])).first, 0x04, 0x002E))
        #expect(performed.withLock { Array($0.suffix(2)) } == [.changeShuffleMode(.collections), .changeRepeatMode(.one)])
        harness.play(NowPlayingInfo(title: "x", state: .playing, repeatMode: .all, shuffleMode: .items))
        #expect(harness.receive(extended(0x002C)).first?.data == [1])
        #expect(harness.receive(extended(0x002F)).first?.data == [2])
    }

    @Test func thePlayingQueueIsReadByIndex() {
        var harness = LegacyHarness()
        harness.identify()
        // Nothing playing: index -1, no tracks.
        #expect(harness.receive(extended(0x001E)).first?.data == u32(UInt32.max))
        #expect(harness.receive(extended(0x0035)).first?.data == u32(0))
        #expect(harness.receive(extended(0x001C)).first?.data == u32(0) + u32(0) + [0])

        harness.play(NowPlayingInfo(title: "Blue in Green", artist: "Miles Davis", albumTitle: "Kind of Blue", durationMilliseconds: 337_000,
                                    elapsedMilliseconds: 1000, queueIndex: 2, queueCount: 5, state: .playing))
        harness.now = harness.now + .seconds(2)
        #expect(harness.receive(extended(0x001C)).first?.data == u32(337_000) + u32(3000) + [1])
        #expect(harness.receive(extended(0x001E)).first?.data == u32(2))
        #expect(harness.receive(extended(0x0035)).first?.data == u32(5))
        #expect(text(harness.receive(extended(0x0020, u32(2))).first) == "Blue in Green")
        #expect(text(harness.receive(extended(0x0022, u32(2))).first) == "Miles Davis")
        #expect(text(harness.receive(extended(0x0024, u32(2))).first) == "Kind of Blue")
        #expect(acked(harness.receive(extended(0x0020, u32(5))).first, 0x04, 0x0020))

        // Another index's title comes from the app's queue.
        #expect(harness.receive(extended(0x0020, u32(0))).isEmpty)
        guard let (token, request) = harness.loads.last, case .queue(0, 1) = request else {
            Issue.record("no queue load: \(harness.loads)")
            return
        }
        #expect(text(harness.complete(token, .queue(items: [ContentItem(id: "a", kind: .playable, text: "So What")], totalCount: 5, currentIndex: 2)).first) == "So What")
        // SetCurrentPlayingTrack: the queue's item, then the play.
        harness.loads = []
        harness.receive(extended(0x0037, u32(4)))
        guard let (queueToken, _) = harness.loads.last else {
            Issue.record("no queue load for SetCurrentPlayingTrack")
            return
        }
        harness.complete(queueToken, .queue(items: [ContentItem(id: "e", kind: .playable, text: "Flamenco Sketches")], totalCount: 5, currentIndex: 2))
        guard let (playToken, play) = harness.loads.last, case .play("e", nil) = play else {
            Issue.record("no play load: \(harness.loads)")
            return
        }
        #expect(acked(harness.complete(playToken, .done).first, 0x00, 0x0037))
    }

    /// FuzzLegacyPhone, 126,515 executions into its first run: an app
    /// whose queue index is the largest value made the count of playing
    /// tracks overflow (a trap).
    @Test func anyQueueIndexFromTheAppIsAnswered() {
        var harness = LegacyHarness()
        harness.identify()
        harness.play(NowPlayingInfo(title: "x", queueIndex: UInt32.max, state: .playing))
        #expect(harness.receive(extended(0x0035)).first?.data == u32(UInt32.max))
        #expect(harness.receive(extended(0x001E)).first?.data == u32(UInt32.max))
    }

    @Test func notificationsFollowWhatPlays() {
        var harness = LegacyHarness()
        harness.identify()
        harness.play(NowPlayingInfo(title: "So What", queueIndex: 0, queueCount: 3, state: .playing))
        #expect(harness.sent.count == 1, "notifications before any were asked for")
        #expect(acked(harness.receive(extended(0x0026, [1])).first, 0x00, 0x0026))

        let notified = { (packets: [IAP1Packet]) in packets.filter { $0.command == 0x0027 }.map(\.data) }
        // The position every 500 ms while playing.
        #expect(notified(harness.advance(.milliseconds(499))).isEmpty)
        #expect(notified(harness.advance(.milliseconds(1))) == [[0x04] + u32(500)])
        // A new track: its index and position.
        let before = harness.sent.count
        harness.play(NowPlayingInfo(title: "Freddie Freeloader", queueIndex: 1, queueCount: 3, state: .playing))
        #expect(notified(Array(harness.sent[before...])) == [[0x01] + u32(1), [0x04] + u32(0)])
        // Paused: no more positions.
        harness.play(NowPlayingInfo(title: "Freddie Freeloader", elapsedMilliseconds: 200, queueIndex: 1, queueCount: 3, state: .paused))
        #expect(notified(harness.advance(.seconds(2))).isEmpty)
        #expect(harness.phone.nextDeadline == nil)

        // The 4-byte mask: extended status and contents only.
        #expect(acked(harness.receive(extended(0x0026, u32(1 << 1 | 1 << 12))).first, 0x00, 0x0026))
        let changed = harness.sent.count
        harness.play(NowPlayingInfo(title: "Freddie Freeloader", elapsedMilliseconds: 200, queueIndex: 1, queueCount: 4, state: .playing))
        #expect(notified(Array(harness.sent[changed...])) == [[0x06, 0x0A], [0x0E] + u32(4)])
        #expect(acked(harness.receive(extended(0x0026, [0])).first, 0x00, 0x0026))
        #expect(harness.phone.notifications == 0)
    }

    /// The content tree read as nested playlists: tabs and containers are
    /// playlists, playable items tracks, from the sample app's library.
    @Test func theContentTreeIsBrowsedAsNestedPlaylists() {
        let app = SampleApp()
        var harness = LegacyHarness(commands: app.commandCenter())
        harness.identify()
        #expect(acked(harness.receive(extended(0x0016)).first, 0x00, 0x0016))
        // The count waits for the tabs.
        #expect(harness.receive(extended(0x0018, [0x01])).isEmpty)
        #expect(harness.loads.first.map { $0.request == .tabs } == true)
        harness.answerLoads(from: app)
        guard let tabs = harness.sent.last, tabs.command == 0x0019 else {
            Issue.record("no count of the tabs: \(harness.sent.last.map(String.init(describing:)) ?? "nothing")")
            return
        }
        let tabCount = tabs.data.reduce(0) { $0 << 8 | Int($1) }
        #expect(tabCount >= 2)
        let records = harness.receive(extended(0x001A, [0x01] + u32(0) + u32(UInt32.max)))
        #expect(records.count == tabCount && records.allSatisfy { $0.command == 0x001B })
        #expect(records.first.map { Array($0.data.prefix(4)) } == u32(0))
        #expect(records.first.flatMap { text(IAP1Packet(lingo: 4, command: 0x001B, data: Array($0.data.dropFirst(4)))) } == "Library")
        // The root has no tracks; the music-library categories have no records.
        #expect(harness.receive(extended(0x0018, [0x05])).first?.data == u32(0))
        #expect(harness.receive(extended(0x0018, [0x02])).first?.data == u32(0))

        // Into the Library, then its first album (the image row of covers is not a playlist).
        #expect(acked(harness.receive(extended(0x0017, [0x01] + u32(0))).first, 0x00, 0x0017))
        harness.receive(extended(0x0018, [0x01]))
        guard case .children("library", 0, LegacyPhone.levelLimit)? = harness.loads.first?.request else {
            Issue.record("the library was not loaded: \(harness.loads)")
            return
        }
        harness.answerLoads(from: app)
        #expect(harness.sent.last?.command == 0x0019)
        harness.receive(extended(0x0017, [0x01] + u32(0)))
        harness.receive(extended(0x0018, [0x05]))
        harness.answerLoads(from: app)
        #expect(harness.sent.last?.command == 0x0019)
        let trackCount = harness.sent.last?.data.reduce(0) { $0 << 8 | Int($1) } ?? 0
        #expect(trackCount >= 3)
        let second = harness.receive(extended(0x001A, [0x05] + u32(1) + u32(1)))
        #expect(second.count == 1 && second.first?.data.prefix(4).elementsEqual(u32(1)) == true)
        // Out of range is a bad parameter, never silence.
        #expect(acked(harness.receive(extended(0x001A, [0x05] + u32(UInt32(trackCount)) + u32(1))).first, 0x04, 0x001A))

        // PlayCurrentSelection plays the second track; the ACK waits for the app.
        #expect(harness.receive(extended(0x0028, u32(1))).isEmpty)
        guard case .play(let itemID, nil)? = harness.loads.first?.request else {
            Issue.record("no play: \(harness.loads)")
            return
        }
        harness.answerLoads(from: app)
        #expect(acked(harness.sent.last, 0x00, 0x0028))
        #expect(app.nowPlaying(at: harness.now).title != nil)
        #expect(itemID == "kind-of-blue:1")  // after "Play all"

        // Up a level, and up again at the top stays at the top.
        #expect(acked(harness.receive(extended(0x0017, [0x01] + u32(UInt32.max))).first, 0x00, 0x0017))
        #expect(acked(harness.receive(extended(0x0017, [0x01] + u32(UInt32.max))).first, 0x00, 0x0017))
        #expect(acked(harness.receive(extended(0x0017, [0x01] + u32(UInt32.max))).first, 0x00, 0x0017))
        harness.receive(extended(0x0018, [0x01]))
        #expect(harness.loads.first.map { $0.request == .tabs } == true)
    }

    @Test func aLoadTheAppNeverAnswersIsAnsweredWithAFailure() {
        var harness = LegacyHarness()
        harness.identify()
        harness.receive(extended(0x0018, [0x01]))
        harness.receive(extended(0x001A, [0x01] + u32(0) + u32(1)))
        #expect(harness.advance(.seconds(4)).isEmpty)
        let failed = harness.advance(.seconds(1))
        #expect(failed.compactMap { ack($0)?.status } == [0x02, 0x02])
        #expect(failed.compactMap { ack($0)?.command } == [0x0018, 0x001A])
        // A late answer is dropped.
        #expect(harness.complete(harness.loads[0].token, .page(items: [], sections: [], totalCount: 0)).isEmpty)
    }

    @Test func requestsWaitingForTheTreeAreBounded() {
        var harness = LegacyHarness()
        harness.identify()
        for _ in 0..<LegacyPhone.maximumWaitingRequests { harness.receive(extended(0x0018, [0x01])) }
        #expect(harness.loads.count == 1)
        #expect(acked(harness.receive(extended(0x0018, [0x01])).first, 0x02, 0x0018))
    }

    @Test func longTextsAreCutAtACharacterAndEndInOneNUL() {
        let long = String(repeating: "é", count: 200)
        let bytes = string(long)
        #expect(bytes.count == 255)  // 127 two-byte characters and the NUL
        #expect(bytes.last == 0 && bytes.dropLast().allSatisfy { $0 != 0 })
        #expect(String(decoding: bytes.dropLast(), as: UTF8.self) == String(repeating: "é", count: 127))
        #expect(string("a\u{0}b") == [0x61, 0x62, 0])
    }

    @Test func identificationCommandsAreRecognisedAndNoiseIsNot() {
        #expect(IAP1Packet.isIdentification([0x00, 0x13, 0, 0]))
        #expect(IAP1Packet.isIdentification([0x00, 0x38, 0, 1]))
        #expect(IAP1Packet.isIdentification([0x00, 0x01, 4]))
        #expect(!IAP1Packet.isIdentification([0x00, 0xEE]))
        #expect(!IAP1Packet.isIdentification([0x04, 0x00, 0x13]))
        #expect(!IAP1Packet.isIdentification([0x00]))
    }
}
