import Foundation
@testable import IAPScreen
import NIOCore
import Logging
import Synchronization
import Testing

/// The screen's server as an attacker meets it: only its own pages may
/// drive it, and every input is bounded before it costs memory or time.
/// The clients are raw sockets on threads of their own (their reads block).
@Suite struct ScreenServerTests {
    /// Log lines, kept for the test to read.
    final class Lines: Sendable {
        let lines = Mutex<[(Logger.Level, String)]>([])
        var warnings: [String] { lines.withLock { $0.filter { $0.0 >= .warning }.map(\.1) } }
    }

    struct Collector: LogHandler {
        let lines: Lines
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.lines.withLock { $0.append((event.level, "\(event.message)")) } }
    }

    /// Runs `body` with a screen served on `host` (port 0), its port and its log.
    func withScreen(host: String = "127.0.0.1", allowRemote: Bool = false,
                    _ body: @escaping @Sendable (UInt16, Lines) throws -> Void) async throws {
        let lines = Lines()
        let screen = try HeadUnitScreen(host: host, port: 0, allowRemote: allowRemote,
                                        logger: Logger(label: "screen-test") { _ in Collector(lines: lines) })
        let server = Task { try await screen.run() }
        defer { server.cancel() }
        let port = try await screen.listeningPort()
        try await Self.offPool { try body(port, lines) }
    }

    /// Blocking socket work on a thread of its own, not the concurrency pool's.
    static func offPool(_ work: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    @Test func onlyThisScreensOwnHostAndOriginAreServed() async throws {
        try await withScreen { port, lines in
            let page = try RawClient(port: port).get("/", host: "127.0.0.1:\(port)")
            #expect(page?.status == 200 && String(decoding: page?.body ?? [], as: UTF8.self).contains("<title>"))
            #expect(try RawClient(port: port).get("/", host: "localhost:\(port)")?.status == 200)
            // DNS rebinding: a name that now points here is not this screen's.
            #expect(try RawClient(port: port).get("/", host: "evil.example:\(port)")?.status == 403)
            #expect(try RawClient(port: port).get("/", host: "127.0.0.1:\(port &+ 1)")?.status == 403)
            #expect(try RawClient(port: port).get("/", host: nil)?.status == 403)
            // Cross-site WebSocket hijacking: another site's page opens /ws.
            let hijack = try RawClient(port: port).get("/ws", host: "127.0.0.1:\(port)", headers: RawClient.upgradeHeaders(origin: "http://evil.example"))
            #expect(hijack?.status == 403)
            let own = try RawClient(port: port).get("/ws", host: "127.0.0.1:\(port)", headers: RawClient.upgradeHeaders(origin: "http://127.0.0.1:\(port)"))
            #expect(own?.status == 101)
            #expect(lines.warnings.contains { $0.contains("evil.example") && $0.contains("not this screen's address") })
            // The favicon the browser asks for on every load: nothing, without an error.
            #expect(try RawClient(port: port).get("/favicon.ico", host: "127.0.0.1:\(port)")?.status == 204)
        }
    }

    @Test func hostAndOriginChecks() throws {
        let loopback = ScreenAccess(host: "localhost", bound: try .init(ipAddress: "127.0.0.1", port: 8080))
        for allowed in ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080"] { #expect(loopback.allows(host: allowed), "\(allowed)") }
        for refused in ["127.0.0.1:8081", "127.0.0.1", "evil.example:8080", "10.0.0.2:8080", "[::1", ""] { #expect(!loopback.allows(host: refused), "\(refused)") }
        #expect(loopback.allows(origin: nil) && loopback.allows(origin: "http://localhost:8080"))
        for refused in ["null", "https://localhost:8080", "http://evil.example", "http://localhost:8080/x", "http://localhost:8080.evil.example"] {
            #expect(!loopback.allows(origin: refused), "\(refused)")
        }
        // Every interface: any address literal is this machine's; a name is not.
        let everywhere = ScreenAccess(host: "0.0.0.0", bound: try .init(ipAddress: "0.0.0.0", port: 80))
        #expect(everywhere.allows(host: "192.168.1.20") && everywhere.allows(host: "[fe80::1]:80") && everywhere.allows(host: "localhost"))
        #expect(!everywhere.allows(host: "rebound.example"))
        let named = ScreenAccess(host: "headunit.local", bound: try .init(ipAddress: "192.168.1.20", port: 8080))
        #expect(named.allows(host: "headunit.local:8080") && named.allows(host: "192.168.1.20:8080") && !named.allows(host: "localhost:8080"))
    }

    @Test func aHostNameIsResolved() async throws {
        try await withScreen(host: "localhost") { port, _ in
            let status = try RawClient(port: port).get("/", host: "localhost:\(port)")?.status
            #expect(status == 200)
        }
    }

    @Test func anAddressOthersCanReachNeedsToBeAllowed() async throws {
        let screen = try HeadUnitScreen(host: "0.0.0.0", port: 0)
        await #expect(throws: ScreenError.notLoopback(host: "0.0.0.0", address: "0.0.0.0")) { try await screen.run() }
        await #expect(throws: ScreenError.notLoopback(host: "0.0.0.0", address: "0.0.0.0")) { try await screen.listeningPort() }
        try await withScreen(host: "0.0.0.0", allowRemote: true) { port, _ in
            let status = try RawClient(port: port).get("/", host: "127.0.0.1:\(port)")?.status
            #expect(status == 200)
        }
    }

    @Test func anAddressInUseIsSaidAtOnce() async throws {
        try await withScreen { port, _ in
            let second = try HeadUnitScreen(host: "127.0.0.1", port: port)
            let semaphore = DispatchSemaphore(value: 0)
            let outcome = Mutex<(any Error)?>(nil)
            Task {
                do { try await second.run() } catch { outcome.withLock { $0 = error } }
                semaphore.signal()
            }
            semaphore.wait()
            #expect(outcome.withLock { $0 as? ScreenError } == .addressInUse("127.0.0.1:\(port)"))
        }
    }

    @Test func longRequestHeadsAreRefusedBeforeTheyAreParsed() async throws {
        try await withScreen { port, lines in
            let longLine = try RawClient(port: port)
            longLine.send("GET /" + String(repeating: "a", count: 256 * 1024) + " HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
            #expect(longLine.response()?.status == 400)
            #expect(longLine.closedByServer())
            // Over this screen's limit though under the HTTP library's own default (80 KB).
            let overLimit = try RawClient(port: port)
            overLimit.send("GET /" + String(repeating: "a", count: 2 * ScreenLimits.headBytes) + " HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
            #expect(overLimit.response()?.status == 400)
            let longHeader = try RawClient(port: port)
            longHeader.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Filler: " + String(repeating: "b", count: 256 * 1024) + "\r\n\r\n")
            #expect(longHeader.response()?.status == 400)
            let manyHeaders = try RawClient(port: port)
            manyHeaders.send("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + (0..<1000).map { "X-\($0): 1\r\n" }.joined() + "\r\n")
            #expect(manyHeaders.response()?.status == 400)
            // An honest page is served as before.
            #expect(try RawClient(port: port).get("/", host: "127.0.0.1:\(port)")?.status == 200)
            #expect(lines.warnings.contains { $0.contains("longer than \(ScreenLimits.headBytes) bytes") })
        }
    }

    /// A WebSocket to this screen, upgraded.
    static func webSocket(_ port: UInt16) throws -> RawClient {
        let client = try RawClient(port: port)
        let upgrade = client.get("/ws", host: "127.0.0.1:\(port)", headers: RawClient.upgradeHeaders(origin: "http://127.0.0.1:\(port)"))
        guard upgrade?.status == 101 else { throw RawClient.Failure("no upgrade: \(String(describing: upgrade?.status))") }
        return client
    }

    @Test func aFrameOverTheLimitIsClosedWith1009() async throws {
        try await withScreen { port, _ in
            let client = try Self.webSocket(port)
            client.send(RawClient.frame(opcode: 1, payload: [], declaredLength: 400 * 1024 * 1024))
            #expect(client.closeCode() == 1009)
            // A message in fragments that add up to more than the limit, too.
            let fragmented = try Self.webSocket(port)
            let piece = [UInt8](repeating: 0x61, count: 8 * 1024)
            var first = RawClient.frame(opcode: 1, payload: piece)
            first[0] &= 0x7F
            var frames = first
            for _ in 0..<3 {
                var next = RawClient.frame(opcode: 0, payload: piece)
                next[0] &= 0x7F
                frames += next
            }
            fragmented.send(frames)
            #expect(fragmented.closeCode() == 1009)
        }
    }

    @Test func aFloodOfMessagesIsClosedAndItsWarningsAreCapped() async throws {
        try await withScreen { port, lines in
            let client = try Self.webSocket(port)
            let junk = RawClient.frame(opcode: 1, payload: Array("not an action".utf8))
            for _ in 0..<20 { guard client.send(Array(repeating: junk, count: 200).flatMap { $0 }) else { break } }
            #expect(client.closeCode() == 1008)
            let warnings = lines.warnings
            #expect(warnings.count <= ScreenLimits.warningsPerWindow + 1)
            #expect(warnings.contains { $0.contains("not an action") })
            // The next page is served.
            _ = try Self.webSocket(port)
        }
    }

    @Test func connectionsOverTheLimitAreClosedAndTheServerGoesOn() async throws {
        try await withScreen { port, _ in
            var open: [RawClient] = []
            for _ in 0..<ScreenLimits.connections {
                let client = try RawClient(port: port)
                guard client.get("/favicon.ico", host: "127.0.0.1:\(port)")?.status == 204 else {
                    Issue.record("connection \(open.count + 1) was not served")
                    return
                }
                open.append(client)
            }
            #expect(try RawClient(port: port).closedByServer())
            open.removeAll()
            // Once they are gone, pages are served again (the server notices the closes as they come).
            var served = false
            for _ in 0..<100 where !served {
                served = try RawClient(port: port).get("/favicon.ico", host: "127.0.0.1:\(port)")?.status == 204
                if !served { usleep(20_000) }
            }
            #expect(served)
        }
    }

    @Test func rememberedImageRequestsAreBoundedOldestFirst() {
        var requested = RecentSet(capacity: 3)
        #expect(requested.insert("a") && requested.insert("b") && !requested.insert("a"))
        #expect(requested.insert("c") && requested.insert("d"))
        #expect(requested.count == 3 && !requested.contains("a") && requested.contains("b") && requested.contains("d"))
        // A forgotten request may be asked for again.
        #expect(requested.insert("a") && !requested.contains("b"))
    }
}
