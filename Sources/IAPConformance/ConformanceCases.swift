import IAPLink
import IAPTransport
import IAPWire

extension ConformanceCase {
    /// Every case, in the order the suite runs them.
    public static let all: [ConformanceCase] = [
        detect, iap1OnlyAnswer, negotiationAccepted, negotiationAdjusted, negotiationRefused, zeroAck,
        windowFull, sequenceWrap, cumulativeAckTiming, retransmissionExhaustion, eakRecovery, resetMidStream,
        garbageBeforeSync, corruptedChecksums, duplicatesAndReordering, lossSweep, interleavedSessions,
        messageSpanningPackets, backpressure, peerRestart, silentPeer, renegotiation,
    ] + sessionCases + mediaLibraryCases + endpointCases

    public static func named(_ name: String) -> ConformanceCase? { all.first { $0.name == name } }

    static let detect = ConformanceCase(name: "detect", purpose: "the accessory repeats detect until echoed, then synchronises") { s in
        // The first two detects are lost: the accessory must keep sending them once a second.
        var faults = WireFaults.none
        faults.dropWrites = [1, 2]
        s.configure(outbound: faults)
        guard s.connect() else { return }
        let detects = (s.simulation.sent[.accessory] ?? []).filter { $0 == DetectSequence.bytes }.count
        s.expect(detects == 3, "expected 3 detect sequences (2 lost), the accessory sent \(detects)")
        s.expect(s.simulation.now >= .milliseconds(2000), "the link came up before the third detect could have been sent")
        s.expect((s.simulation.sent[.device] ?? []).first == DetectSequence.bytes, "the device did not echo the detect sequence first")
        s.note("\(detects) detect sequences")
    }

    static let iap1OnlyAnswer = ConformanceCase(name: "iap1-only-answer", purpose: "an iAP1-only device answering detect is recognised, reported once, and tried again only after a backoff") { s in
        var faults = WireFaults.none
        faults.blackholeFrom = 1   // the iAP2 device is replaced by an iAP1 responder below
        s.configure(outbound: faults)
        s.simulation.start()
        s.simulation.run(for: .milliseconds(10))
        // Noise that parses as iAP1 frames but is no answer to the detect (lingo 4; lingo 0 command 0x13).
        s.simulation.inject([0x55, 0x02, 0x04, 0x01, 0xF9, 0x55, 0x03, 0x00, 0x13, 0x00, 0xEA], to: .accessory)
        s.simulation.run(for: .milliseconds(10))
        s.expect(!s.simulation.events(.accessory).contains(where: isFailed), "iAP1-looking noise was taken for an iAP1-only peer")
        let answeredAt = s.simulation.now
        s.simulation.inject([0x55, 0x04, 0x00, 0x02, 0x04, 0xEE, 0x08], to: .accessory)   // iPodAck: bad parameter
        s.simulation.run(for: .seconds(3))
        let failures = s.simulation.events(.accessory).compactMap { event -> LinkFailure? in
            if case .failed(let failure) = event { failure } else { nil }
        }
        s.expect(failures.count == 1, "expected one failure report, got \(failures)")
        if case .iap1OnlyPeer? = failures.first {} else { s.expect(false, "the failure was not 'iAP1-only peer': \(failures)") }
        s.expect(!s.simulation.accessory.isUp, "the link came up with an iAP1-only peer")
        let restarts = s.simulation.events(.accessory).filter { if case .restartScheduled = $0 { true } else { false } }
        s.expect(restarts == [.restartScheduled(after: .seconds(1))], "expected one restart after 1 s, got \(restarts)")
        let detectsAfter = s.simulation.wireLog.filter { $0.role == .accessory && $0.time > answeredAt && $0.bytes == DetectSequence.bytes }
        s.expect(detectsAfter.first.map { $0.time - answeredAt >= .seconds(1) } ?? false, "the accessory did not start over after its backoff")
        if let failure = failures.first { s.note("\(failure); detecting again after 1 s") }
    }

    static let negotiationAccepted = ConformanceCase(name: "negotiation-accepted", purpose: "each end sends within the other's receive limits; timers settle on the smaller values") { s in
        let accessory = LinkParameters(maximumOutstandingPackets: 10, maximumPacketLength: 2048, retransmitTimeout: .milliseconds(1500),
                                       cumulativeAckTimeout: .milliseconds(70), maximumRetransmissions: 5, maximumCumulativeAcks: 3)
        let device = LinkParameters(maximumOutstandingPackets: 4, maximumPacketLength: 512, retransmitTimeout: .milliseconds(1500),
                                    cumulativeAckTimeout: .milliseconds(70), maximumRetransmissions: 5, maximumCumulativeAcks: 3)
        s.configure(accessory: Scenario.accessory(accessory), device: Scenario.device(device))
        guard s.connect(), let a = s.simulation.accessory.negotiated, let d = s.simulation.device.negotiated else { return }
        s.expect(a.sendWindow == 4 && a.sendPacketLength == 512, "accessory sends with window \(a.sendWindow), length \(a.sendPacketLength); expected the device's 4 and 512")
        s.expect(d.sendWindow == 10 && d.sendPacketLength == 2048, "device sends with window \(d.sendWindow), length \(d.sendPacketLength); expected the accessory's 10 and 2048")
        s.expect(a.retransmitTimeout == .milliseconds(1500) && d.maximumRetransmissions == 5, "timers not as proposed")
        s.expect(a.sessions == LinkParameters.standardSessions && d.sessions == a.sessions, "sessions differ: \(a.sessions) / \(d.sessions)")
        s.transfer([(.accessory, 1, Scenario.payload(3000, seed: s.seed)), (.device, 1, Scenario.payload(3000, seed: s.seed + 1))])
        let longest = (s.simulation.sent[.accessory] ?? []).map(\.count).max() ?? 0
        s.expect(longest <= 512, "the accessory sent a \(longest)-byte packet to a device that accepts 512")
    }

    static let negotiationAdjusted = ConformanceCase(name: "negotiation-adjusted", purpose: "the device lowers timers and counts to its own; the accessory accepts") { s in
        let accessory = LinkParameters(retransmitTimeout: .milliseconds(4000), cumulativeAckTimeout: .milliseconds(500),
                                       maximumRetransmissions: 20, maximumCumulativeAcks: 6)
        let device = LinkParameters(retransmitTimeout: .milliseconds(1000), cumulativeAckTimeout: .milliseconds(40),
                                    maximumRetransmissions: 4, maximumCumulativeAcks: 2)
        s.configure(accessory: Scenario.accessory(accessory), device: Scenario.device(device))
        guard s.connect(), let a = s.simulation.accessory.negotiated else { return }
        s.expect(a.retransmitTimeout == .milliseconds(1000), "retransmission timeout \(a.retransmitTimeout), expected the smaller 1000 ms")
        s.expect(a.cumulativeAckTimeout == .milliseconds(40), "cumulative ACK timeout \(a.cumulativeAckTimeout), expected 40 ms")
        s.expect(a.maximumRetransmissions == 4 && a.maximumCumulativeAcks == 2, "counts \(a.maximumRetransmissions)/\(a.maximumCumulativeAcks), expected 4/2")
        s.expect(s.simulation.device.negotiated == nil || s.simulation.device.negotiated?.retransmitTimeout == a.retransmitTimeout,
                 "the two ends run with different timers")
    }

    static let negotiationRefused = ConformanceCase(name: "negotiation-refused", purpose: "out-of-range proposals and answers are adjusted or refused with a reason, never used as they are") { s in
        // 1. Out of range but adjustable: the device answers in range and says what it used.
        let wild = LinkParameters(maximumOutstandingPackets: 200, maximumPacketLength: 1024, retransmitTimeout: .milliseconds(5),
                                  cumulativeAckTimeout: .milliseconds(3), maximumRetransmissions: 40, maximumCumulativeAcks: 3)
        s.configure(accessory: Scenario.accessory(wild))
        s.simulation.start()
        s.simulation.run(for: .milliseconds(100))
        let adjusted = s.simulation.events(.device).compactMap { event -> [String]? in
            if case .negotiationAdjusted(let reasons) = event { reasons } else { nil }
        }
        s.expect(!adjusted.isEmpty, "the device did not report adjusting out-of-range values")
        s.expect(adjusted.first?.contains { $0.contains("sending at most 127") } == true, "the window adjustment does not say what is used: \(adjusted)")
        s.expect(adjusted.first?.contains { $0.contains("using 20 ms") } == true, "the timeout adjustment does not say what is used: \(adjusted)")
        s.expect(s.simulation.device.negotiated.map { $0.sendWindow <= 127 } ?? true, "the device kept the out-of-range window")
        // The device raised the accessory's timers; an answer the accessory cannot
        // honour itself is refused by the accessory's own check.
        let accessoryEvents = s.simulation.events(.accessory)
        s.expect(accessoryEvents.contains(where: isUp) || accessoryEvents.contains(where: isFailed),
                 "the accessory neither accepted nor refused the adjusted answer")
        if let answer = (s.simulation.sent[.device] ?? []).compactMap({ try? LinkPacket(decoding: $0) }).first(where: { $0.control.contains(.syn) }),
           let sync = try? LinkSynchronization(decoding: answer.payload) {
            s.expect(sync.violations.isEmpty, "the device answered with out-of-range values: \(sync.violations)")
        } else {
            s.expect(false, "the device sent no SYN+ACK")
        }
        s.note("device adjusted \(adjusted.first?.count ?? 0) values")

        // 2. Not adjustable: an unsupported link version is refused with RST and a reason.
        s.configure()
        s.simulation.start()
        s.simulation.run(for: .milliseconds(5))
        var bad = LinkParameters().synchronization
        bad.version = 2
        let syn = (try? LinkPacket(control: .syn, sequence: 9, payload: bad.encoded()).encoded()) ?? []
        s.simulation.inject(syn, to: .device)
        let refused = s.simulation.events(.device).compactMap { event -> [String]? in
            if case .proposalRefused(let reasons) = event { reasons } else { nil }
        }
        s.expect(refused.first?.contains { $0.contains("version 2") } == true, "version 2 was not refused with its reason: \(refused)")
        let reset = (s.simulation.sent[.device] ?? []).compactMap { try? LinkPacket(decoding: $0) }.contains { $0.control.contains(.rst) }
        s.expect(reset, "the device did not answer the refused SYN with RST")

        // Receive limits the device would have to send with cannot be adjusted
        // upwards: no window, packets too short for data, the reserved session 0.
        let unusable: [(String, (inout LinkSynchronization) -> Void)] = [
            ("max outstanding packets 0", { $0.maximumOutstandingPackets = 0 }),
            ("max packet length 0", { $0.maximumPacketLength = 0 }),
            ("max packet length 4", { $0.maximumPacketLength = 4 }),
            ("max packet length 10", { $0.maximumPacketLength = 10 }),
            ("session id 0", { $0.sessions.append(LinkSessionDescriptor(id: 0, type: .externalAccessory)) }),
        ]
        for (name, change) in unusable {
            s.configure()
            s.simulation.start()
            s.simulation.run(for: .milliseconds(5))
            var proposal = LinkParameters().synchronization
            change(&proposal)
            s.simulation.inject((try? LinkPacket(control: .syn, sequence: 9, payload: proposal.encoded()).encoded()) ?? [], to: .device)
            let reasons = s.simulation.events(.device).compactMap { event -> [String]? in
                if case .proposalRefused(let reasons) = event { reasons } else { nil }
            }.first ?? []
            s.expect(reasons.contains { $0.contains(name) }, "\(name) was not refused with its reason: \(reasons)")
            let answered = (s.simulation.sent[.device] ?? []).compactMap { try? LinkPacket(decoding: $0) }
                .contains { $0.control == [.syn, .ack] && $0.acknowledgement == 9 }
            s.expect(!answered, "the device answered a SYN with \(name)")
        }

        // 3. The accessory takes the device's answer: a value out of range is
        // clamped to what it can run on and reported; an answer no link can
        // run on is refused with RST and a reason.
        func answerAccessory(_ change: (inout LinkSynchronization) -> Void) -> [LinkEvent] {
            s.configure()
            var faults = WireFaults.none
            faults.blackholeFrom = 1
            s.simulation.setFaults(faults, towards: .accessory)
            s.simulation.start()
            s.simulation.run(for: .milliseconds(10))
            s.simulation.inject(DetectSequence.bytes, to: .accessory)
            var answer = LinkParameters().synchronization
            change(&answer)
            let synAck = (try? LinkPacket(control: [.syn, .ack], sequence: 1, acknowledgement: 0x2B, payload: answer.encoded()).encoded()) ?? []
            s.simulation.inject(synAck, to: .accessory)
            return s.simulation.events(.accessory)
        }
        let clamped = answerAccessory { $0.maximumRetransmissions = 99 }
        let notes = clamped.flatMap { event -> [String] in
            if case .negotiationAdjusted(let notes) = event { return notes }
            return []
        }
        s.expect(clamped.contains(where: isUp), "the accessory did not take an answer it can run on: \(clamped)")
        s.expect(notes.contains { $0.contains("max retransmissions 99") && $0.contains("using 30") }, "the accessory did not say what it used: \(notes)")
        s.expect(s.simulation.accessory.negotiated?.maximumRetransmissions == 30, "the accessory kept 99 retransmissions")
        let refusedAnswer = answerAccessory { $0.maximumPacketLength = 10 }.compactMap { event -> LinkFailure? in
            if case .failed(let failure) = event { failure } else { nil }
        }
        if case .negotiationRefused(let reasons)? = refusedAnswer.first {
            s.expect(reasons.contains { $0.contains("max packet length 10") }, "the refusal does not name the bad value: \(reasons)")
        } else {
            s.expect(false, "the accessory accepted an answer with 10-byte packets: \(refusedAnswer)")
        }
    }

    static let zeroAck = ConformanceCase(name: "zero-ack", purpose: "the zero-ACK form: no acknowledgements or retransmissions, data still flows") { s in
        let parameters = LinkParameters(zeroAck: true)
        s.configure(accessory: Scenario.accessory(parameters), device: Scenario.device(LinkParameters()))
        guard s.connect(), let link = s.simulation.accessory.negotiated else { return }
        s.expect(s.simulation.now < .milliseconds(100), "the handshake took \(s.simulation.now): the completing ACK was not sent")
        s.expect(link.zeroAck && s.simulation.device.negotiated?.zeroAck == true, "the link is not zero-ACK on both ends")
        let before = (s.simulation.sent[.device] ?? []).count
        s.transfer([(.accessory, 1, Scenario.payload(20_000, seed: s.seed))])
        let deviceWrites = (s.simulation.sent[.device] ?? []).dropFirst(before)
        s.expect(deviceWrites.isEmpty, "the device sent \(deviceWrites.count) packets (acknowledgements) on a zero-ACK link")
    }

    static let windowFull = ConformanceCase(name: "window-full", purpose: "never more unacknowledged packets than the peer's window") { s in
        let device = LinkParameters(maximumOutstandingPackets: 3, maximumPacketLength: 128)
        var slow = WireFaults.none
        slow.delay = .milliseconds(20)
        s.configure(device: Scenario.device(device), outbound: slow, inbound: slow)
        guard s.connect() else { return }
        var largest = 0
        let data = Scenario.payload(4000, seed: s.seed)
        do { try s.simulation.send(data, session: 1, from: .accessory) } catch { s.expect(false, "\(error)") }
        let deadline = s.simulation.now + .seconds(30)
        while s.simulation.now < deadline && s.simulation.deliveredBytes(to: .device, session: 1).count < data.count {
            largest = max(largest, s.simulation.accessory.unacknowledgedCount)
            s.simulation.run(until: s.simulation.now + .milliseconds(1))
        }
        s.expect(largest == 3, "at most \(largest) packets were outstanding; the window is 3 and the data needed it full")
        s.expect(s.simulation.deliveredBytes(to: .device, session: 1) == data, "data did not arrive intact")
        s.note("max outstanding \(largest)")
    }

    static let sequenceWrap = ConformanceCase(name: "sequence-wrap", purpose: "sequence numbers wrap past 255 without loss or duplication") { s in
        let small = LinkParameters(maximumPacketLength: 40)
        s.configure(accessory: Scenario.accessory(small, initialSequence: 0xF0), device: Scenario.device(small, initialSequence: 0xFE))
        guard s.connect() else { return }
        // 29 payload bytes a packet: 600 packets each way wrap both counters twice.
        s.transfer([(.accessory, 1, Scenario.payload(29 * 600, seed: s.seed)), (.device, 1, Scenario.payload(29 * 600, seed: s.seed + 1))])
        let packets = s.simulation.accessory.statistics.packetsSent
        s.expect(packets > 512, "only \(packets) packets were sent: the sequence did not wrap twice")
    }

    static let cumulativeAckTiming = ConformanceCase(name: "cumulative-ack", purpose: "ACK after max cumulative ACKs packets, or after the cumulative ACK timeout") { s in
        let parameters = LinkParameters(maximumOutstandingPackets: 8, retransmitTimeout: .milliseconds(1000),
                                        cumulativeAckTimeout: .milliseconds(100), maximumCumulativeAcks: 3)
        var wire = WireFaults.none
        wire.delay = .milliseconds(1)
        s.configure(accessory: Scenario.accessory(parameters), device: Scenario.device(parameters), outbound: wire, inbound: wire)
        guard s.connect() else { return }
        s.simulation.run(for: .milliseconds(500))
        // One packet: the device acknowledges after the timeout.
        let before = (s.simulation.sent[.device] ?? []).count
        let start = s.simulation.now
        do { try s.simulation.send([1], session: 1, from: .accessory) } catch { s.expect(false, "\(error)") }
        s.simulation.run(until: start + .milliseconds(400)) { ($0.sent[.device] ?? []).count > before }
        let delay = s.simulation.now - start
        s.expect(delay >= .milliseconds(100) && delay <= .milliseconds(110), "a lone packet was acknowledged after \(delay.wholeMillisecondsText), expected about 100 ms")
        // Three packets: acknowledged at once after the third.
        s.simulation.run(for: .milliseconds(500))
        let before3 = (s.simulation.sent[.device] ?? []).count
        let start3 = s.simulation.now
        for byte in [2, 3, 4] as [UInt8] {
            do { try s.simulation.send([byte], session: 1 + (byte % 2 == 0 ? 0 : 1), from: .accessory) } catch { s.expect(false, "\(error)") }
        }
        s.simulation.run(until: start3 + .milliseconds(400)) { ($0.sent[.device] ?? []).count > before3 }
        let delay3 = s.simulation.now - start3
        s.expect(delay3 < .milliseconds(20), "three packets were acknowledged after \(delay3.wholeMillisecondsText), expected at once")
        s.note("single packet acknowledged after \(delay.wholeMillisecondsText)")
    }

    static let retransmissionExhaustion = ConformanceCase(name: "retransmission-exhaustion", purpose: "a peer that stops acknowledging ends the link once, after the allowed retransmissions") { s in
        let parameters = LinkParameters(retransmitTimeout: .milliseconds(200), cumulativeAckTimeout: .milliseconds(20), maximumRetransmissions: 4)
        var accessory = Scenario.accessory(parameters)
        accessory.silenceLimit = nil
        accessory.keepAliveInterval = nil
        s.configure(accessory: accessory, device: Scenario.device(parameters))
        guard s.connect() else { return }
        var gone = WireFaults.none
        gone.loss = 1
        s.simulation.setFaults(gone, towards: .accessory)
        let start = s.simulation.now
        do { try s.simulation.send([1, 2, 3], session: 1, from: .accessory) } catch { s.expect(false, "\(error)") }
        s.simulation.run(for: .seconds(10))
        let downs = s.simulation.events(.accessory).compactMap { event -> LinkDownReason? in
            if case .down(let reason) = event { reason } else { nil }
        }
        s.expect(downs.count == 1, "expected one link-down report, got \(downs.count): \(downs)")
        if case .retransmissionsExhausted(_, let attempts)? = downs.first {
            s.expect(attempts == 4, "the link went down after \(attempts) retransmissions, expected 4")
        } else {
            s.expect(false, "the reason was not retransmission exhaustion: \(downs)")
        }
        let when = s.simulation.records.first { $0.role == .accessory && isDown($0.event) }?.time ?? start
        s.expect(when - start >= .milliseconds(1000) && when - start <= .milliseconds(1100), "down after \((when - start).wholeMillisecondsText), expected 5 timeouts of 200 ms")
        s.note("down after \((when - start).wholeMillisecondsText)")
    }

    static let eakRecovery = ConformanceCase(name: "eak-recovery", purpose: "an out-of-order arrival is reported with EAK and the gap is filled before the retransmission timer") { s in
        let parameters = LinkParameters(maximumOutstandingPackets: 8, maximumPacketLength: 64, retransmitTimeout: .milliseconds(2000))
        s.configure(accessory: Scenario.accessory(parameters), device: Scenario.device(parameters))
        guard s.connect() else { return }
        // Lose the second data packet the accessory sends.
        var faults = WireFaults.none
        faults.dropWrites = [s.simulation.outbound.written + 2]
        s.simulation.setFaults(faults, towards: .device)
        let data = Scenario.payload(53 * 6, seed: s.seed)
        let start = s.simulation.now
        do { try s.simulation.send(data, session: 1, from: .accessory) } catch { s.expect(false, "\(error)") }
        s.simulation.run(until: start + .seconds(5)) { $0.deliveredBytes(to: .device, session: 1).count == data.count }
        let took = s.simulation.now - start
        s.expect(s.simulation.deliveredBytes(to: .device, session: 1) == data, "data did not arrive intact")
        s.expect(s.simulation.device.statistics.eaksSent >= 1, "the device sent no EAK")
        s.expect(s.simulation.accessory.statistics.eaksReceived >= 1, "the accessory received no EAK")
        s.expect(took < .milliseconds(2000), "recovery took \(took.wholeMillisecondsText): it waited for the retransmission timer")
        s.note("recovered in \(took.wholeMillisecondsText) with \(s.simulation.device.statistics.eaksSent) EAK")
    }

    static let resetMidStream = ConformanceCase(name: "rst-mid-stream", purpose: "RST ends the link once on both ends; a new synchronisation starts fresh") { s in
        guard s.connect() else { return }
        do { try s.simulation.send(Scenario.payload(20_000, seed: s.seed), session: 1, from: .accessory) } catch { s.expect(false, "\(error)") }
        s.simulation.run(for: .milliseconds(3))
        s.simulation.reset(.accessory)
        s.simulation.run(for: .milliseconds(50))
        s.expect(s.count(.device, where: isDown) == 1, "the device reported \(s.count(.device, where: isDown)) link-downs, expected 1")
        s.expect(s.count(.accessory, where: isDown) == 1, "the accessory reported \(s.count(.accessory, where: isDown)) link-downs, expected 1")
        if case .down(.peerReset)? = s.simulation.events(.device).first(where: isDown) {} else {
            s.expect(false, "the device's reason was not the peer's reset")
        }
        s.expect(s.simulation.accessory.queuedBytes(session: 1) == 0, "queued data survived the reset")
        // Re-synchronise: a fresh connection that works.
        s.simulation.restart(.accessory)
        let up = s.simulation.run(until: s.simulation.now + .seconds(5)) { $0.accessory.isUp && $0.device.isUp }
        s.expect(up, "the link did not come up again after the reset")
        s.expect(s.count(.device, where: isUp) == 2, "the device reported \(s.count(.device, where: isUp)) connections, expected 2")
        if up { s.transfer([(.accessory, 1, Scenario.payload(500, seed: s.seed + 9))]) }
    }

    static let garbageBeforeSync = ConformanceCase(name: "garbage-before-syn", purpose: "stale bytes in the endpoints before SYN are skipped") { s in
        s.configure()
        s.simulation.start()
        var random = SeededRandom(seed: s.seed)
        let stale = (0..<300).map { _ in UInt8(truncatingIfNeeded: random.next()) } + [0xFF, 0x5A, 0x00, 0x40, 0x40, 0x01]
        s.simulation.inject(stale, to: .device)
        s.simulation.inject(stale.reversed(), to: .accessory)
        let up = s.simulation.run(until: .milliseconds(10_000)) { $0.accessory.isUp && $0.device.isUp }
        s.expect(up, "the link did not come up after stale bytes")
        s.expect(s.simulation.device.statistics.bytesSkipped >= 300, "the device skipped only \(s.simulation.device.statistics.bytesSkipped) bytes")
        if up { s.transfer([(.accessory, 1, Scenario.payload(2000, seed: s.seed))]) }
    }

    static let corruptedChecksums = ConformanceCase(name: "corrupted-checksums", purpose: "packets with corrupted headers or payloads are dropped and recovered") { s in
        var faults = WireFaults.none
        faults.corruption = 0.15
        s.configure(outbound: faults, inbound: faults)
        guard s.connect() else { return }
        s.transfer([(.accessory, 1, Scenario.payload(30_000, seed: s.seed)), (.device, 1, Scenario.payload(30_000, seed: s.seed + 1))])
        let corrupt = s.simulation.accessory.statistics.corruptPacketsReceived + s.simulation.device.statistics.corruptPacketsReceived
        let skipped = s.simulation.accessory.statistics.bytesSkipped + s.simulation.device.statistics.bytesSkipped
        s.expect(corrupt + skipped > 0, "no corruption was seen: the fault injection did not work")
        s.note("\(corrupt) corrupt payloads, \(skipped) bytes skipped, \(s.simulation.accessory.statistics.retransmissions) retransmissions")
    }

    static let duplicatesAndReordering = ConformanceCase(name: "duplicates-reordering", purpose: "duplicated and reordered packets are delivered once, in order") { s in
        var faults = WireFaults.none
        faults.duplication = 0.2
        faults.reordering = 0.2
        faults.fragmentation = 0.2
        s.configure(outbound: faults, inbound: faults)
        guard s.connect() else { return }
        s.transfer([(.accessory, 1, Scenario.payload(30_000, seed: s.seed)), (.device, 1, Scenario.payload(30_000, seed: s.seed + 1))])
        let duplicates = s.simulation.accessory.statistics.duplicatesReceived + s.simulation.device.statistics.duplicatesReceived
        let reordered = s.simulation.accessory.statistics.outOfOrderReceived + s.simulation.device.statistics.outOfOrderReceived
        s.expect(duplicates > 0, "no duplicate was received: the fault injection did not work")
        s.expect(reordered > 0, "nothing arrived out of order: the fault injection did not work")
        s.note("\(duplicates) duplicates, \(reordered) out of order")
    }

    static let lossSweep = ConformanceCase(name: "loss-0-30", purpose: "data arrives intact at every loss rate from 0 to 30%") { s in
        var outcomes: [String] = []
        for percent in stride(from: 0, through: 30, by: 5) {
            var faults = WireFaults.none
            faults.loss = Double(percent) / 100
            // Small packets, so that each transfer is many packets and each loss rate bites.
            let parameters = LinkParameters(maximumPacketLength: 128, retransmitTimeout: .milliseconds(300),
                                            cumulativeAckTimeout: .milliseconds(30), maximumRetransmissions: 30)
            var accessory = Scenario.accessory(parameters)
            var device = Scenario.device(parameters)
            accessory.silenceLimit = .seconds(60)
            device.silenceLimit = .seconds(60)
            s.configure(accessory: accessory, device: device, outbound: faults, inbound: faults)
            let failuresBefore = s.failures.count
            guard s.connect(within: .seconds(120)) else {
                outcomes.append("\(percent)%: no link")
                continue
            }
            s.transfer([(.accessory, 1, Scenario.payload(8_000, seed: s.seed + UInt64(percent))),
                        (.device, 1, Scenario.payload(8_000, seed: s.seed + UInt64(percent) + 1))], within: .seconds(600))
            s.expect(s.count(.accessory, where: isDown) == 0, "\(percent)% loss: the link went down")
            outcomes.append("\(percent)%: \(s.failures.count == failuresBefore ? "ok" : "FAILED") \(s.simulation.accessory.statistics.retransmissions + s.simulation.device.statistics.retransmissions) rtx")
        }
        s.notes = [outcomes.joined(separator: ", ")]
    }

    static let interleavedSessions = ConformanceCase(name: "interleaved-sessions", purpose: "control, file-transfer and EA sessions share the link; the stream stays intact and datagrams keep their boundaries") { s in
        s.configure(accessory: Scenario.accessory(LinkParameters(maximumPacketLength: 256)), device: Scenario.device(LinkParameters(maximumPacketLength: 256)))
        guard s.connect() else { return }
        let start = (s.simulation.sent[.device] ?? []).count
        // Datagrams of every size from 1 to a full packet's payload.
        let payload = 256 - LinkPacket.headerLength - 1
        let datagrams = (0..<60).map { index in Scenario.payload(1 + (index * 37) % payload, seed: s.seed + UInt64(index)) }
        var sent: [UInt8: Int] = [2: 0, 3: 0]
        let control = Scenario.payload(6000, seed: s.seed)
        do { try s.simulation.send(control, session: 1, from: .device) } catch { s.expect(false, "\(error)") }
        let deadline = s.simulation.now + .seconds(60)
        while (sent[2]! < datagrams.count || sent[3]! < datagrams.count) && s.simulation.now < deadline {
            for session: UInt8 in [2, 3] where sent[session]! < datagrams.count {
                do throws(LinkSendError) {
                    try s.simulation.send(datagrams[sent[session]!], session: session, from: .device)
                    sent[session]! += 1
                } catch {
                    guard case .queueFull = error.kind else { s.expect(false, "\(error)"); return }
                }
            }
            s.simulation.run(until: s.simulation.now + .milliseconds(2))
        }
        s.simulation.run(until: deadline) { $0.deliveredBytes(to: .accessory, session: 1).count >= control.count }
        s.simulation.run(for: .milliseconds(500))
        s.expect(s.simulation.deliveredBytes(to: .accessory, session: 1) == control, "the control stream arrived changed or incomplete")
        for session: UInt8 in [2, 3] {
            let delivered = s.simulation.deliveredDatagrams(to: .accessory, session: session)
            s.expect(delivered == datagrams, "session \(session): \(delivered.count) of \(datagrams.count) datagrams arrived\(delivered == Array(datagrams.prefix(delivered.count)) ? "" : " with changed boundaries")")
        }
        do throws(LinkSendError) {
            try s.simulation.send([UInt8](repeating: 1, count: payload + 1), session: 2, from: .device)
            s.expect(false, "a datagram larger than a packet was accepted")
        } catch {
            if case .datagramSize = error.kind {} else { s.expect(false, "an oversized datagram failed with \(error)") }
        }
        let sessions = (s.simulation.sent[.device] ?? []).dropFirst(start).compactMap { try? LinkPacket(decoding: $0) }.filter { !$0.payload.isEmpty }.map(\.session)
        let switches = zip(sessions, sessions.dropFirst()).filter { $0 != $1 }.count
        s.expect(switches >= 10, "sessions were not interleaved (\(switches) switches between sessions)")
        s.note("\(switches) session switches, \(datagrams.count) datagrams per datagram session")
    }

    static let messageSpanningPackets = ConformanceCase(name: "message-spanning-packets", purpose: "a message longer than a packet is split and reassembled, nothing truncated") { s in
        let small = LinkParameters(maximumPacketLength: 24)
        s.configure(accessory: Scenario.accessory(small), device: Scenario.device(small))
        guard s.connect() else { return }
        let message = (try? ControlMessage(id: 0x5001, parameters: [.string(1, String(repeating: "Kind of Blue ", count: 40))]).encoded()) ?? []
        s.transfer([(.device, 1, message)])
        var decoder = ControlMessageDecoder()
        decoder.append(s.simulation.deliveredBytes(to: .accessory, session: 1))
        if case .message(let decoded, _)? = decoder.next() {
            s.expect((try? decoded.encoded()) == message, "the reassembled message differs")
        } else {
            s.expect(false, "no message could be decoded from the delivered bytes")
        }
        let packets = (s.simulation.sent[.device] ?? []).filter { $0.count > 9 }.count
        let perPacket = 24 - LinkPacket.headerLength - 1
        let needed = (message.count + perPacket - 1) / perPacket
        s.expect(packets >= needed, "the \(message.count)-byte message went in \(packets) packets; \(perPacket) bytes a packet need \(needed)")
        s.note("\(message.count) bytes in \(packets) packets")
    }

    static let backpressure = ConformanceCase(name: "backpressure", purpose: "a full session queue refuses more (no growth, no loss) and says when it has room") { s in
        var accessory = Scenario.accessory(LinkParameters(maximumOutstandingPackets: 2, maximumPacketLength: 64))
        accessory.sendQueueLimit = 2048
        var slow = WireFaults.none
        slow.bandwidth = 20_000
        s.configure(accessory: accessory, device: Scenario.device(LinkParameters(maximumOutstandingPackets: 2, maximumPacketLength: 64)), outbound: slow, inbound: slow)
        guard s.connect() else { return }
        let data = Scenario.payload(10_000, seed: s.seed)
        var offset = 0
        var refusals = 0
        var largestQueue = 0
        let deadline = s.simulation.now + .seconds(60)
        while offset < data.count && s.simulation.now < deadline {
            let end = min(data.count, offset + 700)
            do throws(LinkSendError) {
                try s.simulation.send(Array(data[offset..<end]), session: 1, from: .accessory)
                offset = end
            } catch {
                guard case .queueFull = error.kind else { s.expect(false, "\(error)"); return }
                refusals += 1
                let writable = s.count(.accessory) { $0 == .sessionWritable(1) }
                s.simulation.run(until: deadline) { sim in sim.events(.accessory).filter { $0 == .sessionWritable(1) }.count > writable }
            }
            largestQueue = max(largestQueue, s.simulation.accessory.queuedBytes(session: 1))
        }
        s.simulation.run(until: deadline) { $0.deliveredBytes(to: .device, session: 1).count >= data.count }
        s.expect(refusals > 0, "the queue never filled: backpressure was not exercised")
        s.expect(largestQueue <= 2048, "the queue grew to \(largestQueue) bytes past its 2048-byte limit")
        s.expect(s.simulation.deliveredBytes(to: .device, session: 1) == data, "data was lost or changed under backpressure")
        do throws(LinkSendError) {
            _ = try s.simulation.send([UInt8](repeating: 0, count: 4096), session: 1, from: .accessory)
            s.expect(false, "a send larger than the queue was accepted")
        } catch {
            if case .tooLarge = error.kind {} else { s.expect(false, "an oversized send failed with \(error)") }
        }
        s.note("\(refusals) refusals, queue peaked at \(largestQueue) bytes")
    }

    static let peerRestart = ConformanceCase(name: "peer-restart", purpose: "a restarted accessory is a new connection: one link-down, then a fresh link-up") { s in
        guard s.connect() else { return }
        s.transfer([(.accessory, 1, Scenario.payload(1000, seed: s.seed))])
        s.simulation.restart(.accessory)
        let up = s.simulation.run(until: s.simulation.now + .seconds(5)) { sim in
            sim.accessory.isUp && sim.device.isUp && sim.events(.device).filter(isUp).count == 2
        }
        s.expect(up, "the link did not come up again after the restart")
        let downs = s.simulation.events(.device).compactMap { event -> LinkDownReason? in if case .down(let r) = event { r } else { nil } }
        s.expect(downs == [.peerRestarted], "the device reported \(downs), expected one peer restart")
        if up { s.transfer([(.accessory, 1, Scenario.payload(1000, seed: s.seed + 1)), (.device, 1, Scenario.payload(1000, seed: s.seed + 2))]) }
    }

    static let silentPeer = ConformanceCase(name: "silent-peer", purpose: "a peer that keeps the link alive and goes silent is declared gone once, at the silence limit; one that never keeps alive is not") { s in
        // A peer that sends nothing on an idle link (many phones and
        // accessories) keeps its link.
        var quietDevice = Scenario.device()
        quietDevice.keepAliveInterval = nil
        var watchful = Scenario.accessory()
        watchful.silenceLimit = .seconds(5)
        s.configure(accessory: watchful, device: quietDevice)
        guard s.connect() else { return }
        s.simulation.run(for: .seconds(30))
        s.expect(s.count(.accessory, where: isDown) == 0, "the accessory dropped an idle peer that sends no keep-alives")

        var accessory = Scenario.accessory()
        accessory.keepAliveInterval = .seconds(1)
        accessory.silenceLimit = .seconds(5)
        var device = Scenario.device()
        device.keepAliveInterval = .seconds(1)
        device.silenceLimit = .seconds(5)
        s.configure(accessory: accessory, device: device)
        guard s.connect() else { return }
        s.simulation.run(for: .seconds(20))
        s.expect(s.count(.accessory, where: isDown) == 0 && s.count(.device, where: isDown) == 0, "an idle link with keep-alives went down")
        var gone = WireFaults.none
        gone.loss = 1
        s.simulation.setFaults(gone, towards: .accessory)
        let start = s.simulation.now
        s.simulation.run(for: .seconds(20))
        let downs = s.simulation.records.filter { $0.role == .accessory && isDown($0.event) }
        s.expect(downs.count == 1, "expected one link-down, got \(downs.count)")
        if let down = downs.first {
            if case .down(.peerSilent) = down.event {} else { s.expect(false, "the reason was \(down.event)") }
            let after = down.time - start
            s.expect(after >= .seconds(4) && after <= .seconds(6), "declared gone after \(after.wholeMillisecondsText), expected about 5 s")
            s.note("declared gone after \(after.wholeMillisecondsText)")
        }
    }

    static let renegotiation = ConformanceCase(name: "renegotiation", purpose: "a SYN on a connected link renegotiates without losing data") { s in
        guard s.connect() else { return }
        let data = Scenario.payload(60_000, seed: s.seed)
        do { try s.simulation.send(data, session: 1, from: .accessory) } catch { s.expect(false, "\(error)") }
        s.simulation.run(for: .milliseconds(2))
        s.expect(s.simulation.accessory.unacknowledgedCount > 0, "no data was in flight when renegotiation began")
        s.simulation.renegotiate()
        s.simulation.run(until: s.simulation.now + .seconds(20)) { sim in
            sim.deliveredBytes(to: .device, session: 1).count >= data.count
                && sim.events(.accessory).contains { if case .renegotiated = $0 { true } else { false } }
                && sim.events(.device).contains { if case .renegotiated = $0 { true } else { false } }
        }
        s.expect(s.count(.accessory) { if case .renegotiated = $0 { true } else { false } } == 1, "the accessory did not report one renegotiation")
        s.expect(s.count(.device) { if case .renegotiated = $0 { true } else { false } } == 1, "the device did not report one renegotiation")
        s.expect(s.count(.device, where: isDown) == 0, "the device reported a link-down")
        let got = s.simulation.deliveredBytes(to: .device, session: 1)
        s.expect(got == data, "\(got.count) of \(data.count) bytes arrived across the renegotiation\(got.count > data.count ? " (duplicated)" : "")")
    }
}
