import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import Synchronization
import IAPWire


/// The head unit's shell over a live endpoint, as `iapctl head-unit` runs
/// it: lines in (a script on standard input, or a person), role actions and
/// a transcript out (the head unit's view: media events in words, the
/// shell's answers, the now-playing watch). A script waits for the answers
/// to one line (and for a watch to end) before it runs the next.
public final class ShellDriver: Sendable {
    private struct State: Sendable {
        var shell = HeadUnitShell()
        var lines: [String] = []
        /// No more lines will come.
        var ended = false
        /// The role has no request waiting for an answer.
        var idle = true
        var watching = false
        /// Counts watches, so that one ended by Ctrl-C never ends the next.
        var watchNumber = 0
        var nowPlayingUpdates = 0
    }

    private let endpoint: MediaEndpoint
    private let transcript: @Sendable (String) -> Void
    private let state = Mutex(State())

    /// Observes the endpoint's events; make it before the endpoint starts.
    /// `echoesLines`: each line's answer starts with the line (`> ls`), as a
    /// script's transcript wants; a person at a prompt sees it typed already.
    public init(endpoint: MediaEndpoint, echoesLines: Bool = true, transcript: @escaping @Sendable (String) -> Void) {
        self.endpoint = endpoint
        self.transcript = transcript
        state.withLock { $0.shell.echoes = echoesLines }
        endpoint.observe { [weak self] event, connection in self?.observe(event, connection) }
    }

    /// A line for the shell; nil: no more lines will come.
    public func feed(_ line: String?) {
        state.withLock { state in
            if let line, !state.ended { state.lines.append(line) } else { state.ended = true }
        }
        advanceOnEndpoint()
    }

    /// The shell quit (`quit` or `exit`).
    public var quit: Bool { state.withLock { $0.shell.quit } }
    /// The script ended and everything it asked was answered.
    public var finished: Bool { state.withLock { $0.ended && $0.lines.isEmpty && $0.idle && !$0.watching } }
    /// Lines that could not be carried out (see `HeadUnitShell.mistakes`).
    public var mistakes: Int { state.withLock { $0.shell.mistakes } }
    /// Now-playing updates the head unit has received.
    public var nowPlayingUpdates: Int { state.withLock { $0.nowPlayingUpdates } }

    /// Takes the lines fed but not run (the rest of a script when the
    /// connection ended), and whether the input had ended after them.
    public func takeUnrunLines() -> (lines: [String], inputEnded: Bool) {
        state.withLock { state in
            defer { state.lines = [] }
            return (state.lines, state.ended)
        }
    }

    /// Ctrl-C: ends a `watch` early (its next line then runs). False when
    /// no watch was running.
    @discardableResult
    public func interrupt() -> Bool {
        let stopped = state.withLock { state -> Bool in
            guard state.watching else { return false }
            state.watching = false
            state.shell.watchUntil = nil
            return true
        }
        if stopped {
            transcript("watch stopped")
            advanceOnEndpoint()
        }
        return stopped
    }

    private func observe(_ event: Connection.Event, _ connection: Connection) {
        guard case .media(let media) = event else { return }
        if case .nowPlaying = media { state.withLock { $0.nowPlayingUpdates += 1 } }
        transcript(MediaEventText.describe(media, headUnit: connection.headUnit, now: MonotonicClock.now()))
        // An answer may be what the next line waits for.
        advanceOnEndpoint()
    }

    private func advanceOnEndpoint() {
        endpoint.withConnection { [weak self] connection, now in self?.advance(&connection, now: now) ?? [] }
    }

    /// Runs the lines the role is ready for; on the endpoint's task.
    private func advance(_ connection: inout Connection, now: LinkInstant) -> [Connection.Output] {
        // Ready once the phone has said something of what it offers: its
        // app (the dev-kit extension), its media libraries or now playing.
        // A phone that speaks only standard iAP2 never sends the first.
        let headUnit = connection.headUnit
        guard connection.isMediaConnected,
              headUnit.appName != nil || headUnit.mediaLibraryInformationReceived || headUnit.nowPlaying.updates > 0 else { return [] }
        var outputs: [Connection.Output] = []
        // A script waits for the answers to a line, and for a watch to end, before its next line.
        while connection.headUnit.nextDeadline == nil, !state.withLock({ $0.watching }), !waitsForLibrary(connection.headUnit), let line = nextLine() {
            var shell = state.withLock { $0.shell }
            var printed: [String] = []
            outputs += connection.headUnitDoes(now: now) { role, now in
                let (roleOutputs, text) = shell.execute(line, role: &role, now: now)
                printed = text
                return roleOutputs
            }
            let startsWatch = shell.watchUntil != nil && !state.withLock { $0.watching }
            state.withLock { state in
                state.shell = shell
                if shell.quit { state.lines = [] }
                if startsWatch { state.watching = true }
            }
            for line in printed { transcript(line) }
            if startsWatch { watch(until: shell.watchUntil ?? now) }
        }
        let idle = connection.headUnit.nextDeadline == nil
        state.withLock { $0.idle = idle }
        return outputs
    }

    /// A library line (`lib`, `lplay`) waits while the library syncs.
    private func waitsForLibrary(_ headUnit: HeadUnitMediaRole) -> Bool {
        guard headUnit.isSyncingMediaLibrary, let line = state.withLock({ $0.lines.first }) else { return false }
        let verb = line.split(separator: " ").first?.lowercased() ?? ""
        return ["lib", "library", "lplay"].contains(verb)
    }

    private func nextLine() -> String? {
        state.withLock { $0.lines.isEmpty ? nil : $0.lines.removeFirst() }
    }

    /// `watch`: the now-playing line once a second until `end`.
    private func watch(until end: LinkInstant) {
        let endpoint = self.endpoint
        let number = state.withLock { state in
            state.watchNumber += 1
            return state.watchNumber
        }
        Task { [weak self] in
            while let self, self.state.withLock({ $0.watching && $0.watchNumber == number }), MonotonicClock.now() < end {
                endpoint.withConnection { [transcript] connection, now in
                    transcript(MediaEventText.nowPlayingLine(connection.headUnit, now: now))
                    return []
                }
                try? await Task.sleep(for: .seconds(1))
            }
            let ended = self?.state.withLock { state -> Bool in
                guard state.watching, state.watchNumber == number else { return false }
                state.watching = false
                state.shell.watchUntil = nil
                return true
            }
            if ended == true { self?.advanceOnEndpoint() }
        }
    }
}
