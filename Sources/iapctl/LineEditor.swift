import CLibEdit
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IAPDemo
import IAPTransport
import Synchronization

/// The head-unit shell's input on a terminal: a prompt, line editing,
/// history (kept between runs) and tab completion of commands and their
/// words, through libedit. It runs on the standard-input thread and owns
/// the terminal while it does: results printed meanwhile are handed to it
/// (`print`) and it writes them above the prompt, then redraws the line
/// being typed, so output never lands in the middle of an edit and arrow
/// keys never show as escape bytes. Log lines for standard error come the
/// same way. Ctrl-C cancels the line being typed (and a `watch`), as in a
/// readline shell; Ctrl-D at an empty prompt ends the input.
enum LineEditor {
    static let prompt = "head-unit> "

    /// Whether the editor owns the terminal now.
    static var isActive: Bool { pending.withLock { $0.active } }

    /// Whether the editor was started for this program's input: typed lines
    /// show on the terminal as they are typed. Set before `start` returns,
    /// while the editor's thread may still be setting the terminal up (a
    /// shell made then would otherwise echo each line a second time).
    static var wasStarted: Bool { startedOnce.withLock { $0 } }
    private static let startedOnce = Mutex(false)

    /// Writes `text` above the prompt (from any thread), on standard output
    /// or, for log lines, on `descriptor` 2.
    static func print(_ text: String, to descriptor: Int32 = 1) {
        let queued = pending.withLock { state -> Bool in
            guard state.active else { return false }
            state.lines.append((text, descriptor))
            return true
        }
        if queued { wake(.output) } else { Console.write(text, to: descriptor) }
    }

    /// Reads lines until end of input (Ctrl-D), delivering each; nil at the
    /// end. `interrupt` is called on Ctrl-C: true when it stopped something
    /// (the line is then cleared and the prompt drawn again), false when
    /// there is nothing to interrupt, and the program ends as Ctrl-C ends
    /// any program.
    static func start(_ deliver: @escaping @Sendable (String?) -> Void, interrupt: @escaping @Sendable () -> Bool) throws {
        Self.interrupt = interrupt
        startedOnce.withLock { $0 = true }
        do {
            try DedicatedThread.start("line editor") { run(deliver) }
        } catch {
            startedOnce.withLock { $0 = false }
            throw error
        }
    }

    /// Stops reading (the connection is gone and the program ends): the
    /// terminal is left as it was found, and the line being typed, if any,
    /// is returned (and kept in the history, so the up arrow recalls it).
    static func stop() async -> String? {
        guard isActive else { return nil }
        return await withCheckedContinuation { continuation in
            let already = pending.withLock { state -> Bool in
                guard state.active else { return true }
                state.stopped = continuation
                return false
            }
            if already { continuation.resume(returning: nil) } else { wake(.stop) }
        }
    }

    private struct Pending {
        var active = false
        var lines: [(text: String, descriptor: Int32)] = []
        var stopped: CheckedContinuation<String?, Never>?
    }

    /// What a byte on the wake-up pipe asks of the editor's thread.
    private enum Wake: UInt8 {
        case output = 1, stop = 2, interrupt = 3
    }

    private static func wake(_ reason: Wake) {
        var byte = reason.rawValue
        _ = write(wake.write, &byte, 1)
    }

    /// Set before the editor's thread starts, read there only.
    nonisolated(unsafe) private static var interrupt: (@Sendable () -> Bool)?

    private static let pending = Mutex(Pending())
    private static let wake: (read: Int32, write: Int32) = {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return (-1, -1) }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, O_NONBLOCK)
        }
        return (fds[0], fds[1])
    }()

    /// libedit calls back on the editor's thread only; these are read and
    /// written there and nowhere else.
    nonisolated(unsafe) private static var deliver: (@Sendable (String?) -> Void)?
    nonisolated(unsafe) private static var finished = false
    /// A line was accepted: start the next one afresh (an empty buffer, the terminal ready to edit).
    nonisolated(unsafe) private static var accepted = false
    nonisolated(unsafe) private static var candidates: [String] = []
    nonisolated(unsafe) private static var historyFile: String?

    private static func run(_ deliver: @escaping @Sendable (String?) -> Void) {
        Self.deliver = deliver
        iapctl_rl_configure(strdup("iapctl")) { text, start, _ in LineEditor.complete(text, start: Int(start)) }
        stifle_history(1000)
        historyFile = historyPath()
        if let historyFile { _ = read_history(historyFile) }
        install()
        // Leave the terminal as it was found, however the program ends.
        atexit { if LineEditor.isActive { rl_callback_handler_remove() } }
        pending.withLock { $0.active = true }
        catchInterrupts()
        var descriptors = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        var typed: String?
        while !finished {
            guard case .success = SystemCall.poll(&descriptors) else { break }
            if descriptors[1].revents != 0 {
                let reasons = drainWakes()
                if reasons.contains(.stop) {
                    typed = iapctl_rl_line_buffer().map { String(cString: $0) }
                    finished = true
                }
                showPending()
                if reasons.contains(.interrupt) && !finished { interrupted() }
                if finished { break }
            }
            if descriptors[0].revents != 0 {
                rl_callback_read_char()
                if accepted && !finished {
                    accepted = false
                    rl_callback_handler_remove()
                    install()
                }
            }
        }
        rl_callback_handler_remove()
        signal(SIGINT, SIG_DFL)
        let stopped = pending.withLock { state -> CheckedContinuation<String?, Never>? in
            state.active = false
            defer { state.stopped = nil }
            return state.stopped
        }
        showPending()
        let kept = typed.flatMap { $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0 }
        if let kept {
            add_history(kept)
            if let historyFile { _ = write_history(historyFile) }
        }
        if stopped != nil { Console.write("\n", to: 1) }
        stopped?.resume(returning: kept)
    }

    /// Ctrl-C reaches the editor's thread as a byte on the wake-up pipe
    /// (the handler does nothing else, as a signal handler must).
    private static func catchInterrupts() {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            var byte = LineEditor.Wake.interrupt.rawValue
            _ = write(LineEditor.wake.write, &byte, 1)
        }
        action.sa_flags = SA_RESTART
        sigemptyset(&action.sa_mask)
        sigaction(SIGINT, &action, nil)
    }

    /// What the wake-up pipe asked for since the last look.
    private static func drainWakes() -> Set<Wake> {
        var reasons = Set<Wake>()
        var byte: UInt8 = 0
        while read(wake.read, &byte, 1) > 0 {
            if let reason = Wake(rawValue: byte) { reasons.insert(reason) }
        }
        return reasons
    }

    /// Ctrl-C: the line being typed is dropped and a fresh prompt drawn, and
    /// a running `watch` stops; with nothing to interrupt (no connection),
    /// the program ends as Ctrl-C ends any program.
    private static func interrupted() {
        guard interrupt?() ?? false else {
            pending.withLock { $0.active = false }
            rl_callback_handler_remove()
            Console.write("\n", to: 1)
            signal(SIGINT, SIG_DFL)
            raise(SIGINT)
            return
        }
        Console.write("^C\n", to: 1)
        rl_callback_handler_remove()
        install()
    }

    private static func install() {
        rl_callback_handler_install(prompt) { line in LineEditor.received(line) }
    }

    private static func received(_ line: UnsafeMutablePointer<CChar>?) {
        guard let line else {
            finished = true
            Console.write("\n", to: 1)
            deliver?(nil)
            return
        }
        let text = String(cString: line)
        free(line)
        if !text.trimmingCharacters(in: .whitespaces).isEmpty {
            add_history(text)
            // Saved at once: the program may end with this line (`quit`).
            if let historyFile { _ = write_history(historyFile) }
        }
        accepted = true
        deliver?(text)
    }

    /// Results that arrived while the prompt was up: the line is cleared,
    /// they are written, and the prompt with what was typed is drawn again.
    private static func showPending() {
        let lines = pending.withLock { state -> [(text: String, descriptor: Int32)] in
            defer { state.lines = [] }
            return state.lines
        }
        guard !lines.isEmpty else { return }
        Console.write("\r\u{1B}[K", to: 1)
        for line in lines { Console.write(line.text, to: line.descriptor) }
        if !finished { rl_forced_update_display() }
    }

    /// Commands as the first word, a command's words after it.
    private static func complete(_ text: UnsafePointer<CChar>?, start: Int) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? {
        iapctl_rl_no_default_completion()
        let typed = iapctl_rl_line_buffer().map { String(cString: $0) } ?? ""
        let before = typed.utf8.prefix(start)
        let words = String(decoding: before, as: UTF8.self).split(separator: " ")
        candidates = words.isEmpty ? HeadUnitShell.commands : HeadUnitShell.arguments(of: String(words[0]))
        return rl_completion_matches(text) { text, state in
            if state == 0 { LineEditor.candidates = LineEditor.candidates.filter { $0.hasPrefix(text.map { String(cString: $0) } ?? "") } }
            guard Int(state) < LineEditor.candidates.count else { return nil }
            return strdup(LineEditor.candidates[Int(state)])
        }
    }

    /// `$XDG_STATE_HOME/iap-devkit/head-unit-history`, else under ~/.local/state.
    private static func historyPath() -> String? {
        let environment = ProcessInfo.processInfo.environment
        guard let base = environment["XDG_STATE_HOME"] ?? environment["HOME"].map({ $0 + "/.local/state" }) else { return nil }
        let directory = base + "/iap-devkit"
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return directory + "/head-unit-history"
    }
}
