import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPTransport
import Logging
import Synchronization

/// Where the CLI writes. Results (decoded traces, JSON, the head unit's
/// transcript, ping times) go to standard output; logs go through swift-log
/// to standard error. Both are stamped with seconds since the start, so the
/// two streams interleave readably in one terminal.
enum Console {
    static let start = MonotonicClock.now()
    /// The level `bootstrap` chose, for loggers made with a label read later.
    static let level = Mutex(Logger.Level.info)

    /// A logger whose name is read at each message (a connection numbered once it opens).
    static func logger(_ label: @escaping @Sendable () -> String) -> Logger {
        let level = self.level.withLock { $0 }
        return Logger(label: "connection") { _ in ConsoleLogHandler(label: label, logLevel: level) }
    }

    /// Seconds since the start, e.g. `12.034`.
    static func stamp() -> String {
        secondsText(Double(MonotonicClock.now().nanoseconds - start.nanoseconds) / 1e9)
    }

    /// A result line on standard output: `[12.034] who: line`.
    static func result(_ who: String, _ line: String) {
        let text = "[\(stamp())] \(who): \(line)\n"
        // While the shell's line editor owns the terminal it writes above the prompt.
        LineEditor.print(text)
    }

    static func write(_ text: String, to descriptor: Int32) {
        _ = text.withCString { Glibc.write(descriptor, $0, strlen($0)) }
    }
}

/// Log lines by who says them, through swift-log (standard error).
struct Log: Sendable {
    func callAsFunction(_ who: String, _ line: String, level: Logger.Level = .info) {
        Logger(label: who).log(level: level, "\(line)")
    }
}

/// swift-log's handler for the CLI: `[12.034] who: message` on standard
/// error, with the level named for warnings and worse.
struct ConsoleLogHandler: LogHandler {
    /// Read at each message: a connection's name may be known only later (supervise).
    let label: @Sendable () -> String
    var logLevel: Logger.Level
    var metadata: Logger.Metadata = [:]

    init(label: String, logLevel: Logger.Level) {
        self.init(label: { label }, logLevel: logLevel)
    }

    init(label: @escaping @Sendable () -> String, logLevel: Logger.Level) {
        self.label = label
        self.logLevel = logLevel
    }

    func log(event: LogEvent) {
        let level = event.level >= .warning ? "\(event.level): " : ""
        // Above the shell's prompt while its line editor owns the terminal, as results are.
        LineEditor.print("[\(Console.stamp())] \(label()): \(level)\(event.message)\n", to: 2)
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

/// `--log-level`, `--verbose`, `--quiet`: how much the command logs on
/// standard error. Results on standard output are not affected.
struct LoggingOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Log messages at this level and above on standard error: trace, debug, info (the default), notice, warning, error, critical.",
                               valueName: "level"),
            completion: .list(["trace", "debug", "info", "notice", "warning", "error", "critical"]),
            transform: { text in
                guard let level = Logger.Level(rawValue: text.lowercased()) else {
                    throw ValidationError("'\(text)' is not a log level: use trace, debug, info, notice, warning, error or critical")
                }
                return level
            })
    var logLevel: Logger.Level?

    @Flag(name: [.customShort("v"), .long], help: "Log more: debug messages too (--log-level debug).")
    var verbose = false

    @Flag(name: [.customShort("q"), .long], help: "Log less: warnings and errors only (--log-level warning).")
    var quiet = false

    func validate() throws {
        if verbose && quiet { throw ValidationError("--verbose and --quiet contradict each other: give one") }
        if logLevel != nil && (verbose || quiet) { throw ValidationError("give --log-level, or --verbose/--quiet, not both") }
    }

    var level: Logger.Level { logLevel ?? (verbose ? .debug : quiet ? .warning : .info) }

    /// Sends every logger in the process to standard error at the chosen level.
    func bootstrap() {
        _ = Console.start
        let level = self.level
        Console.level.withLock { $0 = level }
        LoggingSystem.bootstrap { label in ConsoleLogHandler(label: label, logLevel: level) }
    }
}
