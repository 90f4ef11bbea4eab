// LinkStreamDecoder throughput and allocations, with memcpy as the baseline.
//
// Each iteration decodes one buffer of about 1 MiB of back-to-back iAP2 link
// packets: `append` the buffer to a decoder that lives across iterations (so
// the steady state is measured: its internal buffer already has capacity),
// then `next()` until nil, reading each payload in place with `withPayload`.
// The matching memcpy benchmark copies the same number of bytes from the same
// kind of source buffer into a preallocated destination.
//
// Custom metrics (computed from a clock read around the same loop the wall
// clock covers):
//   packets/s  link packets decoded per second
//   MB/s       bytes of encoded packets (header, payload and checksums) per second, 10^6
// mallocCountTotal is per iteration, i.e. per buffer; divide by the packet
// count in the benchmark's name for allocations per packet.

import Benchmark
import IAPWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// About 1 MiB of encoded packets per iteration.
let bufferTarget = 1 << 20

struct Workload {
    let label: String
    let payloadLength: Int
    let packets: Int
    let bytes: [UInt8]

    init(label: String, payloadLength: Int) {
        self.label = label
        self.payloadLength = payloadLength
        let packetLength = LinkPacket.headerLength + payloadLength + 1
        packets = max(1, bufferTarget / packetLength)
        var generator = SplitMix64(seed: UInt64(payloadLength))
        var bytes: [UInt8] = []
        bytes.reserveCapacity(packets * packetLength)
        var payload = [UInt8](repeating: 0, count: payloadLength)
        for index in 0..<packets {
            for byte in payload.indices { payload[byte] = UInt8(truncatingIfNeeded: generator.next()) }
            let packet = LinkPacket(control: .ack, sequence: UInt8(truncatingIfNeeded: index),
                                    acknowledgement: UInt8(truncatingIfNeeded: index &+ 7), session: 1, payload: payload)
            try! packet.encode(into: &bytes)
        }
        self.bytes = bytes
    }
}

struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Heap storage that outlives the benchmark closures (which must be Sendable).
final class DecodeState: @unchecked Sendable {
    let workload: Workload
    let source: UnsafeMutableRawBufferPointer
    let destination: UnsafeMutableRawBufferPointer
    var decoder = LinkStreamDecoder()

    init(_ workload: Workload) {
        self.workload = workload
        let source = UnsafeMutableRawBufferPointer.allocate(byteCount: workload.bytes.count, alignment: 64)
        workload.bytes.withUnsafeBytes { source.copyMemory(from: $0) }
        self.source = source
        destination = .allocate(byteCount: workload.bytes.count, alignment: 64)
        destination.initializeMemory(as: UInt8.self, repeating: 0)
    }
}

/// The measured work: append one buffer and drain the decoder, reading each
/// payload in place. `inout` keeps the decoder in one exclusive access for the
/// whole buffer (as a caller holding it in a local variable would), instead
/// of one dynamic exclusivity check per `next()` on the class property.
@inline(never)
func decodeAll(_ bytes: UnsafeRawBufferPointer, with decoder: inout LinkStreamDecoder) -> (packets: Int, touched: UInt) {
    decoder.append(bytes)
    var packets = 0
    var touched: UInt = 0
    while let event = decoder.next() {
        if case .packet = event {
            packets += 1
            touched &+= decoder.withPayload { payload in
                UInt(payload.count) &+ UInt(payload[payload.count - 1])
            }
        }
    }
    return (packets, touched)
}

enum Metrics {
    static let packetsPerSecond = BenchmarkMetric.custom("packets/s", polarity: .prefersLarger, useScalingFactor: false)
    static let megabytesPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
}

@inline(__always)
func rates(packets: Int, bytes: Int, since start: ContinuousClock.Instant, benchmark: Benchmark) {
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    guard seconds > 0 else { return }
    benchmark.measurement(Metrics.packetsPerSecond, Int(Double(packets) / seconds))
    benchmark.measurement(Metrics.megabytesPerSecond, Int(Double(bytes) / seconds / 1e6))
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, Metrics.packetsPerSecond, Metrics.megabytesPerSecond],
        timeUnits: .microseconds,
        // The first iterations grow the decoder's buffer to the input size;
        // everything after is steady state.
        warmupIterations: 5,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    let workloads = [
        Workload(label: "16 B", payloadLength: 16),
        Workload(label: "1 KiB", payloadLength: 1024),
        // 64 KiB does not fit the 16-bit length field with the header: the
        // largest payload a link packet can carry is 65525 bytes.
        Workload(label: "64 KiB", payloadLength: LinkPacket.maximumPayloadLength),
    ]

    for workload in workloads {
        let state = DecodeState(workload)
        let expected = workload.packets
        let byteCount = workload.bytes.count
        let suffix = "\(workload.label) payloads, \(expected) packets, \(byteCount) bytes"

        Benchmark("decode \(suffix)") { benchmark in
            let start = ContinuousClock.now
            let (packets, touched) = decodeAll(UnsafeRawBufferPointer(state.source), with: &state.decoder)
            rates(packets: packets, bytes: byteCount, since: start, benchmark: benchmark)
            blackHole(touched)
            precondition(packets == expected, "decoded \(packets) packets, expected \(expected)")
        }

        Benchmark("memcpy \(suffix)") { benchmark in
            let start = ContinuousClock.now
            memcpy(state.destination.baseAddress!, state.source.baseAddress!, byteCount)
            blackHole(state.destination.baseAddress!)
            rates(packets: expected, bytes: byteCount, since: start, benchmark: benchmark)
        }
    }
}
