// Link goodput in process: 64 KiB messages through two link ends with no
// I/O. Each iteration queues one 65,536-byte message on the accessory's
// control session and carries every write of either end straight into the
// other until nothing moves: packets one way, acknowledgements back, the
// message delivered and handed back with `consumed`. Virtual time advances
// 1 µs per iteration, and a due timer (the delayed acknowledgement) is let
// out inside the measurement, as a real link would have to.
//
// Custom metric: MB/s of message bytes delivered (10^6 bytes per second,
// from a clock read around the same work), against `memcpy` of the same
// 64 KiB in the same run. mallocCountTotal is per iteration, i.e. per
// message.
//
// Target (issue "Speed where users feel it"): at least 2 GB/s.

import Benchmark
import IAPLink
import IAPWire

#if canImport(Glibc)
import Glibc
#endif

let messageLength = 64 * 1024

/// Two link ends joined by nothing but this loop.
struct LinkPair {
    var accessory: LinkEnd
    var device: LinkEnd
    var now = LinkInstant.zero
    /// Writes not yet carried: true when the accessory wrote them.
    private var inFlight: [(fromAccessory: Bool, bytes: [UInt8])] = []
    private(set) var delivered = 0

    init(parameters: LinkParameters) {
        accessory = LinkEnd(configuration: LinkConfiguration(role: .accessory, parameters: parameters))
        device = LinkEnd(configuration: LinkConfiguration(role: .device, parameters: parameters))
        take(device.start(now: now), fromAccessory: false)
        take(accessory.start(now: now), fromAccessory: true)
        carry()
        precondition(accessory.isUp && device.isUp, "the link did not come up")
    }

    /// Sends one message and carries everything until the link is quiet.
    mutating func send(_ message: [UInt8]) {
        now = now + .microseconds(1)
        do {
            take(try accessory.send(message, session: 1, now: now), fromAccessory: true)
        } catch {
            preconditionFailure("send failed: \(error)")
        }
        carry()
        // Timers due by now (a delayed acknowledgement) run as well.
        for _ in 0..<2 {
            if let deadline = device.nextDeadline, deadline <= now + .milliseconds(100) {
                now = max(now, deadline)
                take(device.tick(now: now), fromAccessory: false)
            }
            if let deadline = accessory.nextDeadline, deadline <= now + .milliseconds(100) {
                now = max(now, deadline)
                take(accessory.tick(now: now), fromAccessory: true)
            }
            carry()
        }
    }

    private mutating func carry() {
        while !inFlight.isEmpty {
            let (fromAccessory, bytes) = inFlight.removeFirst()
            if fromAccessory {
                take(device.receive(bytes, now: now), fromAccessory: false)
            } else {
                take(accessory.receive(bytes, now: now), fromAccessory: true)
            }
        }
    }

    private mutating func take(_ actions: [LinkAction], fromAccessory: Bool) {
        for action in actions {
            switch action {
            case .send(let bytes):
                inFlight.append((fromAccessory, bytes))
            case .deliver(_, let bytes):
                delivered += bytes.count
                // Handed back at once, as a reader that keeps up does.
                let more = fromAccessory ? accessory.consumed(bytes.count, now: now) : device.consumed(bytes.count, now: now)
                take(more, fromAccessory: fromAccessory)
            case .event:
                break
            }
        }
    }
}

/// Heap storage that outlives the benchmark closures (which must be Sendable).
final class GoodputState: @unchecked Sendable {
    var pair: LinkPair
    let message: [UInt8]
    let source: UnsafeMutableRawBufferPointer
    let destination: UnsafeMutableRawBufferPointer

    init(parameters: LinkParameters) {
        pair = LinkPair(parameters: parameters)
        let message = (0..<messageLength).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let source = UnsafeMutableRawBufferPointer.allocate(byteCount: messageLength, alignment: 64)
        message.withUnsafeBytes { source.copyMemory(from: $0) }
        self.message = message
        self.source = source
        destination = .allocate(byteCount: messageLength, alignment: 64)
        destination.initializeMemory(as: UInt8.self, repeating: 0)
    }
}

enum Metrics {
    static let megabytesPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
}

@inline(__always)
func rate(bytes: Int, since start: ContinuousClock.Instant, benchmark: Benchmark) {
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
    guard seconds > 0 else { return }
    benchmark.measurement(Metrics.megabytesPerSecond, Int(Double(bytes) / seconds / 1e6))
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .mallocCountTotal, Metrics.megabytesPerSecond],
        timeUnits: .microseconds,
        warmupIterations: 20,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 1_000_000
    )

    let variants: [(label: String, parameters: LinkParameters)] = [
        ("4 KiB packets, window 8", LinkParameters(maximumOutstandingPackets: 8)),
        ("64 KiB packets, window 8", LinkParameters(maximumOutstandingPackets: 8, maximumPacketLength: LinkPacket.maximumLength)),
    ]
    for variant in variants {
        let state = GoodputState(parameters: variant.parameters)
        Benchmark("64 KiB messages through two link ends, \(variant.label)") { benchmark in
            let before = state.pair.delivered
            let start = ContinuousClock.now
            state.pair.send(state.message)
            rate(bytes: state.pair.delivered - before, since: start, benchmark: benchmark)
            precondition(state.pair.delivered - before == messageLength, "delivered \(state.pair.delivered - before) of \(messageLength) bytes")
        }
    }

    let state = GoodputState(parameters: LinkParameters())
    Benchmark("memcpy 64 KiB") { benchmark in
        let start = ContinuousClock.now
        memcpy(state.destination.baseAddress!, state.source.baseAddress!, messageLength)
        blackHole(state.destination.baseAddress!)
        rate(bytes: messageLength, since: start, benchmark: benchmark)
    }
}
