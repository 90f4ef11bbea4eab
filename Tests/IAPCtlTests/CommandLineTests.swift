import Foundation
import IAPTrace
import IAPWire
import Testing

/// `iapctl` run as a user runs it: an executable target cannot be imported
/// by tests, and exit statuses and the split between standard output and
/// standard error are only seen from outside. The binary is the one built
/// with these tests, next to the test bundle (`swift test` and
/// `swift build --build-tests` build every product).
@Suite struct CommandLineTests {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        var seconds: Double
        var stdoutLines: [String] { stdout.split(separator: "\n").map(String.init) }
        var stderrLines: [String] { stderr.split(separator: "\n").map(String.init) }
    }

    static let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent().appendingPathComponent("iapctl")

    /// Runs iapctl with `arguments`, standard input empty, killing it after `timeout` seconds.
    static func run(_ arguments: [String], timeout: Double = 20) throws -> Outcome {
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "no iapctl next to the tests at \(binary.path): build the package first")
        // Files rather than pipes: nothing to drain while waiting.
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let outputs = [directory.appendingPathComponent("stdout"), directory.appendingPathComponent("stderr")]
        for url in outputs { try Data().write(to: url) }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: outputs[0])
        process.standardError = try FileHandle(forWritingTo: outputs[1])
        let start = Date()
        try process.run()
        while process.isRunning && Date().timeIntervalSince(start) < timeout { usleep(5_000) }
        let seconds = Date().timeIntervalSince(start)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let text = try outputs.map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        return Outcome(status: process.terminationStatus, stdout: text[0], stderr: text[1], seconds: seconds)
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("iapctl-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    static func temporaryFile(_ name: String, _ bytes: [UInt8]) throws -> URL {
        let url = try temporaryDirectory().appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url
    }

    static let hasSysfsUSB = FileManager.default.fileExists(atPath: "/sys/bus/usb")
    static let hasUdevDaemon = FileManager.default.fileExists(atPath: "/run/udev/control")

    // MARK: devices and monitor

    /// Before the check, `monitor` waited for ever where libudev's monitor opens but hears nothing.
    @Test(.enabled(if: !hasSysfsUSB || !hasUdevDaemon, "this machine has sysfs USB and udevd: the monitor would run"))
    func monitorWithoutUdevOrSysfsSaysSoAndExits() throws {
        let outcome = try Self.run(["monitor"], timeout: 10)
        #expect(outcome.status == 1)
        // The command gives up before starting anything; the slack is for starting a debug binary on a loaded machine.
        #expect(outcome.seconds < 5, "took \(outcome.seconds) s")
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderrLines.count == 1, "\(outcome.stderr)")
        let expected = Self.hasSysfsUSB ? "no udev daemon is running" : "this machine has no /sys/bus/usb"
        #expect(outcome.stderr.hasPrefix("Error: cannot watch USB devices: \(expected)"), "\(outcome.stderr)")
    }

    @Test func devicesSaysWhatItFound() throws {
        for arguments in [["devices"], ["devices", "--all"]] {
            let outcome = try Self.run(arguments)
            guard Self.hasSysfsUSB else {
                #expect(outcome.status == 1)
                #expect(outcome.stderrLines == ["Error: cannot list USB devices: this machine has no /sys/bus/usb (a kernel without USB, or sysfs not mounted, as in some containers)"])
                continue
            }
            #expect(outcome.status == 0, "\(arguments): \(outcome.stderr)")
            let summary = try #require(outcome.stdoutLines.last)
            let matches = arguments.contains("--all")
                ? summary.wholeMatch(of: #/no USB devices found|1 USB device, (?:none|1) with an iAP interface|\d+ USB devices, (?:none|\d+) with an iAP interface/#) != nil
                : summary.wholeMatch(of: #/no USB devices found|no iAP devices among \d+ USB devices? \(--all lists them\)|\d+ iAP devices? among \d+ USB devices? \(--all lists every one\)/#) != nil
            #expect(matches, "\(arguments): \(summary)")
        }
    }

    @Test(.enabled(if: hasSysfsUSB, "no /sys/bus/usb here"))
    func devicesJSONKeepsTheCountOffStandardOutput() throws {
        let outcome = try Self.run(["devices", "--all", "--json"])
        #expect(outcome.status == 0)
        #expect(outcome.stdoutLines.allSatisfy { $0.hasPrefix("{\"syspath\":") })
        #expect(outcome.stderrLines.count == 1)
    }

    // MARK: decode

    @Test func decodingAnEmptyInputFailsSayingSo() throws {
        let empty = try Self.temporaryFile("empty.pcapng", [])
        let outcome = try Self.run(["decode", empty.path])
        #expect(outcome.status == 1)
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderrLines == ["Error: \(empty.path): the input is empty; there is nothing to decode"])
        let piped = try Self.run(["decode", "-", "--stats"])
        #expect(piped.status == 1)
        #expect(piped.stderrLines == ["Error: standard input: the input is empty; there is nothing to decode"])
    }

    @Test func decodingWithHIDACaptureWithoutReportsSaysSo() throws {
        var writer = UsbmonPcapngWriter()
        writer.bulkTransfer(device: 5, endpoint: 0x01, data: DetectSequence.bytes, timestampMicroseconds: 1)
        let capture = try Self.temporaryFile("bulk.pcapng", writer.bytes)
        let outcome = try Self.run(["decode", "--hid", capture.path])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderrLines == ["warning: \(capture.path) holds no HID reports (no interrupt transfers, no SET_REPORT requests): nothing to decode with --hid; without it, bulk transfers are decoded"])
        // Without --hid the same capture decodes.
        let bulk = try Self.run(["decode", capture.path])
        #expect(bulk.status == 0)
        #expect(bulk.stdoutLines.count == 1 && bulk.stdout.contains("detect FF 55 02 00 EE 10"), "\(bulk.stdout)")
        #expect(bulk.stderr.isEmpty)
    }

    @Test func decodingACaptureWithoutIAPTrafficSaysSo() throws {
        var writer = UsbmonPcapngWriter()
        writer.bulkTransfer(device: 9, endpoint: 0x02, data: Array("USBC".utf8) + [UInt8](repeating: 0, count: 27), timestampMicroseconds: 1)
        let capture = try Self.temporaryFile("disk.pcapng", writer.bytes)
        let outcome = try Self.run(["decode", capture.path])
        #expect(outcome.status == 0)
        #expect(outcome.stdout.isEmpty)
        #expect(outcome.stderrLines == ["warning: no iAP traffic in \(capture.path) (31 bytes on USB endpoints that carried none)"])
    }

    /// Input with no iAP in it decodes to skipped bytes only; standard error
    /// says there was no iAP traffic, as `decode --help` promises (it said
    /// nothing once the skipped bytes had been printed).
    @Test func decodingInputWithOnlySkippedBytesWarns() throws {
        let raw = try Self.temporaryFile("noise.bin", [0x00, 0x13, 0x37, 0xC0, 0xDE, 0x00, 0x42, 0x99])
        let outcome = try Self.run(["decode", raw.path])
        #expect(outcome.status == 0)
        #expect(outcome.stdoutLines.count == 1 && outcome.stdout.contains("skipped 8 bytes: garbage"), "\(outcome.stdout)")
        #expect(outcome.stderrLines == ["warning: no iAP traffic in \(raw.path): only input skipped, at 1 place (the reasons are on standard output)"])
        let text = try Self.temporaryFile("notes.txt", Array("hello world\n".utf8))
        let hex = try Self.run(["decode", text.path, "--stats"])
        #expect(hex.status == 0)
        #expect(hex.stdout.contains("unreadable hex lines: 1"), "\(hex.stdout)")
        #expect(hex.stderrLines == ["warning: no iAP traffic in \(text.path): only input skipped, at 1 place (the reasons are on standard output)"])
    }

    // MARK: conformance

    /// Nothing listening: one line saying so, no table. It took the whole
    /// link timeout (10 s) and printed six failed cases with wrong notes
    /// and one pass.
    @Test func conformanceAgainstNothingListeningSaysItCannotConnect() throws {
        let port = try ServingTests.freePort()
        for arguments in [["conformance", "--against", "tcp:127.0.0.1:\(port)"],
                          ["conformance", "--against", "tcp:127.0.0.1:\(port)", "--as", "phone", "--json"]] {
            let outcome = try Self.run(arguments)
            #expect(outcome.status == 1, "\(arguments)")
            #expect(outcome.stdout.isEmpty, "\(arguments): \(outcome.stdout)")
            #expect(outcome.stderrLines == ["Error: tcp:127.0.0.1:\(port): cannot connect: Connection refused (no conformance case ran)"],
                    "\(arguments): \(outcome.stderr)")
        }
    }

    // MARK: head-unit shell

    /// iapctl started with `arguments`; its standard output and error go to
    /// NAME.out and NAME.err in `directory` (returned in that order).
    static func launch(_ arguments: [String], input: Any, logsIn directory: URL, name: String) throws -> (Process, URL, URL) {
        let outputs = [directory.appendingPathComponent("\(name).out"), directory.appendingPathComponent("\(name).err")]
        for url in outputs { try Data().write(to: url) }
        let process = Process()
        process.executableURL = binary
        process.arguments = arguments
        process.standardInput = input
        process.standardOutput = try FileHandle(forWritingTo: outputs[0])
        process.standardError = try FileHandle(forWritingTo: outputs[1])
        try process.run()
        return (process, outputs[0], outputs[1])
    }

    static func text(_ url: URL) -> String { (try? String(contentsOf: url, encoding: .utf8)) ?? "" }

    /// Whether `done` holds within `seconds` (a bound for a hang, not a speed check).
    static func wait(seconds: Double, until done: () -> Bool) -> Bool {
        let start = Date()
        while !done() && Date().timeIntervalSince(start) < seconds { usleep(20_000) }
        return done()
    }

    /// A phone listening on a free port, its standard error in `directory`;
    /// the caller stops it.
    static func listeningPhone(loggingIn directory: URL) throws -> (process: Process, log: URL, port: UInt16) {
        let port = try ServingTests.freePort()
        let (phone, _, log) = try launch(["phone", "--transport", "tcp-listen:127.0.0.1:\(port)"], input: FileHandle.nullDevice, logsIn: directory, name: "phone")
        guard wait(seconds: 30, until: { text(log).contains("listening on") }) else {
            stop(phone)
            throw PhoneDidNotListen(log: text(log))
        }
        return (phone, log, port)
    }

    /// Ends a process the test started, if it still runs, and reaps it.
    static func stop(_ process: Process) {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// A serving head unit reads its key once, before it listens: with the
    /// key's directory replaced by a file afterwards, the next phone still
    /// authenticates it. (It read the key per connection, after its screen
    /// had accepted connections: a screen that used up its descriptors made
    /// the key unreadable and ended the head unit.)
    @Test func aServingHeadUnitReadsItsKeyOnceBeforeItListens() throws {
        let directory = try Self.temporaryDirectory()
        let keys = directory.appendingPathComponent("keys")
        let port = try ServingTests.freePort()
        let shell = Pipe()
        let (headUnit, _, headUnitLog) = try Self.launch(["head-unit", "--transport", "tcp-listen:127.0.0.1:\(port)", "--authentication-dir", keys.path],
                                                         input: shell, logsIn: directory, name: "head-unit")
        defer { Self.stop(headUnit) }
        try #require(Self.wait(seconds: 30, until: { Self.text(headUnitLog).contains("listening on") }), "\(Self.text(headUnitLog))")
        try FileManager.default.removeItem(at: keys)
        try Data("not a directory".utf8).write(to: keys)
        // Two phones one after the other: each connection the head unit serves needs the key.
        for number in 1...2 {
            let (phone, _, _) = try Self.launch(["phone", "--transport", "tcp:127.0.0.1:\(port)"], input: FileHandle.nullDevice,
                                                logsIn: directory, name: "phone\(number)")
            defer { Self.stop(phone) }
            let identified = Self.wait(seconds: 30, until: {
                Self.text(headUnitLog).components(separatedBy: "session now identified").count > number
            })
            try #require(identified, "phone \(number): the head unit did not identify: \(Self.text(headUnitLog).suffix(2000))")
        }
    }

    /// A phone that dies mid-script: the head unit names the lines it did
    /// not run and exits 1, as its help says. It exited 0 and dropped them.
    @Test func aScriptWhosePhoneDiesNamesTheLinesNotRunAndFails() throws {
        let directory = try Self.temporaryDirectory()
        let (phone, _, port) = try Self.listeningPhone(loggingIn: directory)
        defer { Self.stop(phone) }
        let script = Pipe()
        let (headUnit, stdout, stderr) = try Self.launch(["head-unit", "--transport", "tcp:127.0.0.1:\(port)"], input: script, logsIn: directory, name: "head-unit")
        defer { Self.stop(headUnit) }
        script.fileHandleForWriting.write(Data("cd 1\nwatch 30\nls\nnp\n".utf8))
        try script.fileHandleForWriting.close()
        try #require(Self.wait(seconds: 30) { Self.text(stdout).contains("> watch 30") }, "the script did not get to its watch: \(Self.text(stdout)) \(Self.text(stderr))")
        kill(phone.processIdentifier, SIGKILL)
        try #require(Self.wait(seconds: 30) { !headUnit.isRunning }, "the head unit did not end when its phone died")
        #expect(headUnit.terminationStatus == 1)
        let errors = Self.text(stderr)
        #expect(errors.contains("error: the connection ended (") && errors.contains("before the shell's input did; not run: 'ls', 'np'"), "\(errors)")
    }

    /// Every ping is answered and timed, each sent as the previous answer
    /// arrives; the JSON names the figures, the text says each round trip.
    @Test func pingTimesEveryRoundTrip() throws {
        let json = try Self.run(["ping", "--count", "40", "--size", "1000", "--json"])
        #expect(json.status == 0, "\(json.stderr)")
        let figures = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any], "\(json.stdout)")
        #expect(figures["sent"] as? Int == 40 && figures["received"] as? Int == 40 && figures["size"] as? Int == 1000, "\(figures)")
        #expect((figures["median_ms"] as? Double ?? 0) > 0 && (figures["max_ms"] as? Double ?? 0) >= (figures["min_ms"] as? Double ?? 1), "\(figures)")
        let text = try Self.run(["ping", "--count", "5"])
        #expect(text.status == 0, "\(text.stderr)")
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.filter { $0.contains("ping: seq=") }.count == 5, "\(text.stdout)")
        #expect(lines.last?.hasPrefix("5 sent, 5 received, 0 lost; round trip min") == true, "\(text.stdout)")
    }

    /// A phone killed mid-run ends the pings at once, saying why, with
    /// status 1 (each ping used to wait out its timeout, for minutes).
    @Test func pingStopsWhenItsPhoneDies() throws {
        let directory = try Self.temporaryDirectory()
        let (phone, phoneLog, port) = try Self.listeningPhone(loggingIn: directory)
        defer { Self.stop(phone) }
        let (ping, _, stderr) = try Self.launch(["ping", "--transport", "tcp:127.0.0.1:\(port)", "--count", "10000000", "--timeout", "5"],
                                                input: FileHandle.nullDevice, logsIn: directory, name: "ping")
        defer { Self.stop(ping) }
        try #require(Self.wait(seconds: 30) { Self.text(phoneLog).contains("identified") }, "the pinging end was not identified: \(Self.text(phoneLog))")
        kill(phone.processIdentifier, SIGKILL)
        // Without the fix the next ping waits its 5 s and the run goes on for ever.
        try #require(Self.wait(seconds: 30) { !ping.isRunning }, "ping went on after its phone died: \(Self.text(stderr))")
        #expect(ping.terminationStatus == 1)
        let errors = Self.text(stderr)
        #expect(errors.contains("stopped after") && errors.contains("the transport closed"), "\(errors)")
    }

    /// Link packets given on the command line are what the end proposes:
    /// a ping given 2,048-byte packets, 3 outstanding, says so in its SYN
    /// and is answered over them, the phone over TCP proposes its
    /// transport's 65,535 bytes and 5, and a value no SYN can say is
    /// refused by name.
    @Test func linkPacketsGivenAreProposed() throws {
        let directory = try Self.temporaryDirectory()
        let (phone, phoneLog, port) = try Self.listeningPhone(loggingIn: directory)
        defer { Self.stop(phone) }
        let trace = directory.appendingPathComponent("ping.pcapng").path
        let ping = try Self.run(["ping", "--transport", "tcp:127.0.0.1:\(port)", "--count", "2", "--size", "60000", "--json",
                                 "--link-packet-length", "2048", "--link-outstanding", "3", "--trace", trace])
        #expect(ping.status == 0, "\(ping.stderr) \(Self.text(phoneLog))")
        let decoded = try Self.run(["decode", trace, "--json"])
        let syns = decoded.stdout.split(separator: "\n").filter { $0.contains("\"max_packet_length\"") }
        #expect(syns.contains { $0.contains("\"max_packet_length\":2048") && $0.contains("\"max_outstanding\":3") }, "\(syns)")
        #expect(syns.contains { $0.contains("\"max_packet_length\":65535") && $0.contains("\"max_outstanding\":5") }, "the phone over TCP: \(syns)")
        let tooShort = try Self.run(["ping", "--link-packet-length", "10"])
        #expect(tooShort.status == 64)
        #expect(tooShort.stderr.contains("--link-packet-length must be between 24 and 65535 bytes"), "\(tooShort.stderr)")
        let tooMany = try Self.run(["gadget", "--link-outstanding", "128"])
        #expect(tooMany.status == 64)
        #expect(tooMany.stderr.contains("--link-outstanding must be between 1 and 127 packets"), "\(tooMany.stderr)")
    }

    // MARK: usage mistakes

    /// A word that names no command was an "unexpected argument".
    @Test func anUnknownCommandIsNamedWithTheCommands() throws {
        let outcome = try Self.run(["frob"])
        #expect(outcome.status == 64)
        #expect(outcome.stderrLines.first == "Error: unknown command 'frob'; the commands are: demo, decode, conformance, phone, head-unit, library, ping, gadget, devices, monitor, supervise",
                "\(outcome.stderr)")
    }

    /// ArgumentParser took "-1" for an option and said the value was missing.
    @Test func negativeNumbersAreOutOfRangeNotMissing() throws {
        let seed = try Self.run(["demo", "--seed", "-1"])
        #expect(seed.status == 64)
        #expect(seed.stderrLines.first == "Error: The value '-1' is invalid for '--seed <seed>': out of range: a seed is a whole number from 0 to 18446744073709551615",
                "\(seed.stderr)")
        let conformance = try Self.run(["conformance", "--seed", "-7"])
        #expect(conformance.stderr.contains("out of range: a seed is a whole number"), "\(conformance.stderr)")
        let idle = try Self.run(["phone", "--idle-limit", "-1"])
        #expect(idle.status == 64)
        #expect(idle.stderr.contains("--idle-limit must be 0 or more seconds"), "\(idle.stderr)")
        #expect(!idle.stderr.contains("Missing value"), "\(idle.stderr)")
    }

    /// The role switch asks a USB phone: another transport, a phone's
    /// supervise or a mode other than iap and carplay is a usage mistake.
    @Test func theRoleSwitchNeedsAUSBHeadUnit() throws {
        let tcp = try Self.run(["head-unit", "--role-switch", "--transport", "tcp:127.0.0.1:7000"])
        #expect(tcp.status == 64)
        #expect(tcp.stderr.contains("--role-switch asks a USB phone to become the host: it needs --transport usb:auto or usb:VID:PID, not tcp:127.0.0.1:7000"),
                "\(tcp.stderr)")
        let phone = try Self.run(["supervise", "--role", "phone", "--role-switch", "carplay"])
        #expect(phone.status == 64)
        #expect(phone.stderr.contains("--role-switch is the head unit's request to the phone: it needs --role head-unit"), "\(phone.stderr)")
        let mode = try Self.run(["head-unit", "--transport", "usb:auto", "--role-switch", "dance"])
        #expect(mode.status == 64)
        // Not a mode: --role-switch stands alone (iap) and the word is left over.
        #expect(mode.stderr.contains("Unexpected argument 'dance'"), "\(mode.stderr)")
    }

    /// The drive ran to its end before saying the trace could not be written.
    @Test func demoChecksItsTracePathBeforeTheDrive() throws {
        let outcome = try Self.run(["demo", "--trace", "/nonexistent-\(UUID().uuidString)/x.pcapng"])
        #expect(outcome.status == 1)
        #expect(outcome.stdout.isEmpty, "the drive ran: \(outcome.stdout.prefix(200))")
        #expect(outcome.stderrLines.count == 1 && outcome.stderr.hasPrefix("Error: cannot create the trace /nonexistent-"), "\(outcome.stderr)")
        #expect(outcome.stderr.contains("No such file or directory"), "\(outcome.stderr)")
    }

    // MARK: shell completion

    /// bash's completion as generated: case names for `conformance --case`, file names for `decode`.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/bin/bash"), "no bash"))
    func bashCompletesCaseNamesAndTraceFiles() throws {
        let script = try Self.run(["--generate-completion-script", "bash"])
        #expect(script.status == 0)
        let directory = try Self.temporaryFile("capture.pcapng", []).deletingLastPathComponent()
        let scriptFile = directory.appendingPathComponent("iapctl.bash")
        try Data(script.stdout.utf8).write(to: scriptFile)
        func complete(_ words: [String]) throws -> String {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/bash")
            process.currentDirectoryURL = directory
            let line = words.joined(separator: " ")
            process.arguments = ["-c", """
                source "$0"; COMP_WORDS=(\(line)); COMP_CWORD=\(words.count - 1); COMP_LINE='\(line)'; COMP_POINT=${#COMP_LINE}
                _iapctl iapctl '\(words[words.count - 1])' '\(words[words.count - 2])'; printf '%s\\n' "${COMPREPLY[@]}"
                """, scriptFile.path]
            let output = Pipe()
            process.standardOutput = output
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return String(decoding: data, as: UTF8.self)
        }
        #expect(try complete(["iapctl", "conformance", "--case", "eak"]) == "eak-recovery\n")
        #expect(try complete(["iapctl", "decode", "capt"]) == "capture.pcapng\n")
        // Values for the options that had none.
        #expect(try complete(["iapctl", "head-unit", "--transport", "tcp"]) == "tcp:127.0.0.1:7000\ntcp-listen:127.0.0.1:7000\n")
        #expect(try complete(["iapctl", "conformance", "--against", "lo"]) == "loopback\n")
        #expect(try complete(["iapctl", "phone", "--log-level", "w"]) == "warning\n")
        #expect(try complete(["iapctl", "supervise", "--role", "ph"]) == "phone\n")
    }
}

/// A phone started for a test never said it was listening.
struct PhoneDidNotListen: Error, CustomStringConvertible {
    let log: String
    var description: String { "the phone did not listen: \(log)" }
}
