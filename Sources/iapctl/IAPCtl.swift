import ArgumentParser

@main
struct IAPCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "iapctl",
        abstract: "An open iAP-style accessory protocol dev kit: decode traces, test links.",
        discussion: """
        Start with `iapctl decode`, which decodes a built-in sample trace, then point it
        at your own traces: hex dumps, raw byte streams or usbmon captures.
        `iapctl conformance` runs the link conformance cases over a simulated,
        fault-injecting wire. `iapctl phone` and `iapctl head-unit` run the two
        ends of a link over a transport (loopback, tcp:HOST:PORT,
        tcp-listen:HOST:PORT, serial:/dev/ttyUSB0@115200); `iapctl ping` measures
        round trips over a live link.
        """,
        version: "0.1.0",
        subcommands: [Decode.self, Conformance.self, Phone.self, HeadUnit.self, Ping.self]
    )
}
