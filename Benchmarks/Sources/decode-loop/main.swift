// The LinkDecode benchmark's loop as a plain program, for profilers that
// count instructions (the benchmark harness would dominate their output):
//   valgrind --tool=callgrind .build/release/decode-loop 16 20
//   decode-loop PAYLOAD_BYTES ITERATIONS
// Decodes ITERATIONS times a ~1 MiB buffer of packets with PAYLOAD_BYTES of
// payload each, with one decoder reused throughout, and prints packets/s.

import IAPWire

let arguments = CommandLine.arguments
let payloadLength = arguments.count > 1 ? Int(arguments[1]) ?? 16 : 16
let iterations = arguments.count > 2 ? Int(arguments[2]) ?? 100 : 100

let packetLength = LinkPacket.headerLength + payloadLength + 1
let count = max(1, (1 << 20) / packetLength)
var bytes: [UInt8] = []
bytes.reserveCapacity(count * packetLength)  // LinkPacket.encode(into:) reserves only what it needs
var seed: UInt64 = 0x5EED
for index in 0..<count {
    let payload = (0..<payloadLength).map { _ -> UInt8 in
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: seed >> 33)
    }
    try! LinkPacket(control: .ack, sequence: UInt8(truncatingIfNeeded: index), acknowledgement: 0, session: 1, payload: payload)
        .encode(into: &bytes)
}

// `nonisolated`: top-level code in main.swift is main-actor isolated, and a
// closure passed from there to `withPayload` would pay an executor check on
// every call.
@inline(never)
nonisolated func decodeAll(_ bytes: UnsafeRawBufferPointer, with decoder: inout LinkStreamDecoder) -> (packets: Int, touched: UInt) {
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

var decoder = LinkStreamDecoder()
var total = 0
var touched: UInt = 0
let clock = ContinuousClock()
let elapsed = clock.measure {
    bytes.withUnsafeBytes { raw in
        for _ in 0..<iterations {
            let result = decodeAll(raw, with: &decoder)
            total += result.packets
            touched &+= result.touched
        }
    }
}
let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
print("payload \(payloadLength) B: \(total) packets, \(bytes.count * iterations) bytes in \(seconds) s: "
      + "\(Int(Double(total) / seconds)) packets/s, \(Int(Double(bytes.count * iterations) / seconds / 1e6)) MB/s (check \(touched))")
