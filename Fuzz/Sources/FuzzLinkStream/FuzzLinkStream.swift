// Fuzz entry point for LinkStreamDecoder (iAP2 link packets, detect, iAP1).
//
// Each input is decoded whole, byte by byte and in input-derived chunks, with
// the default configuration and with one derived from the first byte. All
// splits must give identical events, payloads and statistics, and the events
// must account for every input byte exactly once, in order.
import FuzzSupport
import IAPWire

typealias Event = LinkStreamDecoder.Event

struct Decoded: Equatable {
    var events: [Event] = []
    /// The payload of each `.packet` and `.iap1` event, in order.
    var payloads: [[UInt8]] = []
    var statistics: LinkStreamDecoder.Statistics?
    /// Events reported before `finish()` was called.
    var eventsBeforeFinish = 0
}

func decode(_ input: [UInt8], configuration: LinkStreamDecoder.Configuration, chunks: [Int]) -> Decoded {
    var decoder = LinkStreamDecoder(configuration: configuration)
    var result = Decoded()
    func drain() {
        while let event = decoder.next() {
            result.events.append(event)
            switch event {
            case .packet, .iap1:
                let payload = Array(decoder.payload)
                let inPlace = decoder.withPayload { Array($0) }
                require(payload == inPlace, "payload and withPayload disagree at event \(result.events.count - 1)")
                result.payloads.append(payload)
            default:
                break
            }
        }
    }
    var position = 0
    for (index, size) in chunks.enumerated() {
        let end = min(input.count, position + size)
        // Exercise both append overloads.
        if index % 2 == 0 {
            input[position..<end].withUnsafeBytes { decoder.append($0) }
        } else {
            decoder.append(input[position..<end])
        }
        position = end
        drain()
        require(decoder.offset + decoder.bufferedByteCount == position,
                "offset \(decoder.offset) + buffered \(decoder.bufferedByteCount) != bytes appended \(position)")
    }
    result.eventsBeforeFinish = result.events.count
    decoder.finish()
    drain()
    require(decoder.next() == nil && decoder.next() == nil, "next() returned an event after reporting the end")
    require(decoder.bufferedByteCount == 0, "\(decoder.bufferedByteCount) bytes still buffered after finish")
    require(decoder.offset == input.count, "offset \(decoder.offset) after finish, input is \(input.count) bytes")
    result.statistics = decoder.statistics
    return result
}

/// Every byte reported exactly once, in order, and every event consistent
/// with the bytes it claims.
func checkEvents(_ decoded: Decoded, input: [UInt8], configuration: LinkStreamDecoder.Configuration) {
    var cursor = 0
    var payloadIndex = 0
    var packets = 0, detects = 0, iap1Frames = 0, skippedTotal = 0
    var skippedByReason: [LinkStreamDecoder.SkipReason: Int] = [:]
    for event in decoded.events {
        switch event {
        case .detect(let offset):
            require(offset == cursor, "detect at \(offset), expected \(cursor)")
            require(Array(input[offset..<min(input.count, offset + 6)]) == DetectSequence.bytes, "detect at \(offset) is not the detect sequence")
            cursor += DetectSequence.bytes.count
            detects += 1
        case .packet(let header, let offset, let valid):
            require(offset == cursor, "packet at \(offset), expected \(cursor)")
            require(header.length <= configuration.maximumPacketLength, "packet of \(header.length) bytes over the \(configuration.maximumPacketLength) maximum")
            require(offset + header.length <= input.count, "packet at \(offset) of \(header.length) bytes runs past the input")
            let bytes = Array(input[offset..<offset + header.length])
            let payload = decoded.payloads[payloadIndex]
            payloadIndex += 1
            require(payload.count == header.payloadLength, "payload of \(payload.count) bytes, header says \(header.payloadLength)")
            require(payload == Array(bytes[LinkPacket.headerLength..<LinkPacket.headerLength + payload.count]), "payload is not the bytes after the header")
            do {
                let packet = try LinkPacket(decoding: bytes)
                require(valid, "LinkPacket(decoding:) accepts a packet the stream decoder flagged: \(hexString(bytes))")
                require(packet.payload == payload, "LinkPacket payload differs from the stream decoder's")
                require(packet.control == header.control && packet.sequence == header.sequence
                        && packet.acknowledgement == header.acknowledgement && packet.session == header.session,
                        "LinkPacket header fields differ from the stream decoder's")
                touchLinkPayload(header: header, payload: payload)
            } catch {
                require(!valid, "LinkPacket(decoding:) rejects a packet the stream decoder accepted (\(error)): \(hexString(bytes))")
                require(error.kind == .badPayloadChecksum, "a flagged packet fails with \(error), not a payload checksum error")
            }
            cursor += valid ? header.length : LinkPacket.headerLength
            packets += 1
        case .iap1(let info, let offset):
            require(offset == cursor, "iap1 at \(offset), expected \(cursor)")
            require(configuration.recognizesIAP1, "iAP1 frame reported with recognizesIAP1 off")
            require(info.encodedLength <= configuration.maximumPacketLength, "iAP1 frame over the maximum")
            require(offset + info.encodedLength <= input.count, "iAP1 frame runs past the input")
            let payload = decoded.payloads[payloadIndex]
            payloadIndex += 1
            require(payload.count == info.payloadLength, "iAP1 payload of \(payload.count) bytes, frame says \(info.payloadLength)")
            let headerLength = info.encodedLength - info.payloadLength - 1
            require(payload == Array(input[offset + headerLength..<offset + headerLength + payload.count]), "iAP1 payload is not the framed bytes")
            if let frame = IAP1Frame.parse(input, at: offset) {
                require(frame.encodedLength == info.encodedLength && frame.checksumValid == info.checksumValid
                        && frame.payloadRange == offset + headerLength..<offset + headerLength + payload.count,
                        "IAP1Frame.parse disagrees with the stream decoder at \(offset)")
            } else {
                require(false, "IAP1Frame.parse finds no frame where the stream decoder found one, at \(offset)")
            }
            var tracker = IAP1TransactionTracker()
            if let packet = try? tracker.packet(fromPayload: payload) {
                _ = packet.name
                if let encoded = try? packet.encoded(sync: info.hasSync), info.checksumValid, !info.largeForm {
                    require(encoded == Array(input[offset..<offset + info.encodedLength]), "iAP1 frame does not re-encode to its bytes")
                }
            }
            cursor += info.checksumValid ? info.encodedLength : headerLength
            iap1Frames += 1
        case .skipped(let skip):
            require(skip.offset == cursor, "skip at \(skip.offset), expected \(cursor)")
            require(skip.count > 0, "empty skip at \(skip.offset)")
            cursor += skip.count
            skippedTotal += skip.count
            skippedByReason[skip.reason, default: 0] += skip.count
        }
    }
    require(cursor == input.count, "events cover \(cursor) bytes, input is \(input.count)")
    require(payloadIndex == decoded.payloads.count, "payload count mismatch")
    if let statistics = decoded.statistics {
        require(statistics.packets == packets && statistics.detects == detects && statistics.iap1Frames == iap1Frames,
                "statistics count \(statistics.packets)/\(statistics.detects)/\(statistics.iap1Frames) events, saw \(packets)/\(detects)/\(iap1Frames)")
        require(statistics.totalSkippedBytes == skippedTotal, "statistics skip \(statistics.totalSkippedBytes) bytes, events \(skippedTotal)")
        for reason in LinkStreamDecoder.SkipReason.allCases {
            require(statistics.skippedBytes(reason) == skippedByReason[reason, default: 0], "skipped bytes for \(reason) disagree")
        }
    }
}

/// Reads a valid packet's payload the way the trace decoder does.
func touchLinkPayload(header: LinkPacketHeader, payload: [UInt8]) {
    _ = header.control.description
    if header.control.contains(.syn) {
        if let sync = try? LinkSynchronization(decoding: payload) {
            _ = sync.violations
            require(sync.encoded() == payload, "LinkSynchronization does not re-encode to its payload")
        }
    } else if header.control.contains(.eak) {
        require(ExtendedAcknowledgement(decoding: payload).encoded() == payload, "EAK round trip")
    } else {
        if let datagram = try? FileTransferDatagram(decoding: payload) {
            _ = datagram.fileSize
            _ = datagram.control.name
            require(datagram.encoded() == payload, "file-transfer datagram round trip")
        }
        if let datagram = try? ExternalAccessoryDatagram(decoding: payload) {
            require(datagram.encoded() == payload, "EA datagram round trip")
        }
    }
}

func describe(_ decoded: Decoded) -> String {
    decoded.events.map { "\($0)" }.joined(separator: "\n  ")
}

func compare(_ a: Decoded, _ b: Decoded, _ what: String, input: [UInt8]) {
    guard a.events == b.events, a.payloads == b.payloads, a.statistics == b.statistics else {
        fatalError("""
            FUZZ INVARIANT BROKEN: decoding whole vs \(what) gives different results
            input (\(input.count) bytes): \(hexString(input.prefix(256)))
            whole:
              \(describe(a))
            \(what):
              \(describe(b))
            """)
    }
}

func run(_ input: [UInt8], configuration: LinkStreamDecoder.Configuration) {
    let whole = decode(input, configuration: configuration, chunks: [input.count])
    checkEvents(whole, input: input, configuration: configuration)
    let byteByByte = decode(input, configuration: configuration, chunks: Array(repeating: 1, count: input.count))
    compare(whole, byteByByte, "byte-by-byte", input: input)
    let chunked = decode(input, configuration: configuration, chunks: chunkSizes(for: input, total: input.count))
    compare(whole, chunked, "chunked", input: input)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    run(input, configuration: LinkStreamDecoder.Configuration())
    // A second configuration chosen by the first byte: small maxima make
    // the length checks and iAP1 recognition reachable from short inputs.
    if let first = input.first {
        let maxima = [0, 9, 10, 16, 24, 64, 255, 300]
        let configuration = LinkStreamDecoder.Configuration(
            maximumPacketLength: maxima[Int(first >> 1) % maxima.count], recognizesIAP1: first & 1 == 0)
        run(input, configuration: configuration)
    }
    return 0
}
