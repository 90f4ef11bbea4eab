/// The one-byte checksum used by iAP2 headers and payloads and by iAP1 frames:
/// the two's complement of the byte sum, so that the covered bytes plus the
/// checksum sum to zero modulo 256.
public enum Checksum {
    @inlinable
    public static func of<C: Collection>(_ bytes: C) -> UInt8 where C.Element == UInt8 {
        var sum: UInt8 = 0
        for byte in bytes { sum &+= byte }
        return 0 &- sum
    }

    @inlinable
    static func sum(_ buffer: UnsafeBufferPointer<UInt8>, from start: Int, count: Int) -> UInt8 {
        // Only the sum modulo 256 matters, so a byte accumulator is exact and
        // vectorises to byte-wise vector adds (16 or 32 bytes per instruction).
        var sum: UInt8 = 0
        for byte in UnsafeBufferPointer(rebasing: buffer[start..<start + count]) { sum &+= byte }
        return sum
    }
}
