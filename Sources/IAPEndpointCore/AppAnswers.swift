import IAPLink
import IAPWire

extension EndpointCore {
    /// Handles `input`, then gives the core what the app answers without
    /// waiting, as every driver must: each `.perform` and `.legacyPerform`
    /// runs the handler in `commands` (the app's clock set to `now` first)
    /// and goes back as `.performed` or `.legacyPerformed`, an iAP2
    /// command's followed at once by what the app plays now (each command's
    /// effect an update of its own, before its status); `.readNowPlaying`,
    /// asked any number of times, is answered once with `.nowPlaying` after
    /// the rest, so it sees what the commands did. Returns every other
    /// output, in order, for the driver to carry out (writes, events, loads,
    /// requests for the authenticator and the verifier).
    ///
    /// This runs user code (the app's handlers and now playing): it is the
    /// drivers' shared edge, not part of the state machine, which never
    /// calls the app.
    public mutating func handle(_ input: Input, now: LinkInstant, answeringFor app: (any MediaApp)?) -> [Output] {
        answer(handle(input, now: now), now: now, for: app)
    }

    /// Answers the app's part of `outputs` (the core's outputs at `now`),
    /// as `handle(_:now:answeringFor:)` does; returns the rest, in order.
    public mutating func answer(_ outputs: [Output], now: LinkInstant, for app: (any MediaApp)?) -> [Output] {
        var pending = outputs[...]
        var passed: [Output] = []
        passed.reserveCapacity(pending.count)
        var readsNowPlaying = false
        while true {
            while let output = pending.popFirst() {
                switch output {
                case .perform(let command, let origin):
                    // Each command's effect is read before the next runs (two
                    // presses of play/pause in one input are two updates).
                    app?.setTime(now)
                    var effect = handle(.performed(command, origin, commands.perform(command)), now: now)
                    if let app { effect += handle(.nowPlaying(app.nowPlaying(at: now)), now: now) }
                    pending = effect[...] + pending
                case .legacyPerform(let command, let reply):
                    app?.setTime(now)
                    pending += handle(.legacyPerformed(reply, commands.perform(command)), now: now)
                case .readNowPlaying:
                    readsNowPlaying = true
                default:
                    passed.append(output)
                }
            }
            guard readsNowPlaying, let app else { return passed }
            readsNowPlaying = false
            pending += handle(.nowPlaying(app.nowPlaying(at: now)), now: now)
        }
    }
}
