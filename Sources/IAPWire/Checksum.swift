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
        // Summing in a wide accumulator lets the optimiser vectorise the loop;
        // only the low byte matters.
        var sum: UInt = 0
        var index = start
        let end = start + count
        while index < end {
            sum &+= UInt(buffer[index])
            index += 1
        }
        return UInt8(truncatingIfNeeded: sum)
    }
}
