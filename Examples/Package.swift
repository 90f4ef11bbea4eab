// swift-tools-version:6.0
// Two small programs that use iap-devkit as an app developer would: a phone
// serving a library of its own, and a head unit that browses it and plays.
// Build and run them against each other (README.md in this folder).
import PackageDescription

let package = Package(
    name: "iap-devkit-examples",
    dependencies: [
        .package(name: "iap-devkit", path: ".."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(name: "minimal-phone", dependencies: [
            .product(name: "IAPKit", package: "iap-devkit"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .executableTarget(name: "minimal-head-unit", dependencies: [
            .product(name: "IAPKit", package: "iap-devkit"),
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
            .product(name: "Logging", package: "swift-log"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
