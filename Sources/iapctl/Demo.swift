import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import IAPConformance
import IAPLink
import IAPRoles
import IAPTrace
import IAPTransport
import SystemPackage

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a phone and a head unit against each other over the in-memory loopback: a scripted drive.",
        discussion: """
        Both roles run in this process over a simulated link in virtual time (the
        whole drive takes well under a second). The head unit browses the tabs,
        opens an album, plays a track, watches now playing, skips, seeks, sets repeat
        and shuffle with explicit values, presses the rate button, gets radio
        controls when the phone offers like and loses them when it withdraws them,
        opens "up next", retries a browse that failed, fetches artwork (and is
        refused an animated image), is unplugged and plugged in again. The
        transcript and the final state are printed, and the traffic is written as a
        usbmon pcapng that `iapctl decode` and Wireshark read.

        Examples:
          iapctl demo
          iapctl demo --faults --seed 7    # a lossy wire: the same final state
          iapctl demo --trace /tmp/drive.pcapng
          iapctl decode /tmp/drive.pcapng --stats

        The exit status is 1 when a step of the drive did not complete.
        """
    )

    @Flag(help: "Run over a faulty wire: 10% loss, 5% duplication, 5% reordering, 3% corruption, 10% fragmentation, each way.")
    var faults = false

    @Option(parsing: .unconditional, help: "Seed for the faults (0 to 18446744073709551615).", transform: parseSeed)
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("Where to write the drive's usbmon pcapng trace (a relative path is in the current directory).",
                               valueName: "file.pcapng"),
            completion: .file())
    var trace: String = "iap-demo.pcapng"

    @Flag(help: "Print only the final state and the trace path.")
    var quiet = false

    func run() throws {
        // Created first: a trace that cannot be written fails before the drive, not after it.
        let traceFile = open(trace, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard traceFile >= 0 else { throw CommandFailure(message: "cannot create the trace \(trace): \(Errno(rawValue: errno).description)") }
        defer { close(traceFile) }
        var wire = WireFaults.none
        if faults {
            wire = WireFaults(loss: 0.10, duplication: 0.05, reordering: 0.05, corruption: 0.03)
            wire.fragmentation = 0.10
        }
        let (simulation, final) = DemoDrive.run(faults: wire, seed: seed)
        var output = OutputBuffer()
        if !quiet {
            output.line("demo over the in-memory loopback (\(faults ? "faults: \(wire), seed \(seed)" : "clean wire"))")
            for line in simulation.transcript {
                let seconds = secondsText(Double(line.time.nanoseconds) / 1e9)
                output.line("[\(String(repeating: " ", count: max(0, 8 - seconds.count)))\(seconds) s] \(line.who): \(line.text)")
            }
            output.line("")
            let log = simulation.wireLog
            let fromHeadUnit = log.filter { $0.role == .accessory }.count
            output.line("wire: \(fromHeadUnit) writes from the head unit, \(log.count - fromHeadUnit) from the phone, "
                        + "\(simulation.towardsPhone.dropped + simulation.towardsHeadUnit.dropped) lost on the way")
        }
        output.line("final state:")
        for line in final.description.split(separator: "\n") { output.line("  " + line) }
        do {
            try writeTrace(simulation, to: traceFile)
            output.line("trace: \(trace) (\(simulation.wireLog.count) transfers; read it with `iapctl decode \(trace)`)")
        } catch {
            output.line("trace: not written: \(error)")
            output.flush()
            throw ExitCode(1)
        }
        output.flush()
        if !final.failedSteps.isEmpty { throw ExitCode(1) }
    }

    /// The head unit is the USB host: its writes are bulk OUT on endpoint
    /// 0x01, the phone's arrive as bulk IN on 0x81.
    func writeTrace(_ simulation: MediaSimulator, to fd: Int32) throws {
        var writer = UsbmonPcapngWriter()
        let epoch: Int64 = 1_763_700_000_000_000
        for entry in simulation.wireLog {
            writer.bulkTransfer(device: 5, endpoint: entry.role == .accessory ? 0x01 : 0x81, data: entry.bytes,
                                timestampMicroseconds: epoch + entry.time.nanoseconds / 1000)
        }
        let bytes = writer.bytes
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            guard written > 0 else { throw CommandFailure(message: "cannot write \(trace): \(Errno(rawValue: errno).description)") }
            offset += written
        }
    }
}
