// A head unit that connects to a phone, browses its app and plays.
//
//   swift run minimal-head-unit --connect 127.0.0.1:7000
//
// It prints the app's tabs, opens the first, plays its first item and
// prints what the phone says is now playing.
import ArgumentParser
import IAPKit
import Logging

@main
struct MinimalHeadUnit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Browse a phone's app, play its first item, print now playing.")

    @Option(help: ArgumentHelp("The phone to connect to.", valueName: "host:port"))
    var connect = "127.0.0.1:7000"

    func run() async throws {
        // Results on stdout, the library's logs (warnings and worse) on stderr.
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }

        // Authenticates and identifies, then returns once the app is ready.
        let headUnit = try await HeadUnit.connect(to: "tcp:\(connect)")
        do {
            try await browseAndPlay(headUnit)
        } catch {
            await headUnit.close()
            throw error
        }
        await headUnit.close()
    }

    func browseAndPlay(_ headUnit: HeadUnit) async throws {
        print("connected to \(headUnit.appName ?? "an app")")
        let tabs = try await headUnit.tabs()
        print("tabs: " + tabs.map(\.text).joined(separator: ", "))
        guard let first = tabs.first else { throw ValidationError("the app has no tabs") }

        // Children are fetched page by page as the screen opens them.
        let container = try await headUnit.open(first.id)
        guard let item = container.items.first(where: { $0.kind == .playable }) else {
            throw ValidationError("\(first.text) has nothing to play")
        }
        let status = try await headUnit.play(item.id)
        guard status == .success else { throw ValidationError("the phone could not play \(item.text): \(status)") }

        // Now playing arrives as an event once the phone starts playing.
        for await event in headUnit.events {
            if case .nowPlaying(let info) = event, let title = info.title {
                print("now playing: \(title) — \(info.artist ?? "unknown artist")")
                return
            }
        }
        throw ValidationError("the phone went away before anything played")
    }
}
