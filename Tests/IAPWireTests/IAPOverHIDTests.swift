import Testing
@testable import IAPWire

@Suite struct IAPOverHIDTests {
    static let realDescriptor = "public/ipod-gadget-hid-report-descriptor.hex"

    @Test func theRealDescriptorsReportsAreReadFromIt() throws {
        let reports = try IAPHIDReports(descriptor: try Fixture(Self.realDescriptor).first)
        #expect(reports.input.map(\.id) == Array(0x01...0x0C))
        #expect(reports.input.map(\.count) == [5, 9, 13, 17, 25, 49, 95, 193, 257, 385, 513, 767])
        #expect(reports.output.map(\.id) == Array(0x0D...0x15))
        #expect(reports.output.map(\.count) == [5, 9, 13, 17, 25, 49, 95, 193, 255])
        #expect(reports.report(id: 0x0C)?.count == 767)
    }

    @Test func theDetectGoesInTheReportAPioneerHeadUnitUsed() throws {
        let reports = try IAPHIDReports(descriptor: try Fixture(Self.realDescriptor).first)
        let recorded = try Fixture("public/pioneer-hid-detect-report.hex").first
        #expect(IAPHIDReportWriter(reports: reports.output).transfers(carrying: DetectSequence.bytes) == [recorded])
        // ADIT's form: the same report, its last padding byte left off (USB-HID-FACTS.md §6).
        #expect(IAPHIDReportWriter(reports: reports.output, form: .countIncludingID).transfers(carrying: DetectSequence.bytes)
            == [Array(recorded.dropLast())])
    }

    @Test func recordedIAP1ReportsAreReproducedInTheirLengthForm() throws {
        let reports = try IAPHIDReports(descriptor: try Fixture(Self.realDescriptor).first)
        // Each fixture is one whole packet: an iAP1 frame without its sync byte, then padding.
        for (name, form) in [("public/oandrew-hid-report-getipodoptionsforlingo.hex", IAPHIDReportWriter.LengthForm.countIncludingID),
                             ("public/oandrew-hid-report-retdevauthenticationinfo.hex", .full)] {
            let report = try Fixture(name).first
            guard let frame = IAP1Frame.parse(report, at: 2) else {
                Issue.record("\(name): no iAP1 frame after the report id and link control byte")
                continue
            }
            // The link layer writes the frame with its sync byte; HID carries it without.
            let written = [0xFF] + report[2..<2 + frame.encodedLength]
            #expect(IAPHIDReportWriter(reports: reports.output, form: form).transfers(carrying: written) == [report], "\(name)")
            var reassembler = IAPHIDReassembler(reports: reports.output)
            guard case .complete(let packet) = reassembler.append(report: report) else {
                Issue.record("\(name): not reassembled")
                continue
            }
            #expect(IAPHIDReassembler.linkBytes(packet) == written, "\(name): the frame with its sync byte back")
        }
    }

    @Test func longPacketsFillTheLargestReportAndEndInTheSmallestThatFits() throws {
        let reports = try IAPHIDReports(descriptor: try Fixture(Self.realDescriptor).first)
        let packet = try LinkPacket(control: .ack, sequence: 1, acknowledgement: 2, payload: [UInt8](repeating: 0xA5, count: 600)).encoded()
        let transfers = IAPHIDReportWriter(reports: reports.output).transfers(carrying: packet)
        // 610 bytes: two full 0x15 reports (254 each), then 102 bytes in 0x13 (count 95 carries 94: too small) → 0x14.
        #expect(transfers.map { $0[0] } == [0x15, 0x15, 0x14])
        #expect(transfers.map { $0[1] } == [0x02, 0x03, 0x01])
        #expect(transfers.map(\.count) == [256, 256, 194])
    }

    @Test func everyPacketSizeRoundTripsInBothForms() throws {
        let reports = try IAPHIDReports(descriptor: try Fixture(Self.realDescriptor).first)
        var generator = SeededGenerator(seed: 22)
        for form in IAPHIDReportWriter.LengthForm.allCases {
            let writer = IAPHIDReportWriter(reports: reports.output, form: form)
            var reassembler = IAPHIDReassembler(reports: reports.output)
            for size in [0, 1, 2, 5, 7, 8, 9, 253, 254, 255, 508, 509, 1000, 4000] {
                let packet = try LinkPacket(control: .ack, sequence: 3, acknowledgement: 4,
                                            payload: .random(count: size, using: &generator)).encoded()
                var completed: [[UInt8]] = []
                for transfer in writer.transfers(carrying: packet) {
                    #expect(transfer.count <= (reports.report(id: transfer[0])?.count ?? 0) + 1)
                    switch reassembler.append(report: transfer) {
                    case .complete(let bytes): completed.append(bytes)
                    case .pending: break
                    case .rejected(let reason, _): Issue.record("\(form) \(size): \(reason)")
                    }
                }
                #expect(completed.map(IAPHIDReassembler.linkBytes) == [packet], "\(form), payload \(size)")
            }
        }
    }

    @Test func reportsOutsideTheDescriptorAreRejectedAndCounted() throws {
        let reports = try IAPHIDReports(descriptor: try Fixture(Self.realDescriptor).first)
        var reassembler = IAPHIDReassembler(reports: reports.output)
        let bad: [[UInt8]] = [
            [0x0D],                                              // no link control byte
            [0x01, 0x00, 0x55],                                  // an input report's id, sent as output
            [0x0D, 0x00] + [UInt8](repeating: 0, count: 5),      // 0x0D is 5 bytes: 7 after the id is too long
            [0x0D, 0x01, 0x55, 0x02],                            // a last report with no first
            [0x0D, 0x04, 0x55, 0x02],                            // link control byte out of range
        ]
        for report in bad {
            guard case .rejected = reassembler.append(report: report) else {
                Issue.record("\(report) was not rejected")
                continue
            }
        }
        #expect(reassembler.rejectedReports == bad.count)
        // What was rejected left nothing behind: the next packet comes through.
        #expect(reassembler.append(report: [0x0E, 0x00] + DetectSequence.bytes + [0, 0]) == .complete(DetectSequence.bytes + [0, 0]))
    }

    @Test func paddingIsTrimmedOnlyAfterWholeFramesAndIAP1FramesGetTheirSyncByte() {
        let iap1 = IAP1Packet(lingo: 0, command: 0x02, data: [0x00, 0x38]).encodedForTest(sync: false)
        #expect(IAPHIDReassembler.linkBytes(iap1 + [0, 0, 0]) == [0xFF] + iap1)
        // Two frames in one packet, the first with its sync byte.
        let synced = IAP1Packet(lingo: 4, command: 0x1C).encodedForTest(sync: true)
        #expect(IAPHIDReassembler.linkBytes(synced + iap1 + [0]) == synced + [0xFF] + iap1)
        // Anything but zeros after the frames, or no frame at all, is left for the stream decoder.
        #expect(IAPHIDReassembler.linkBytes(iap1 + [0, 7]) == iap1 + [0, 7])
        #expect(IAPHIDReassembler.linkBytes([1, 2, 0, 0]) == [1, 2, 0, 0])
        // A link packet ending in zeros (payload 00, payload checksum 00) keeps them; only what follows is padding.
        let packet = (try? LinkPacket(control: .ack, sequence: 1, acknowledgement: 1, payload: [0x00]).encoded()) ?? []
        #expect(packet.suffix(2) == [0, 0])
        #expect(IAPHIDReassembler.linkBytes(packet + [0, 0, 0]) == packet)
    }

    @Test func badDescriptorsAreRefusedByName() throws {
        func refused(_ descriptor: [UInt8], _ expected: WireError.Kind, sourceLocation: SourceLocation = #_sourceLocation) {
            do {
                _ = try IAPHIDReports(descriptor: descriptor)
                Issue.record("accepted", sourceLocation: sourceLocation)
            } catch {
                #expect(error.kind == expected, "\(error)", sourceLocation: sourceLocation)
            }
        }
        let input: [UInt8] = [0x75, 0x08, 0x85, 0x01, 0x95, 0x10, 0x81, 0x02]
        let output: [UInt8] = [0x85, 0x02, 0x95, 0x10, 0x91, 0x02]
        #expect(try IAPHIDReports(descriptor: input + output).output == [.init(id: 2, count: 16)])
        refused([], .badLength)
        refused([UInt8](repeating: 0, count: IAPHIDReports.maximumDescriptorLength + 1), .tooLarge)
        refused([0x75, 0x08, 0x95, 0x10, 0x81, 0x02] + output, .badValue)         // an input report without an id
        refused(input, .badValue)                                                   // no output report
        refused([0x75, 0x03, 0x85, 0x01, 0x95, 0x05, 0x81, 0x02] + output, .badLength)  // 15 bits
        refused([0x75, 0x08, 0x85, 0x01, 0x97, 0xFF, 0xFF, 0xFF, 0xFF, 0x81, 0x02] + output, .tooLarge)  // 4 G bytes
        refused([0x75, 0x08, 0x85, 0x01, 0x96, 0xFF, 0xFF, 0x81, 0x02] + output, .badLength)  // 65,535: no room for the id
        refused(input + output + [0xB4], .badValue)                                 // Pop without Push
        refused(input + [0x96, 0x10], .truncated)                                   // an item cut off
        refused([0x85, 0x00] + input, .badValue)                                    // report id 0
        // A report too small for the link control byte and a byte is left out, not refused.
        let tiny: [UInt8] = [0x75, 0x08, 0x85, 0x03, 0x95, 0x01, 0x81, 0x02]
        #expect(try IAPHIDReports(descriptor: tiny + input + output).input == [.init(id: 1, count: 16)])
    }

    @Test func pushAndPopRestoreTheReportSizes() throws {
        let descriptor: [UInt8] = [
            0x75, 0x08, 0x95, 0x04,
            0xA4, 0x85, 0x01, 0x95, 0x20, 0x81, 0x02, 0xB4,  // pushed: id 1, 32 bytes
            0x85, 0x02, 0x91, 0x02,                           // popped: count back to 4
        ]
        let reports = try IAPHIDReports(descriptor: descriptor)
        #expect(reports.input == [.init(id: 1, count: 32)])
        #expect(reports.output == [.init(id: 2, count: 4)])
    }
}

private extension IAP1Packet {
    func encodedForTest(sync: Bool) -> [UInt8] {
        (try? encoded(sync: sync)) ?? []
    }
}
