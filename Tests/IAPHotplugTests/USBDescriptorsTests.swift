import Foundation
import Testing
import IAPHotplug
import IAPTransport

/// Bytes from a `.hex` fixture: `#` comments, whitespace-separated hex bytes.
func fixtureBytes(_ name: String) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/\(name)")
    let text = try String(contentsOf: url, encoding: .utf8)
    return text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        .flatMap { $0.split(separator: " ") }.map { UInt8($0, radix: 16)! }
}

@Suite struct USBDescriptorsTests {
    @Test func theGadgetAsTheKernelEnumeratedIt() throws {
        let descriptors = USBDescriptors(try fixtureBytes("iapdevkit-gadget-high-speed.descriptors.hex"))
        #expect(descriptors.problem == nil)
        #expect(descriptors.vendorID == 0x1209 && descriptors.productID == 0x0001 && descriptors.usbVersion == 0x0200)
        #expect(descriptors.configurations.map(\.value) == [1])
        let iap = try #require(descriptors.iapInterface)
        #expect(iap.configuration == 1 && iap.interface.number == 0)
        #expect(iap.interface.bulkIn?.address == 0x81 && iap.interface.bulkIn?.maxPacketSize == 512)
        #expect(iap.interface.bulkOut?.address == 0x02 && iap.interface.bulkOut?.maxPacketSize == 512)
    }

    /// A real iPad's four configurations: no bulk iAP interface anywhere;
    /// iAP travels over the HID interface of configuration 2.
    @Test func aRealPhoneCarriesIAPOverHIDInConfigurationTwo() throws {
        let descriptors = USBDescriptors(try fixtureBytes("ipad-mini-four-configurations.descriptors.hex"))
        #expect(descriptors.problem == nil)
        #expect(descriptors.configurations.map(\.value) == [1, 2, 3, 4])
        #expect(descriptors.iapInterface == nil)
        guard case .hid(let configuration, let interface) = descriptors.iapAccess else {
            Issue.record("no HID iAP access found: \(String(describing: descriptors.iapAccess))")
            return
        }
        #expect(configuration == 2 && interface.number == 2)
        #expect(interface.reportDescriptorLength == 208)
        #expect(interface.interruptIn?.address == 0x83 && interface.interruptIn?.maxPacketSize == 64)
        // The PTP configurations' interrupt endpoint 0x83 is no HID interface.
        #expect(descriptors.configurations[0].interfaces.allSatisfy { !$0.isHID })
    }

    @Test func aBulkIAPInterfaceIsPreferredAndOnlyApplePhonesAreTakenOverHID() throws {
        let gadget = USBDescriptors(try fixtureBytes("iapdevkit-gadget-high-speed.descriptors.hex"))
        guard case .bulk(1, let interface) = gadget.iapAccess else {
            Issue.record("the lab gadget's bulk interface not chosen: \(String(describing: gadget.iapAccess))")
            return
        }
        #expect(interface.number == 0)
        var phone = try fixtureBytes("ipad-mini-four-configurations.descriptors.hex")
        phone[10] = 0x34; phone[11] = 0x12   // product 0x1234: still in Apple's phone range
        #expect(USBDescriptors(phone).iapAccess?.configuration == 2)
        phone[11] = 0x02                     // product 0x0234: an Apple keyboard's range, not a phone
        #expect(USBDescriptors(phone).iapAccess == nil)
        phone[8] = 0x09; phone[9] = 0x12; phone[11] = 0x12   // another vendor
        #expect(USBDescriptors(phone).iapAccess == nil)
    }

    /// Two configurations with a HID interface: the one that also holds
    /// audio (the "iPod USB Interface") is chosen, not the first.
    @Test func theHIDInterfaceBesideAudioIsChosen() {
        let device: [UInt8] = [18, 1, 0x00, 0x02, 0, 0, 0, 64, 0xAC, 0x05, 0xA8, 0x12, 0x07, 0x11, 1, 2, 3, 2]
        func hid(_ number: UInt8) -> [UInt8] {
            [9, 4, number, 0, 1, 0x03, 0, 0, 0, 9, 0x21, 0x11, 0x01, 0, 1, 0x22, 208, 0, 7, 5, 0x83, 3, 64, 0, 1]
        }
        let hidOnly: [UInt8] = [9, 2, 34, 0, 1, 1, 0, 0xC0, 250] + hid(0)
        let withAudio: [UInt8] = [9, 2, 43, 0, 2, 2, 0, 0xC0, 250, 9, 4, 0, 0, 0, 0x01, 0x01, 0, 0] + hid(1)
        let descriptors = USBDescriptors(device + hidOnly + withAudio)
        #expect(descriptors.problem == nil)
        guard case .hid(let configuration, let interface) = descriptors.iapAccess else {
            Issue.record("no HID iAP access found: \(String(describing: descriptors.iapAccess))")
            return
        }
        #expect(configuration == 2 && interface.number == 1)
    }

    /// Phones keep the iAP interface in a later configuration than the one
    /// active at enumeration (often the last of several).
    @Test func theIAPInterfaceIsFoundInAnyConfiguration() {
        let device: [UInt8] = [18, 1, 0x00, 0x02, 0, 0, 0, 64, 0xAC, 0x05, 0xA8, 0x12, 0x07, 0x11, 1, 2, 3, 2]
        let massStorage: [UInt8] = [9, 2, 32, 0, 1, 1, 0, 0xC0, 250, 9, 4, 0, 0, 2, 0x08, 0x06, 0x50, 0,
                                    7, 5, 0x83, 2, 0, 2, 0, 7, 5, 0x04, 2, 0, 2, 0]
        let iapConfiguration: [UInt8] = [9, 2, 39, 0, 1, 2, 0, 0xC0, 250, 9, 4, 0, 0, 3, 0xFF, 0xF0, 0x00, 0,
                                         7, 5, 0x85, 3, 64, 0, 4, // an interrupt endpoint first: not taken
                                         7, 5, 0x81, 2, 0, 2, 0, 7, 5, 0x01, 2, 0, 2, 0]
        let descriptors = USBDescriptors(device + massStorage + iapConfiguration)
        #expect(descriptors.configurations.count == 2)
        let iap = descriptors.iapInterface
        #expect(iap?.configuration == 2)
        #expect(iap?.interface.bulkIn?.address == 0x81 && iap?.interface.bulkOut?.address == 0x01)
    }

    @Test func anInterfaceWithoutBothBulkEndpointsIsNotUsable() {
        let bytes: [UInt8] = [9, 2, 25, 0, 1, 1, 0, 0xC0, 250, 9, 4, 0, 0, 1, 0xFF, 0xF0, 0x00, 0, 7, 5, 0x81, 2, 0, 2, 0]
        let descriptors = USBDescriptors(bytes)
        #expect(descriptors.configurations.first?.interfaces.first?.isIAP == true)
        #expect(descriptors.iapInterface == nil)
    }

    @Test func lengthsAreNeverTrusted() throws {
        let good = try fixtureBytes("iapdevkit-gadget-high-speed.descriptors.hex")
        // Every truncation parses without a crash and says why it stopped when mid-descriptor.
        for cut in 0..<good.count {
            let descriptors = USBDescriptors(good[..<cut])
            #expect(descriptors.configurations.count <= 1)
        }
        #expect(USBDescriptors(good.dropLast()).problem?.contains("claims 7 bytes with 6 left") == true)
        #expect(USBDescriptors([0, 1, 2, 3]).problem?.contains("claims 0 bytes") == true) // a zero length would loop forever
        #expect(USBDescriptors([255, 2] + [UInt8](repeating: 0, count: 10)).problem != nil)
        #expect(USBDescriptors([9]).problem?.contains("truncated") == true)
        // Endpoints and interfaces with no parent are ignored, not attached somewhere.
        let orphans = USBDescriptors([7, 5, 0x81, 2, 0, 2, 0, 9, 4, 0, 0, 2, 0xFF, 0xF0, 0, 0])
        #expect(orphans.configurations.isEmpty && orphans.problem == nil)
    }

    @Test func randomBytesNeverCrash() {
        var generator = SeededRandom(seed: 0x1AB2) // seeded, so that a failure repeats
        for _ in 0..<2000 {
            let bytes = (0..<Int.random(in: 0...80, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
            let descriptors = USBDescriptors(bytes)
            #expect(descriptors.configurations.count <= bytes.count / 9 + 1)
        }
    }
}

