import Foundation
import IAPWire

/// A hex fixture file: `#` comments, optional `>`/`<` markers, one item per line.
struct Fixture {
    struct Line {
        var marker: Character?
        var bytes: [UInt8]
    }
    let lines: [Line]

    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    init(_ name: String) throws {
        let text = try String(contentsOf: Self.directory.appendingPathComponent(name), encoding: .utf8)
        lines = text.split(separator: "\n").compactMap { raw in
            var line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            line = line.trimmingCharacters(in: .whitespaces)
            guard !line.isEmpty else { return nil }
            var marker: Character?
            if line.first == ">" || line.first == "<" {
                marker = line.first
                line.removeFirst()
            }
            let bytes = line.split(separator: " ").map { UInt8($0, radix: 16)! }
            return Line(marker: marker, bytes: bytes)
        }
    }

    var first: [UInt8] { lines[0].bytes }
    var allBytes: [UInt8] { lines.flatMap(\.bytes) }
}

/// A small deterministic generator, so that property tests are repeatable.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Array where Element == UInt8 {
    static func random(count: Int, using generator: inout SeededGenerator) -> [UInt8] {
        (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}

/// What a stream decoder produced, with payloads copied, for comparing runs.
enum DecodedItem: Hashable {
    case detect(Int)
    case packet(LinkPacketHeader, Int, Bool, [UInt8])
    case iap1(LinkStreamDecoder.IAP1FrameInfo, Int, [UInt8])
    case skipped(LinkStreamDecoder.Skipped)
}

/// Feeds `bytes` to a fresh decoder in the given chunk sizes (cycled) and
/// returns everything it produced, end of stream included.
func decodeStream(_ bytes: [UInt8], chunks: [Int] = [Int.max], configuration: LinkStreamDecoder.Configuration = .init()) -> (items: [DecodedItem], statistics: LinkStreamDecoder.Statistics) {
    var decoder = LinkStreamDecoder(configuration: configuration)
    var items: [DecodedItem] = []
    func drain() {
        while let event = decoder.next() {
            switch event {
            case .detect(let offset): items.append(.detect(offset))
            case .packet(let header, let offset, let valid): items.append(.packet(header, offset, valid, Array(decoder.payload)))
            case .iap1(let info, let offset): items.append(.iap1(info, offset, Array(decoder.payload)))
            case .skipped(let skip): items.append(.skipped(skip))
            }
        }
    }
    var index = 0
    var chunkIndex = 0
    while index < bytes.count {
        let size = Swift.max(1, Swift.min(chunks[chunkIndex % chunks.count], bytes.count - index))
        decoder.append(bytes[index..<index + size])
        drain()
        index += size
        chunkIndex += 1
    }
    decoder.finish()
    drain()
    return (items, decoder.statistics)
}
