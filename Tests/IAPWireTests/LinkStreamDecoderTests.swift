import Testing
@testable import IAPWire

@Suite struct LinkStreamDecoderTests {
    /// A stream with everything the decoder must cope with: detect, good
    /// packets, garbage, a corrupt header, a corrupt payload, iAP1 frames and a
    /// truncated packet at the end.
    static func mixedStream() throws -> [UInt8] {
        var generator = SeededGenerator(seed: 7)
        var bytes = DetectSequence.bytes
        bytes += [0x00, 0x13, 0x37]
        for index in 0..<20 {
            let packet = LinkPacket(control: .ack, sequence: UInt8(index), acknowledgement: 1, session: 1,
                                    payload: .random(count: index * 7, using: &generator))
            var encoded = try packet.encoded()
            if index == 5 { encoded[8] ^= 0x40 }                 // corrupt header
            if index == 9 { encoded[encoded.count - 2] ^= 0x01 } // corrupt payload
            bytes += encoded
            if index % 6 == 0 { bytes += .random(count: 5, using: &generator) }
        }
        bytes += try IAP1Packet(lingo: 0, command: 0x02, data: [0x04, 0xEE]).encoded()
        bytes += try IAP1Packet(lingo: 4, command: 0x0029, data: [0x01]).encoded(sync: true)
        bytes += try LinkPacket(control: .ack, sequence: 99, payload: [1, 2, 3, 4]).encoded().prefix(11)
        return bytes
    }

    @Test func outputIsIndependentOfSplits() throws {
        let bytes = try Self.mixedStream()
        let whole = decodeStream(bytes)
        let byteByByte = decodeStream(bytes, chunks: [1])
        #expect(whole.items == byteByByte.items)
        #expect(whole.statistics == byteByByte.statistics)
        var generator = SeededGenerator(seed: 3)
        for _ in 0..<30 {
            let chunks = (0..<8).map { _ in Int.random(in: 1...40, using: &generator) }
            let split = decodeStream(bytes, chunks: chunks)
            #expect(split.items == whole.items, "chunks \(chunks)")
        }
    }

    @Test func everyByteIsAccountedFor() throws {
        let bytes = try Self.mixedStream()
        let (items, statistics) = decodeStream(bytes)
        var covered = 0
        for item in items {
            switch item {
            case .detect: covered += 6
            case .packet(let header, _, let valid, _): covered += valid ? header.length : LinkPacket.headerLength
            case .iap1(let info, _, _): covered += info.checksumValid ? info.encodedLength : (info.hasSync ? 3 : 2)
            case .skipped(let skip): covered += skip.count
            }
        }
        #expect(covered == bytes.count)
        #expect(statistics.packets == 20 - 1)         // the corrupt header is not a packet
        #expect(statistics.detects == 1)
        #expect(statistics.iap1Frames == 2)
        #expect(statistics.checksumErrors == 2)
        #expect(statistics.skippedBytes(.truncated) == 11)
        #expect(statistics.skippedBytes(.badHeaderChecksum) == 1)
        #expect(statistics.skippedBytes(.badPayloadChecksum) > 0)
    }

    @Test func packetsAfterACorruptOneAreFound() throws {
        let good = try (0..<3).map { try LinkPacket(control: .ack, sequence: UInt8($0), session: 1, payload: [UInt8](repeating: UInt8($0), count: 40)).encoded() }
        // A packet whose length claims more than arrived: its tail was lost and the next packet follows at once.
        let truncated = Array(try LinkPacket(control: .ack, sequence: 9, session: 1, payload: [UInt8](repeating: 7, count: 60)).encoded().prefix(30))
        let stream = good[0] + truncated + good[1] + good[2]
        let packets = decodeStream(stream).items.compactMap { item -> UInt8? in
            if case .packet(let header, _, true, _) = item { return header.sequence } else { return nil }
        }
        #expect(packets == [0, 1, 2])
    }

    @Test func lengthsBeyondTheMaximumAreNotWaitedFor() throws {
        // A valid header claiming 65535 bytes, on a link whose maximum is 1024:
        // refused at once, and the packet right after it is decoded.
        var header: [UInt8] = [0xFF, 0x5A, 0xFF, 0xFF, 0x40, 0, 0, 1]
        header.append(Checksum.of(header))
        let next = try LinkPacket(control: .ack, sequence: 1, session: 1, payload: [1, 2, 3]).encoded()
        var decoder = LinkStreamDecoder(configuration: .init(maximumPacketLength: 1024))
        decoder.append(header + next)
        var sawPacket = false
        while let event = decoder.next() {
            if case .packet(let found, _, true) = event { sawPacket = found.sequence == 1 }
        }
        #expect(sawPacket)
        #expect(decoder.statistics.skippedBytes(.badLength) == 1)
        #expect(decoder.bufferedByteCount == 0)
    }

    @Test func memoryStaysBoundedUnderEndlessGarbage() {
        var decoder = LinkStreamDecoder(configuration: .init(maximumPacketLength: 512))
        var generator = SeededGenerator(seed: 11)
        var largestBuffer = 0
        for _ in 0..<2000 {
            decoder.append([UInt8].random(count: 997, using: &generator))
            while decoder.next() != nil {}
            largestBuffer = max(largestBuffer, decoder.bufferedByteCount)
        }
        // Never more than one candidate packet is held.
        #expect(largestBuffer <= 512)
        #expect(decoder.statistics.totalSkippedBytes + decoder.bufferedByteCount + decoder.statistics.packets * 9 <= 2000 * 997)
    }

    @Test func detectAndIAP1OnlyAnswers() {
        // The accessory sends detect; an iAP1-only device answers with iPodAck.
        let answer: [UInt8] = [0x55, 0x04, 0x00, 0x02, 0x04, 0xEE, 0x08]
        let items = decodeStream(DetectSequence.bytes + answer).items
        #expect(items.count == 2)
        #expect(items.first == .detect(0))
        guard case .iap1(let info, 6, let payload) = items.last else {
            Issue.record("no iAP1 frame in \(items)")
            return
        }
        #expect(info.checksumValid && !info.hasSync)
        #expect(payload == [0x00, 0x02, 0x04, 0xEE])
        // With iAP1 recognition off, the same bytes are garbage.
        let plain = decodeStream(answer, configuration: .init(recognizesIAP1: false))
        #expect(plain.statistics.skippedBytes(.garbage) == answer.count)
    }

    @Test func garbageRunsAreMergedAcrossAppends() {
        var decoder = LinkStreamDecoder()
        decoder.append([1, 2, 3])
        #expect(decoder.next() == nil)
        decoder.append([4, 5])
        #expect(decoder.next() == nil)
        decoder.finish()
        #expect(decoder.next() == .skipped(.init(offset: 0, count: 5, reason: .garbage)))
        #expect(decoder.next() == nil)
    }

    @Test func resetStartsOver() throws {
        var decoder = LinkStreamDecoder()
        decoder.append([0xFF, 0x5A, 0x00])
        #expect(decoder.next() == nil)
        decoder.reset()
        let packet = try LinkPacket(control: .ack, sequence: 3).encoded()
        decoder.append(packet)
        guard case .packet(let header, _, true) = decoder.next() else {
            Issue.record("packet not found after reset")
            return
        }
        #expect(header.sequence == 3)
    }
}

@Suite struct CorruptionSweepTests {
    /// Flips every bit of a packet in turn, between two good packets: the
    /// decoder never loses the packets around it and never delivers a
    /// corrupted payload as valid.
    @Test func everySingleBitFlipIsCaughtAndContained() throws {
        let before = try LinkPacket(control: .ack, sequence: 1, session: 1, payload: Array("before".utf8)).encoded()
        let target = LinkPacket(control: .ack, sequence: 2, acknowledgement: 7, session: 1, payload: Array("the payload under test".utf8))
        let after = try LinkPacket(control: .ack, sequence: 3, session: 1, payload: Array("after".utf8)).encoded()
        let encoded = try target.encoded()
        for bit in 0..<(encoded.count * 8) {
            var corrupted = encoded
            corrupted[bit / 8] ^= 1 << (bit % 8)
            let items = decodeStream(before + corrupted + after, configuration: .init(maximumPacketLength: 512)).items
            let valid = items.compactMap { item -> (UInt8, [UInt8])? in
                if case .packet(let header, _, true, let payload) = item { return (header.sequence, payload) } else { return nil }
            }
            #expect(valid.first?.0 == 1, "bit \(bit)")
            #expect(valid.last?.0 == 3, "bit \(bit): the packet after the corruption was lost")
            // Whatever else was accepted must not be the target with a changed payload.
            for (sequence, payload) in valid where sequence == 2 {
                #expect(payload == target.payload, "bit \(bit): corrupted payload accepted")
            }
        }
    }
}
