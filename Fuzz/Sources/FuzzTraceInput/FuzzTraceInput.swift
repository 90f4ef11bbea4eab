// Fuzz entry point for whole trace inputs: TraceInputDecoder with format
// auto, hex, raw and pcap, with and without HID reassembly, rendering every
// event with TraceJSON.line and TraceText.lines. Each JSON line must be valid
// JSON, each text line one line, and decoding must not depend on how the
// input was split into chunks.
import FuzzSupport
import IAPTrace
import IAPWire

struct Run: Equatable {
    var json: [String] = []
    var error: String?
}

func decode(_ input: [UInt8], options: TraceInputDecoder.Options, chunks: [Int], render: Bool) -> Run {
    var decoder = TraceInputDecoder(options: options)
    var run = Run()
    var statistics = TraceStatistics()
    let emit: (TraceEvent) -> Void = { event in
        let line = TraceJSON.line(for: event)
        require(!containsLineFeed(line), "JSON line holds a newline: \(line)")
        if render {
            require(isValidJSON(line), "invalid JSON line: \(line)")
            for text in TraceText.lines(for: event) {
                require(!containsLineFeed(text), "text line holds a newline: \(text)")
            }
            statistics.record(event)
        }
        run.json.append(line)
    }
    do {
        var position = 0
        for size in chunks {
            let end = min(input.count, position + size)
            try input[position..<end].withUnsafeBytes { try decoder.feed($0, emit: emit) }
            position = end
        }
        try decoder.finish(emit: emit)
    } catch {
        run.error = "\(error)"
    }
    require(decoder.bytesRead == input.count || run.error != nil, "bytesRead \(decoder.bytesRead) of \(input.count)")
    if render {
        require(isValidJSON(statistics.json), "invalid statistics JSON: \(statistics.json)")
        _ = statistics.text
    }
    return run
}

let variants: [TraceInputDecoder.Options] = [
    .init(format: .auto),
    .init(format: .hex),
    .init(format: .hex, markers: .device),
    .init(format: .raw),
    .init(format: .pcap),
    .init(format: .auto, hid: true),
    .init(format: .pcap, hid: true),
    .init(format: .raw, hid: true),
]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))
    _ = TraceInputDecoder.detectFormat(input)
    let chunks = chunkSizes(for: input, total: input.count)
    for (index, options) in variants.enumerated() {
        let whole = decode(input, options: options, chunks: [input.count], render: true)
        // Raw input with `hid` takes each chunk as one report, so only there
        // do chunk boundaries carry meaning.
        let reportsAreChunks = options.hid && (options.format == .raw
            || (options.format == .auto && TraceInputDecoder.detectFormat(input) == .raw))
        // The split comparison for one variant per input keeps runs fast.
        if !reportsAreChunks, index == Int(seed(of: input) % UInt64(variants.count)) {
            let chunked = decode(input, options: options, chunks: chunks, render: false)
            guard whole == chunked else {
                fatalError("""
                    FUZZ INVARIANT BROKEN: format \(options.format) hid \(options.hid): whole vs chunked input differ
                    input (\(input.count) bytes): \(hexString(input.prefix(256)))
                    chunks: \(chunks.prefix(64))
                    whole (\(whole.error ?? "ok")):
                      \(whole.json.joined(separator: "\n  "))
                    chunked (\(chunked.error ?? "ok")):
                      \(chunked.json.joined(separator: "\n  "))
                    """)
            }
        }
    }
    return 0
}
