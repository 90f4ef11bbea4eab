/// The one-byte checksum used by iAP2 headers and payloads and by iAP1 frames:
/// the two's complement of the byte sum, so that the covered bytes plus the
/// checksum sum to zero modulo 256.
public enum Checksum {
    @inlinable
    public static func of<C: Collection>(_ bytes: C) -> UInt8 where C.Element == UInt8 {
        // Arrays and their slices (every payload the encoders see) take the
        // vector sum below; anything else is added byte by byte.
        if let total = bytes.withContiguousStorageIfAvailable({ Checksum.sum($0, from: 0, count: $0.count) }) { return 0 &- total }
        var total: UInt8 = 0
        for byte in bytes { total &+= byte }
        return 0 &- total
    }

    @inlinable
    static func sum(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, count: Int) -> UInt8 {
        // Only the sum modulo 256 matters, so bytes can be added with
        // wrapping byte-wise vector adds. Four independent 16-byte
        // accumulators keep the adds from waiting on each other.
        guard let base = buffer.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(base + start)
        var offset = 0
        var a = SIMD16<UInt8>(), b = SIMD16<UInt8>(), c = SIMD16<UInt8>(), d = SIMD16<UInt8>()
        while offset + 64 <= count {
            a &+= raw.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
            b &+= raw.loadUnaligned(fromByteOffset: offset + 16, as: SIMD16<UInt8>.self)
            c &+= raw.loadUnaligned(fromByteOffset: offset + 32, as: SIMD16<UInt8>.self)
            d &+= raw.loadUnaligned(fromByteOffset: offset + 48, as: SIMD16<UInt8>.self)
            offset += 64
        }
        while offset + 16 <= count {
            a &+= raw.loadUnaligned(fromByteOffset: offset, as: SIMD16<UInt8>.self)
            offset += 16
        }
        var total = ((a &+ b) &+ (c &+ d)).wrappedSum()
        while offset < count {
            total &+= raw.load(fromByteOffset: offset, as: UInt8.self)
            offset += 1
        }
        return total
    }
}
