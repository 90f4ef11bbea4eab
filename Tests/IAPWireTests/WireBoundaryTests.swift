import Testing
@testable import IAPWire

/// Exact boundaries of the decoders: a length field is the whole truth, never
/// a lower bound; a maximum applies however the bytes arrive; a frame too
/// short to hold its command is no frame.
@Suite struct WireBoundaryTests {
    /// `LinkPacket(decoding:)` decodes exactly one packet: a byte after it
    /// (a second packet's first byte, a read that went on too long) is a
    /// length mismatch, not ignored.
    @Test func onePacketMeansNoTrailingBytes() throws {
        let withPayload = try LinkPacket(control: .ack, sequence: 5, acknowledgement: 2, session: 1, payload: [1, 2, 3]).encoded()
        let bare = try LinkPacket(control: .ack, sequence: 5, acknowledgement: 2).encoded()
        for packet in [withPayload, bare] {
            #expect(try LinkPacket(decoding: packet).sequence == 5)
            for extra in [[UInt8(0x00)], [0xFF], [0xFF, 0x5A]] {
                do {
                    let decoded = try LinkPacket(decoding: packet + extra)
                    Issue.record("\(packet.count)-byte packet plus \(extra) accepted as \(decoded)")
                } catch {
                    #expect(error.kind == .badLength, "\(error)")
                }
            }
        }
    }

    /// `ControlMessage(decoding:)` of bytes longer than the message's length
    /// field is a length mismatch, even when the extra bytes would parse as
    /// one more parameter: the length field, not the buffer, says where the
    /// message ends.
    @Test func messageLengthFieldShorterThanItsBytesIsBadLength() throws {
        let message = try ControlMessage(id: 0x1D01, parameters: [.uint16(0, 7)]).encoded()
        #expect(try ControlMessage(decoding: message).parameters == [.uint16(0, 7)])
        let anotherParameter = try ControlMessage(id: 0, parameters: [.uint8(1, 9)]).encoded().dropFirst(ControlMessage.headerLength)
        for extra in [[UInt8(0x00)], Array(anotherParameter)] {
            do {
                let decoded = try ControlMessage(decoding: message + extra)
                Issue.record("\(extra.count) bytes past the length field accepted: \(decoded)")
            } catch {
                #expect(error.kind == .badLength, "\(error)")
            }
        }
    }

    /// A malformed message whose claimed length covers a whole valid message
    /// (a corrupted length field, or a header fragment left by a lost packet)
    /// must not hide it: the decoder resumes right after the bad header.
    @Test func malformedMessageSpanningAValidOneDoesNotHideIt() throws {
        let inner = try ControlMessage(id: 0x1D02, parameters: [.none(1)]).encoded()
        // 40 40, a length covering itself and `inner`, id 0x5001; its "parameters"
        // are `inner`, whose first two bytes (40 40) claim a 16448-byte parameter.
        let outerLength = ControlMessage.headerLength + inner.count
        let outer: [UInt8] = [0x40, 0x40, 0x00, UInt8(outerLength), 0x50, 0x01] + inner
        let after = try ControlMessage(id: 0x1D03).encoded()
        for chunk in [1, 4, outer.count + after.count] {
            let events = ControlMessageDecoderTests.decodeAll(outer + after, chunk: chunk)
            guard case .malformed(0x5001, 0, outerLength, _)? = events.first else {
                Issue.record("chunk \(chunk): expected the outer message reported malformed first, got \(events)")
                continue
            }
            let messages = events.compactMap { event -> ControlMessage? in
                if case .message(let message, _) = event { return message } else { return nil }
            }
            #expect(messages == [ControlMessage(id: 0x1D02, parameters: [.none(1)]), ControlMessage(id: 0x1D03)], "chunk \(chunk): \(events)")
            #expect(events.contains(.message(ControlMessage(id: 0x1D02, parameters: [.none(1)]), offset: ControlMessage.headerLength)),
                    "chunk \(chunk): \(events)")
        }
    }

    /// A complete packet with valid checksums but longer than the configured
    /// maximum is refused as `bad_length` whether it arrives whole in one
    /// append or byte by byte; one exactly at the maximum is decoded.
    @Test func wholePacketsOverTheMaximumAreRefusedHoweverTheyArrive() throws {
        let maximum = 64
        // Payload bytes that start nothing (no FF, no 55), so the rest is plain garbage.
        let over = try LinkPacket(control: .ack, sequence: 1, session: 1, payload: [UInt8](repeating: 0x11, count: maximum - 9)).encoded()
        let atMaximum = try LinkPacket(control: .ack, sequence: 2, session: 1, payload: [UInt8](repeating: 0x22, count: maximum - 10)).encoded()
        #expect(over.count == maximum + 1 && atMaximum.count == maximum)
        for chunks in [[Int.max], [1], [over.count]] {
            let (items, statistics) = decodeStream(over + atMaximum, chunks: chunks, configuration: .init(maximumPacketLength: maximum))
            let sequences = items.compactMap { item -> UInt8? in
                if case .packet(let header, _, true, _) = item { return header.sequence } else { return nil }
            }
            #expect(sequences == [2], "chunks \(chunks): \(items)")
            #expect(items.first == .skipped(.init(offset: 0, count: 1, reason: .badLength)), "chunks \(chunks): \(items)")
            #expect(statistics.skippedBytes(.badLength) == 1, "chunks \(chunks)")
            #expect(statistics.skippedBytes(.garbage) == over.count - 1, "chunks \(chunks)")
        }
    }

    /// An iAP1 payload is at least a lingo and a command: `FF 55 01 xx cs`
    /// (and `55 01 xx cs`) holds a lingo only, so it is no frame even with a
    /// valid checksum.
    @Test func iap1FrameWithoutACommandIsNotAFrame() {
        let lingo: UInt8 = 0x00
        let checksum = Checksum.of([0x01, lingo])
        let withSync: [UInt8] = [0xFF, 0x55, 0x01, lingo, checksum]
        let withoutSync: [UInt8] = [0x55, 0x01, lingo, checksum]
        for (name, bytes) in [("with sync", withSync), ("without sync", withoutSync)] {
            let (items, statistics) = decodeStream(bytes)
            #expect(!items.contains { if case .iap1 = $0 { true } else { false } }, "\(name): \(items)")
            #expect(statistics.iap1Frames == 0, "\(name)")
            #expect(statistics.totalSkippedBytes == bytes.count, "\(name)")
        }
        // With sync the frame start is refused for its length.
        #expect(decodeStream(withSync).items.first == .skipped(.init(offset: 0, count: 1, reason: .badLength)))
        // The same with a command byte is a frame.
        let twoBytes: [UInt8] = [0xFF, 0x55, 0x02, lingo, 0x13, Checksum.of([0x02, lingo, 0x13])]
        #expect(decodeStream(twoBytes).statistics.iap1Frames == 1)
    }

    /// Only the Extended Interface lingo (0x04) has 16-bit command ids; every
    /// other lingo, the ones above it included (Digital Audio 0x0A, say), has
    /// one command byte.
    @Test func lingoesAboveExtendedInterfaceHaveOneByteCommands() throws {
        // Digital Audio TrackNewAudioAttributes (0x0A 0x04): sample rate 44100,
        // Sound Check 0, volume adjustment 0.
        let data: [UInt8] = [0x00, 0x00, 0xAC, 0x44] + [UInt8](repeating: 0, count: 8)
        let frame = try IAP1Packet(lingo: 0x0A, command: 0x04, data: data).encoded(sync: true)
        #expect(frame.prefix(5) == [0xFF, 0x55, 14, 0x0A, 0x04])
        let items = decodeStream(frame).items
        guard items.count == 1, case .iap1(let info, 0, let payload) = items[0] else {
            Issue.record("expected one iAP1 frame, got \(items)")
            return
        }
        #expect(info.checksumValid)
        let packet = try IAP1Packet(payload: payload, hasTransactionID: false)
        #expect(packet.lingo == 0x0A && packet.command == 0x04 && packet.data == data)
        var tracker = IAP1TransactionTracker()
        #expect(try tracker.packet(fromPayload: payload).command == 0x04)
        for lingo: UInt8 in [0x00, 0x02, 0x05, 0x06, 0x07, 0x0A, 0x0C] {
            #expect(IAP1Packet.commandWidth(lingo: lingo) == 1, "lingo \(lingo)")
            let decoded = try IAP1Packet(payload: [lingo, 0x03, 0xAA], hasTransactionID: false)
            #expect(decoded.command == 0x03 && decoded.data == [0xAA], "lingo \(lingo)")
        }
        #expect(try IAP1Packet(payload: [0x04, 0x00, 0x1C], hasTransactionID: false).command == 0x001C)
    }
}
