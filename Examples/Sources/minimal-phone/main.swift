// A phone that serves a tiny music app to a head unit.
//
//   swift run minimal-phone --listen 127.0.0.1:7000
//
// The app is three pieces: a content data source (what the car's screen
// browses), a now-playing center (what is playing) and a remote command
// center (what the car's buttons may ask).
import ArgumentParser
import IAPKit
import Logging

/// The content tree: one tab of songs. Children are asked for page by page
/// (`offset`, `count`) and only when the head unit opens a container.
struct Songs: ContentDataSource {
    let nowPlaying: NowPlayingCenter
    let songs = [("So What", "Miles Davis"), ("Naima", "John Coltrane"), ("Take Five", "Dave Brubeck")]

    func tabs() async throws -> [ContentItem] {
        [ContentItem(id: "songs", kind: .container, text: "Songs")]
    }

    func children(of containerID: String, offset: Int, count: Int) async throws -> ContentPage {
        guard containerID == "songs" else { throw ContentError(.noSuchContent, "no container \(containerID)") }
        let items = songs.enumerated().map { index, song in
            ContentItem(id: "song:\(index)", kind: .playable, text: song.0, detailText: song.1)
        }
        return ContentPage(items, offset: offset, count: count)
    }

    /// Playing is the app's business; the head unit learns of it through now playing.
    func play(_ itemID: String, imageRowEntryID: String?) async throws {
        guard let index = Int(itemID.dropFirst("song:".count)), songs.indices.contains(index) else {
            throw ContentError(.noSuchContent, "no song \(itemID)")
        }
        let (title, artist) = songs[index]
        nowPlaying.info = NowPlayingInfo(title: title, artist: artist, durationMilliseconds: 180_000,
                                         playbackRate: 1, state: .playing)
    }
}

@main
struct MinimalPhone: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Serve a tiny music app to one head unit, then exit.")

    @Option(help: ArgumentHelp("Where to wait for the head unit.", valueName: "host:port"))
    var listen = "127.0.0.1:7000"

    func run() async throws {
        // Results on stdout, the library's logs on stderr.
        LoggingSystem.bootstrap(StreamLogHandler.standardError)

        let nowPlaying = NowPlayingCenter()
        var commands = RemoteCommandCenter()
        commands.register(.pause) { _ in
            var info = nowPlaying.info
            info.state = .paused
            nowPlaying.info = info
            return .success
        }

        let phone = Phone(appName: "Minimal Music", content: Songs(nowPlaying: nowPlaying),
                          commands: commands, nowPlaying: nowPlaying)
        print("waiting for a head unit on \(listen)")
        let reason = try await phone.serve("tcp-listen:\(listen)")
        print("the head unit went away: \(reason)")
    }
}
