#if canImport(Glibc)
import Glibc
#endif
import IAPTransport

/// Standard input, line by line, on its own thread (a blocking read never
/// runs on Swift concurrency's pool). `nil` marks the end. On a terminal the
/// lines come through the line editor (prompt, editing, history,
/// completion, Ctrl-C handed to `interrupt`); on a pipe they are read as
/// they are, so scripts work.
enum StandardInputLines {
    static func start(interrupt: @escaping @Sendable () -> Bool, _ deliver: @escaping @Sendable (String?) -> Void) {
        do {
            if isatty(0) == 1 && isatty(1) == 1 {
                try LineEditor.start(deliver, interrupt: interrupt)
                return
            }
            try DedicatedThread.start("standard input") {
                while let line = readLine() { deliver(line) }
                deliver(nil)
            }
        } catch {
            deliver(nil)
        }
    }
}
