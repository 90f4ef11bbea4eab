import ArgumentParser
import IAPConformance
import IAPTrace

struct Conformance: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the link conformance cases between two link ends over a simulated, fault-injecting wire.",
        discussion: """
        Each case is a scenario between an accessory (head unit) end and a device
        (phone) end of the iAP2 link, run in virtual time over an in-memory wire
        with seeded faults (loss, duplication, reordering, corruption, delay,
        bandwidth limits). The same seed always gives the same run, so a failure
        can be replayed exactly with --seed and --case.

        Examples:
          iapctl conformance                      # every case, seed 1
          iapctl conformance --list               # names and what each checks
          iapctl conformance --case eak-recovery --seed 7
          iapctl conformance --json | jq 'select(.passed == false)'

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

    func validate() throws {
        for name in cases where ConformanceCase.named(name) == nil {
            throw ValidationError("no case named '\(name)'; `iapctl conformance --list` shows them")
        }
    }

    func run() throws {
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
                let time = "\(result.virtualMilliseconds) ms".padding(to: 12)
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

enum ConformanceJSON {
    static func line(_ result: ConformanceResult) -> String {
        var json = JSONObjectWriter()
        json.string("kind", "case")
        json.string("name", result.name)
        json.raw("seed", String(result.seed))
        json.bool("passed", result.passed)
        json.integer("virtual_ms", result.virtualMilliseconds)
        json.string("summary", result.summary)
        json.raw("failures", "[" + result.failures.map(JSONObjectWriter.quoted).joined(separator: ",") + "]")
        return json.finish()
    }
}
