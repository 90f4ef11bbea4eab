import Testing
@testable import IAPWire

@Suite struct LinkPacketTests {
    @Test func wiomocSynHeaderDecodes() throws {
        // wiomoc/iap2 test vector: a SYN header with seq 43, length 26.
        let bytes = try Fixture("public/wiomoc-syn-header.hex").first
        let events = decodeStream(bytes).items
        // Only the header is given: the stream ends before the payload.
        #expect(events == [.skipped(.init(offset: 0, count: 9, reason: .truncated))])
        #expect(Checksum.of(bytes[0..<8]) == bytes[8])
        #expect(bytes[4] == LinkControl.syn.rawValue && bytes[5] == 43)
    }

    @Test func wiomocCorruptHeadersAreRejected() throws {
        for name in ["public/wiomoc-syn-header-bad-checksum.hex", "public/wiomoc-syn-header-bad-start.hex"] {
            let bytes = try Fixture(name).first
            #expect(throws: WireError.self) { try LinkPacket(decoding: bytes + [UInt8](repeating: 0, count: 17)) }
            let (items, stats) = decodeStream(bytes)
            #expect(items.allSatisfy { if case .skipped = $0 { true } else { false } }, "\(name)")
            #expect(stats.totalSkippedBytes == bytes.count)
            #expect(stats.packets == 0)
        }
    }

    @Test func realFlirOneSynDecodesEveryField() throws {
        let bytes = try Fixture("public/flirone-real-syn.hex").first
        let packet = try LinkPacket(decoding: bytes)
        #expect(packet.control == .syn)
        #expect(packet.sequence == 0x74)
        #expect(packet.acknowledgement == 0 && packet.session == 0)
        let sync = try LinkSynchronization(decoding: packet.payload)
        #expect(sync.version == 1)
        #expect(sync.maximumOutstandingPackets == 127)
        #expect(sync.maximumPacketLength == 65535)
        #expect(sync.retransmitTimeoutMilliseconds == 2000)
        #expect(sync.cumulativeAckTimeoutMilliseconds == 50)
        #expect(sync.maximumRetransmissions == 30)
        #expect(sync.maximumCumulativeAcks == 1)
        #expect(sync.sessions == [LinkSessionDescriptor(id: 1, type: .control), LinkSessionDescriptor(id: 2, type: .externalAccessory)])
        #expect(sync.violations.isEmpty)
        // Re-encoding gives the captured bytes back.
        #expect(try packet.encoded() == bytes)
    }

    @Test func realFlirOneSynCorruptionsAreCaught() throws {
        let header = try Fixture("public/flirone-real-syn-bad-header-checksum.hex").first
        #expect(throws: WireError.self) { try LinkPacket(decoding: header) }
        let payload = try Fixture("public/flirone-real-syn-bad-payload-checksum.hex").first
        do {
            _ = try LinkPacket(decoding: payload)
            Issue.record("a bad payload checksum was accepted")
        } catch {
            #expect(error.kind == .badPayloadChecksum)
        }
        let items = decodeStream(payload).items
        guard case .packet(_, 0, false, _) = items.first else {
            Issue.record("expected a packet flagged with a bad payload checksum, got \(items)")
            return
        }
    }

    @Test func bareAckAndLengthTen() throws {
        let ack = LinkPacket(control: .ack, sequence: 5, acknowledgement: 9)
        let bytes = try ack.encoded()
        #expect(bytes.count == 9)
        #expect(try LinkPacket(decoding: bytes) == ack)
        // Length 10: a checksum byte covering nothing; accepted when it is 00.
        var ten: [UInt8] = [0xFF, 0x5A, 0x00, 0x0A, 0x40, 0x01, 0x02, 0x03]
        ten.append(Checksum.of(ten))
        #expect(try LinkPacket(decoding: ten + [0x00]).payload == [])
        #expect(throws: WireError.self) { try LinkPacket(decoding: ten + [0x01]) }
    }

    @Test func encodeRefusesOversizedPayload() {
        let packet = LinkPacket(control: .ack, payload: [UInt8](repeating: 1, count: LinkPacket.maximumPayloadLength + 1))
        #expect(throws: WireError.self) { try packet.encoded() }
        let largest = LinkPacket(control: .ack, payload: [UInt8](repeating: 1, count: LinkPacket.maximumPayloadLength))
        #expect((try? largest.encoded())?.count == LinkPacket.maximumLength)
    }

    @Test func randomPacketsRoundTrip() throws {
        var generator = SeededGenerator(seed: 1)
        for _ in 0..<500 {
            let length = Int.random(in: 0...300, using: &generator)
            let packet = LinkPacket(
                control: LinkControl(rawValue: UInt8.random(in: 0...255, using: &generator) & 0xF8),
                sequence: .random(in: 0...255, using: &generator), acknowledgement: .random(in: 0...255, using: &generator),
                session: .random(in: 0...255, using: &generator), payload: .random(count: length, using: &generator))
            let bytes = try packet.encoded()
            #expect(try LinkPacket(decoding: bytes) == packet)
            let items = decodeStream(bytes, configuration: .init(recognizesIAP1: false)).items
            #expect(items == [.packet(packet.header, 0, true, packet.payload)])
        }
    }

    @Test func controlNamesListEveryBit() {
        #expect(LinkControl([.syn, .ack]).names == ["SYN", "ACK"])
        #expect(LinkControl(rawValue: 0xFF).names == ["SYN", "ACK", "EAK", "RST", "SLP", "0x7"])
        #expect(LinkControl().description == "-")
    }
}

@Suite struct LinkSynchronizationTests {
    @Test func wiomocPayloadDecodes() throws {
        let bytes = try Fixture("public/wiomoc-link-sync-payload.hex").first
        let sync = try LinkSynchronization(decoding: bytes)
        #expect(sync.encoded() == bytes)
        #expect(sync.version == 1)
    }

    @Test func zeroAckForm() throws {
        let sync = LinkSynchronization(maximumOutstandingPackets: 1, maximumPacketLength: 1024, retransmitTimeoutMilliseconds: 0,
                                       cumulativeAckTimeoutMilliseconds: 0, maximumRetransmissions: 0, maximumCumulativeAcks: 0,
                                       sessions: [.init(id: 1, type: .control)])
        let decoded = try LinkSynchronization(decoding: sync.encoded())
        #expect(decoded.isZeroAck)
        #expect(decoded.violations.isEmpty)
    }

    @Test func violationsNameEachProblem() {
        let sync = LinkSynchronization(version: 2, maximumOutstandingPackets: 0, maximumPacketLength: 23, retransmitTimeoutMilliseconds: 19,
                                       cumulativeAckTimeoutMilliseconds: 15, maximumRetransmissions: 31, maximumCumulativeAcks: 5,
                                       sessions: [.init(id: 1, type: .control), .init(id: 1, type: .fileTransfer)])
        let problems = sync.violations
        #expect(problems.count == 8, "\(problems)")
        #expect(problems.contains { $0.contains("link version 2") })
        #expect(problems.contains { $0.contains("max outstanding packets 0") })
        #expect(problems.contains { $0.contains("max packet length 23") })
        #expect(problems.contains { $0.contains("retransmission timeout 19") })
        #expect(problems.contains { $0.contains("exceeds half") })
        #expect(problems.contains { $0.contains("max retransmissions 31") })
        #expect(problems.contains { $0.contains("max cumulative ACKs 5") })
        #expect(problems.contains { $0.contains("session id 1 is listed twice") })
    }

    @Test func malformedPayloadsAreErrors() {
        #expect(throws: WireError.self) { try LinkSynchronization(decoding: [1, 2, 3]) }
        #expect(throws: WireError.self) { try LinkSynchronization(decoding: [UInt8](repeating: 1, count: 12)) }
    }
}
