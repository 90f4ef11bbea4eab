import ArgumentParser
import IAPDemo
import IAPConformance
import IAPEndpoint
import IAPKit
import IAPTrace
import IAPTransport
import Synchronization

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

    @Option(parsing: .unconditional, help: "Seed for the fault injection (0 to 18446744073709551615).", transform: parseSeed)
    var seed: UInt64 = 1

    @Flag(help: "List the cases and what each checks.")
    var list = false

    @Flag(help: "Write one JSON object per case, then a summary object.")
    var json = false

    @Option(help: ArgumentHelp("Run the real-time cases against another implementation over this transport (\(TransportSpec.forms); loopback: against this project's own other end).",
                               valueName: "transport"), completion: transportCompletions, transform: parseTransport)
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
        // A transport that cannot be opened (nothing listening, no such device) is one error, not a table of failed cases.
        let opening = OpeningWatch()
        let header = OnceSet()
        let report: @Sendable (ConformanceResult) -> Void = { result in
            guard opening.failure == nil else { return }
            if !json && !header.isSet {
                header.set()
                print("case".padding(to: width) + "  result  elapsed       notes (against \(spec), this project as the \(end.rawValue))")
            }
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
            results += try await withCounterpart(spec, kind: .phone, authentication: .off, opening: opening) { transport in
                await AgainstSuite(transport: transport).run(seed: seed, report: report)
            }
        }
        let ours = try authentication.endpointAuthentication(for: end)
        let theirs = try authentication.endpointAuthentication(for: end == .phone ? .headUnit : .phone)
        results += try await withCounterpart(spec, kind: end == .phone ? .headUnit : .phone, authentication: theirs, opening: opening) { transport in
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
    /// other end runs as the counterpart. A transport that could not be
    /// opened ends the command with its reason (`opening` keeps it).
    private func withCounterpart(_ spec: TransportSpec, kind: EndKind, authentication: EndpointAuthentication, opening: OpeningWatch,
                                 _ body: (Transport) async -> [ConformanceResult]) async throws -> [ConformanceResult] {
        let (opened, other) = spec.openPair()
        let transport = opening.watching(opened)
        let counterpart = other.map { MediaEndpoint(kind: kind, transport: $0, app: kind == .phone ? SampleApp() : nil, authentication: authentication, logger: .discarding("endpoint")) }
        let results = try await whileRunning(nil, counterpart: counterpart) { await body(transport) }
        if let failure = opening.failure { throw CommandFailure(message: "\(failure.description) (no conformance case ran)") }
        return results
    }
}

/// Tells a transport that could not be opened (a connection refused, no
/// such device, a port in use) from one that opened and then ended: the
/// first is the command's error, the second is what the cases check.
final class OpeningWatch: Sendable {
    private let state = Mutex<TransportError?>(nil)

    /// Why the transport could not be opened, if it could not.
    var failure: TransportError? { state.withLock { $0 } }

    func watching(_ transport: Transport) -> Transport { WatchedTransport(inner: transport, watch: self) }

    fileprivate func failed(_ error: TransportError) { state.withLock { $0 = $0 ?? error } }
}

/// Passes everything through, and reports to its watch a transport that
/// fails to start or closes, before a byte arrived, for another reason than
/// an orderly close.
private final class WatchedTransport: Transport {
    let inner: Transport
    let watch: OpeningWatch
    private let received = Mutex(false)

    init(inner: Transport, watch: OpeningWatch) {
        self.inner = inner
        self.watch = watch
    }

    var name: String { inner.name }
    var acceptsCoalescedWrites: Bool { inner.acceptsCoalescedWrites }
    var linkPacketSizing: LinkPacketSizing? { inner.linkPacketSizing }
    var queuedWriteBytes: Int { inner.queuedWriteBytes }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        do {
            try inner.start { [self] event in
                switch event {
                case .received: received.withLock { $0 = true }
                case .closed(let error):
                    if error.kind != .closed, !received.withLock({ $0 }) { watch.failed(error) }
                }
                handler(event)
            }
        } catch {
            watch.failed(error)
            throw error
        }
    }

    func write(_ bytes: [UInt8]) { inner.write(bytes) }
    func close() { inner.close() }
}

extension EndKind: ExpressibleByArgument {}

/// `--seed` values. Read unconditionally (ArgumentParser would take "-1"
/// for an option and say the value is missing): a value out of range says so.
func parseSeed(_ text: String) throws -> UInt64 {
    if let seed = UInt64(text) { return seed }
    let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
    let isWholeNumber = !digits.isEmpty && digits.allSatisfy { $0.isASCII && $0.isNumber }
    throw ValidationError((isWholeNumber ? "out of range" : "not a number") + ": a seed is a whole number from 0 to \(UInt64.max)")
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
