// A media library synced through the whole stack in one process (Media
// Library Access: the phone's batches, the link, the head unit's copy and
// the playlists' contents over file transfer), with a baseline measured in
// the same run: the same library's messages written by the phone's server
// and read into a head unit's copy with no session or link between them.
//   library-sync ITEMS [--json]
// Prints the library's build time, the baseline and the sync (medians of three
// interleaved rounds), their ratio, the
// messages and bytes the phone wrote, and the process's memory (VmRSS
// before the sync, VmHWM after it). Docs/Performance.md, "Media library".

#if canImport(Glibc)
import Glibc
#endif
import IAPConformance
import IAPDemo
import IAPLink
import IAPRoles
import IAPWire

let arguments = CommandLine.arguments.dropFirst()
let items = arguments.first.flatMap { Int($0) } ?? 10_000
let json = arguments.contains("--json")

func seconds(_ body: () -> Void) -> Double {
    var start = timespec(), end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    body()
    clock_gettime(CLOCK_MONOTONIC, &end)
    return Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
}

/// A /proc/self/status figure in KiB (VmRSS, VmHWM).
func status(_ key: String) -> Int {
    guard let file = fopen("/proc/self/status", "r") else { return 0 }
    defer { fclose(file) }
    var line = [CChar](repeating: 0, count: 256)
    while fgets(&line, Int32(line.count), file) != nil {
        let text = String(cString: line)
        if text.hasPrefix(key + ":") { return Int(text.dropFirst(key.count + 1).filter(\.isNumber)) ?? 0 }
    }
    return 0
}

// A library of ITEMS songs: albums of 12 tracks, 50 artists, 8 genres.
var app: SampleApp!
let build = seconds {
    let albums = (0..<(items + 11) / 12).map { album in
        SampleLibrary.Album(id: "album-\(album)", title: "Album \(album)", artist: "Artist \(album % 50)", imageID: "art:\(album)",
                            tracks: (0..<min(12, items - album * 12)).map { track in
                                SampleTrack(id: "\(album):\(track)", persistentID: UInt64(album * 12 + track + 1), title: "Song \(track + 1) of album \(album)",
                                            artist: "Artist \(album % 50)", album: "Album \(album)", genre: "Genre \(album % 8)",
                                            durationMilliseconds: UInt32(180_000 + track * 1000))
                            })
    }
    let interlude = SampleTrack(id: "interlude", persistentID: 0, title: "Interlude", artist: "-", album: "-", genre: "-", durationMilliseconds: 1000,
                                inBrowseTree: false)
    app = SampleApp(library: SampleLibrary(albums: albums, stations: [], podcasts: [], interlude: interlude))
}
let library = app.mediaLibrary!
let residentBefore = status("VmRSS")

// Baseline: the server's messages read straight into a copy.
var baselineMessages = 0
var baselineBytes = 0
@MainActor func baselineRun() -> Double {
    baselineMessages = 0
    baselineBytes = 0
    return seconds {
        var server = MediaLibraryServer(library: library)
        _ = server.start(MediaLibraryUpdateRequest(libraryID: library.description.uniqueIdentifier))
        var mirror = MediaLibraryMirror(library.description)
        var transfer: UInt8 = 1
        while let next = server.nextMessage(budget: 4092, transferID: { defer { transfer = transfer == 255 ? 1 : transfer + 1 }; return transfer }) {
            let bytes = try! next.message.encoded()
            baselineMessages += 1
            baselineBytes += bytes.count
            guard case .mediaLibraryUpdate(let update)? = try! MediaMessage(try! ControlMessage(decoding: bytes)) else { fatalError("not an update") }
            for (_, playlist) in mirror.apply(update) {
                _ = mirror.setContents(of: playlist, from: next.contents.first { $0.playlistID == playlist }?.bytes ?? [])
            }
        }
        precondition(mirror.isSynced && mirror.items.count == library.items.count, "the baseline copy is not whole")
    }
}

// The whole stack: connect (authentication, identification), then the sync.
var pair: InProcessMediaPair!
@MainActor func syncRun() -> Double {
    var synced = false
    let time = seconds {
        pair = InProcessMediaPair(app: app)
        synced = pair.run(until: { $0.headUnit.headUnit.mediaLibraries[library.description.uniqueIdentifier]?.isSynced == true })
    }
    precondition(synced, "the head unit did not sync")
    let copy = pair.headUnit.headUnit.mediaLibraries[library.description.uniqueIdentifier]!
    precondition(copy.items.count == library.items.count, "the head unit has \(copy.items.count) of \(library.items.count) items")
    return time
}

// Interleaved rounds, medians: the first round also pays for the heap growing.
let rounds = 3
var baselines: [Double] = []
var syncs: [Double] = []
for _ in 0..<rounds {
    baselines.append(baselineRun())
    pair = nil
    syncs.append(syncRun())
}
let baseline = baselines.sorted()[rounds / 2]
let sync = syncs.sorted()[rounds / 2]
// The same connection with nothing to sync, for the session's own cost.
let connectOnly = seconds { _ = InProcessMediaPair(app: SampleApp(library: SampleLibrary(albums: [], stations: [], podcasts: [],
                                                                                            interlude: SampleLibrary.standard.interlude))) }
let peak = status("VmHWM")

if json {
    print("""
    {"items":\(items),"build_s":\(build),"baseline_s":\(baseline),"sync_s":\(sync),"connect_s":\(connectOnly),"ratio":\(sync / baseline),\
    "messages":\(baselineMessages),"message_bytes":\(baselineBytes),"phone_bytes_written":\(pair.bytesWritten.phone),\
    "rss_before_kib":\(residentBefore),"peak_kib":\(peak)}
    """)
} else {
    func ms(_ value: Double) -> String { String(Int((value * 1000).rounded())) + " ms" }
    print("\(items) items: library built in \(ms(build)); baseline (server → codec → copy) \(ms(baseline)); "
          + "sync through the stack \(ms(sync)) (connecting alone \(ms(connectOnly))) = \((sync / baseline * 100).rounded() / 100)× the baseline")
    print("  \(baselineMessages) MediaLibraryUpdate messages, \(baselineBytes) bytes; the phone wrote \(pair.bytesWritten.phone) bytes in all")
    print("  memory: \(residentBefore / 1024) MiB resident with the library built, \(peak / 1024) MiB at the peak")
}
