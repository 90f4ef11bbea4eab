// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "iap-devkit",
    products: [
        .library(name: "IAPWire", targets: ["IAPWire"]),
        .library(name: "IAPTrace", targets: ["IAPTrace"]),
        .library(name: "IAPLink", targets: ["IAPLink"]),
        .library(name: "IAPTransport", targets: ["IAPTransport"]),
        .library(name: "IAPRoles", targets: ["IAPRoles"]),
        .library(name: "IAPSession", targets: ["IAPSession"]),
        .library(name: "IAPLegacy", targets: ["IAPLegacy"]),
        .library(name: "IAPConformance", targets: ["IAPConformance"]),
        .library(name: "IAPAuthentication", targets: ["IAPAuthentication"]),
        .library(name: "IAPEndpoint", targets: ["IAPEndpoint"]),
        .library(name: "IAPKit", targets: ["IAPKit"]),
        .library(name: "IAPDemo", targets: ["IAPDemo"]),
        .library(name: "IAPUSB", targets: ["IAPUSB"]),
        .library(name: "IAPHotplug", targets: ["IAPHotplug"]),
        .library(name: "IAPUdev", targets: ["IAPUdev"]),
        .executable(name: "iapctl", targets: ["iapctl"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-certificates", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // `swift package generate-documentation`: the DocC catalogs in Sources/*/*.docc.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
        // The head unit's screen in a browser (HTTP and WebSocket: NIOHTTP1's llhttp bounds
        // request heads, NIOWebSocket bounds frames), IAPScreen only.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
    ],
    targets: [
        // Wire codecs: iAP2 link packets, control-session messages, iAP1 frames.
        // Standard library only, no I/O.
        .target(name: "IAPWire"),
        // Trace inputs (hex text, raw, usbmon pcap/pcapng) and the decoder that
        // turns them into readable lines and JSON. Standard library only; files
        // are read by the caller.
        .target(name: "IAPTrace", dependencies: ["IAPWire"]),
        // The link layer: a sans-IO state machine per link end (handshake,
        // negotiation, reliable windowed delivery, sessions). Standard library only.
        .target(name: "IAPLink", dependencies: ["IAPWire"]),
        // Byte transports (in-memory loopback with seeded faults, TCP, serial),
        // the clock and the deadline timer a real-time driver runs on. The edge:
        // threads, sockets and clocks live here and nowhere below. What C calls
        // report becomes a TransportError through swift-system's Errno.
        .target(
            name: "IAPTransport",
            dependencies: ["IAPWire", .product(name: "SystemPackage", package: "swift-system")]
        ),
        // What runs over the link: the control channel (message reassembly,
        // the diagnostic ping) and the phone and head-unit roles. Sans-IO;
        // it takes the time as IAPWire's LinkInstant, not from the link.
        .target(name: "IAPRoles", dependencies: ["IAPWire"]),
        // The whole session above one link, for either end: authentication,
        // identification, the media role, file transfer. Sans-IO; the
        // cryptography it needs is asked of the edge. What every runner drives.
        .target(name: "IAPSession", dependencies: ["IAPWire", "IAPLink", "IAPRoles"]),
        // The phone's answer to a head unit that speaks only the legacy iAP1
        // (identification, authentication 2.0, the Extended Interface lingo),
        // served from the same app. Sans-IO, standard library only.
        .target(name: "IAPLegacy", dependencies: ["IAPWire", "IAPRoles"]),
        // One whole link end as a sans-IO state machine: the link end, the
        // session and the legacy iAP1 phone, fed inputs and time, answering
        // with outputs and one deadline. What every runner drives.
        .target(name: "IAPEndpointCore", dependencies: ["IAPLegacy", "IAPLink", "IAPRoles", "IAPSession", "IAPWire"]),
        // The connection core over a real transport, in real time: what
        // `iapctl phone`, `head-unit`, `ping`, `gadget` and `supervise` run,
        // and what IAPKit is built on.
        .target(name: "IAPEndpoint", dependencies: [
            "IAPEndpointCore", "IAPLegacy", "IAPLink", "IAPRoles", "IAPSession", "IAPTransport", "IAPWire",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The sample app and library, the head-unit shell and the head unit's
        // view in words: the demo's and the CLI's, not the library's.
        // The sample app and its library, and head-unit events in words:
        // sans-IO, so the sans-IO tests use them without building any I/O.
        .target(name: "IAPSampleApp", dependencies: ["IAPEndpointCore", "IAPRoles", "IAPLink", "IAPWire"]),
        .target(name: "IAPDemo", dependencies: ["IAPSampleApp", "IAPEndpoint", "IAPRoles", "IAPSession", "IAPLink", "IAPWire", "IAPTransport"]),
        // libusb, for the USB host transport only: nothing below IAPUSB needs it.
        .systemLibrary(name: "CLibUSB", pkgConfig: "libusb-1.0", providers: [.apt(["libusb-1.0-0-dev"])]),
        // The USB host transport (libusb on a dedicated event thread).
        .target(name: "IAPUSB", dependencies: ["CLibUSB", "IAPHotplug", "IAPTransport", "IAPWire", .product(name: "Logging", package: "swift-log")]),
        // Hotplug: udev events read, devices matched, and the supervisor that
        // keeps one connection per plugged device. Sans-IO; the libudev and
        // libusb edges build on it.
        .target(name: "IAPHotplug", dependencies: ["IAPWire"]),
        // libedit, for the interactive head-unit shell only (line editing,
        // history, completion).
        .systemLibrary(name: "CLibEdit", pkgConfig: "libedit", providers: [.apt(["libedit-dev"])]),
        // glibc's mallopt, for the command's memory tuning.
        .systemLibrary(name: "CMalloc"),
        // libudev, for hotplug monitoring and device listing only.
        .systemLibrary(name: "CLibUDev", pkgConfig: "libudev", providers: [.apt(["libudev-dev"])]),
        // The udev edge: USB devices enumerated and watched (add/remove) on
        // a thread of their own, fed to the supervisor.
        .target(name: "IAPUdev", dependencies: ["CLibUDev", "IAPHotplug", "IAPTransport", .product(name: "SystemPackage", package: "swift-system")]),
        // Deterministic link scenarios in virtual time over the faulty wire,
        // and the named conformance cases.
        .target(name: "IAPConformance", dependencies: ["IAPLink", "IAPWire", "IAPTransport", "IAPRoles", "IAPSession", "IAPAuthentication", "IAPEndpointCore", "IAPEndpoint", "IAPDemo"]),
        // iAP2 authentication: the accessory certificate parsed, challenges made
        // and verified, chain trust, and the accessory's authenticators (a
        // software key and the I2C coprocessor). Docs/Authentication.md.
        .target(
            name: "IAPAuthentication",
            dependencies: [
                "IAPWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        // The library app developers build on: a head unit and a phone that
        // serves an app, async, over transports named as the CLI names them.
        // Docs/Library.md.
        .target(
            name: "IAPKit",
            dependencies: [
                "IAPEndpoint", "IAPSession", "IAPRoles", "IAPLink", "IAPTransport", "IAPUSB", "IAPAuthentication", "IAPWire",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The head unit's screen in a browser: a page and a WebSocket showing
        // what the head-unit role knows, taps sent back as role actions. Its
        // own target: nothing else depends on the HTTP server.
        .target(
            name: "IAPScreen",
            dependencies: [
                "IAPEndpoint", "IAPRoles", "IAPSession", "IAPLink", "IAPTransport", "IAPWire",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "iapctl",
            dependencies: [
                "IAPWire", "IAPTrace", "IAPLink", "IAPTransport", "IAPConformance", "IAPRoles", "IAPSession", "IAPAuthentication", "IAPEndpoint",
                "IAPUSB", "IAPUdev", "IAPHotplug", "IAPKit", "IAPDemo", "CLibEdit", "CMalloc", "IAPScreen",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
        .testTarget(name: "IAPWireTests", dependencies: ["IAPWire"], exclude: ["Fixtures"]),
        .testTarget(name: "IAPTraceTests", dependencies: ["IAPTrace", "IAPWire"]),
        .testTarget(name: "IAPEndpointTests", dependencies: ["IAPEndpoint", "IAPDemo", "IAPRoles", "IAPSession", "IAPConformance", "IAPTransport", "IAPLink", "IAPWire"]),
        .testTarget(name: "IAPUSBTests", dependencies: ["IAPUSB", "IAPTransport", "IAPWire"], exclude: ["Fixtures"]),
        .testTarget(name: "IAPHotplugTests", dependencies: ["IAPHotplug", "IAPTransport", "IAPWire"], exclude: ["Fixtures"]),
        .testTarget(name: "IAPLegacyTests", dependencies: ["IAPLegacy", "IAPRoles", "IAPSession", "IAPWire", "IAPLink", "IAPSampleApp"], exclude: ["Fixtures"]),
        .testTarget(name: "IAPRolesTests", dependencies: ["IAPRoles", "IAPSampleApp", "IAPWire"], exclude: ["Fixtures"]),
        .testTarget(name: "IAPSessionTests", dependencies: ["IAPSession", "IAPSampleApp", "IAPRoles", "IAPLink", "IAPWire"]),
        .testTarget(name: "IAPTransportTests", dependencies: ["IAPTransport", "IAPLink"]),
        .testTarget(
            name: "IAPAuthenticationTests",
            dependencies: [
                "IAPAuthentication",
                "IAPSession",
                "IAPWire",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
            ]
        ),
        .testTarget(name: "IAPScreenTests", dependencies: [
            "IAPScreen", "IAPRoles", "IAPLink", "IAPSession", "IAPWire",
            .product(name: "NIOCore", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "IAPKitTests", dependencies: ["IAPKit", "IAPRoles", "IAPTransport", "IAPAuthentication"]),
        .testTarget(name: "IAPLinkTests", dependencies: ["IAPLink", "IAPConformance", "IAPTransport", "IAPWire"]),
        // Runs the built iapctl (an executable target cannot be imported): exit statuses, standard output and error.
        .testTarget(name: "IAPCtlTests", dependencies: ["IAPTrace", "IAPWire"]),
    ],
    swiftLanguageModes: [.v6]
)
