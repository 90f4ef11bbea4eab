import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `head-unit --ui` as a user meets it: an address in use is said at once,
/// an address others can reach needs a flag, and running out of descriptors
/// does not end the screen.
@Suite struct ScreenCommandTests {
    @Test func anAddressInUseIsSaidAtOnceAndTheCommandFails() throws {
        let taken = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(taken >= 0)
        defer { close(taken) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listening = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(taken, $0, length) == 0 && getsockname(taken, $0, &length) == 0 }
        } && listen(taken, 1) == 0
        try #require(listening)
        let port = UInt16(bigEndian: address.sin_port)
        let outcome = try CommandLineTests.run(["head-unit", "--transport", "tcp-listen:127.0.0.1:\(try ServingTests.freePort())", "--ui", "127.0.0.1:\(port)"])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("127.0.0.1:\(port) is already in use"), "\(outcome.stderr)")
        #expect(!outcome.stderr.contains("timed out") && !outcome.stderr.contains("timeout"), "\(outcome.stderr)")
    }

    @Test func anAddressOthersCanReachNeedsTheFlag() throws {
        let outcome = try CommandLineTests.run(["head-unit", "--transport", "tcp-listen:127.0.0.1:\(try ServingTests.freePort())", "--ui", "0.0.0.0:0"])
        #expect(outcome.status != 0)
        #expect(outcome.stderr.contains("not a loopback address") && outcome.stderr.contains("--ui-allow-remote"), "\(outcome.stderr)")
    }

    /// The screen under a descriptor limit lower than its connection limit:
    /// accepting fails with EMFILE while the clients hold their connections,
    /// and once they close, a page is served again.
    @Test func runningOutOfDescriptorsDoesNotEndTheScreen() throws {
        try #require(FileManager.default.isExecutableFile(atPath: CommandLineTests.binary.path), "no iapctl next to the tests: build the package first")
        let port = try ServingTests.freePort()
        let directory = try CommandLineTests.temporaryDirectory()
        let log = directory.appendingPathComponent("stderr")
        try Data().write(to: log)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = ["-c", "ulimit -n 40 && exec \"$0\" head-unit --transport tcp-listen:127.0.0.1:$1 --ui 127.0.0.1:$2",
                             CommandLineTests.binary.path, "\(try ServingTests.freePort())", "\(port)"]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let first = ServingTests.connect(port: port, within: 20)
        try #require(first >= 0, "the screen did not listen on \(port)")
        close(first)
        var held: [Int32] = []
        for _ in 0..<80 {
            let socket = ServingTests.connect(port: port, within: 5)
            try #require(socket >= 0)
            held.append(socket)
        }
        // Wait until the screen has said it cannot accept (it tries as the connections arrive).
        var saidSo = false
        for _ in 0..<200 where !saidSo {
            saidSo = String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self).contains("Too many open files")
            if !saidSo { usleep(50_000) }
        }
        #expect(saidSo, "the screen never ran out of descriptors: the test did not test anything")
        for socket in held { close(socket) }
        // Ended, it would make each of the tries below wait out its connect.
        try #require(process.isRunning, "the head unit ended: \(String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self).suffix(2000))")
        var served = false
        for _ in 0..<100 where !served {
            let socket = ServingTests.connect(port: port, within: 5)
            guard socket >= 0 else { continue }
            let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
            if write(socket, request, request.count) == request.count {
                served = String(decoding: ServingTests.read(socket, count: 12, within: 5).prefix(12), as: UTF8.self) == "HTTP/1.1 200"
            }
            close(socket)
            if !served { usleep(50_000) }
        }
        #expect(served, "no page served after the connections closed: \(String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self).suffix(2000))")
    }
}
