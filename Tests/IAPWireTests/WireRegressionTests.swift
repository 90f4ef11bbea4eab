import Testing
@testable import IAPWire

/// Issue 8: decoding rules whose loss the suite did not notice.
@Suite struct WireRegressionTests {
    /// After a bad header checksum the stream decoder gives up one byte (the
    /// FF) and rescans from the next: the bytes after it are garbage up to the
    /// next FF, where a packet is found.
    @Test func badHeaderResynchronisesOneByteOn() throws {
        let good = try LinkPacket(control: .ack, sequence: 3, acknowledgement: 9).encoded()
        var bad = good
        bad[8] = bad[8] &+ 1 // header checksum wrong
        for chunks in [[Int.max], [1], [3, 5]] {
            let (items, statistics) = decodeStream(bad + good, chunks: chunks)
            #expect(items.first == .skipped(.init(offset: 0, count: 1, reason: .badHeaderChecksum)), "chunks \(chunks)")
            #expect(items.dropFirst().first == .skipped(.init(offset: 1, count: good.count - 1, reason: .garbage)), "chunks \(chunks)")
            #expect(items.count == 3)
            guard case .packet(let header, let offset, true, _)? = items.last else {
                Issue.record("no valid packet after the bad header: \(items)")
                continue
            }
            #expect(header.sequence == 3 && offset == good.count)
            #expect(statistics.checksumErrors == 1)
        }
    }

    /// A parameter's length is validated, never clamped: shorter than its
    /// 4-byte header, or longer than what remains, the message is malformed.
    @Test(arguments: [UInt16(0), 1, 2, 3, 9, 0xFFFF])
    func parameterLengthIsValidatedNotClamped(_ claimed: UInt16) throws {
        // Message 0x5001, one parameter (id 1) with 4 data bytes, its length field replaced.
        let body: [UInt8] = [UInt8(claimed >> 8), UInt8(claimed & 0xFF), 0x00, 0x01, 0xAA, 0xBB, 0xCC, 0xDD]
        let length = ControlMessage.headerLength + body.count
        let message: [UInt8] = [0x40, 0x40, 0x00, UInt8(length), 0x50, 0x01] + body
        #expect(throws: WireError.self) { try Parameter.list(decoding: body) }
        do {
            let decoded = try ControlMessage(decoding: message)
            Issue.record("parameter length \(claimed) accepted: \(decoded)")
        } catch {
            #expect(error.kind == (claimed < 4 ? .badLength : .truncated), "\(error)")
        }
        var decoder = ControlMessageDecoder()
        decoder.append(message)
        guard case .malformed(0x5001, 0, length, _)? = decoder.next() else {
            Issue.record("the decoder did not report the message as malformed")
            return
        }
        // The correct length decodes.
        var fixed = message
        fixed[6] = 0
        fixed[7] = 8
        #expect(try ControlMessage(decoding: fixed).parameters == [Parameter(id: 1, data: [0xAA, 0xBB, 0xCC, 0xDD])])
    }

    /// The iAP1 checksum covers the length byte(s): the small-form vectors of
    /// oandrew/ipod are produced exactly by the encoder, and a frame whose
    /// checksum leaves the length out is rejected by both parsers.
    @Test func iap1ChecksumCoversTheLength() throws {
        let withData = try Fixture("public/oandrew-iap1-small-with-data.hex").first
        let noData = try Fixture("public/oandrew-iap1-small-no-data.hex").first
        #expect(try IAP1Packet(lingo: 1, command: 2, data: [0xFD]).encoded() == withData)
        #expect(try IAP1Packet(lingo: 1, command: 2, data: []).encoded() == noData)
        // 55 03 01 02 fd, checksum over 01 02 fd only.
        let lengthLeftOut: [UInt8] = [0x55, 0x03, 0x01, 0x02, 0xFD, UInt8(truncatingIfNeeded: 0 &- (0x01 &+ 0x02 &+ 0xFD))]
        #expect(IAP1Frame.parse(lengthLeftOut, at: 0)?.checksumValid == false)
        #expect(IAP1Frame.parse(withData, at: 0)?.checksumValid == true)
        let synced = [0xFF] + lengthLeftOut
        let (items, _) = decodeStream(synced)
        #expect(!items.contains { if case .iap1(let info, _, _) = $0 { info.checksumValid } else { false } }, "\(items)")
    }
}
