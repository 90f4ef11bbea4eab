// swift-tools-version:5.4
// Fuzz entry points for the wire and trace decoders, the link end, the
// session above it (two connection cores) and the endpoint core that holds
// them both (two endpoint cores); see ../Docs/Fuzzing.md
// and ../scripts/fuzz.sh.
//
// Each executable defines LLVMFuzzerTestOneInput and takes main() from
// libFuzzer, so it only links when built with
//   -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library
// The tools version stays at 5.4 on purpose: from 5.5 on, SwiftPM renames an
// executable's entry point and links `--defsym main=<Target>_main`, which
// replaces libFuzzer's main with an empty one (the binary exits at once).
import PackageDescription

let package = Package(
    name: "iap-fuzz",
    dependencies: [
        .package(name: "iap-devkit", path: ".."),
    ],
    targets: [
        .target(name: "FuzzSupport"),
        .executableTarget(
            name: "FuzzLinkStream",
            dependencies: ["FuzzSupport", .product(name: "IAPWire", package: "iap-devkit")]
        ),
        .executableTarget(
            name: "FuzzControlMessage",
            dependencies: ["FuzzSupport", .product(name: "IAPWire", package: "iap-devkit")]
        ),
        .executableTarget(
            name: "FuzzLinkEnd",
            dependencies: [
                "FuzzSupport",
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "IAPLink", package: "iap-devkit"),
            ]
        ),
        .executableTarget(
            name: "FuzzSession",
            dependencies: [
                "FuzzSupport",
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "IAPLink", package: "iap-devkit"),
                .product(name: "IAPRoles", package: "iap-devkit"),
                .product(name: "IAPSession", package: "iap-devkit"),
                .product(name: "IAPDemo", package: "iap-devkit"),
            ]
        ),
        .executableTarget(
            name: "FuzzLegacyPhone",
            dependencies: [
                "FuzzSupport",
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "IAPLink", package: "iap-devkit"),
                .product(name: "IAPRoles", package: "iap-devkit"),
                .product(name: "IAPSession", package: "iap-devkit"),
                .product(name: "IAPLegacy", package: "iap-devkit"),
            ]
        ),
        .executableTarget(
            name: "FuzzEndpoint",
            dependencies: [
                "FuzzSupport",
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "IAPLink", package: "iap-devkit"),
                .product(name: "IAPRoles", package: "iap-devkit"),
                .product(name: "IAPSession", package: "iap-devkit"),
                .product(name: "IAPEndpoint", package: "iap-devkit"),
                .product(name: "IAPDemo", package: "iap-devkit"),
            ]
        ),
        .executableTarget(
            name: "FuzzTraceInput",
            dependencies: [
                "FuzzSupport",
                .product(name: "IAPWire", package: "iap-devkit"),
                .product(name: "IAPTrace", package: "iap-devkit"),
            ]
        ),
    ]
)
