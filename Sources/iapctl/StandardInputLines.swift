#if canImport(Glibc)
import Glibc
#endif

/// Standard input, line by line, on its own thread (a blocking read never
/// runs on Swift concurrency's pool). `nil` marks the end.
enum StandardInputLines {
    static func start(_ deliver: @escaping @Sendable (String?) -> Void) {
        let box = Unmanaged.passRetained(LineSink(deliver))
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            let sink = Unmanaged<LineSink>.fromOpaque(context!).takeRetainedValue()
            while let line = readLine() { sink.deliver(line) }
            sink.deliver(nil)
            return nil
        }, box.toOpaque())
        if result == 0 { pthread_detach(thread) } else { box.release(); deliver(nil) }
    }

    final class LineSink: Sendable {
        let deliver: @Sendable (String?) -> Void
        init(_ deliver: @escaping @Sendable (String?) -> Void) { self.deliver = deliver }
    }
}
