import IAPWire

/// A small, fast, seedable generator (SplitMix64): the same seed gives the
/// same faults on every machine.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func chance(_ probability: Double) -> Bool {
        probability > 0 && Double(next() >> 11) / Double(1 << 53) < probability
    }
}

/// The faults one direction of a simulated wire injects. Probabilities apply
/// per write (a write is one packet from a link end).
public struct WireFaults: Hashable, Sendable, CustomStringConvertible {
    public var loss: Double = 0
    public var duplication: Double = 0
    /// Chance that a write is held back behind later ones.
    public var reordering: Double = 0
    /// Chance that one bit of a write is flipped.
    public var corruption: Double = 0
    public var delay: Duration = .milliseconds(1)
    /// Extra random delay up to this much.
    public var jitter: Duration = .zero
    /// Bytes per second; nil is unlimited.
    public var bandwidth: Int?
    /// Chance that a write arrives in several pieces (exercises the decoder's splits).
    public var fragmentation: Double = 0
    /// Writes (counted from 1) that are lost for certain: deterministic
    /// single losses for scenarios such as EAK recovery.
    public var dropWrites: Set<Int> = []
    /// Lose every write from this one on (counted from 1): a peer that vanishes.
    public var blackholeFrom: Int?

    public init(loss: Double = 0, duplication: Double = 0, reordering: Double = 0, corruption: Double = 0,
                delay: Duration = .milliseconds(1), jitter: Duration = .zero, bandwidth: Int? = nil, fragmentation: Double = 0) {
        self.loss = loss
        self.duplication = duplication
        self.reordering = reordering
        self.corruption = corruption
        self.delay = delay
        self.jitter = jitter
        self.bandwidth = bandwidth
        self.fragmentation = fragmentation
    }

    public static let none = WireFaults()

    public var description: String {
        var parts: [String] = []
        if loss > 0 { parts.append("loss \(Int((loss * 100).rounded()))%") }
        if duplication > 0 { parts.append("duplication \(Int((duplication * 100).rounded()))%") }
        if reordering > 0 { parts.append("reordering \(Int((reordering * 100).rounded()))%") }
        if corruption > 0 { parts.append("corruption \(Int((corruption * 100).rounded()))%") }
        if fragmentation > 0 { parts.append("fragmentation \(Int((fragmentation * 100).rounded()))%") }
        if let bandwidth { parts.append("\(bandwidth) B/s") }
        return parts.isEmpty ? "clean" : parts.joined(separator: ", ")
    }
}

/// One direction of an in-memory wire with seeded fault injection. Bytes
/// written at an instant arrive later (delay, jitter, bandwidth), possibly
/// lost, duplicated, reordered, corrupted or fragmented.
public struct FaultyWire: Sendable {
    public var faults: WireFaults
    /// Writes the wire may hold before it drops new ones (a peer cannot make
    /// the simulation grow without bound).
    public static let capacity = 4096

    private var random: SeededRandom
    private var inFlight: [(at: LinkInstant, order: Int, bytes: [UInt8])] = []
    private var order = 0
    private var busyUntil = LinkInstant.zero
    public private(set) var written = 0
    public private(set) var dropped = 0

    public init(faults: WireFaults = .none, seed: UInt64) {
        self.faults = faults
        self.random = SeededRandom(seed: seed)
    }

    public var nextArrival: LinkInstant? { inFlight.map(\.at).min() }
    public var isEmpty: Bool { inFlight.isEmpty }

    public mutating func write(_ bytes: [UInt8], now: LinkInstant) {
        written += 1
        let doomed = faults.dropWrites.contains(written) || (faults.blackholeFrom.map { written >= $0 } ?? false)
        if random.chance(faults.loss) || doomed || inFlight.count >= Self.capacity {
            dropped += 1
            return
        }
        var start = max(now, busyUntil)
        if let bandwidth = faults.bandwidth, bandwidth > 0 {
            let transmission = Duration.nanoseconds(Int64(bytes.count) * 1_000_000_000 / Int64(bandwidth))
            start = start + transmission
            busyUntil = start
        }
        var arrival = start + faults.delay
        if faults.jitter > .zero {
            let nanos = Int64(faults.jitter.components.seconds) * 1_000_000_000 + faults.jitter.components.attoseconds / 1_000_000_000
            arrival = arrival + .nanoseconds(Int64.random(in: 0...max(0, nanos), using: &random))
        }
        if random.chance(faults.reordering) { arrival = arrival + faults.delay * 3 + .milliseconds(5) }
        var payload = bytes
        if random.chance(faults.corruption), !payload.isEmpty {
            let bit = Int.random(in: 0..<(payload.count * 8), using: &random)
            payload[bit / 8] ^= 1 << (bit % 8)
        }
        enqueue(payload, at: arrival)
        if random.chance(faults.duplication) { enqueue(payload, at: arrival + .microseconds(100)) }
    }

    private mutating func enqueue(_ bytes: [UInt8], at arrival: LinkInstant) {
        if bytes.count > 1 && random.chance(faults.fragmentation) {
            let cut = Int.random(in: 1..<bytes.count, using: &random)
            order += 1
            inFlight.append((arrival, order, Array(bytes[..<cut])))
            order += 1
            inFlight.append((arrival, order, Array(bytes[cut...])))
        } else {
            order += 1
            inFlight.append((arrival, order, bytes))
        }
    }

    /// Everything that has arrived by `now`, in arrival order.
    public mutating func arrivals(upTo now: LinkInstant) -> [[UInt8]] {
        let due = inFlight.filter { $0.at <= now }.sorted { ($0.at, $0.order) < ($1.at, $1.order) }
        inFlight.removeAll { $0.at <= now }
        return due.map(\.bytes)
    }
}
