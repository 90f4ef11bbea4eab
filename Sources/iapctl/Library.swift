import ArgumentParser
import IAPDemo
import IAPEndpoint
import IAPLink
import IAPRoles
import IAPSession
import IAPTrace
import IAPTransport
import Logging
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import IAPWire

struct Library: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Sync a phone's media library as a head unit does (Media Library Access) and print it.",
        discussion: """
        Connects as a head unit (authenticating unless --auth off), identifies,
        asks the phone for its media libraries and syncs each to 100 %, playlist
        contents included, then prints one line per library:

          library NAME (UID) revision REV: N items, M playlists

        --json prints one JSON object per line instead: a "library" object, then
        an "item" object per item and a "playlist" object per playlist (keys the
        phone did not send are left out; identifiers are "0x" and 16 hex digits).

        --play PID then asks the phone to play that item (PlayMediaLibraryItems)
        and prints "now playing: TITLE — ARTIST" once the phone's now playing
        names it. Progress goes to standard error while a large library syncs.
        Exits 1 with one sentence when the phone offers no media library, a sync
        does not finish in --timeout seconds, or the play fails.

        Examples:
          iapctl library                                 # the built-in phone over an in-process loopback
          iapctl library --transport tcp:127.0.0.1:7000 --auth off
          iapctl library --json | jq -c 'select(.type == "item") | .title'
          iapctl library --play 0x1a2b3c4d5e6f7081
        """
    )

    @OptionGroup var options: TransportOptions
    @OptionGroup(title: "Logging") var logging: LoggingOptions

    @Flag(help: "Print one JSON object per line (library, item, playlist) instead of the summary.")
    var json = false

    @Option(help: ArgumentHelp("After the sync, play this item (its persistent id, 0x… or decimal) and print what plays.", valueName: "pid"))
    var play: String?

    @Option(parsing: .unconditional, help: "Seconds the session, the sync and a play may take each.")
    var timeout = 60.0

    func validate() throws {
        guard timeout > 0, timeout.isFinite else { throw ValidationError("--timeout must be a positive number of seconds") }
        if let play, Self.persistentID(play) == nil {
            throw ValidationError("--play \(play) is not a persistent id: give 0x and up to 16 hex digits, or a decimal number")
        }
    }

    static func persistentID(_ text: String) -> UInt64? {
        let lowered = text.lowercased()
        if lowered.hasPrefix("0x") { return UInt64(lowered.dropFirst(2), radix: 16) }
        return UInt64(lowered)
    }

    func run() async throws {
        logging.bootstrap()
        let (transport, other) = try options.open(as: .headUnit)
        let end = MediaEndpoint(kind: .headUnit, transport: transport, authentication: try options.authentication.endpointAuthentication(for: .headUnit),
                                linkPacketLength: options.linkPackets.linkPacketLength, linkOutstandingPackets: options.linkPackets.linkOutstanding, logger: Logger(label: "library"))
        let phoneAuthentication = try options.authentication.endpointAuthentication(for: .phone)
        let phone = other.map { MediaEndpoint(kind: .phone, transport: $0, app: SampleApp(), authentication: phoneAuthentication, logger: .discarding("endpoint")) }
        let progress = SyncProgress()
        end.observe { event, _ in
            if case .media(.mediaLibraryUpdated(let library, let percent)) = event { progress.show("syncing \(library): \(percent) %", percent: percent) }
        }
        try await whileRunning(end, counterpart: phone) {
            let synced: [MediaLibraryMirror]
            do {
                synced = try await sync(end)
            } catch {
                progress.clear()
                throw error
            }
            progress.clear()
            output(synced)
            if let play, let pid = Self.persistentID(play) { try await playItem(pid, in: synced, over: end) }
        }
    }

    /// Waits until every library the phone offered is synced; the libraries, in the phone's order.
    private func sync(_ end: MediaEndpoint) async throws -> [MediaLibraryMirror] {
        let start = MonotonicClock.now()
        while true {
            let status = end.current
            if case .failed(let reason) = status.stage { throw CommandFailure(message: "the session over \(options.transport) failed: \(reason)") }
            if let error = status.transportError { throw CommandFailure(message: "cannot reach the phone: \(error)") }
            let headUnit = status.headUnit
            if headUnit.mediaLibraryInformationReceived {
                if headUnit.offeredLibraries.isEmpty { throw CommandFailure(message: "the phone offers no media library") }
                let libraries = headUnit.offeredLibraries.compactMap { headUnit.mediaLibraries[$0] }
                if libraries.count == headUnit.offeredLibraries.count, libraries.allSatisfy(\.isSynced) { return libraries }
            }
            if seconds(since: start) > timeout {
                if !status.isUp { throw CommandFailure(message: "the link did not come up over \(options.transport) within \(Int(timeout)) s") }
                guard case .identified = status.stage else {
                    throw CommandFailure(message: "the session did not reach identification within \(Int(timeout)) s (\(status.stage))")
                }
                if !headUnit.mediaLibraryInformationReceived {
                    throw CommandFailure(message: "the phone did not answer StartMediaLibraryInformation within \(Int(timeout)) s: it does not offer Media Library Access")
                }
                let behind = headUnit.offeredLibraries.filter { headUnit.mediaLibraries[$0]?.isSynced != true }
                    .map { "\($0) at \(headUnit.mediaLibraryProgress[$0] ?? 0) %" }
                throw CommandFailure(message: "the sync did not finish within \(Int(timeout)) s: \(behind.joined(separator: "; "))")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    private func output(_ libraries: [MediaLibraryMirror]) {
        for library in libraries {
            guard json else {
                print("library \(library.description.name) (\(library.description.uniqueIdentifier)) revision \(library.revision ?? "none"): "
                      + "\(library.items.count) items, \(library.playlists.count) playlists")
                continue
            }
            var object = JSONObjectWriter()
            object.string("type", "library")
            object.string("uid", library.description.uniqueIdentifier)
            object.string("name", library.description.name)
            object.integer("library_type", library.description.type.rawValue)
            object.stringOrNull("revision", library.revision)
            print(object.finish())
            for item in library.songs { print(Self.json(item, library: library.description.uniqueIdentifier)) }
            for id in library.playlistOrder {
                guard let playlist = library.playlists[id] else { continue }
                var object = JSONObjectWriter()
                object.string("type", "playlist")
                object.string("library", library.description.uniqueIdentifier)
                object.string("persistent_id", Self.hex(playlist.persistentID))
                if let name = playlist.name { object.string("name", name) }
                object.stringOrNull("parent", playlist.parentPersistentID.map(Self.hex))
                object.bool("folder", playlist.isFolder)
                object.array("items") { array in for item in playlist.items { array.string(Self.hex(item)) } }
                print(object.finish())
            }
        }
    }

    static func json(_ item: MediaLibraryItem, library: String) -> String {
        var object = JSONObjectWriter()
        object.string("type", "item")
        object.string("library", library)
        object.string("persistent_id", hex(item.persistentID))
        if let title = item.title { object.string("title", title) }
        if let artist = item.artist { object.string("artist", artist) }
        if let album = item.albumTitle { object.string("album", album) }
        if let albumArtist = item.albumArtist { object.string("album_artist", albumArtist) }
        if let genre = item.genre { object.string("genre", genre) }
        if let composer = item.composer { object.string("composer", composer) }
        if let duration = item.durationMilliseconds { object.integer("duration_ms", duration) }
        if let track = item.trackNumber { object.integer("track_number", track) }
        if let disc = item.discNumber { object.integer("disc_number", disc) }
        if let type = item.mediaType { object.integer("media_type", type.rawValue) }
        return object.finish()
    }

    /// "0x" and 16 lowercase hex digits.
    static func hex(_ id: UInt64) -> String {
        let digits = String(id, radix: 16)
        return "0x" + String(repeating: "0", count: 16 - digits.count) + digits
    }

    private func playItem(_ pid: UInt64, in libraries: [MediaLibraryMirror], over end: MediaEndpoint) async throws {
        guard let library = libraries.first(where: { $0.items[pid] != nil }) else {
            throw CommandFailure(message: "play failed: no library of the phone has an item \(Self.hex(pid))")
        }
        let request = MediaLibraryPlayRequest.items([pid], startingIndex: 0, libraryID: library.description.uniqueIdentifier)
        end.withConnection { connection, now in connection.headUnitDoes(now: now) { role, _ in role.playFromLibrary(request) } }
        let start = MonotonicClock.now()
        while seconds(since: start) <= timeout {
            let status = end.current
            if let error = status.transportError { throw CommandFailure(message: "play failed: the transport closed: \(error)") }
            let info = status.headUnit.nowPlaying.info
            if info.itemID == pid, info.mediaLibraryID == nil || info.mediaLibraryID == library.description.uniqueIdentifier {
                let item = library.items[pid]
                print("now playing: \(info.title ?? item?.title ?? "?") — \(info.artist ?? item?.artist ?? "?")")
                return
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw CommandFailure(message: "play failed: the phone's now playing did not name \(Self.hex(pid)) within \(Int(timeout)) s")
    }

    private func seconds(since start: LinkInstant) -> Double { Double(MonotonicClock.now().nanoseconds - start.nanoseconds) / 1e9 }
}

/// Progress on standard error: one line rewritten in place on a terminal;
/// otherwise (a log file, a pipe) a line at every tenth of the way.
final class SyncProgress: Sendable {
    private let shown = Mutex<(text: String?, tenth: Int)>((nil, -1))
    private let terminal = isatty(2) == 1

    func show(_ text: String, percent: UInt8) {
        let line = shown.withLock { state -> String? in
            guard state.text != text else { return nil }
            state.text = text
            if terminal { return "\r\(text)\u{1B}[K" }
            let tenth = Int(percent) / 10
            guard tenth != state.tenth else { return nil }
            state.tenth = tenth
            return text + "\n"
        }
        if let line { Console.write(line, to: 2) }
    }

    func clear() {
        let wasShown = shown.withLock { state -> Bool in
            defer { state = (nil, -1) }
            return state.text != nil
        }
        if wasShown, terminal { Console.write("\r\u{1B}[K", to: 2) }
    }
}
