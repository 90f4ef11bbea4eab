// The message layer and roles: a browse request and its answer through the
// whole stack in one process, and the cost of a now-playing model update.
// Targets: browse round trip under 10 µs at the median with under 20
// allocations (issue "Speed where users feel it"; under 50 µs before); a
// now-playing model update allocates nothing beyond the strings it stores.
// Figures and what stands in the way: ../Docs/Performance.md.

import Benchmark
import IAPConformance
import IAPLink
import IAPRoles
import IAPWire

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .mallocCountTotal], warmupIterations: 50,
                                           maxDuration: .seconds(3), maxIterations: 200_000)

    // Head unit opens an album, the request crosses the link to the phone,
    // the sample app answers from memory, the page crosses back. Delayed
    // acknowledgements are let out between iterations (not measured), as
    // time would on a real link.
    Benchmark("browse round trip (album, 6 rows)") { benchmark in
        var pair = InProcessMediaPair()
        precondition(pair.isConnected, "the in-process pair did not connect")
        for _ in benchmark.scaledIterations {
            benchmark.startMeasurement()
            blackHole(pair.browse("album:kind-of-blue"))
            benchmark.stopMeasurement()
            pair.settle()
        }
    }

    // Applying an already decoded update to the model: copies of the strings
    // it carries, nothing else.
    Benchmark("now-playing model update", configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo)) { benchmark in
        let info = NowPlayingInfo(itemID: 7, title: "Blue in Green", artist: "Miles Davis", albumTitle: "Kind of Blue", genre: "Jazz",
                                  durationMilliseconds: 337_000, elapsedMilliseconds: 42_000, playbackRate: 1, queueIndex: 2,
                                  queueCount: 5, state: .playing, appName: "iap-devkit Music")
        let update = NowPlayingUpdate(full: info)
        var model = NowPlayingModel()
        var instant = LinkInstant.zero
        // The fixtures above allocate; only the updates are measured.
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            instant = instant + .milliseconds(1)
            model.apply(update, at: instant)
            blackHole(model.elapsed(at: instant))
        }
    }

    // The same update decoded from its control message first (what arrives
    // off the link): the allocations of parsing, for comparison.
    Benchmark("now-playing update decoded and applied", configuration: .init(metrics: [.wallClock, .mallocCountTotal], scalingFactor: .kilo)) { benchmark in
        let info = NowPlayingInfo(itemID: 7, title: "Blue in Green", artist: "Miles Davis", albumTitle: "Kind of Blue", genre: "Jazz",
                                  durationMilliseconds: 337_000, elapsedMilliseconds: 42_000, playbackRate: 1, queueIndex: 2,
                                  queueCount: 5, state: .playing, appName: "iap-devkit Music")
        let message = MediaMessage.nowPlayingUpdate(NowPlayingUpdate(full: info)).controlMessage
        var model = NowPlayingModel()
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            if case .nowPlayingUpdate(let update)? = try? MediaMessage(message) { model.apply(update, at: .zero) }
        }
        blackHole(model)
    }

    // An IdentificationInformation whose MessagesSentByAccessory lists
    // 16,000 ids (32 KB, what a hostile or odd accessory can send), decoded
    // off the wire and validated as the phone does, against a copy of the
    // message's bytes (the baseline: one linear pass over them). Reading the
    // list through `Parameter.data` copied it once per byte, quadratic.
    let longIdentity: [UInt8] = {
        var identity = AccessoryIdentity.devKitHeadUnit
        identity.messagesSent = (0..<16_000).map { UInt16(truncatingIfNeeded: $0) }
        return try! identity.message.encoded()
    }()
    Benchmark("identification with 16,000 message ids: bytes copied (baseline)") { benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(longIdentity.withUnsafeBufferPointer { Array($0) })
        }
    }
    Benchmark("identification with 16,000 message ids: decoded and validated") { benchmark in
        for _ in benchmark.scaledIterations {
            guard let message = try? ControlMessage(decoding: longIdentity) else { continue }
            blackHole(AccessoryIdentity.validate(message))
        }
    }
}
