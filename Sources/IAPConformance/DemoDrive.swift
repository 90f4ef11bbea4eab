import IAPDemo
import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// The scripted drive of `iapctl demo`: both roles over the simulated
/// loopback, from plugging in to unplugging and plugging in again.
public enum DemoDrive {
    /// What the drive ends with; the same with and without faults on the wire.
    public struct FinalState: Hashable, Sendable, CustomStringConvertible {
        public var connections: Int
        public var disconnections: Int
        public var title: String?
        public var state: NowPlayingInfo.PlaybackState
        public var repeatMode: RepeatMode
        public var shuffleMode: ShuffleMode
        public var rate: Double
        public var radioControls: Bool
        public var tabs: [String]
        public var recentlyPlayed: [String]
        public var failedSteps: [String]

        public var description: String {
            var lines = [
                "connections: \(connections), disconnections: \(disconnections)",
                "now playing: \(title ?? "nothing") (\(state)), repeat \(repeatMode), shuffle \(MediaEventText.word(for: shuffleMode)), rate \(rate)",
                "controls: \(radioControls ? "radio" : "standard")",
                "tabs: \(tabs.joined(separator: " | "))",
                "recently played: \(recentlyPlayed.joined(separator: ", "))",
            ]
            lines.append(failedSteps.isEmpty ? "every step completed" : "steps that did not complete: " + failedSteps.joined(separator: "; "))
            return lines.joined(separator: "\n")
        }
    }

    public static func run(faults: WireFaults = .none, seed: UInt64 = 1) -> (simulation: MediaSimulator, final: FinalState) {
        var sim = MediaSimulator(faults: faults, seed: seed)
        var failed: [String] = []
        func step(_ name: String, within seconds: Int = 20, until done: (MediaSimulator) -> Bool) {
            if !sim.run(for: .seconds(seconds), until: done) {
                failed.append(name)
                sim.note("demo", "step \"\(name)\" did not complete within \(seconds) s")
            }
        }
        func events(_ sim: MediaSimulator) -> Int { sim.headUnitEvents.count }
        func statusCount(_ sim: MediaSimulator, _ kind: RemoteCommand.Kind) -> Int {
            sim.headUnitEvents.filter { if case .commandStatus(let command, _) = $0 { command.kind == kind } else { false } }.count
        }
        func command(_ name: String, _ command: RemoteCommand) {
            let before = statusCount(sim, command.kind)
            sim.headUnitDoes(name) { $0.send(command, now: $1) }
            step(name) { statusCount($0, command.kind) > before }
        }

        sim.note("demo", "plugging the phone into the head unit")
        if !sim.connect() { failed.append("connect") }
        step("now playing screen configured") { $0.headUnit.nowPlaying.updates > 0 }

        // The head unit opens the root by itself once the phone says it has a content tree.
        step("tabs") { !$0.headUnit.tabs.isEmpty }
        sim.headUnitDoes("open Library") { $0.open("library", now: $1) }
        step("library") { $0.headUnit.containers["library"]?.isComplete == true }
        sim.headUnitDoes("open the album Kind of Blue") { $0.open("album:kind-of-blue", now: $1) }
        step("album") { $0.headUnit.containers["album:kind-of-blue"]?.isComplete == true }

        sim.headUnitDoes("play Blue in Green") { $0.select("kind-of-blue:3", now: $1) }
        step("play") { $0.headUnit.selecting == nil && $0.headUnit.nowPlaying.info.title == "Blue in Green" }
        let updatesBefore = sim.headUnit.nowPlaying.updates
        sim.note("demo", "listening for 5 s: no now-playing updates while nothing changes")
        sim.run(for: .seconds(5))
        if sim.headUnit.nowPlaying.updates != updatesBefore { failed.append("no updates as a clock tick") }

        sim.headUnitDoes("steering wheel: play/pause pressed twice over HID") { role, _ in role.press(.playPause) + role.press(.playPause) }
        step("HID presses") { $0.headUnit.nowPlaying.info.state == .playing && $0.headUnit.nowPlaying.updates >= updatesBefore + 2 }
        command("next track", .nextTrack)
        // A new track starts from its beginning (the app's handlers run at the current time).
        step("next now playing") { $0.headUnit.nowPlaying.info.title == "All Blues" && $0.headUnit.nowPlaying.elapsed(at: $0.now) < 1000 }
        command("seek to 1:00", .changePlaybackPosition(milliseconds: 60_000))
        command("repeat all", .changeRepeatMode(.all))
        command("shuffle songs", .changeShuffleMode(.items))
        command("rate button", .changePlaybackRate)
        command("rate button again", .changePlaybackRate)
        step("modes shown") { $0.headUnit.nowPlaying.info.repeatMode == .all && $0.headUnit.nowPlaying.info.shuffleMode == .items }

        sim.phoneDoes("offer like, dislike and bookmark (radio controls)") { phone, app, _ in
            phone.updateCommands { app.registerFeedback(&$0) }
        }
        step("radio controls") { $0.headUnit.radioControls }
        command("like", .like(true))
        sim.phoneDoes("disable like, dislike and bookmark") { phone, _, _ in
            phone.updateCommands { center in for kind in [RemoteCommand.Kind.like, .dislike, .bookmark] { center.setEnabled(kind, false) } }
        }
        sim.run(for: .milliseconds(200))
        if !sim.headUnit.radioControls { failed.append("disabling must not leave radio controls") }
        sim.phoneDoes("withdraw like, dislike and bookmark") { phone, _, _ in
            phone.updateCommands { center in for kind in [RemoteCommand.Kind.like, .dislike, .bookmark] { center.withdraw(kind) } }
        }
        step("standard controls") { !$0.headUnit.radioControls }

        sim.headUnitDoes("open up next") { $0.requestQueue(now: $1) }
        step("queue") { $0.headUnit.queue != nil }

        sim.headUnitDoes("open Podcasts (the phone's network is weak)") { $0.open("podcasts", now: $1) }
        step("podcasts failure") { $0.headUnit.containers["podcasts"]?.failure != nil }
        sim.headUnitDoes("tap to retry") { $0.retry("podcasts", now: $1) }
        step("podcasts retry") { $0.headUnit.containers["podcasts"]?.isComplete == true }

        sim.headUnitDoes("fetch the album artwork") { $0.requestImage("art:kind-of-blue", now: $1) }
        step("artwork") { sim in
            sim.headUnitEvents.contains { if case .image("art:kind-of-blue", .success, _) = $0 { true } else { false } } && !sim.transfers.isEmpty
        }
        sim.headUnitDoes("fetch an animated image") { $0.requestImage("art:animated", now: $1) }
        step("animated image refused") { sim in sim.headUnitEvents.contains { if case .image("art:animated", .commandFailed, _) = $0 { true } else { false } } }

        sim.note("demo", "unplugging")
        sim.unplug()
        sim.run(for: .seconds(1))
        sim.note("demo", "plugging in again")
        if !sim.connect() { failed.append("reconnect") }
        step("now playing after reconnect") { $0.headUnit.nowPlaying.updates > 0 }
        sim.headUnitDoes("browse the root") { $0.openRoot(now: $1) }
        step("tabs after reconnect") { !$0.headUnit.tabs.isEmpty }
        sim.run(for: .seconds(1))

        let info = sim.headUnit.nowPlaying.info
        let final = FinalState(
            connections: sim.connections, disconnections: sim.disconnections, title: info.title, state: info.state,
            repeatMode: info.repeatMode, shuffleMode: info.shuffleMode, rate: info.defaultPlaybackRate,
            radioControls: sim.headUnit.radioControls, tabs: sim.headUnit.tabs.map(\.text),
            recentlyPlayed: sim.app.snapshot.recentlyPlayed.map(\.title), failedSteps: failed + (sim.budgetFailure.map { [$0] } ?? []))
        return (sim, final)
    }
}
