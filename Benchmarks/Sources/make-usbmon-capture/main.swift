// Writes a usbmon pcapng of a realistic iAP2 session for decode-vs-tshark.sh,
// in one of two shapes:
//   make-usbmon-capture [--shape large] OUTPUT [MEGABYTES]   (default 300)
//   make-usbmon-capture --shape session OUTPUT [RECORDS]     (default 1000000)
//
// Both: a head unit (USB host, OUT endpoint 0x01) and a phone (IN endpoint
// 0x81): detect, link synchronisation with control, file-transfer and external
// accessory sessions, identification, then until the size is reached:
//
// large: a repeating mix of NowPlayingUpdate messages, cumulative ACKs,
// artwork file transfers in 1 KiB to 4 KiB datagrams, external-accessory data,
// HID remote presses, several link packets sometimes batched in one bulk
// transfer and large packets split across transfers. A HID keyboard's
// interrupt endpoint (0x83) and a mass-storage bulk pair (0x02 / 0x82) on
// another device add unrelated traffic that the decoder must ignore. Most of
// the bytes are in large transfers.
//
// session: what a head unit's capture mostly holds while music plays: small
// transfers, nearly all under 300 bytes. The phone's NowPlayingUpdates
// (elapsed-time ticks, now and then the whole media item), with a PowerUpdate
// in the same transfer every other time, each answered by an ACK-only link
// packet; steering-wheel presses and small requests from the head unit, each
// answered by the phone's ACK; now and then a small external-accessory
// datagram and the keyboard's interrupt reports. About one control message
// per three records (1 M records: 330 k messages, 583 k link packets).

import IAPTrace
import IAPWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct Random {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in UInt8(truncatingIfNeeded: next()) } }
}

func generate() {
    var arguments = Array(CommandLine.arguments.dropFirst())
    var shape = "large"
    if arguments.count >= 2, arguments[0] == "--shape" {
        shape = arguments[1]
        arguments.removeFirst(2)
    }
    guard !arguments.isEmpty, shape == "large" || shape == "session" else {
        print("usage: make-usbmon-capture [--shape large] OUTPUT [MEGABYTES]\n       make-usbmon-capture --shape session OUTPUT [RECORDS]")
        exit(2)
    }
    let outputPath = arguments[0]
    let size = arguments.count > 1 ? Int(arguments[1]) : nil
    let targetBytes = (size ?? 300) * 1_000_000
    let targetRecords = size ?? 1_000_000

    guard let file = fopen(outputPath, "wb") else {
        perror(outputPath)
        exit(1)
    }

    let phoneDevice: UInt8 = 5
    let diskDevice: UInt8 = 3
    let out: UInt8 = 0x01
    let inEndpoint: UInt8 = 0x81

    var writer = UsbmonPcapngWriter()
    var random = Random(state: 0x1A92)
    var time: Int64 = 1_700_000_000_000_000
    var written = 0
    var linkPackets = 0
    var messages = 0
    /// usbmon records written: two (submission and completion) per transfer.
    var records = 0

    func flush() {
        let chunk = writer.drain()
        chunk.withUnsafeBytes { raw in
            if fwrite(raw.baseAddress, 1, raw.count, file) != raw.count {
                perror(outputPath)
                exit(1)
            }
        }
        written += chunk.count
    }

    /// Sequence numbers per direction (accessory = OUT, device = IN).
    var sequence: [UInt8] = [0x2B, 0x40]
    var lastReceived: [UInt8] = [0x40, 0x2B]

    func packet(_ direction: Int, session: UInt8, payload: [UInt8], control: LinkControl = .ack) -> [UInt8] {
        sequence[direction] &+= 1
        lastReceived[1 - direction] = sequence[direction]
        linkPackets += 1
        return try! LinkPacket(control: control, sequence: sequence[direction], acknowledgement: lastReceived[direction],
                               session: session, payload: payload).encoded()
    }

    func ack(_ direction: Int) -> [UInt8] {
        linkPackets += 1
        return try! LinkPacket(control: .ack, sequence: sequence[direction], acknowledgement: lastReceived[direction]).encoded()
    }

    func send(_ direction: Int, _ bytes: [UInt8], maximumTransfer: Int = 16_384) {
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + maximumTransfer)
            time += Int64(50 + random.below(400))
            writer.bulkTransfer(device: phoneDevice, endpoint: direction == 0 ? out : inEndpoint,
                                data: Array(bytes[offset..<end]), timestampMicroseconds: time)
            records += 2
            offset = end
        }
    }

    func message(_ id: UInt16, _ parameters: [Parameter]) -> [UInt8] {
        messages += 1
        return try! ControlMessage(id: id, parameters: parameters).encoded()
    }

    // Link-up: detect both ways, SYN, SYN+ACK, ACK.
    let detect: [UInt8] = [0xFF, 0x55, 0x02, 0x00, 0xEE, 0x10]
    send(0, detect)
    send(1, detect)
    let sessions = [LinkSessionDescriptor(id: 1, type: SessionType(rawValue: 0)), LinkSessionDescriptor(id: 2, type: SessionType(rawValue: 1)),
                    LinkSessionDescriptor(id: 3, type: SessionType(rawValue: 2))]
    let sync = LinkSynchronization(maximumOutstandingPackets: 5, maximumPacketLength: 0xFFFF, retransmitTimeoutMilliseconds: 1500,
                                   cumulativeAckTimeoutMilliseconds: 70, maximumRetransmissions: 3, maximumCumulativeAcks: 3,
                                   sessions: sessions)
    send(0, packet(0, session: 0, payload: sync.encoded(), control: .syn))
    send(1, packet(1, session: 0, payload: sync.encoded(), control: [.syn, .ack]))
    send(0, ack(0))
    // Identification.
    send(1, packet(1, session: 1, payload: message(0x1D00, [])))
    send(0, packet(0, session: 1, payload: message(0x1D01, [
        .string(0, "Dev Kit Head Unit"), .string(1, "DK-1"), .string(2, "iap-devkit"), .string(3, "SN-0001"),
        .string(4, "1.0.0"), .string(5, "A"), .blob(6, [0x50, 0x00, 0x50, 0x02, 0x68, 0x00]), .blob(7, [0x50, 0x01]),
        .uint8(8, 0), .uint32(9, 0), .string(12, "en"), .string(13, "en"),
    ])))
    send(1, packet(1, session: 1, payload: message(0x1D02, [])))
    send(0, packet(0, session: 1, payload: message(0x5000, [.none(0), .none(1)])))

    let titles = ["Blue in Green", "So What", "Freddie Freeloader", "All Blues", "Flamenco Sketches", "Kind of Blue (Legacy Edition) – Bonus"]
    var elapsed: UInt32 = 0
    var transferID: UInt8 = 1
    var round = 0

    func sessionRound() {
        round += 1
        // The phone's NowPlayingUpdate: the elapsed time every round, the
        // whole media item every 16th; the head unit acknowledges it.
        elapsed &+= 1000
        var groups: [Parameter] = []
        if round % 16 == 0 {
            groups.append(try! .group(0, [
                .uint64(0, random.next()), .string(1, titles[random.below(titles.count)]), .uint32(4, UInt32(200_000 + random.below(400_000))),
                .string(6, "Kind of Blue"), .string(12, "Miles Davis"),
            ]))
        }
        groups.append(try! .group(1, [.uint8(0, 1), .uint32(1, elapsed)]))
        var transfer = packet(1, session: 1, payload: message(0x5001, groups))
        // A PowerUpdate every other round, in the same transfer (now and then two).
        if round % 2 == 0 {
            transfer += packet(1, session: 1, payload: message(0xAE01, [.uint16(6, UInt16(random.below(10_000))), .uint8(5, 1)]))
            if random.below(4) == 0 {
                transfer += packet(1, session: 1, payload: message(0xAE01, [.uint16(0, 1_000), .bool(1, true)]))
            }
        }
        send(1, transfer)
        send(0, ack(0))

        // The head unit's small control messages: steering-wheel presses
        // (AccessoryHIDReport press and release) and a SetNowPlayingInformation,
        // each acknowledged by the phone.
        if round % 6 == 0 {
            for report: UInt8 in [0x08, 0x00] {
                send(0, packet(0, session: 1, payload: message(0x6802, [.uint16(0, 1), .blob(1, [0x01, report])])))
                send(1, ack(1))
            }
        }
        if round % 25 == 0 {
            send(0, packet(0, session: 1, payload: message(0x5003, [.uint32(0, elapsed)])))
            send(1, ack(1))
        }

        // A small external-accessory datagram each way now and then.
        if round % 20 == 0 {
            send(0, packet(0, session: 3, payload: [0x00, 0x01] + random.bytes(16 + random.below(48))))
            send(1, packet(1, session: 3, payload: [0x00, 0x01] + random.bytes(32 + random.below(200))))
            send(0, ack(0))
        }

        // The keyboard's interrupt endpoint: unrelated traffic.
        if round % 8 == 0 {
            time += 100
            writer.interruptTransfer(device: 2, endpoint: 0x83, data: random.bytes(8), timestampMicroseconds: time)
            records += 2
        }
        if writer.bytes.count > 4 << 20 { flush() }
    }

    if shape == "session" {
        while records < targetRecords { sessionRound() }
    }
    while shape == "large" && written < targetBytes {
        round += 1
        // A few NowPlayingUpdates (elapsed time ticks), sometimes with the full
        // media item, several batched in one transfer.
        var batch: [UInt8] = []
        for tick in 0..<(1 + random.below(4)) {
            elapsed &+= 1000
            var groups: [Parameter] = []
            if tick == 0 && round % 8 == 0 {
                let title = titles[random.below(titles.count)]
                groups.append(try! .group(0, [
                    .uint64(0, random.next()), .string(1, title), .uint32(4, UInt32(200_000 + random.below(400_000))),
                    .string(6, "Kind of Blue"), .string(12, "Miles Davis"), .uint8(26, transferID),
                ]))
            }
            groups.append(try! .group(1, [.uint8(0, 1), .uint32(1, elapsed), .uint8(6, 2), .string(7, "Music")]))
            batch += packet(1, session: 1, payload: message(0x5001, groups))
        }
        send(1, batch)
        send(0, ack(0))

        // Artwork over the file-transfer session every few rounds.
        if round % 8 == 0 {
            let size = 8_192 + random.below(48_000)
            var setup: [UInt8] = [transferID, 0x04]
            for shift in stride(from: 56, through: 0, by: -8) { setup.append(UInt8(truncatingIfNeeded: UInt64(size) >> UInt64(shift))) }
            setup.append(0x02)
            send(1, packet(1, session: 2, payload: setup))
            send(0, packet(0, session: 2, payload: [transferID, 0x01]))
            var sent = 0
            var first = true
            while sent < size {
                let chunk = min(size - sent, 1_024 * (1 + random.below(4)))
                let control: UInt8 = first ? (sent + chunk == size ? 0xC0 : 0x80) : (sent + chunk == size ? 0x40 : 0x00)
                first = false
                send(1, packet(1, session: 2, payload: [transferID, control] + random.bytes(chunk)))
                sent += chunk
                if random.below(3) == 0 { send(0, ack(0)) }
            }
            send(0, packet(0, session: 2, payload: [transferID, 0x05]))
            transferID = transferID == 127 ? 1 : transferID + 1
        }

        // External-accessory traffic (a navigation app's protocol), both ways.
        if round % 3 == 0 {
            send(0, packet(0, session: 3, payload: [0x00, 0x01] + random.bytes(64 + random.below(512))))
            send(1, packet(1, session: 3, payload: [0x00, 0x01] + random.bytes(256 + random.below(2_048))))
        }

        // A large external-accessory packet (near the 64 KiB maximum), split
        // across bulk transfers.
        if round % 64 == 0 {
            send(1, packet(1, session: 3, payload: [0x00, 0x01] + random.bytes(60_000)), maximumTransfer: 16_384)
        }

        // Steering-wheel play/pause: AccessoryHIDReport press and release.
        if round % 16 == 0 {
            for report: UInt8 in [0x08, 0x00] {
                send(0, packet(0, session: 1, payload: message(0x6802, [.uint16(0, 1), .blob(1, [0x01, report])])))
            }
        }
        send(1, ack(1))

        // Unrelated traffic: a keyboard's interrupt endpoint and a USB disk.
        if round % 4 == 0 {
            time += 100
            writer.interruptTransfer(device: 2, endpoint: 0x83, data: random.bytes(8), timestampMicroseconds: time)
            records += 2
        }
        if round % 10 == 0 {
            time += 100
            writer.bulkTransfer(device: diskDevice, endpoint: 0x02, data: random.bytes(31), timestampMicroseconds: time)
            writer.bulkTransfer(device: diskDevice, endpoint: 0x82, data: random.bytes(4_096 * (1 + random.below(16))), timestampMicroseconds: time)
            writer.bulkTransfer(device: diskDevice, endpoint: 0x82, data: random.bytes(13), timestampMicroseconds: time)
            records += 6
        }

        if writer.bytes.count > 4 << 20 { flush() }
    }
    flush()
    fclose(file)
    print("wrote \(outputPath): \(written) bytes, \(records) records, \(linkPackets) link packets, \(messages) control messages")
}

generate()
