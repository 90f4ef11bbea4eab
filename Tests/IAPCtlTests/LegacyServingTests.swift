import Foundation
import Glibc
import IAPWire
import Testing

/// `iapctl phone` serving a legacy iAP1 head unit over `tcp-listen:`.
@Suite struct LegacyServingTests {
    static func frame(_ payload: [UInt8]) -> [UInt8] {
        [0xFF, 0x55, UInt8(payload.count)] + payload + [Checksum.of([UInt8(payload.count)] + payload)]
    }

    /// An iAP1 head unit exchanging frames has no iAP2 link, but it is not
    /// idle: the idle limit (2 s here) must not close its connection while
    /// it keeps asking (every quarter second, for three times the limit).
    @Test func anIAP1HeadUnitThatKeepsAskingIsNotIdle() throws {
        try #require(FileManager.default.isExecutableFile(atPath: CommandLineTests.binary.path), "no iapctl next to the tests: build the package first")
        let port = try ServingTests.freePort()
        // 2 s: a third of the 6 s the requests below take, and more than a loaded machine needs to answer the first.
        let (process, _) = try ServingTests.phone(["--auth", "off", "--idle-limit", "2", "--transport", "tcp-listen:127.0.0.1:\(port)"])
        defer {
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        let socket = ServingTests.connect(port: port, within: 20)
        try #require(socket >= 0, "the phone did not listen on \(port)")
        defer { close(socket) }
        // IdentifyDeviceLingoes (General and Extended Interface), then GetPlayStatus again and again.
        let identify = Self.frame([0x00, 0x13] + [0, 0, 0, 0x11] + [0, 0, 0, 0] + [0, 0, 0, 0])
        let getPlayStatus = Self.frame([0x04, 0x00, 0x1C])
        #expect(write(socket, identify, identify.count) == identify.count)
        #expect(ServingTests.read(socket, count: 8, within: 20).count == 8, "no iPodAck for the identification")
        for _ in 0..<24 {
            #expect(write(socket, getPlayStatus, getPlayStatus.count) == getPlayStatus.count)
            let answer = ServingTests.read(socket, count: 16, within: 20)
            guard answer.count == 16 else {
                Issue.record("the connection stopped answering: \(answer)")
                return
            }
            #expect(answer.prefix(6) == [0xFF, 0x55, 0x0C, 0x04, 0x00, 0x1D])
            usleep(250_000)
        }
    }
}
