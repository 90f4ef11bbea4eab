// Helpers shared by the fuzz entry points: input-derived chunking, a cheap
// JSON checker and a trap that says what invariant broke.

import Glibc

/// Stops the run with a message libFuzzer shows next to the crash input.
public func require(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                    file: StaticString = #fileID, line: UInt = #line) {
    if !condition() { broken(message(), file: file, line: line) }
}

/// Stops the run as `require` does, where no condition is left to test.
public func broken(_ message: String, file: StaticString = #fileID, line: UInt = #line) -> Never {
    fatalError("FUZZ INVARIANT BROKEN: \(message)", file: file, line: line)
}

/// A small deterministic generator (SplitMix64), seeded from the input so a
/// crash input always replays the same splits.
public struct SplitMix64 {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    public mutating func next(upTo bound: Int) -> Int { Int(next() % UInt64(max(bound, 1))) }
}

/// FNV-1a of the input, as a seed.
public func seed(of bytes: some Collection<UInt8>, salt: UInt64 = 0) -> UInt64 {
    var hash: UInt64 = 0xCBF2_9CE4_8422_2325 ^ salt
    for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3 }
    return hash
}

/// Chunk sizes that cover `total` bytes. The first byte of the input picks
/// the largest chunk (1 to 128, or up to 4 KiB) and a hash of the input the
/// individual sizes, so a split is a pure function of the input.
public func chunkSizes(for input: [UInt8], total: Int) -> [Int] {
    let first = Int(input.first ?? 0)
    let largest = first & 0x80 != 0 ? 1 + (first & 0x7F) : 1 << (first % 13)
    var random = SplitMix64(seed: seed(of: input, salt: 0x51_1CE5))
    var sizes: [Int] = []
    var covered = 0
    while covered < total {
        // Empty appends are allowed and must be harmless.
        let size = random.next(upTo: 16) == 0 ? 0 : 1 + random.next(upTo: largest)
        sizes.append(size)
        covered += size
    }
    return sizes
}

public func hexString(_ bytes: some Sequence<UInt8>) -> String {
    bytes.map { byte in
        let digits = String(byte, radix: 16)
        return byte < 0x10 ? "0" + digits : digits
    }.joined(separator: " ")
}

/// True when `text` holds a line feed. memchr rather than a loop: libFuzzer
/// instruments every comparison in the harness, and a byte-by-byte search
/// of every rendered line took a fifth of FuzzTraceInput's time.
public func containsLineFeed(_ text: String) -> Bool {
    var text = text
    return text.withUTF8 { bytes in
        guard let start = bytes.baseAddress else { return false }
        return memchr(start, 0x0A, bytes.count) != nil
    }
}

/// True when `text` is exactly one JSON value (RFC 8259), checked by a small
/// recursive-descent reader so the harness needs no Foundation.
public func isValidJSON(_ text: String) -> Bool {
    var reader = JSONReader(Array(text.utf8))
    guard reader.value(depth: 0) else { return false }
    reader.skipSpace()
    return reader.index == reader.bytes.count
}

private struct JSONReader {
    let bytes: [UInt8]
    var index = 0
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    mutating func skipSpace() {
        while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    mutating func literal(_ word: String) -> Bool {
        let word = Array(word.utf8)
        guard index + word.count <= bytes.count, Array(bytes[index..<index + word.count]) == word else { return false }
        index += word.count
        return true
    }

    mutating func value(depth: Int) -> Bool {
        guard depth < 512 else { return false }
        skipSpace()
        guard let byte = peek else { return false }
        switch byte {
        case UInt8(ascii: "{"):
            index += 1
            skipSpace()
            if peek == UInt8(ascii: "}") { index += 1; return true }
            while true {
                skipSpace()
                guard peek == UInt8(ascii: "\""), string() else { return false }
                skipSpace()
                guard peek == UInt8(ascii: ":") else { return false }
                index += 1
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                if peek == UInt8(ascii: ",") { index += 1; continue }
                if peek == UInt8(ascii: "}") { index += 1; return true }
                return false
            }
        case UInt8(ascii: "["):
            index += 1
            skipSpace()
            if peek == UInt8(ascii: "]") { index += 1; return true }
            while true {
                guard value(depth: depth + 1) else { return false }
                skipSpace()
                if peek == UInt8(ascii: ",") { index += 1; continue }
                if peek == UInt8(ascii: "]") { index += 1; return true }
                return false
            }
        case UInt8(ascii: "\""): return string()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number()
        }
    }

    mutating func string() -> Bool {
        index += 1
        while let byte = peek {
            index += 1
            switch byte {
            case UInt8(ascii: "\""): return true
            case UInt8(ascii: "\\"):
                guard let escaped = peek else { return false }
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"),
                     UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
                    continue
                case UInt8(ascii: "u"):
                    for _ in 0..<4 {
                        guard let digit = peek, isHex(digit) else { return false }
                        index += 1
                    }
                default: return false
                }
            default:
                if byte < 0x20 { return false }
            }
        }
        return false
    }

    func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x66)
    }

    mutating func digits() -> Int {
        let begin = index
        while let byte = peek, byte >= 0x30, byte <= 0x39 { index += 1 }
        return index - begin
    }

    mutating func number() -> Bool {
        if peek == UInt8(ascii: "-") { index += 1 }
        guard let first = peek, first >= 0x30, first <= 0x39 else { return false }
        if first == 0x30 { index += 1 } else { _ = digits() }
        if peek == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return false }
        }
        if let e = peek, e | 0x20 == UInt8(ascii: "e") {
            index += 1
            if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { return false }
        }
        return true
    }
}

/// A fuzz input read as a script of operations: bytes, integers and
/// choices taken in order, zero once the input is used up.
public struct Script {
    public let bytes: [UInt8]
    public var index = 0
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    public var atEnd: Bool { index >= bytes.count }
    public mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }
    public mutating func u16() -> UInt16 { UInt16(byte()) << 8 | UInt16(byte()) }
    public mutating func u32() -> UInt32 { UInt32(u16()) << 16 | UInt32(u16()) }
    public mutating func take(_ count: Int) -> [UInt8] {
        let end = min(bytes.count, index + max(0, count))
        defer { index = end }
        return Array(bytes[index..<end])
    }
    public mutating func pick<T>(_ choices: [T]) -> T { choices[Int(byte()) % choices.count] }
}
