@testable import IAPLegacy
import IAPRoles
import IAPSession
import IAPWire
import Synchronization
import Testing

/// With authentication on, an iAP1 head unit gets no media until it has
/// authenticated, as an iAP2 one does.
@Suite struct LegacyAuthenticationTests {
    static let media: [(command: UInt16, data: [UInt8])] = [
        (0x001C, []),                 // GetPlayStatus
        (0x0029, [0x01]),             // PlayControl: toggle play/pause
        (0x0018, [0x01]),             // GetNumberCategorizedDBRecords: playlists
        (0x0016, []),                 // ResetDBSelection
        (0x0026, [0x01]),             // SetPlayStatusChangeNotification
    ]

    /// Every media command is refused as "not authenticated" (0x07), and the app is not asked.
    static func expectRefused(_ harness: inout LegacyHarness, _ performed: @escaping () -> Int, sourceLocation: SourceLocation = #_sourceLocation) {
        for (command, data) in media {
            let answer = harness.receive(extended(command, data))
            #expect(answer.count == 1 && acked(answer.first, 0x07, command), "0x\(String(command, radix: 16)): \(answer)", sourceLocation: sourceLocation)
        }
        #expect(harness.loads.isEmpty, sourceLocation: sourceLocation)
        #expect(performed() == 0, "a remote command ran for an unauthenticated head unit", sourceLocation: sourceLocation)
    }

    @Test func aHeadUnitThatNeverAuthenticatesGetsNoMedia() {
        let counter = Counter()
        var harness = LegacyHarness(commands: counter.commands, verifies: true)
        harness.identify()
        Self.expectRefused(&harness, counter.count)
        // What it asks of the phone itself is still answered.
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x07)).first?.command == 0x08)
    }

    @Test func aRejectedCertificateKeepsMediaRefused() {
        let counter = Counter()
        var harness = LegacyHarness(commands: counter.commands, verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        // While the certificate is checked: refused.
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 2, 3]))
        Self.expectRefused(&harness, counter.count)
        harness.verdict(.certificateRejected("not Apple's"))
        Self.expectRefused(&harness, counter.count)
        // A signature sent anyway changes nothing.
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x18, data: [1])).first?.data == [0x04, 0x18])
        Self.expectRefused(&harness, counter.count)
    }

    @Test func anAuthenticatedHeadUnitIsServed() {
        let counter = Counter()
        var harness = LegacyHarness(commands: counter.commands, verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 2, 3]))
        harness.verdict(.certificateAccepted(summary: "car", challenge: [1]))
        harness.receive(IAP1Packet(lingo: 0, command: 0x18, data: [9]))
        harness.verdict(.responseValid)
        #expect(harness.phone.isAuthenticated)
        #expect(harness.receive(extended(0x001C)).first?.command == 0x001D)
        #expect(acked(harness.receive(extended(0x0029, [0x01])).first, 0x00, 0x0029))
        #expect(counter.count() == 1)
    }

    @Test func theReadingThatHeldIsReported() {
        var harness = LegacyHarness(verifies: true)
        harness.identify(options: 2, deviceID: 0x0200)
        harness.receive(IAP1Packet(lingo: 0, command: 0x15, data: [2, 0, 0, 0, 1, 2, 3]))
        harness.verdict(.certificateAccepted(summary: "car", challenge: [1]))
        harness.receive(IAP1Packet(lingo: 0, command: 0x18, data: [9]))
        harness.verdict(.responseVerified(reading: "SHA-1 of the challenge"))
        #expect(harness.phone.isAuthenticated)
        #expect(harness.events.contains(.authenticated("car; the signature holds for SHA-1 of the challenge")), "\(harness.events)")
    }

    /// Authentication off: the phone accepts the head unit unchecked and
    /// serves what a real iPod serves without authentication.
    @Test func withoutVerificationMediaIsServed() {
        var harness = LegacyHarness(verifies: false)
        harness.identify()
        #expect(harness.receive(extended(0x001C)).first?.command == 0x001D)
        #expect(acked(harness.receive(extended(0x003B, [1])).first, 0x07, 0x003B))
    }
}

/// Counts the remote commands the phone runs.
final class Counter: Sendable {
    private let performed = Mutex(0)
    var commands: RemoteCommandCenter {
        var commands = RemoteCommandCenter()
        commands.register(.togglePlayPause) { [self] _ in
            performed.withLock { $0 += 1 }
            return .success
        }
        return commands
    }
    func count() -> Int { performed.withLock { $0 } }
}
