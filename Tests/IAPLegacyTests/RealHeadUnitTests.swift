import Foundation
@testable import IAPLegacy
import IAPWire
import Testing

/// Head units recorded against real iPod stand-ins: their requests replayed
/// in order, every answer checked.
@Suite struct RealHeadUnitTests {
    /// Fixtures/pioneer-avh-4200nex-idps.txt: the head unit asks for the
    /// options of six lingoes and the payload size between StartIDPS and
    /// EndIDPS, and gives up when they are refused.
    @Test func aPioneerHeadUnitsQuestionsDuringIDPSAreAnswered() throws {
        let script = try String(contentsOf: LegacyPhoneTests.fixtures.appendingPathComponent("pioneer-avh-4200nex-idps.txt"), encoding: .utf8)
        let lines = script.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.isEmpty }
        var harness = LegacyHarness()
        var answers: [[UInt8]] = []
        var checked = 0
        for (index, line) in lines.enumerated() {
            let marker = line.prefix(2)
            let bytes = LegacyPhoneTests.bytes(line.dropFirst(2))
            switch marker {
            case "< ":
                var reports = IAPHIDReassembler()
                guard case .complete(let data) = reports.append(report: bytes),
                      let frame = IAP1Frame.parse(data, at: 0), frame.checksumValid else {
                    Issue.record("the fixture's report does not hold a frame: \(line)")
                    continue
                }
                let before = harness.sent.count
                harness.take(harness.phone.received(Array(data[frame.payloadRange]), now: harness.now))
                answers += try harness.sent[before...].map { try $0.encoded() }
            case "> ", "= ":
                // A recorded answer the phone gives as recorded, or, when an
                // "= " line follows it, the phone's own.
                if marker == "> ", index + 1 < lines.count, lines[index + 1].hasPrefix("= ") { continue }
                var expected = bytes
                if marker == "> " {
                    guard let frame = IAP1Frame.parse(Array(bytes.dropFirst(2)), at: 0), frame.checksumValid else {
                        Issue.record("the fixture's report does not hold a frame: \(line)")
                        continue
                    }
                    expected = Array(bytes[2..<(2 + frame.encodedLength)])
                }
                guard !answers.isEmpty else {
                    Issue.record("no answer for \(line)")
                    continue
                }
                #expect(answers.removeFirst() == expected, "\(line)")
                checked += 1
            default:
                Issue.record("a fixture line of no known kind: \(line)")
            }
        }
        #expect(checked == 8)
        #expect(answers.isEmpty, "answers the fixture does not list: \(answers)")
        #expect(harness.phone.usesTransactionIDs)
    }

    /// The other questions a head unit asks about the phone during IDPS are
    /// answered too; what needs an identified head unit is still refused.
    @Test func generalQuestionsDuringIDPSAreAnsweredAndOthersWait() {
        var harness = LegacyHarness()
        harness.receive(IAP1Packet(lingo: 0, command: 0x38, transactionID: 1))
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x09, transactionID: 2)).first?.command == 0x0A)
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x0F, transactionID: 3, data: [0])).first?.data == [0, 1, 9])
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x29, transactionID: 4, data: [3])).first
                    == IAP1Packet(lingo: 0, command: 0x2A, transactionID: 4, data: [3, 0]))
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x4F, transactionID: 5)).first
                    == IAP1Packet(lingo: 0, command: 0x51, transactionID: 5, data: u64(0)))
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x07, transactionID: 6)).first?.command == 0x08)
        // Remote UI mode needs the Extended Interface named first.
        #expect(harness.receive(IAP1Packet(lingo: 0, command: 0x05, transactionID: 7)).first?.data == [0x04, 0x05])
        // Before IDPS or any identification, the same question is refused.
        var fresh = LegacyHarness()
        #expect(fresh.receive(IAP1Packet(lingo: 0, command: 0x4B, data: [0])).first?.data == [0x04, 0x4B])
        #expect(harness.sent.filter { $0.name == nil }.isEmpty, "unnamed: \(harness.sent.filter { $0.name == nil }.map(\.command))")
    }
}
