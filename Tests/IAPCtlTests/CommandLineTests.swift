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
    }
}
