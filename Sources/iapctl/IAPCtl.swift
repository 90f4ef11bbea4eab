import ArgumentParser
import CMalloc

@main
struct IAPCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iapctl",
        abstract: "An open iAP-style accessory protocol dev kit: decode traces, run and test both ends of a link.",
        discussion: """
        Start with `iapctl demo`, which runs a phone and a head unit against each
        other over the in-memory loopback and writes the session as a trace; then
        `iapctl decode` it, or point `iapctl decode` at your own traces: hex dumps,
        raw byte streams or usbmon captures.

        `iapctl conformance` runs the link and session conformance cases over a
        simulated, fault-injecting wire, or against another implementation.
        `iapctl phone` and `iapctl head-unit` run the two ends of a link over a
        transport (loopback, tcp:HOST:PORT, tcp-listen:HOST:PORT,
        serial:/dev/ttyUSB0@115200, usb:VID:PID, usb:auto); `iapctl ping`
        measures round trips over a live link.

        On USB: `iapctl devices` lists the devices this stack can talk to,
        `iapctl monitor` shows them come and go, `iapctl supervise` runs a role
        on each one plugged in, and `iapctl gadget` makes a Linux board with a
        USB device controller appear as test hardware.

        `iapctl --generate-completion-script bash|zsh|fish` prints a shell
        completion script (README, "Shell completion and man page").
        """,
        version: "0.1.0",
        subcommands: [Demo.self, Decode.self, Conformance.self, Phone.self, HeadUnit.self, Library.self, Ping.self, Gadget.self, Devices.self, Monitor.self, Supervise.self]
    )

    static func main() async {
        keepFreedMemory()
        if let word = CommandLine.arguments.dropFirst().first, let problem = unknownCommand(word) {
            exit(withError: ValidationError(problem))
        }
        await main(nil)
    }

    /// The first word when it names no command (ArgumentParser would call
    /// it an "unexpected argument"): what it is and what the commands are.
    static func unknownCommand(_ word: String) -> String? {
        let names = configuration.subcommands.map { $0._commandName }
        guard !word.hasPrefix("-"), word != "help", !names.contains(word) else { return nil }
        return "unknown command '\(word)'; the commands are: \(names.joined(separator: ", "))"
    }

    /// glibc hands freed memory at the top of a thread's heap back to the
    /// system once more than 128 KiB is free there, and faults it in again
    /// on the next large allocation: messages of 32 KiB and up crossing the
    /// link paid about a dozen page faults each (Docs/Performance.md). Up to
    /// 64 MiB stays with the process instead.
    private static func keepFreedMemory() {
        _ = mallopt(M_TRIM_THRESHOLD, 64 << 20)
    }
}
