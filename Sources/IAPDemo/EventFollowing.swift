import IAPEndpoint
import IAPSampleApp
import IAPTransport

extension MediaEventText {
    /// Writes a head-unit endpoint's media events in words as they happen
    /// (its transcript when no shell runs: `gadget`, `supervise`).
    public static func follow(_ endpoint: MediaEndpoint, _ write: @escaping @Sendable (String) -> Void) {
        endpoint.observe { event, connection in
            guard case .media(let media) = event else { return }
            write(describe(media, headUnit: connection.headUnit, now: MonotonicClock.now()))
        }
    }
}
