#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import IAPWire

/// The monotonic clock, read only at the edge and handed to the link as a
/// `LinkInstant`.
public enum MonotonicClock {
    public static func now() -> LinkInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return LinkInstant(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }
}
