import Foundation
import IAPTrace
import IAPWire

/// Runs a whole input through `TraceInputDecoder` in chunks of `chunk` bytes.
func decodeTrace(_ bytes: [UInt8], options: TraceInputDecoder.Options = .init(), chunk: Int = 1 << 20) throws -> (events: [TraceEvent], input: TraceInputDecoder) {
    var input = TraceInputDecoder(options: options)
    var events: [TraceEvent] = []
    var index = 0
    while index < bytes.count {
        let end = min(bytes.count, index + chunk)
        try Array(bytes[index..<end]).withUnsafeBytes { try input.feed($0) { events.append($0) } }
        index = end
    }
    try input.finish { events.append($0) }
    return (events, input)
}

func jsonLines(_ events: [TraceEvent]) -> [String] { events.map(TraceJSON.line(for:)) }

func parseJSON(_ line: String) throws -> [String: Any] {
    let object = try JSONSerialization.jsonObject(with: Data(line.utf8))
    return try #require(object as? [String: Any])
}

let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
let wireFixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("IAPWireTests/Fixtures")

func fixtureBytes(_ url: URL) throws -> [UInt8] { Array(try Data(contentsOf: url)) }

import Testing
