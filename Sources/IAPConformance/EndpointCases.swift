import IAPDemo
import IAPEndpointCore
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// Cases for one endpoint core against a peer written by hand, in virtual
/// time: peers the simulator's two cores cannot play (a head unit that
/// speaks only iAP1, a peer that stops taking what it is sent).
extension ConformanceCase {
    static let endpointCases: [ConformanceCase] = [legacyHeadUnit, peerStopsReading]

    static let legacyHeadUnit = ConformanceCase(name: "legacy-head-unit", purpose: "a head unit that speaks only iAP1 is identified, browses, plays and reads what plays, answered in iAP1") { s in
        // Authentication off: a phone that verifies serves no media to a head unit that has not authenticated.
        let edge = VirtualTimeEdge(app: SampleApp())
        var peer = ScriptedPeer(edge: edge, core: edge.phoneCore(link: LinkConfiguration(role: .device, answersIAP1: true),
                                                                 Connection.Configuration(role: .device, authentication: .off)))
        peer.start()
        // IdentifyDeviceLingoes: General and Extended Interface, no authentication.
        let identified = peer.ask(0, 0x13, [0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0], answer: (0, 0x02))
        s.expect(identified?.data == [0x00, 0x13], "IdentifyDeviceLingoes was answered with \(identified.map(String.init(describing:)) ?? "nothing")")
        let tabs = peer.ask(4, 0x0018, [0x01], answer: (4, 0x0019))
        s.expect(tabs?.data == [0, 0, 0, 4], "the four tabs were counted as \(tabs.map(String.init(describing:)) ?? "nothing")")
        // Into the radio tab; its stations counted as tracks.
        _ = peer.ask(4, 0x0017, [0x01, 0, 0, 0, 1], answer: (4, 0x0001))
        let stations = peer.ask(4, 0x0018, [0x05], answer: (4, 0x0019))
        s.expect(stations.map { $0.data != [0, 0, 0, 0] } == true, "the radio's stations counted as \(stations.map(String.init(describing:)) ?? "nothing")")
        // PlayCurrentSelection: the app takes 20 ms (its own stated delay), kept in virtual time.
        let asked = peer.now
        let played = peer.ask(4, 0x0028, [0, 0, 0, 0], answer: (4, 0x0001))
        s.expect(peer.now - asked >= .milliseconds(20), "PlayCurrentSelection was answered \((peer.now - asked).wholeMillisecondsText) after it was asked, before the app's 20 ms")
        s.expect(played?.data == [0x00, 0x00, 0x28], "PlayCurrentSelection was answered with \(played.map(String.init(describing:)) ?? "nothing")")
        let status = peer.ask(4, 0x001C, answer: (4, 0x001D))
        s.expect(status?.data.last == 1, "GetPlayStatus says \(status.map(String.init(describing:)) ?? "nothing"), not playing")
        // A second and third request on the same connection, as a real head unit sends them.
        let index = peer.ask(4, 0x001E, answer: (4, 0x001F))
        let title = peer.ask(4, 0x0020, index?.data ?? [], answer: (4, 0x0021))
        let playing = peer.edge.app.nowPlaying(at: peer.now).title
        s.expect(title.map { String(decoding: $0.data.dropLast(), as: UTF8.self) } == playing,
                 "the playing track's title reads \(title.map(String.init(describing:)) ?? "nothing"), not \(playing ?? "nothing")")
        s.expect(!peer.core.link.isUp, "an iAP2 link came up with a head unit that speaks only iAP1")
        s.note("\(peer.answers.count) iAP1 answers; playing \(playing ?? "nothing") after \(peer.now.nanoseconds / 1_000_000) ms")
        s.failures += peer.failures
        s.scriptedTime = peer.now
    }

    static let peerStopsReading = ConformanceCase(name: "peer-stops-reading", purpose: "a peer that never takes the answers gets no more made for it and is held back; once it reads, every request is answered") { s in
        var peer = ScriptedPeer(edge: VirtualTimeEdge(app: SampleApp()), core: EndpointCore(kind: .responder, app: nil, authentication: .off))
        peer.start()
        // The accessory's half of the handshake by hand: detect, a SYN
        // letting the responder send one packet at a time, the ACK of its
        // SYN+ACK (sequence 0).
        var proposal = LinkParameters().synchronization
        proposal.maximumOutstandingPackets = 1
        peer.write(DetectSequence.bytes)
        peer.write(packet(.syn, sequence: 0x10, payload: proposal.encoded()))
        peer.write(packet(.ack, sequence: 0x10, acknowledgement: 0))
        s.expect(peer.core.link.isUp, "the link did not come up")
        // 200 pings of 1 KB (200 KB, within the 256 KiB receive budget),
        // each acknowledging only the SYN+ACK: no answer is ever taken.
        let requests = 200
        var sequence: UInt8 = 0x10
        for n in 1...requests {
            sequence &+= 1
            let ping = (try? DiagnosticPing.request(sequence: UInt32(n), size: 1_000).encoded()) ?? []
            peer.write(packet(.ack, sequence: sequence, acknowledgement: 0, session: 1, payload: ping))
            peer.run(for: .milliseconds(1))
        }
        let held = peer.core.waiting
        // The link's queue (64 KiB) holds about 60 answers; one more waits in
        // the backlog; the rest of the requests wait unhandled.
        s.expect(held.messages <= 1, "answers made for a peer that takes none: \(held.messages)")
        s.expect(held.receivedBytes > 100_000, "requests held unhandled: only \(held.receivedBytes) bytes")
        s.expect(peer.written.count < 8_000, "the responder sent \(peer.written.count) bytes, more than its window of one packet allowed")
        // The peer reads again: it acknowledges each packet as it arrives.
        var decoder = LinkStreamDecoder()
        var read = 0
        var answered = Set<UInt32>()
        var answers = ControlMessageDecoder()
        let reading = peer.now
        let deadline = reading + .seconds(30)
        while answered.count < requests && peer.now < deadline {
            decoder.append(peer.written[read...])
            read = peer.written.count
            var last: UInt8?
            while let event = decoder.next() {
                guard case .packet(let header, _, true) = event, header.length > LinkPacket.headerLength, header.session == 1 else { continue }
                last = header.sequence
                answers.append(decoder.payload)
                while case .message(let message, _)? = answers.next() {
                    if let number = DiagnosticPing.sequence(ofAnswer: message) { answered.insert(number) }
                }
            }
            if let last { peer.write(packet(.ack, sequence: sequence, acknowledgement: last)) }
            peer.run(for: .milliseconds(5))
        }
        s.expect(answered.count == requests, "\(answered.count) of \(requests) requests answered once the peer read again")
        s.expect(peer.core.waiting == (0, 0), "still waiting after the peer read everything: \(peer.core.waiting)")
        s.note("held \(held.receivedBytes) bytes of requests while the peer did not read; all \(answered.count) answered within \((peer.now - reading).wholeMillisecondsText) of reading")
        s.failures += peer.failures
        s.scriptedTime = peer.now
    }

    private static func packet(_ control: LinkControl, sequence: UInt8, acknowledgement: UInt8 = 0, session: UInt8 = 0, payload: [UInt8] = []) -> [UInt8] {
        (try? LinkPacket(control: control, sequence: sequence, acknowledgement: acknowledgement, session: session, payload: payload).encoded()) ?? []
    }
}

/// One endpoint core in virtual time facing a peer scripted by hand: what
/// the core writes is kept in `written` (the peer reads it when it likes),
/// what the peer writes reaches the core at once, and time moves only when
/// the script runs it, the core ticked at its deadlines.
struct ScriptedPeer {
    var core: EndpointCore
    /// Answers the core's requests (the app is the edge's).
    let edge: VirtualTimeEdge
    private(set) var now = LinkInstant.zero
    /// Everything the core wrote, in order.
    private(set) var written: [UInt8] = []
    /// iAP1 packets the core wrote, in order.
    private(set) var answers: [IAP1Packet] = []
    private(set) var failures: [String] = []
    private var framesRead = 0

    init(edge: VirtualTimeEdge, core: EndpointCore) {
        self.edge = edge
        self.core = core
    }

    mutating func start() { serve(core.handle(.start, now: now)) }

    mutating func write(_ bytes: [UInt8]) { serve(core.handle(.received(bytes), now: now)) }

    mutating func run(for duration: Duration) {
        let end = now + duration
        while let deadline = core.nextDeadline, deadline <= end {
            now = max(now, deadline)
            serve(core.handle(.tick, now: now))
        }
        now = end
    }

    /// Writes an iAP1 request and runs (up to 2 s of virtual time) until the
    /// core answers with `answer` (lingo, command).
    mutating func ask(_ lingo: UInt8, _ command: UInt16, _ data: [UInt8] = [], answer: (lingo: UInt8, command: UInt16)) -> IAP1Packet? {
        guard let frame = try? IAP1Packet(lingo: lingo, command: command, data: data).encoded(sync: true) else {
            failures.append("cannot frame iAP1 lingo \(lingo) command 0x\(String(command, radix: 16))")
            return nil
        }
        let before = answers.count
        write(frame)
        for _ in 0..<200 {
            if let found = answers[before...].last(where: { $0.lingo == answer.lingo && $0.command == answer.command }) { return found }
            run(for: .milliseconds(10))
        }
        return nil
    }

    private mutating func serve(_ outputs: [EndpointCore.Output]) {
        edge.serve(outputs, &core, now: now) { output in
            guard case .write(let bytes) = output else { return }
            written += bytes
        }
        readFrames()
    }

    /// The iAP1 frames in what the core wrote since the last look.
    private mutating func readFrames() {
        while framesRead < written.count {
            guard let frame = IAP1Frame.parse(written, at: framesRead) else {
                framesRead += 1
                continue
            }
            if frame.checksumValid, let packet = try? IAP1Packet(payload: written[frame.payloadRange], hasTransactionID: false) {
                answers.append(packet)
            }
            framesRead += frame.encodedLength
        }
    }
}
