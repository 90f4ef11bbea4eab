import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `phone` over `tcp-listen:` as a fixture left running: a peer that
/// connects and says nothing must not keep the next one waiting.
@Suite struct ServingTests {
    static let detect: [UInt8] = [0xFF, 0x55, 0x02, 0x00, 0xEE, 0x10]

    /// A loopback port free a moment ago.
    static func freePort() throws -> UInt16 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(socket >= 0)
        defer { close(socket) }
        var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: 0, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        try #require(bound)
        return UInt16(bigEndian: address.sin_port)
    }

    /// A connected socket, or -1 if nothing accepted within `seconds`.
    static func connect(port: UInt16, within seconds: Double) -> Int32 {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in(sin_family: sa_family_t(AF_INET), sin_port: port.bigEndian, sin_addr: in_addr(s_addr: inet_addr("127.0.0.1")), sin_zero: (0, 0, 0, 0, 0, 0, 0, 0))
            let connected = withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
            }
            if connected { return socket }
            close(socket)
            usleep(50_000)
        }
        return -1
    }

    /// What arrives on `socket` within `seconds`, up to the first `count` bytes.
    static func read(_ socket: Int32, count: Int, within seconds: Double) -> [UInt8] {
        var received: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        while received.count < count, Date() < deadline {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 256)
            let n = Glibc.read(socket, &buffer, buffer.count)
            if n <= 0 { break }
            received += buffer[..<n]
        }
        return received
    }

    /// Starts a phone on a free port with `options`, connects a peer that
    /// says nothing, then a second that sends the detect sequence; returns
    /// what the second got within `seconds`, and the phone's log once the
    /// phone has been stopped.
    static func detectBehindASilentPeer(_ options: [String], within seconds: Double) throws -> (answer: [UInt8], log: String) {
        try #require(FileManager.default.isExecutableFile(atPath: CommandLineTests.binary.path), "no iapctl next to the tests: build the package first")
        let port = try freePort()
        let (process, log) = try phone(options + ["--transport", "tcp-listen:127.0.0.1:\(port)"])
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let silent = connect(port: port, within: 20)
        try #require(silent >= 0, "the phone did not listen on \(port)")
        defer { close(silent) }
        let next = connect(port: port, within: 5)
        try #require(next >= 0)
        defer { close(next) }
        #expect(write(next, detect, detect.count) == detect.count)
        let answer = read(next, count: detect.count, within: seconds)
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        return (answer, String(decoding: try Data(contentsOf: log), as: UTF8.self))
    }

    @Test func aConnectionThatBringsNoLinkIsClosedAndTheNextPeerIsServed() throws {
        // One connection at a time: the second peer waits in the listener's
        // queue until the first is given up. Its detect must be echoed before
        // its own idle limit runs out: 3 s leaves room on a loaded machine
        // (1 s did not, once).
        let (answer, log) = try Self.detectBehindASilentPeer(["--auth", "off", "--idle-limit", "3", "--max-connections", "1"], within: 30)
        #expect(answer == Self.detect, "the next peer got \(answer) instead of the detect echo")
        #expect(log.contains("no link on this connection for 3.0 seconds; closing it to serve the next peer"), "\(log)")
        #expect(log.contains("connection #1 ended; waiting for the next"), "\(log)")
    }

    /// The phone serves several head units at once: a peer that connects
    /// and says nothing never keeps the next waiting (no idle limit here).
    @Test func aSilentPeerDoesNotKeepTheNextWaiting() throws {
        let (answer, log) = try Self.detectBehindASilentPeer(["--auth", "off", "--idle-limit", "0"], within: 20)
        #expect(answer == Self.detect, "the next peer got \(answer) instead of the detect echo: \(log)")
    }

    /// A head unit whose certificate the phone does not trust: the phone
    /// ends that connection (the session stayed, holding the listener).
    @Test func aFailedAuthenticationEndsTheConnection() throws {
        let directory = try CommandLineTests.temporaryDirectory()
        let anchors = directory.appendingPathComponent("other-authority.pem").path
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                             "-keyout", directory.appendingPathComponent("other-authority.key").path, "-out", anchors,
                             "-subj", "/CN=another authority", "-days", "30"]
        openssl.standardOutput = FileHandle.nullDevice
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        try #require(openssl.terminationStatus == 0, "openssl could not make a test authority")
        let port = try Self.freePort()
        let (phone, log) = try Self.phone(["--trust-anchors", anchors, "--idle-limit", "0", "--transport", "tcp-listen:127.0.0.1:\(port)"])
        defer {
            if phone.isRunning { kill(phone.processIdentifier, SIGKILL) }
            phone.waitUntilExit()
        }
        let listening = Date().addingTimeInterval(20)
        while !String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self).contains("listening on"), Date() < listening { usleep(50_000) }
        let headUnit = Process()
        headUnit.executableURL = CommandLineTests.binary
        headUnit.arguments = ["head-unit", "--transport", "tcp:127.0.0.1:\(port)"]
        headUnit.environment = ProcessInfo.processInfo.environment.merging(["XDG_DATA_HOME": directory.path]) { $1 }
        headUnit.standardInput = Pipe()
        headUnit.standardOutput = FileHandle.nullDevice
        headUnit.standardError = FileHandle.nullDevice
        try headUnit.run()
        defer {
            if headUnit.isRunning { kill(headUnit.processIdentifier, SIGKILL) }
            headUnit.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(30)
        while headUnit.isRunning && Date() < deadline { usleep(50_000) }
        #expect(!headUnit.isRunning, "the phone kept the untrusted head unit's connection")
        let text = String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self)
        #expect(text.contains("closing the connection: authentication failed"), "\(text)")
    }

    /// `iapctl phone` with these arguments, its standard error in a file.
    static func phone(_ arguments: [String]) throws -> (Process, URL) {
        let log = try CommandLineTests.temporaryDirectory().appendingPathComponent("phone.err")
        try Data().write(to: log)
        let process = Process()
        process.executableURL = CommandLineTests.binary
        process.arguments = ["phone"] + arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: log)
        try process.run()
        return (process, log)
    }
}
