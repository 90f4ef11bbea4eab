/// A point in time as the sans-IO state machines see it (the link, the
/// session, the roles, the hotplug supervisor): nanoseconds since an origin
/// the caller chooses. No state machine reads a clock; the driver at the
/// edge passes the current instant into every call, so tests own time
/// completely. It lives here, in the lowest module, so that every layer can
/// take the time without depending on the link.
public struct LinkInstant: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var nanoseconds: Int64

    public init(nanoseconds: Int64) { self.nanoseconds = nanoseconds }
    public static func milliseconds(_ value: Int64) -> LinkInstant { LinkInstant(nanoseconds: value * 1_000_000) }
    public static let zero = LinkInstant(nanoseconds: 0)

    public static func < (lhs: LinkInstant, rhs: LinkInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: LinkInstant, rhs: Duration) -> LinkInstant {
        LinkInstant(nanoseconds: lhs.nanoseconds + rhs.nanosecondsValue)
    }

    public static func - (lhs: LinkInstant, rhs: LinkInstant) -> Duration {
        .nanoseconds(lhs.nanoseconds - rhs.nanoseconds)
    }

    public var description: String {
        let milliseconds = Double(nanoseconds) / 1e6
        return "\(milliseconds) ms"
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating far beyond any link timer).
    package var nanosecondsValue: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    package var wholeMilliseconds: Int { Int(nanosecondsValue / 1_000_000) }
}
