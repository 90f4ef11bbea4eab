// The MediaRoles benchmark's browse round trip as a plain program, for
// profilers (the benchmark harness would dominate their output):
//   valgrind --tool=callgrind --toggle-collect='$s11browse_loop*' .build/release/browse-loop 200
//   valgrind --tool=dhat .build/release/browse-loop 200
//   browse-loop ITERATIONS
// Runs ITERATIONS browse round trips (album, 6 rows) through one in-process
// pair, settling the link between them as the benchmark does.

import IAPConformance

let iterations = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 1000 : 1000

var pair = InProcessMediaPair()
precondition(pair.isConnected, "the in-process pair did not connect")
var rows = 0
for _ in 0..<iterations {
    rows &+= roundTrip(&pair)
    pair.settle()
}
print("\(iterations) round trips, \(rows) rows")

// Its own function, so that a profiler can collect just the round trips.
@inline(never)
func roundTrip(_ pair: inout InProcessMediaPair) -> Int {
    pair.browse("album:kind-of-blue")
}
