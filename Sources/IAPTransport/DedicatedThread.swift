#if canImport(Glibc)
import Glibc
#endif

/// A plain POSIX thread for a blocking loop (reads, accept, libusb event
/// handling, udev monitoring): blocking calls never run on Swift
/// concurrency's cooperative pool, which has as many threads as cores.
public enum DedicatedThread {
    /// Runs `body` on a new detached thread; `purpose` names it in the error.
    public static func start(_ purpose: String, _ body: @escaping @Sendable () -> Void) throws(TransportError) {
        let box = Unmanaged.passRetained(Body(body))
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, box.toOpaque())
        guard result == 0 else {
            box.release()
            throw TransportError("cannot start a thread for \(purpose)", errno: result)
        }
        pthread_detach(thread)
    }

    /// Runs blocking `body` (file writes to sysfs, a control transfer) on
    /// a new thread and waits for its result without holding a pool thread.
    public static func run<Result: Sendable>(_ purpose: String, _ body: @escaping @Sendable () throws -> Result) async throws -> Result {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            do {
                try start(purpose) { continuation.resume(with: Swift.Result { try body() }) }
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }

    private final class Body: Sendable {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }
}
