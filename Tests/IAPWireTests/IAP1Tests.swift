import Testing
@testable import IAPWire

@Suite struct IAP1Tests {
    @Test func oandrewVectorsDecode() throws {
        for name in ["public/oandrew-iap1-small-with-data.hex", "public/oandrew-iap1-small-no-data.hex", "public/oandrew-iap1-large.hex"] {
            let bytes = try Fixture(name).first
            guard let frame = IAP1Frame.parse(bytes, at: 0) else {
                Issue.record("\(name) not parsed")
                continue
            }
            #expect(frame.checksumValid, "\(name)")
            #expect(frame.encodedLength == bytes.count, "\(name)")
        }
        let large = try Fixture("public/oandrew-iap1-large.hex").first
        let frame = try #require(IAP1Frame.parse(large, at: 0))
        let packet = try IAP1Packet(payload: large[frame.payloadRange], hasTransactionID: false)
        #expect(packet.lingo == 1 && packet.command == 2 && packet.data.count == 255)
        #expect(try packet.encoded() == large)
    }

    @Test func oandrewCorruptionsAreCaught() throws {
        for name in ["public/oandrew-iap1-small-bad-checksum.hex", "public/oandrew-iap1-large-bad-checksum.hex"] {
            let bytes = try Fixture(name).first
            #expect(IAP1Frame.parse(bytes, at: 0)?.checksumValid == false, "\(name)")
        }
        #expect(IAP1Frame.parse(try Fixture("public/oandrew-iap1-wrong-start-byte.hex").first, at: 0) == nil)
        #expect(IAP1Frame.parse(try Fixture("public/oandrew-iap1-large-short.hex").first, at: 0) == nil)
    }

    @Test func bothLengthFormsRoundTripThroughTheStream() throws {
        let small = IAP1Packet(lingo: 4, command: 0x001C)
        let large = IAP1Packet(lingo: 0, command: 0x15, data: [UInt8](repeating: 0xAB, count: 400))
        let stream = try small.encoded(sync: true) + large.encoded(sync: true)
        let items = decodeStream(stream, chunks: [3]).items
        #expect(items.count == 2)
        guard case .iap1(let first, 0, let firstPayload) = items[0], case .iap1(let second, _, let secondPayload) = items[1] else {
            Issue.record("\(items)")
            return
        }
        #expect(!first.largeForm && second.largeForm)
        #expect(try IAP1Packet(payload: firstPayload, hasTransactionID: false) == small)
        #expect(try IAP1Packet(payload: secondPayload, hasTransactionID: false) == large)
    }

    @Test func hidReportsReassemble() throws {
        // oandrew/ipod hid_test: frame 01 02 03 over three one-byte reports, then a padded whole report.
        let lines = try Fixture("public/oandrew-hid-link-control-split.hex").lines
        var reassembler = IAPHIDReassembler()
        #expect(reassembler.append(report: lines[0].bytes) == .pending)
        #expect(reassembler.append(report: lines[1].bytes) == .pending)
        #expect(reassembler.append(report: lines[2].bytes) == .complete([1, 2, 3]))
        #expect(reassembler.append(report: lines[3].bytes) == .complete([1, 2, 0]))
        guard case .rejected = reassembler.append(report: [0x01, 0x01, 0x05]) else {
            Issue.record("a last report without a first must be rejected")
            return
        }
    }

    @Test func capturedHidReportCarriesATransaction() throws {
        // GetiPodOptionsForLingo with transaction 0x0004, zero-padded to its report size.
        let report = try Fixture("public/oandrew-hid-report-getipodoptionsforlingo.hex").first
        var reassembler = IAPHIDReassembler()
        guard case .complete(let packet) = reassembler.append(report: report) else {
            Issue.record("report not complete")
            return
        }
        let frame = try #require(IAP1Frame.parse(packet, at: 0))
        #expect(frame.checksumValid)
        var tracker = IAP1TransactionTracker()
        let decoded = try tracker.packet(fromPayload: packet[frame.payloadRange])
        // GetiPodOptionsForLingo takes one byte; two more can only be a transaction id.
        #expect(tracker.mode == .present)
        #expect(decoded.name == "GetiPodOptionsForLingo")
        #expect(decoded.transactionID == 4)
        #expect(decoded.data == [0x0D])
    }

    @Test func transactionModeFollowsIdentification() throws {
        var tracker = IAP1TransactionTracker()
        _ = try tracker.packet(fromPayload: [0x00, 0x38, 0x00, 0x01])       // StartIDPS with transaction 1
        #expect(tracker.mode == .present)
        let play = try tracker.packet(fromPayload: [0x04, 0x00, 0x29, 0x00, 0x02, 0x01])
        #expect(play.transactionID == 2 && play.data == [0x01] && play.name == "PlayControl")
        _ = try tracker.packet(fromPayload: [0x00, 0x13, 0x00, 0x00, 0x00, 0x10])  // IdentifyDeviceLingoes
        #expect(tracker.mode == .absent)
        var unknown = IAP1TransactionTracker()
        _ = try unknown.packet(fromPayload: [0x04, 0x00, 0x1C])              // GetPlayStatus without id
        #expect(unknown.mode == .absent)
    }

    @Test func namesForGeneralAndExtendedInterface() {
        #expect(IAP1Catalog.name(lingo: 0, command: 0x38) == "StartIDPS")
        #expect(IAP1Catalog.name(lingo: 4, command: 0x0027) == "PlayStatusChangeNotification")
        #expect(IAP1Catalog.name(lingo: 4, command: 0x0037) == "SetCurrentPlayingTrack")
        #expect(IAP1Catalog.lingoNames[4] == "ExtendedInterface")
    }
}

@Suite struct CatalogAndDatagramTests {
    @Test func everyIdFromTheFactSheetHasItsName() {
        let expected: [UInt16: String] = [
            0xAA00: "RequestAuthenticationCertificate", 0xAA05: "AuthenticationSucceeded", 0xAA06: "AccessoryAuthenticationSerialNumber",
            0x1D00: "StartIdentification", 0x1D01: "IdentificationInformation", 0x1D02: "IdentificationAccepted",
            0x1D03: "IdentificationRejected", 0x1D05: "CancelIdentification", 0x1D06: "IdentificationInformationUpdate",
            0xEA00: "StartExternalAccessoryProtocolSession", 0xEA03: "StatusExternalAccessoryProtocolSession",
            0x5000: "StartNowPlayingUpdates", 0x5001: "NowPlayingUpdate", 0x5002: "StopNowPlayingUpdates", 0x5003: "SetNowPlayingInformation",
            0x4C00: "StartMediaLibraryInformation", 0x4C04: "MediaLibraryUpdate", 0x4C09: "PlayMediaLibrarySpecial",
            0x6800: "StartHID", 0x6801: "DeviceHIDReport", 0x6802: "AccessoryHIDReport", 0x6803: "StopHID", 0x6806: "StartNativeHID",
            0xAE00: "StartPowerUpdates", 0xAE01: "PowerUpdate", 0xAE02: "StopPowerUpdates", 0xAE03: "PowerSourceUpdate",
            0x4154: "StartCallStateUpdates", 0x4155: "CallStateUpdate", 0x4156: "StopCallStateUpdates",
            0x4171: "ListUpdate", 0x4172: "StopListUpdates",
        ]
        for (id, name) in expected { #expect(MessageCatalog.name(of: id) == name) }
        // The one wrong public table used 0x40C8/0x4800 for now playing.
        #expect(MessageCatalog.name(of: 0x40C8) == nil)
        #expect(Set(MessageCatalog.messages.map(\.id)).count == MessageCatalog.messages.count)
    }

    @Test func nocturneFileTransferDatagrams() throws {
        let lines = try Fixture("public/nocturne-file-transfer-first-and-only.hex").lines
        let setup = try FileTransferDatagram(decoding: lines[0].bytes)
        #expect(setup.transferID == 7 && setup.control == .setup && setup.fileSize == 5)
        #expect(try FileTransferDatagram(decoding: lines[1].bytes).control == .start)
        let data = try FileTransferDatagram(decoding: lines[2].bytes)
        #expect(data.control == .firstAndOnlyData && data.body == Array("hello".utf8))
        #expect(try FileTransferDatagram(decoding: lines[3].bytes).control == .success)
        #expect(data.encoded() == lines[2].bytes)
    }

    @Test func externalAccessoryDatagram() throws {
        let datagram = try ExternalAccessoryDatagram(decoding: [0x00, 0x42, 0x61, 0x62, 0x63])
        #expect(datagram.protocolSessionID == 0x42 && datagram.data == Array("abc".utf8))
        #expect(throws: WireError.self) { try ExternalAccessoryDatagram(decoding: [0x00]) }
    }
}
