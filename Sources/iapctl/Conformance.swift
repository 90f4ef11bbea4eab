import ArgumentParser
import IAPDemo
import IAPConformance
import IAPEndpoint
import IAPKit
import IAPTrace
import IAPTransport

struct Conformance: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the conformance cases: link and session scenarios over a simulated, fault-injecting wire, or against another implementation.",
        discussion: """
        Each link case is a scenario between an accessory (head unit) end and a
        device (phone) end of the iAP2 link, run in virtual time over an
        in-memory wire with seeded faults (loss, duplication, reordering,
        corruption, delay, bandwidth limits). The same seed always gives the same
        run, so a failure can be replayed exactly with --seed and --case.

        The session cases (session-*) run the whole session between a phone and a
        head unit: authentication, identification, then media, with one end
        misbehaving (a tampered signature, a certificate that is no certificate, a
        step left out, an incomplete identification, undeclared messages).

        With --against TRANSPORT, the cases run in real time against another
        implementation over TCP, a serial port or USB (the --transport names of
        `iapctl phone` and `head-unit`). --as head-unit (the default) makes this
        project the accessory end: the link cases (stale bytes before the
        handshake, detect, negotiation, diagnostic ping round trips, a message
        spanning many packets, corrupted and duplicated packets,
        re-synchronisation after RST), then, on a new connection, the device's
        session (device-link, -authentication, -identification, -media,
        -declared-messages). --as phone makes this project the device end and
        checks an accessory's session (accessory-link, -authentication with its
        certificate, -identification, -media, -declared-messages). --against
        loopback runs them against this project's own other end.

        Examples:
          iapctl conformance                      # every case, seed 1
          iapctl conformance --list               # names and what each checks
          iapctl conformance --case eak-recovery --seed 7
          iapctl conformance --json | jq 'select(.passed == false)'
          iapctl conformance --against tcp:192.0.2.10:7000
          iapctl conformance --against usb:auto          # a phone plugged in here
          iapctl conformance --against tcp-listen:0.0.0.0:7000 --as phone

        The exit status is 0 when every case passed, 1 otherwise.
        """
    )

    @Option(name: .customLong("case"), help: "Run only this case (repeatable; see --list).",
            completion: .list(ConformanceCase.all.map(\.name)))
    var cases: [String] = []

    @Option(help: "Seed for the fault injection.")
    var seed: UInt64 = 1

    @Flag(help: "List the cases and what each checks.")
    var list = false

    @Flag(help: "Write one JSON object per case, then a summary object.")
    var json = false

    @Option(help: ArgumentHelp("Run the real-time cases against another implementation over this transport (\(TransportSpec.forms); loopback: against this project's own other end).",
                               valueName: "transport"), transform: parseTransport)
    var against: TransportSpec?

    @Option(name: .customLong("as"), help: ArgumentHelp("With --against: which end this project plays, head-unit (accessory end: link and session cases) or phone (device end: session cases).",
                                                        valueName: "head-unit|phone"))
    var end: EndKind = .headUnit

    @OptionGroup(title: "Authentication") var authentication: AuthenticationOptions

    func validate() throws {
        guard end == .headUnit || end == .phone else { throw ValidationError("--as is head-unit or phone, not \(end.rawValue)") }
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
            throw ValidationError("--case selects simulated cases; with --against every real-time case runs in order")
        }
        let names = (end == .headUnit ? AgainstSuite.caseNames : []) + SessionConformance.caseNames(as: end)
        let width = names.map(\.count).max() ?? 0
        let json = self.json
        if !json { print("case".padding(to: width) + "  result  elapsed       notes (against \(spec), this project as the \(end.rawValue))") }
        let report: @Sendable (ConformanceResult) -> Void = { result in
            if json {
                print(ConformanceJSON.line(result))
            } else {
                print(result.name.padding(to: width) + "  " + (result.passed ? "pass  " : "FAIL  ") + "  " + "\(result.milliseconds) ms".padding(to: 12) + "  " + result.summary)
                for failure in result.failures { print(String(repeating: " ", count: width + 2) + "- " + failure) }
            }
        }
        var results: [ConformanceResult] = []
        if end == .headUnit {
            // The link-level cases probe with pings, which both ends answer at any stage of the session.
            results += try await withCounterpart(spec, kind: .phone, authentication: .off) { transport in
                await AgainstSuite(transport: transport).run(seed: seed, report: report)
            }
        }
        let ours = try authentication.endpointAuthentication(for: end)
        let theirs = try authentication.endpointAuthentication(for: end == .phone ? .headUnit : .phone)
        results += try await withCounterpart(spec, kind: end == .phone ? .headUnit : .phone, authentication: theirs) { transport in
            await SessionConformance(kind: end, transport: transport, authentication: ours).run(seed: seed, report: report)
        }
        let passed = results.filter(\.passed).count
        let failed = results.count - passed
        if json {
            print("{\"kind\":\"summary\",\"seed\":\(seed),\"against\":\(JSONObjectWriter.quoted(spec.description)),\"as\":\(JSONObjectWriter.quoted(end.rawValue)),\"passed\":\(passed),\"failed\":\(failed)}")
        } else {
            print("\(passed) passed, \(failed) failed")
        }
        if failed > 0 { throw ExitCode(1) }
    }

    /// Opens a fresh connection for one suite; for loopback, this project's
    /// other end runs as the counterpart.
    private func withCounterpart(_ spec: TransportSpec, kind: EndKind, authentication: EndpointAuthentication,
                                 _ body: (Transport) async -> [ConformanceResult]) async throws -> [ConformanceResult] {
        let (transport, other) = spec.openPair()
        let counterpart = other.map { MediaEndpoint(kind: kind, transport: $0, app: kind == .phone ? SampleApp() : nil, authentication: authentication, logger: .discarding("endpoint")) }
        try counterpart?.start()
        let loop = Task { [counterpart] in await counterpart?.run() }
        let results = await body(transport)
        await counterpart?.driver.close()
        loop.cancel()
        return results
    }
}

extension EndKind: ExpressibleByArgument {}

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
