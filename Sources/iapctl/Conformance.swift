import ArgumentParser
import IAPConformance
import IAPEndpoint
import IAPTrace
import IAPTransport

struct Conformance: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the link conformance cases between two link ends over a simulated, fault-injecting wire.",
        discussion: """
        Each case is a scenario between an accessory (head unit) end and a device
        (phone) end of the iAP2 link, run in virtual time over an in-memory wire
        with seeded faults (loss, duplication, reordering, corruption, delay,
        bandwidth limits). The same seed always gives the same run, so a failure
        can be replayed exactly with --seed and --case.

        With --against TRANSPORT, the cases that make sense against another
        implementation run in real time over a TCP connection or serial port, with
        this project as the accessory end: stale bytes before the handshake,
        detect, negotiation, diagnostic ping round trips, a message spanning many
        packets, corrupted and duplicated packets, and re-synchronisation after RST.
        (--against loopback runs them against this project's own phone end.)

        Examples:
          iapctl conformance                      # every case, seed 1
          iapctl conformance --list               # names and what each checks
          iapctl conformance --case eak-recovery --seed 7
          iapctl conformance --json | jq 'select(.passed == false)'
          iapctl conformance --against tcp:192.0.2.10:7000

        The exit status is 0 when every case passed, 1 otherwise.
        """
    )

    @Option(name: .customLong("case"), help: "Run only this case (repeatable; see --list).")
    var cases: [String] = []

    @Option(help: "Seed for the fault injection.")
    var seed: UInt64 = 1

    @Flag(help: "List the cases and what each checks.")
    var list = false

    @Flag(help: "Write one JSON object per case, then a summary object.")
    var json = false

    @Option(help: ArgumentHelp("Run the real-time cases against another implementation over this transport (tcp:HOST:PORT, tcp-listen:HOST:PORT, serial:PATH@BAUD, or loopback for this project's own phone end).",
                               valueName: "transport"))
    var against: TransportSpec?

    func validate() throws {
        for name in cases where ConformanceCase.named(name) == nil {
            throw ValidationError("no case named '\(name)'; `iapctl conformance --list` shows them")
        }
    }

    func run() async throws {
        if let against {
            try await runAgainst(against)
            return
        }
        var output = OutputBuffer()
        if list {
            let width = ConformanceCase.all.map(\.name.count).max() ?? 0
            for item in ConformanceCase.all { output.line(item.name.padding(to: width) + "  " + item.purpose) }
            return
        }
        let selected = cases.isEmpty ? ConformanceCase.all : cases.compactMap(ConformanceCase.named)
        let width = max(4, selected.map(\.name.count).max() ?? 0)
        if !json {
            output.line("case".padding(to: width) + "  result  virtual time  notes")
        }
        var passed = 0
        var failed = 0
        for item in selected {
            let result = item.run(seed: seed)
            if result.passed { passed += 1 } else { failed += 1 }
            if json {
                output.line(ConformanceJSON.line(result))
            } else {
                let time = "\(result.milliseconds) ms".padding(to: 12)
                output.line(item.name.padding(to: width) + "  " + (result.passed ? "pass  " : "FAIL  ") + "  " + time + "  " + result.summary)
                for failure in result.failures { output.line(String(repeating: " ", count: width + 2) + "- " + failure) }
            }
            output.flush()
        }
        if json {
            output.line("{\"kind\":\"summary\",\"seed\":\(seed),\"passed\":\(passed),\"failed\":\(failed)}")
        } else {
            output.line("\(passed) passed, \(failed) failed")
        }
        output.flush()
        if failed > 0 { throw ExitCode(1) }
    }
}

extension Conformance {
    func runAgainst(_ spec: TransportSpec) async throws {
        guard cases.isEmpty else {
            throw ValidationError("--case selects simulated cases; with --against every real-time case runs in order (\(AgainstSuite.caseNames.joined(separator: ", ")))")
        }
        let (transport, other) = try openTransports(spec)
        // The link-level cases probe with pings, which both ends answer at any stage of the session.
        let responder = other.map { MediaEndpoint(kind: .phone, transport: $0, authentication: .off) { _ in } }
        try responder?.start()
        let responderLoop = Task { [responder] in await responder?.run() }
        let width = AgainstSuite.caseNames.map(\.count).max() ?? 0
        let json = self.json
        if !json { print("case".padding(to: width) + "  result  elapsed       notes (against \(spec))") }
        let results = await AgainstSuite(transport: transport).run(seed: seed) { result in
            if json {
                print(ConformanceJSON.line(result))
            } else {
                print(result.name.padding(to: width) + "  " + (result.passed ? "pass  " : "FAIL  ") + "  " + "\(result.milliseconds) ms".padding(to: 12) + "  " + result.summary)
                for failure in result.failures { print(String(repeating: " ", count: width + 2) + "- " + failure) }
            }
        }
        responder?.driver.close()
        responderLoop.cancel()
        let passed = results.filter(\.passed).count
        let failed = results.count - passed
        if json {
            print("{\"kind\":\"summary\",\"seed\":\(seed),\"against\":\(JSONObjectWriter.quoted(spec.description)),\"passed\":\(passed),\"failed\":\(failed)}")
        } else {
            print("\(passed) passed, \(failed) failed")
        }
        if failed > 0 { throw ExitCode(1) }
    }
}

enum ConformanceJSON {
    static func line(_ result: ConformanceResult) -> String {
        var json = JSONObjectWriter()
        json.string("kind", "case")
        json.string("name", result.name)
        json.raw("seed", String(result.seed))
        json.bool("passed", result.passed)
        json.integer("time_ms", result.milliseconds)
        json.string("summary", result.summary)
        json.raw("failures", "[" + result.failures.map(JSONObjectWriter.quoted).joined(separator: ",") + "]")
        return json.finish()
    }
}
