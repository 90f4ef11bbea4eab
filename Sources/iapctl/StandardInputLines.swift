import IAPTransport

/// Standard input, line by line, on its own thread (a blocking read never
/// runs on Swift concurrency's pool). `nil` marks the end.
enum StandardInputLines {
    static func start(_ deliver: @escaping @Sendable (String?) -> Void) {
        do {
            try DedicatedThread.start("standard input") {
                while let line = readLine() { deliver(line) }
                deliver(nil)
            }
        } catch {
            deliver(nil)
        }
    }
}
