import Foundation
import Testing
@testable import IAPTrace
import IAPWire

@Suite struct CaptureTests {
    /// A usbmon capture of a short session: packets split across and
    /// coalesced within bulk transfers, plus an unrelated endpoint.
    static func session() throws -> (capture: [UInt8], messagesOut: Int, messagesIn: Int) {
        var writer = UsbmonPcapngWriter()
        var time: Int64 = 1_700_000_000_000_000
        func bulk(_ endpoint: UInt8, _ data: [UInt8], device: UInt8 = 5) {
            time += 250
            writer.bulkTransfer(device: device, endpoint: endpoint, data: data, timestampMicroseconds: time)
        }
        bulk(0x01, DetectSequence.bytes)
        bulk(0x81, DetectSequence.bytes)
        let sync = LinkSynchronization(maximumOutstandingPackets: 4, maximumPacketLength: 4096, retransmitTimeoutMilliseconds: 1000,
                                       cumulativeAckTimeoutMilliseconds: 100, maximumRetransmissions: 5, maximumCumulativeAcks: 2,
                                       sessions: [.init(id: 1, type: .control), .init(id: 2, type: .fileTransfer)])
        bulk(0x01, try LinkPacket(control: .syn, sequence: 10, payload: sync.encoded()).encoded())
        bulk(0x81, try LinkPacket(control: [.syn, .ack], sequence: 20, acknowledgement: 10, payload: sync.encoded()).encoded())
        // A mass-storage-like endpoint on another device: never iAP.
        bulk(0x02, [UInt8](repeating: 0x55, count: 64) + Array("USBC".utf8), device: 9)
        // Out: one message across three transfers.
        let long = try ControlMessage(id: 0x1D01, parameters: [.string(0, String(repeating: "n", count: 200))]).encoded()
        let packet = try LinkPacket(control: .ack, sequence: 11, acknowledgement: 20, session: 1, payload: long).encoded()
        bulk(0x01, Array(packet[0..<50]))
        bulk(0x01, Array(packet[50..<51]))
        bulk(0x01, Array(packet[51...]))
        // In: two packets coalesced in one transfer.
        let a = try LinkPacket(control: .ack, sequence: 21, acknowledgement: 11, session: 1, payload: ControlMessage(id: 0x1D02).encoded()).encoded()
        let b = try LinkPacket(control: .ack, sequence: 22, acknowledgement: 11, session: 1,
                               payload: ControlMessage(id: 0x5001, parameters: [try .group(1, [.uint8(0, 1)])]).encoded()).encoded()
        bulk(0x81, a + b)
        return (writer.bytes, 1, 2)
    }

    @Test func usbmonBulkStreamsAreReassembledPerDirection() throws {
        let (capture, _, _) = try Self.session()
        let (events, input) = try decodeTrace(capture)
        #expect(input.detectedFormat == .pcap)
        let messages = events.compactMap { event -> (TraceDirection?, UInt16, Int?)? in
            if case .message(let info) = event.body { return (event.direction, info.id, event.frame) } else { return nil }
        }
        #expect(messages.map(\.0) == [.out, .in, .in])
        #expect(messages.map(\.1) == [0x1D01, 0x1D02, 0x5001])
        // The out message completes in the completion-less submission of the third transfer.
        #expect(messages.allSatisfy { $0.2 != nil })
        // Nothing from the unrelated endpoint is reported.
        #expect(!events.contains { $0.endpoint?.device == 9 })
        #expect(input.decoder.unidentifiedBytes == 68)
        #expect(!events.contains { $0.kind == "skipped" })
        let first = try parseJSON(TraceJSON.line(for: events[0]))
        #expect(first["frame"] as? Int == 1)
        #expect(first["endpoint"] as? Int == 1)
        #expect(first["dir"] as? String == "out")
    }

    @Test func captureOutputDoesNotDependOnReadSizes() throws {
        let (capture, _, _) = try Self.session()
        let whole = jsonLines(try decodeTrace(capture).events)
        for chunk in [1, 7, 100] {
            #expect(jsonLines(try decodeTrace(capture, chunk: chunk).events) == whole)
        }
    }

    /// Rewrites a pcapng of link type 220 as classic pcap of link type 189 (48-byte headers).
    static func classicPcap(from capture: [UInt8], bigEndian: Bool) throws -> [UInt8] {
        var reader = CaptureReader()
        var records: [CaptureRecord] = []
        capture.withUnsafeBytes { reader.append($0) }
        while let record = try reader.next() { records.append(record) }
        var out: [UInt8] = []
        func u32(_ value: UInt32) { out += bigEndian ? withUnsafeBytes(of: value.bigEndian, Array.init) : withUnsafeBytes(of: value.littleEndian, Array.init) }
        func u16(_ value: UInt16) { out += bigEndian ? withUnsafeBytes(of: value.bigEndian, Array.init) : withUnsafeBytes(of: value.littleEndian, Array.init) }
        u32(0xA1B2_C3D4); u16(2); u16(4); u32(0); u32(0); u32(65535); u32(189)
        for record in records {
            var data = Array(record.data)
            data.removeSubrange(48..<64)
            if bigEndian {
                // Swap every multi-byte usbmon field to the big-endian capturing host's order.
                for (offset, width) in [(0, 8), (12, 2), (16, 8), (24, 4), (28, 4), (32, 4), (36, 4)] {
                    data[offset..<offset + width].reverse()
                }
            }
            u32(1); u32(0); u32(UInt32(data.count)); u32(UInt32(data.count))
            out += data
        }
        return out
    }

    @Test func classicPcapInBothByteOrders() throws {
        let (capture, _, _) = try Self.session()
        let reference = try decodeTrace(capture).events.map(\.kind)
        for bigEndian in [false, true] {
            let pcap = try Self.classicPcap(from: capture, bigEndian: bigEndian)
            let (events, input) = try decodeTrace(pcap)
            #expect(input.detectedFormat == .pcap)
            #expect(events.map(\.kind) == reference, "big endian: \(bigEndian)")
        }
    }

    @Test func truncatedCaptureKeepsWhatWasDecoded() throws {
        let (capture, _, _) = try Self.session()
        let cut = Array(capture.dropLast(30))
        let (events, _) = try decodeTrace(cut)
        #expect(events.contains { $0.kind == "message" })
        let last = try #require(events.last { $0.kind == "skipped" })
        guard case .skipped(let info) = last.body else {
            Issue.record("expected the last skipped event to be skipped, got \(last.body)")
            return
        }
        #expect(info.reason == "truncated")
    }

    @Test func nonUsbmonCapturesAndGarbageAreClearErrors() throws {
        // A classic pcap of Ethernet (link type 1) with one record.
        var ethernet: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0] + [UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0, 0, 1, 0, 0, 0]
        ethernet += [0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4]
        #expect { try decodeTrace(ethernet) } throws: { error in "\(error)".contains("none of Linux usbmon") }
        // A pcapng block whose length cannot be right.
        let broken: [UInt8] = [0x0A, 0x0D, 0x0D, 0x0A, 0x05, 0x00, 0x00, 0x00, 0x4D, 0x3C, 0x2B, 0x1A]
        #expect { try decodeTrace(broken + [UInt8](repeating: 0, count: 4096)) } throws: { error in "\(error)".contains("impossible length") }
        // A record claiming 4 GiB is refused without allocating it.
        var huge: [UInt8] = [0xD4, 0xC3, 0xB2, 0xA1, 2, 0, 4, 0] + [UInt8](repeating: 0, count: 8) + [0xFF, 0xFF, 0, 0, 220, 0, 0, 0]
        huge += [0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]
        #expect { try decodeTrace(huge) } throws: { error in "\(error)".contains("over the") }
    }

    /// A phone answering a legacy head unit over bulk endpoints (as `iapctl
    /// phone --trace` records it): iAP1 frames with their sync byte, both ways.
    @Test func bulkTransfersOfIAP1FramesAreDecoded() throws {
        var writer = UsbmonPcapngWriter()
        let identify = try IAP1Packet(lingo: 0, command: 0x13, data: [0, 0, 0, 0x11] + [UInt8](repeating: 0, count: 8)).encoded(sync: true)
        let ack = try IAP1Packet(lingo: 0, command: 0x02, data: [0x00, 0x13]).encoded(sync: true)
        writer.bulkTransfer(device: 2, endpoint: 0x01, data: identify, timestampMicroseconds: 1)
        writer.bulkTransfer(device: 2, endpoint: 0x81, data: ack, timestampMicroseconds: 2)
        // A frame-shaped run in other data (checksum right, no command the catalog knows) proves nothing.
        writer.bulkTransfer(device: 9, endpoint: 0x02, data: [0xFF, 0x55, 0x02, 0x7E, 0x7F, 0x01], timestampMicroseconds: 3)
        let (events, _) = try decodeTrace(writer.bytes)
        let frames = events.compactMap { event -> String? in
            if case .iap1(let info) = event.body { return info.name } else { return nil }
        }
        #expect(frames == ["IdentifyDeviceLingoes", "iPodAck"])
        #expect(!events.contains { $0.endpoint?.device == 9 })
    }

    @Test func hidInterruptTransfersCarryIAP1() throws {
        var writer = UsbmonPcapngWriter()
        // A 60-byte packet split over 3 reports of 1 + 1 + 30 bytes: first, middle, last.
        let frame = try IAP1Packet(lingo: 4, command: 0x0021, data: Array("Blue in Green".utf8) + [0]).encoded()
        writer.interruptTransfer(device: 3, endpoint: 0x83, data: [0x05, 0x02] + Array(frame[0..<10]), timestampMicroseconds: 1)
        writer.interruptTransfer(device: 3, endpoint: 0x83, data: [0x05, 0x01] + Array(frame[10...]) + [0, 0, 0], timestampMicroseconds: 2)
        // A keyboard on the same bus: boot-protocol reports, never iAP1.
        for key: UInt8 in [0x04, 0x00, 0x05, 0x00] {
            writer.interruptTransfer(device: 7, endpoint: 0x81, data: [0, 0, key, 0, 0, 0, 0, 0], timestampMicroseconds: 3)
        }
        let (events, _) = try decodeTrace(writer.bytes, options: .init(hid: true))
        let frames = events.compactMap { event -> IAP1Info? in
            if case .iap1(let info) = event.body { return info } else { return nil }
        }
        #expect(frames.count == 1)
        #expect(frames.first?.name == "ReturnIndexedPlayingTrackTitle")
        #expect(frames.first?.checksumOK == true)
        #expect(events.first?.direction == .in)
        #expect(events.first?.frame == 4)
        #expect(!events.contains { $0.endpoint?.device == 7 })
    }
}
