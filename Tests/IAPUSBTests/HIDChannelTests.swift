import Foundation
import Testing
import IAPUSB
import IAPWire

/// Bytes from a `.hex` fixture: `#` comments, whitespace-separated hex bytes.
private func fixtureBytes(_ name: String) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    let text = try String(contentsOf: url, encoding: .utf8)
    return text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        .flatMap { $0.split(separator: " ") }.map { UInt8($0, radix: 16)! }
}

@Suite struct HIDChannelTests {
    /// The reports of the 208-byte descriptor a real iPhone reports.
    static func realReports() throws -> IAPHIDReports {
        try IAPHIDReports(descriptor: fixtureBytes("ipod-gadget-hid-report-descriptor.hex"))
    }

    @Test func readsAreSizedForTheLargestInputReport() throws {
        #expect(HIDChannel(reports: try Self.realReports(), form: .full).readSize == 768)
    }

    /// What the phone writes with input reports comes out as the packets it wrote.
    @Test func inputReportsBecomeThePacketsWritten() throws {
        let reports = try Self.realReports()
        var channel = HIDChannel(reports: reports, form: .full)
        let phone = IAPHIDReportWriter(reports: reports.input)
        let packets = [DetectSequence.bytes, try LinkPacket(control: .ack, sequence: 9, acknowledgement: 1, payload: [UInt8](repeating: 7, count: 2000)).encoded()]
        var received: [[UInt8]] = []
        for packet in packets {
            for transfer in phone.transfers(carrying: packet) {
                let result = channel.received(transfer: transfer)
                #expect(result.problems.isEmpty)
                received += result.packets
            }
        }
        #expect(received == packets)
    }

    /// A report that fills whole packets has no short packet to end its
    /// transfer: the next report can arrive in the same one.
    @Test func twoReportsInOneTransferAreTakenApart() throws {
        let reports = try Self.realReports()
        var channel = HIDChannel(reports: reports, form: .full)
        let phone = IAPHIDReportWriter(reports: reports.input)
        let first = phone.transfers(carrying: DetectSequence.bytes)
        let second = phone.transfers(carrying: [0xFF, 0x55, 0x04, 0x00, 0x02, 0x00, 0xEE, 0x0C])
        let result = channel.received(transfer: first[0] + second[0])
        #expect(result.problems.isEmpty)
        #expect(result.packets == [DetectSequence.bytes, [0xFF, 0x55, 0x04, 0x00, 0x02, 0x00, 0xEE, 0x0C]])
    }

    @Test func reportsTheDescriptorDoesNotDeclareAreCountedAndSkipped() throws {
        var channel = HIDChannel(reports: try Self.realReports(), form: .full)
        // An output report's id coming in, and a continuation with no start.
        let bad = channel.received(transfer: [0x0D, 0x00, 0x55, 0x02])
        let orphan = channel.received(transfer: [0x01, 0x01, 0x55, 0x02, 0x00, 0x00])
        #expect(bad.packets.isEmpty && bad.problems.count == 1)
        #expect(orphan.packets.isEmpty && orphan.problems.count == 1)
        #expect(channel.rejectedReports == 2)
        // The next good report still comes through.
        let good = channel.received(transfer: [0x02, 0x00] + DetectSequence.bytes + [0, 0])
        #expect(good.packets == [DetectSequence.bytes])
    }

    @Test func writesUseTheChosenLengthForm() throws {
        let reports = try Self.realReports()
        #expect(HIDChannel(reports: reports, form: .full).transfers(carrying: DetectSequence.bytes).map(\.count) == [10])
        #expect(HIDChannel(reports: reports, form: .countIncludingID).transfers(carrying: DetectSequence.bytes).map(\.count) == [9])
    }
}
