import Foundation
import IAPDemo
@testable import IAPEndpoint
import IAPLink
import IAPTransport
import IAPWire
import Synchronization
import Testing

/// A head unit that speaks only iAP1, as raw frames over a transport, and
/// the phone endpoint serving the sample app: it answers in iAP1.
@Suite struct LegacyHeadUnitTests {
    /// What the phone wrote, as iAP1 packets (UART frames, FF 55 …).
    final class Received: Sendable {
        let bytes = Mutex<[UInt8]>([])

        var packets: [IAP1Packet] {
            let all = bytes.withLock { $0 }
            var packets: [IAP1Packet] = []
            var index = 0
            while index < all.count {
                guard let frame = IAP1Frame.parse(all, at: index), frame.checksumValid,
                      let packet = try? IAP1Packet(payload: all[frame.payloadRange], hasTransactionID: false) else {
                    index += 1
                    continue
                }
                packets.append(packet)
                index += frame.encodedLength
            }
            return packets
        }

        /// Waits (in real time, up to 5 s) until the phone has written a packet with `command`.
        func wait(for command: UInt16, lingo: UInt8) async -> IAP1Packet? {
            for _ in 0..<500 {
                if let packet = packets.last(where: { $0.lingo == lingo && $0.command == command }) { return packet }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
    }

    static func frame(_ lingo: UInt8, _ command: UInt16, _ data: [UInt8] = []) throws -> [UInt8] {
        try IAP1Packet(lingo: lingo, command: command, data: data).encoded(sync: true)
    }

    static func phone(app: SampleApp?) throws -> (MediaEndpoint, LoopbackTransport, Received) {
        let instant = WireFaults(delay: .zero)
        let (headUnit, side) = LoopbackTransport.pair(towardsSecond: instant, towardsFirst: instant)
        let phone = MediaEndpoint(kind: app == nil ? .responder : .phone, transport: side, app: app, logger: .discarding("endpoint"))
        let received = Received()
        try headUnit.start { event in if case .received(let bytes) = event { received.bytes.withLock { $0 += bytes } } }
        try phone.start()
        return (phone, headUnit, received)
    }

    @Test func anIAP1HeadUnitIsIdentifiedBrowsesAndReadsWhatPlays() async throws {
        let app = SampleApp()
        let (phone, headUnit, received) = try Self.phone(app: app)
        // IdentifyDeviceLingoes: General and Extended Interface, no authentication.
        headUnit.write(try Self.frame(0, 0x13, [0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0]))
        let ack = await received.wait(for: 0x02, lingo: 0)
        #expect(ack?.data == [0x00, 0x13])

        // The tabs, counted as playlists: the app answers in a task of its own.
        headUnit.write(try Self.frame(4, 0x0018, [0x01]))
        let count = await received.wait(for: 0x0019, lingo: 4)
        #expect(count?.data == [0, 0, 0, 4])

        // Into the radio tab and play its first station.
        headUnit.write(try Self.frame(4, 0x0017, [0x01, 0, 0, 0, 1]))
        headUnit.write(try Self.frame(4, 0x0018, [0x05]))
        var tracks: [IAP1Packet] = []
        for _ in 0..<500 where tracks.count < 2 {
            tracks = received.packets.filter { $0.command == 0x0019 }
            try? await Task.sleep(for: .milliseconds(10))
        }
        #expect(tracks.last.map { $0.data != [0, 0, 0, 0] } == true, "the radio's stations counted as tracks")
        headUnit.write(try Self.frame(4, 0x0028, [0, 0, 0, 0]))
        var played: IAP1Packet?
        for _ in 0..<500 where played == nil {
            played = received.packets.last { $0.lingo == 4 && $0.command == 0x0001 && $0.data.suffix(2) == [0x00, 0x28] }
            try? await Task.sleep(for: .milliseconds(10))
        }
        #expect(played?.data.first == 0x00, "PlayCurrentSelection: \(played.map(String.init(describing:)) ?? "no answer")")

        // What plays now, as GetPlayStatus and the track's title read it.
        headUnit.write(try Self.frame(4, 0x001C))
        let status = await received.wait(for: 0x001D, lingo: 4)
        #expect(status?.data.last == 1, "playing")
        headUnit.write(try Self.frame(4, 0x001E))
        let index = try #require(await received.wait(for: 0x001F, lingo: 4))
        headUnit.write(try Self.frame(4, 0x0020, index.data))
        let title = await received.wait(for: 0x0021, lingo: 4)
        #expect(title.map { String(decoding: $0.data.dropLast(), as: UTF8.self) } == app.nowPlaying(at: MonotonicClock.now()).title)
        // The iAP2 session never started.
        #expect(!phone.isUp)
    }

    @Test func noiseThatFramesAsIAP1StartsNothing() async throws {
        let (_, headUnit, received) = try Self.phone(app: SampleApp())
        // A frame on a lingo the phone does not serve, and lingo-4 requests without
        // the sync byte (as noise in a byte stream would be): nothing is answered.
        headUnit.write(try Self.frame(0x0A, 0x29, [1, 2, 3]))
        headUnit.write(try IAP1Packet(lingo: 4, command: 0x001C).encoded(sync: false))
        try await Task.sleep(for: .milliseconds(200))
        #expect(received.packets.isEmpty)
    }

    @Test func aResponderWithNoAppDoesNotAnswerIAP1() async throws {
        let (_, headUnit, received) = try Self.phone(app: nil)
        headUnit.write(try Self.frame(0, 0x13, [0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0, 0]))
        try await Task.sleep(for: .milliseconds(200))
        #expect(received.packets.isEmpty)
    }
}
