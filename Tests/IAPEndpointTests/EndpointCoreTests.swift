import Testing
import IAPDemo
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// The endpoint core on its own, two of them joined by a direct wire in
/// virtual time, the test playing the edge.
@Suite struct EndpointCoreTests {
    /// A phone (a responder that authenticates) and a head unit, each
    /// core's outputs kept per side; writes handed to the other core in order.
    struct Pair {
        var cores = [EndpointCore(kind: .responder, app: nil, authentication: .required),
                     EndpointCore(kind: .headUnit, app: nil, authentication: .required)]
        var outputs: [[EndpointCore.Output]] = [[], []]
        var now = LinkInstant.milliseconds(1)

        init() { cores[1].recordsSentMessages = true }

        mutating func handle(_ input: EndpointCore.Input, at side: Int) {
            var pending = [(side, input)]
            while !pending.isEmpty {
                let (side, input) = pending.removeFirst()
                for output in cores[side].handle(input, now: now) {
                    outputs[side].append(output)
                    if case .write(let bytes) = output { pending.append((1 - side, .received(bytes))) }
                }
            }
        }

        /// The head unit's authenticator requests, with the link each was asked on.
        var authenticatorLinks: [Int] {
            outputs[1].compactMap { if case .authenticator(_, let link) = $0 { link } else { nil } }
        }

        var headUnitSentCertificate: Bool { outputs[1].contains(.sentMessage(0xAA01)) }
    }

    @Test func anAuthenticatorAnswerForAnEarlierLinkIsDropped() throws {
        var pair = Pair()
        pair.handle(.start, at: 0)
        pair.handle(.start, at: 1)
        let first = try #require(pair.authenticatorLinks.last, "the head unit was not asked for its certificate")
        // The cable comes out and back in before the authenticator answers.
        pair.handle(.transportClosed("unplugged"), at: 0)
        pair.handle(.transportClosed("unplugged"), at: 1)
        pair.handle(.restart, at: 0)
        pair.handle(.restart, at: 1)
        let second = try #require(pair.authenticatorLinks.last)
        #expect(second != first, "the new link asked under the old link's number")
        pair.outputs[1] = []
        pair.handle(.authenticatorAnswered(.certificate(Array("stale".utf8)), link: first), at: 1)
        #expect(!pair.headUnitSentCertificate, "an answer made for the earlier link went out on the new one")
        pair.handle(.authenticatorAnswered(.certificate(Array("fresh".utf8)), link: second), at: 1)
        #expect(pair.headUnitSentCertificate, "the answer for the current link was not sent")
    }

    /// Two commands in one input (a steering-wheel play/pause pressed twice,
    /// both reports in one read) are two now-playing updates, each command's
    /// effect read before the next runs: paused, then playing again.
    @Test func twoCommandsInOneInputAreTwoUpdates() throws {
        let app = SampleApp()
        var cores = [EndpointCore(kind: .phone, app: app, authentication: .off), EndpointCore(kind: .headUnit, app: nil, authentication: .off)]
        var now = LinkInstant.milliseconds(1)
        var writesToPhone = 0
        func handle(_ input: EndpointCore.Input, at side: Int) {
            var pending = [(side, input)]
            while !pending.isEmpty {
                let (side, input) = pending.removeFirst()
                for output in cores[side].handle(input, now: now, answeringFor: side == 0 ? app : nil) {
                    switch output {
                    case .write(let bytes):
                        if side == 1 { writesToPhone += 1 }
                        pending.append((1 - side, .received(bytes)))
                    case .load(let token, let request):
                        let (result, _) = app.load(request, now: now)
                        pending.append((0, .loaded(token: token, result, readyAt: now)))
                    default: break
                    }
                }
            }
        }
        func run(for duration: Duration) {
            let end = now + duration
            while let due = [cores[0].nextDeadline, cores[1].nextDeadline].compactMap({ $0 }).min(), due <= end {
                now = max(now, due)
                for side in 0..<2 where cores[side].nextDeadline.map({ $0 <= now }) ?? false { handle(.tick, at: side) }
            }
            now = end
        }
        handle(.start, at: 0)
        handle(.start, at: 1)
        run(for: .seconds(2))
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: now)
        run(for: .seconds(2))
        try #require(cores[1].connection.headUnit.nowPlaying.info.state == .playing, "the head unit never saw the album playing")
        let before = cores[1].connection.headUnit.nowPlaying.updates
        let writesBefore = writesToPhone
        handle(.action { connection, now in
            connection.headUnitDoes(now: now) { role, _ in role.press(.playPause) + role.press(.playPause) }
        }, at: 1)
        #expect(writesToPhone == writesBefore + 1, "the presses went in \(writesToPhone - writesBefore) writes, not one")
        #expect(cores[1].connection.headUnit.nowPlaying.updates >= before + 2,
                "\(cores[1].connection.headUnit.nowPlaying.updates - before) updates for two presses")
        #expect(cores[1].connection.headUnit.nowPlaying.info.state == .playing)
    }

    /// A 16,000-byte ping is four link packets, so its last makes an
    /// acknowledgement due (four cumulative). The responder answers in the
    /// same turn, and the answer's data carries the acknowledgement: the
    /// write holds no bare ACK before it.
    @Test func anAnswerInTheSameTurnCarriesTheAcknowledgement() throws {
        var cores = [EndpointCore(kind: .pinger, app: nil, authentication: .off), EndpointCore(kind: .responder, app: nil, authentication: .off)]
        var now = LinkInstant.milliseconds(1)
        var responderWrites: [[UInt8]] = []
        func handle(_ input: EndpointCore.Input, at side: Int) {
            var pending = [(side, input)]
            while !pending.isEmpty {
                let (side, input) = pending.removeFirst()
                for case .write(let bytes) in cores[side].handle(input, now: now) {
                    if side == 1 { responderWrites.append(bytes) }
                    pending.append((1 - side, .received(bytes)))
                }
            }
        }
        handle(.start, at: 1)
        handle(.start, at: 0)
        for _ in 0..<20 {
            now = now + .milliseconds(100)
            handle(.tick, at: 0)
            handle(.tick, at: 1)
        }
        try #require(cores[0].link.isUp && cores[1].link.isUp, "the link did not come up")
        #expect(cores[1].link.negotiated?.maximumCumulativeAcks == 4)
        responderWrites = []
        handle(.send(DiagnosticPing.request(sequence: 1, size: 16_000)), at: 0)
        let packets = responderWrites.flatMap { write -> [(control: LinkControl, payload: Int)] in
            var decoder = LinkStreamDecoder()
            decoder.append(write)
            var packets: [(control: LinkControl, payload: Int)] = []
            while let event = decoder.next() {
                if case .packet(let header, _, true) = event { packets.append((header.control, header.payloadLength)) }
            }
            return packets
        }
        #expect(packets.filter { $0.payload > 0 }.count >= 4, "the ping was not answered: \(packets.count) packets")
        #expect(!packets.contains { $0.control == .ack && $0.payload == 0 },
                "a bare ACK went out beside the answer: \(packets.map { "\($0.control) \($0.payload)" })")
    }

    /// The link packets a transport suits (or a user asks for) are what
    /// each end proposes to receive: the accessory's SYN and the device's
    /// SYN+ACK carry them, each end sends within the other's, and a
    /// 16,000-byte ping then crosses in one packet. Values no SYN can say
    /// are clamped, and the cumulative acknowledgements asked for never
    /// exceed the packets outstanding (a device would refuse the SYN).
    @Test func theTransportsLinkPacketsAreProposedAndHonoured() throws {
        var cores = [EndpointCore(kind: .pinger, app: nil, authentication: .off), EndpointCore(kind: .responder, app: nil, authentication: .off)]
        cores[0].transportOpened(coalescesWrites: true, maximumPacketLength: 100_000, maximumOutstandingPackets: 2)
        cores[1].transportOpened(coalescesWrites: true, maximumPacketLength: 16_384, maximumOutstandingPackets: 200)
        var now = LinkInstant.milliseconds(1)
        var pingerWrites: [[UInt8]] = []
        func handle(_ input: EndpointCore.Input, at side: Int) {
            var pending = [(side, input)]
            while !pending.isEmpty {
                let (side, input) = pending.removeFirst()
                for case .write(let bytes) in cores[side].handle(input, now: now) {
                    if side == 0 { pingerWrites.append(bytes) }
                    pending.append((1 - side, .received(bytes)))
                }
            }
        }
        handle(.start, at: 1)
        handle(.start, at: 0)
        for _ in 0..<20 {
            now = now + .milliseconds(100)
            handle(.tick, at: 0)
            handle(.tick, at: 1)
        }
        // The accessory's SYN says only what a device may accept: no more
        // cumulative acknowledgements than packets outstanding.
        var synDecoder = LinkStreamDecoder()
        pingerWrites.forEach { synDecoder.append($0) }
        var proposals: [LinkSynchronization] = []
        while let event = synDecoder.next() {
            if case .packet(let header, _, true) = event, header.control.contains(.syn) {
                proposals.append(try LinkSynchronization(decoding: synDecoder.payload))
            }
        }
        let proposal = try #require(proposals.first, "the accessory sent no SYN")
        #expect(proposal.violations.isEmpty, "the SYN breaks the rules: \(proposal.violations)")
        let pinger = try #require(cores[0].link.negotiated, "the link did not come up")
        #expect(pinger.receivePacketLength == 65_535, "the accessory proposed \(pinger.receivePacketLength), not the 16-bit field's largest")
        #expect(pinger.receiveWindow == 2)
        #expect(pinger.sendPacketLength == 16_384, "the accessory sends within \(pinger.sendPacketLength), not the device's proposal")
        #expect(pinger.sendWindow == 127, "the device's 200 outstanding were not clamped to 127: \(pinger.sendWindow)")
        #expect(pinger.maximumCumulativeAcks <= 2, "\(pinger.maximumCumulativeAcks) cumulative acknowledgements for a window of 2")
        pingerWrites = []
        handle(.send(DiagnosticPing.request(sequence: 1, size: 16_000)), at: 0)
        var decoder = LinkStreamDecoder()
        pingerWrites.forEach { decoder.append($0) }
        var dataPackets = 0
        while let event = decoder.next() {
            if case .packet(let header, _, true) = event, header.payloadLength > 0 { dataPackets += 1 }
        }
        #expect(dataPackets == 1, "a 16,000-byte ping took \(dataPackets) packets under a 16,384-byte limit")
    }

    /// The iAP1 packets in what a core wrote.
    static func iap1Packets(_ outputs: [EndpointCore.Output]) -> [IAP1Packet] {
        let written: [UInt8] = outputs.flatMap { output -> [UInt8] in if case .write(let bytes) = output { bytes } else { [] } }
        var packets: [IAP1Packet] = []
        var index = 0
        while index < written.count {
            guard let frame = IAP1Frame.parse(written, at: index) else {
                index += 1
                continue
            }
            if frame.checksumValid, let packet = try? IAP1Packet(payload: written[frame.payloadRange], hasTransactionID: false) { packets.append(packet) }
            index += frame.encodedLength
        }
        return packets
    }

    /// An app may change its commands while serving (IAPKit's
    /// `updateCommands`): an iAP1 head unit is served the set as it is now,
    /// the one an iAP2 head unit is advertised, because the edge runs every
    /// command with the core's `commands`.
    @Test func anIAP1HeadUnitIsServedTheCommandSetAsItIsNow() throws {
        let app = SampleApp()
        var core = EndpointCore(kind: .phone, app: app, authentication: .off)
        var now = LinkInstant.milliseconds(1)
        func ask(_ lingo: UInt8, _ command: UInt16, _ data: [UInt8]) throws -> [IAP1Packet] {
            now = now + .milliseconds(1)
            let frame = try IAP1Packet(lingo: lingo, command: command, data: data).encoded(sync: true)
            return Self.iap1Packets(core.handle(.received(frame), now: now, answeringFor: app))
        }
        _ = core.handle(.start, now: now, answeringFor: app)
        let identified = try ask(0, 0x13, [0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0])
        #expect(identified.contains { $0.lingo == 0 && $0.command == 0x02 && $0.data == [0x00, 0x13] }, "\(identified)")
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: now)
        // PlayControl pause: acknowledged with success while the app has a pause handler…
        let paused = try ask(4, 0x0029, [0x0B])
        #expect(paused.contains { $0.lingo == 4 && $0.command == 0x0001 && $0.data == [0x00, 0x00, 0x29] }, "\(paused)")
        #expect(app.snapshot.playback == .paused)
        // …and as failed once the app has withdrawn it.
        _ = core.handle(.action { connection, now in connection.phoneDoes(now: now) { role, _ in role.updateCommands { $0.withdraw(.pause) } } },
                        now: now, answeringFor: app)
        let refused = try ask(4, 0x0029, [0x0B])
        #expect(refused.contains { $0.lingo == 4 && $0.command == 0x0001 && $0.data == [0x02, 0x00, 0x29] }, "\(refused)")
    }
}
