import Foundation
import Testing

/// `iapctl library`: its contract (Docs/CommandLine… in README and Docs/Messages.md).
@Suite struct LibraryCommandTests {
    typealias CLI = CommandLineTests

    @Test func theSummaryNamesEachLibraryWithItsCounts() throws {
        let outcome = try CLI.run(["library", "--auth", "off"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdoutLines.count == 1, "\(outcome.stdout)")
        let line = try #require(outcome.stdoutLines.first)
        #expect(line.hasPrefix("library iap-devkit Music (iap-devkit:") && line.hasSuffix(": 15 items, 3 playlists"), "\(line)")
        #expect(line.contains(") revision "), "\(line)")
    }

    @Test func jsonHasALibraryThenItemsThenPlaylists() throws {
        let outcome = try CLI.run(["library", "--auth", "off", "--json"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let objects = try outcome.stdoutLines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        #expect(objects.map { $0["type"] as? String } == ["library"] + Array(repeating: "item", count: 15) + Array(repeating: "playlist", count: 3))
        let library = try #require(objects.first)
        let uid = try #require(library["uid"] as? String)
        #expect(library["name"] as? String == "iap-devkit Music" && library["library_type"] as? Int == 0 && library["revision"] is String)
        let item = objects[1]
        #expect(item["library"] as? String == uid && item["title"] as? String == "So What" && item["artist"] as? String == "Miles Davis")
        #expect(item["album"] as? String == "Kind of Blue" && item["album_artist"] as? String == "Miles Davis" && item["genre"] as? String == "Jazz")
        #expect(item["duration_ms"] as? Int == 562_000 && item["track_number"] as? Int == 1 && item["media_type"] as? Int == 0)
        #expect(item["composer"] == nil, "a key the phone did not send is left out")
        let pid = try #require(item["persistent_id"] as? String)
        #expect(pid.hasPrefix("0x") && pid.count == 18 && UInt64(pid.dropFirst(2), radix: 16) != nil)
        let playlists = objects.suffix(3)
        let folder = try #require(playlists.first { $0["folder"] as? Bool == true })
        let nested = try #require(playlists.first { $0["parent"] as? String == folder["persistent_id"] as? String })
        #expect(nested["name"] as? String == "Blue" && (nested["items"] as? [String])?.count == 4)
        #expect(playlists.contains { $0["parent"] is NSNull }, "a top-level playlist's parent is null")
        // The same identifiers on every run: derived from the content.
        let again = try CLI.run(["library", "--auth", "off", "--json"])
        #expect(again.stdout == outcome.stdout)
    }

    @Test func playNamesWhatThePhonePlays() throws {
        let listing = try CLI.run(["library", "--auth", "off", "--json"])
        let second = try #require(listing.stdoutLines.dropFirst(2).first)
        let item = try #require(JSONSerialization.jsonObject(with: Data(second.utf8)) as? [String: Any])
        let pid = try #require(item["persistent_id"] as? String)
        let outcome = try CLI.run(["library", "--auth", "off", "--play", pid])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdoutLines.last == "now playing: Freddie Freeloader — Miles Davis", "\(outcome.stdout)")
        let unknown = try CLI.run(["library", "--auth", "off", "--play", "0x1"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("play failed: no library of the phone has an item 0x0000000000000001"), "\(unknown.stderr)")
        let bad = try CLI.run(["library", "--play", "seven"])
        #expect(bad.status != 0 && bad.stderr.contains("is not a persistent id"), "\(bad.stderr)")
    }

    @Test func aPhoneWithoutALibraryIsSaidInOneSentence() throws {
        let directory = try CLI.temporaryDirectory()
        // Radio stations only: nothing for a media library.
        let station = #"{"id":"station:1","persistentID":1,"title":"Jazz Radio","artist":"Live","album":"Radio","genre":"Jazz","durationMilliseconds":0,"inBrowseTree":true}"#
        let interlude = #"{"id":"interlude","persistentID":2,"title":"Interlude","artist":"x","album":"x","genre":"x","durationMilliseconds":1000,"inBrowseTree":false}"#
        let file = directory.appendingPathComponent("radio.json")
        try Data(#"{"albums":[],"podcasts":[],"stations":[\#(station)],"interlude":\#(interlude)}"#.utf8).write(to: file)
        let port = try ServingTests.freePort()
        let (phone, _, log) = try CLI.launch(["phone", "--transport", "tcp-listen:127.0.0.1:\(port)", "--auth", "off", "--library", file.path],
                                             input: FileHandle.nullDevice, logsIn: directory, name: "phone")
        defer { CLI.stop(phone) }
        try #require(CLI.wait(seconds: 30) { CLI.text(log).contains("listening on") }, "\(CLI.text(log))")
        let outcome = try CLI.run(["library", "--transport", "tcp:127.0.0.1:\(port)", "--auth", "off"])
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("the phone offers no media library"), "\(outcome.stderr)")
        #expect(outcome.stdout.isEmpty)
    }

    @Test func theHeadUnitKeepsTheLibraryAndAReturningPhoneSendsNothingNew() throws {
        let cache = try CLI.temporaryDirectory().path
        let script = "lib\nlib 2\nlplay 1\nnp\nquit\n"
        let first = try ScriptRun.headUnit(script, arguments: ["--auth", "off", "--library-cache", cache])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stdout.contains("the whole library") || first.stderr.contains("the whole library"))
        #expect(first.stdout.contains("1. Artists ›") && first.stdout.contains("Kind of Blue — Miles Davis (5 songs)"), "\(first.stdout)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: cache).count == 1)
        let second = try ScriptRun.headUnit(script, arguments: ["--auth", "off", "--library-cache", cache])
        #expect(second.status == 0, "\(second.stderr)")
        #expect((second.stdout + second.stderr).contains("nothing: the head unit has revision"), "\(second.stderr)")
    }
}

/// The head unit with a script on standard input.
enum ScriptRun {
    static func headUnit(_ script: String, arguments: [String], timeout: Double = 30) throws -> CommandLineTests.Outcome {
        let directory = try CommandLineTests.temporaryDirectory()
        let input = directory.appendingPathComponent("script")
        try Data(script.utf8).write(to: input)
        let (process, stdout, stderr) = try CommandLineTests.launch(["head-unit"] + arguments, input: try FileHandle(forReadingFrom: input),
                                                                    logsIn: directory, name: "head-unit")
        let start = Date()
        while process.isRunning && Date().timeIntervalSince(start) < timeout { usleep(5_000) }
        CommandLineTests.stop(process)
        return CommandLineTests.Outcome(status: process.terminationStatus, stdout: CommandLineTests.text(stdout), stderr: CommandLineTests.text(stderr),
                                        seconds: Date().timeIntervalSince(start))
    }
}
