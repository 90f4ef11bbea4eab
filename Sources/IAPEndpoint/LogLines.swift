import Logging

/// A swift-log handler that hands every message to a closure, for code that
/// reads a connection's log as lines (the conformance run against a peer,
/// tests) rather than printing it.
public struct LineLogHandler: LogHandler {
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    private let line: @Sendable (Logger.Level, String) -> Void

    public init(level: Logger.Level = .info, _ line: @escaping @Sendable (Logger.Level, String) -> Void) {
        logLevel = level
        self.line = line
    }

    public func log(event: LogEvent) {
        line(event.level, event.message.description)
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
}

extension Logger {
    /// A logger whose messages (at `level` and above) go to `line`, whatever
    /// handler the process bootstrapped.
    public static func lines(_ label: String, level: Logger.Level = .info, _ line: @escaping @Sendable (String) -> Void) -> Logger {
        Logger(label: label) { _ in LineLogHandler(level: level) { _, text in line(text) } }
    }

    /// A logger that drops everything.
    public static func discarding(_ label: String) -> Logger {
        Logger(label: label) { _ in SwiftLogNoOpLogHandler() }
    }
}
