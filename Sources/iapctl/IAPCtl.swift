import ArgumentParser

@main
struct IAPCtl: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iapctl",
        abstract: "An open iAP-style accessory protocol dev kit: decode traces, test links.",
        discussion: """
        Start with `iapctl decode`, which decodes a built-in sample trace, then point it
        at your own traces: hex dumps, raw byte streams or usbmon captures.
        `iapctl conformance` runs the link conformance cases over a simulated,
        fault-injecting wire.
        """,
        version: "0.1.0",
        subcommands: [Decode.self, Conformance.self]
    )
}
