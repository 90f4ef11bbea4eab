import IAPDemo
import IAPEndpoint
import IAPLink
import IAPSession
import IAPTransport
import Logging
import Synchronization
import IAPWire

/// The session checked against another implementation in real time, with
/// this project as either end: as the phone (device end) it checks an
/// accessory, as the head unit (accessory end) it checks a device. One
/// connection: link up, authentication, identification, then a short look
/// at media and at the declared message lists.
public struct SessionConformance: Sendable {
    public let kind: EndKind
    public let transport: Transport
    public let authentication: EndpointAuthentication
    /// How long the whole session may take to get through identification.
    public let timeout: Duration
    /// How long media is watched after identification.
    public let observation: Duration

    public init(kind: EndKind, transport: Transport, authentication: EndpointAuthentication, timeout: Duration = .seconds(30),
                observation: Duration = .seconds(3)) {
        self.kind = kind
        self.transport = transport
        self.authentication = authentication
        self.timeout = timeout
        self.observation = observation
    }

    /// The cases' names for an end: what this end checks of its peer.
    public static func caseNames(as kind: EndKind) -> [String] {
        let peer = kind.linkRole == .device ? "accessory" : "device"
        return ["link", "authentication", "identification", "media", "media-library", "declared-messages"].map { "\(peer)-\($0)" }
    }

    private struct Seen: Sendable {
        var stages: [Connection.Stage] = []
        var lines: [String] = []
        var everUp = false
        var identifiedAt: LinkInstant?
        var appName: String?
        var tabs: [String] = []
        var finished = false
        /// Head unit: the device answered StartMediaLibraryInformation; its libraries, each with whether it synced.
        var libraryInformation = false
        var libraries: [(name: String, items: Int, playlists: Int, synced: Bool, progress: UInt8)] = []
        var nowPlayingUpdates = 0
    }

    /// Runs the session once and reports each case as it is known.
    public func run(seed: UInt64, report: @Sendable (ConformanceResult) -> Void) async -> [ConformanceResult] {
        let seen = Mutex(Seen())
        let started = MonotonicClock.now()
        let endpoint = MediaEndpoint(kind: kind, transport: transport, app: kind == .phone ? SampleApp() : nil, authentication: authentication, logger: .lines(kind.rawValue) { line in
            seen.withLock { $0.lines.append(line) }
        })
        let timeout = self.timeout, observation = self.observation
        // The session as each event leaves it; the stop asked after every input.
        endpoint.observe { _, connection in
            seen.withLock { state in
                if state.stages.last != connection.stage { state.stages.append(connection.stage) }
                let headUnit = connection.headUnit
                state.appName = headUnit.appName
                state.tabs = headUnit.tabs.map(\.text)
                state.nowPlayingUpdates = headUnit.nowPlaying.updates
                state.libraryInformation = headUnit.mediaLibraryInformationReceived
                state.libraries = headUnit.offeredLibraries.map { id in
                    let mirror = headUnit.mediaLibraries[id]
                    return (mirror?.description.name ?? id, mirror?.items.count ?? 0, mirror?.playlists.count ?? 0, mirror?.isSynced == true,
                            headUnit.mediaLibraryProgress[id] ?? 0)
                }
            }
        }
        endpoint.stop(when: { endpoint in
            seen.withLock { state in
                let stage = endpoint.stage
                if state.stages.last != stage { state.stages.append(stage) }
                state.everUp = endpoint.everUp
                let now = MonotonicClock.now()
                if case .identified = stage, state.identifiedAt == nil { state.identifiedAt = now }
                // A head unit also waits (within the timeout) for the device's libraries to sync.
                let librariesDone = kind.linkRole == .device || (state.libraryInformation && state.libraries.allSatisfy(\.synced))
                let observed = state.identifiedAt.map { now - $0 >= observation && (librariesDone || now - $0 >= timeout) } ?? false
                let failed = state.stages.contains { if case .failed = $0 { true } else { false } }
                state.finished = observed || failed || now - started >= timeout + observation || endpoint.endReason != nil
                return state.finished
            }
        })
        var results: [ConformanceResult] = []
        func finish(_ name: String, _ failures: [String], _ summary: String) {
            let elapsed = Int((MonotonicClock.now().nanoseconds - started.nanoseconds) / 1_000_000)
            let result = ConformanceResult(name: name, seed: seed, failures: failures, summary: summary, milliseconds: elapsed)
            results.append(result)
            report(result)
        }
        do {
            try endpoint.start()
        } catch {
            finish(Self.caseNames(as: kind)[0], ["cannot open the transport: \(error)"], "")
            return results
        }
        // A timer input keeps the stop condition looked at while the peer is silent.
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(200))
                endpoint.wake()
            }
        }
        await endpoint.run()
        ticker.cancel()
        await endpoint.close()
        let state = seen.withLock { $0 }
        let names = Self.caseNames(as: kind)
        let peer = kind.linkRole == .device ? "accessory" : "device"
        let failure = state.stages.compactMap { if case .failed(let reason) = $0 { reason } else { nil } }.first
        let passedAuthentication = state.stages.contains { $0 == .identifying || { if case .identified = $0 { true } else { false } }($0) }
        let identifiedName = state.stages.compactMap { if case .identified(let name) = $0 { name } else { nil } }.first

        finish(names[0], state.everUp ? [] : ["the link did not come up within \(timeout)"], state.everUp ? "link up" : "")
        let certificate = state.lines.first { $0.hasPrefix("accessory certificate:") }
        if passedAuthentication {
            finish(names[1], [], certificate ?? "authentication succeeded")
        } else {
            let stall = state.lines.first { $0.contains("has not started authentication") }
            finish(names[1], [failure ?? stall ?? "authentication did not complete within \(timeout)"], certificate ?? "")
        }
        if let identifiedName {
            finish(names[2], [], "identified as \(identifiedName)")
        } else {
            let rejected = state.lines.first { $0.contains("identification rejected") }
            finish(names[2], [rejected ?? failure ?? "identification did not complete"], "")
        }
        if kind.linkRole == .accessory {
            // The dev-kit extension's app and tabs, or what a phone that speaks only standard iAP2 offers.
            let extensionMedia = state.appName != nil && !state.tabs.isEmpty
            let standardMedia = state.libraryInformation || state.nowPlayingUpdates > 0
            finish(names[3], extensionMedia || standardMedia ? [] : ["the \(peer) presented no app with root tabs, no media library and no now playing within \(observation) of identification"],
                   state.appName.map { "app \"\($0)\": " + state.tabs.joined(separator: " | ") } ?? "\(state.nowPlayingUpdates) now-playing updates")
            var libraryFailures: [String] = []
            if !state.libraryInformation {
                libraryFailures.append("the \(peer) did not answer StartMediaLibraryInformation")
            }
            for library in state.libraries where !library.synced {
                libraryFailures.append("library \(library.name) did not sync within \(timeout) (\(library.progress) %)")
            }
            let described = state.libraries.map { "\($0.name): \($0.items) items, \($0.playlists) playlists" }
            finish(names[4], libraryFailures, state.libraryInformation ? (described.isEmpty ? "no library offered" : described.joined(separator: "; ")) : "")
        } else {
            let mediaLines = state.lines.filter { $0.contains("head unit limits") || $0.contains("now playing") || $0.contains("HID component") }
            finish(names[3], identifiedName == nil ? ["no media connection"] : [], "\(mediaLines.count) media exchanges seen")
            let asked = state.lines.contains { $0.contains("media library information:") }
            let synced = state.lines.filter { $0.contains("syncing to revision") }
            finish(names[4], asked ? [] : ["the \(peer) did not ask for media library information (StartMediaLibraryInformation)"],
                   asked ? (synced.isEmpty ? "asked for the libraries, not for their items" : "synced: \(synced.count) StartMediaLibraryUpdates") : "")
        }
        let undeclared = state.lines.filter { $0.contains("did not declare") }
        finish(names[5], undeclared, undeclared.isEmpty ? "only declared messages seen" : "")
        return results
    }
}
