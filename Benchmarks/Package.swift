// swift-tools-version:6.1
// Performance measurements for the wire codecs and the trace decoder.
// A separate package so that package-benchmark (and its malloc interposer) is
// never a dependency of the library itself. Run from this directory:
//   swift package benchmark
// See README.md and ../Docs/Performance.md.
import PackageDescription

let package = Package(
    name: "iap-devkit-benchmarks",
    platforms: [.macOS(.v13)],
    dependencies: [
        .package(name: "iap-devkit", path: ".."),
        // MallocInterposer only: the malloc metrics need it, and the default
        // RuntimeInterposer trait pulls in a package that is not available here.
        .package(url: "https://github.com/ordo-one/benchmark", exact: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // LinkStreamDecoder throughput and allocations, with memcpy as the baseline.
        .executableTarget(
            name: "LinkDecode",
            dependencies: [
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LinkDecode",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // Two link ends with no I/O: goodput of 64 KiB messages, with memcpy as the baseline.
        .executableTarget(
            name: "LinkGoodput",
            dependencies: [
                .product(name: "IAPLink", package: "iap-devkit"),
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/LinkGoodput",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The message layer and roles: browse round trip, now-playing updates.
        .executableTarget(
            name: "MediaRoles",
            dependencies: [
                .product(name: "IAPConformance", package: "iap-devkit"),
                .product(name: "IAPRoles", package: "iap-devkit"),
                .product(name: "IAPLink", package: "iap-devkit"),
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/MediaRoles",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The benchmark's decode loop without the harness, for callgrind.
        .executableTarget(
            name: "decode-loop",
            dependencies: [.product(name: "IAPWire", package: "iap-devkit")]
        ),
        // The raw TCP echo between two threads that ping-vs-echo.sh compares `iapctl ping` with.
        .executableTarget(name: "tcp-echo"),
        // The browse round trip without the harness, for callgrind and dhat.
        .executableTarget(
            name: "browse-loop",
            dependencies: [.product(name: "IAPConformance", package: "iap-devkit")]
        ),
        // A media library synced in one process, against the codec alone (Docs/Performance.md, "Media library").
        .executableTarget(
            name: "library-sync",
            dependencies: [
                .product(name: "IAPConformance", package: "iap-devkit"),
                .product(name: "IAPDemo", package: "iap-devkit"),
                .product(name: "IAPRoles", package: "iap-devkit"),
                .product(name: "IAPLink", package: "iap-devkit"),
                .product(name: "IAPWire", package: "iap-devkit"),
            ]
        ),
        // Writes a large, realistic usbmon pcapng for decode-vs-tshark.sh.
        .executableTarget(
            name: "make-usbmon-capture",
            dependencies: [
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "IAPTrace", package: "iap-devkit"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
