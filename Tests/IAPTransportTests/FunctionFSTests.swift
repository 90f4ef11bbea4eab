import Testing
@testable import IAPTransport
import IAPWire

@Suite struct FunctionFSDescriptorTests {
    static func le32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    @Test func descriptorBlockFollowsTheV2Layout() {
        let block = FunctionFSDescriptors.descriptors
        #expect(Self.le32(block, 0) == 3, "magic: FUNCTIONFS_DESCRIPTORS_MAGIC_V2")
        #expect(Int(Self.le32(block, 4)) == block.count, "length counts the whole block")
        #expect(Self.le32(block, 8) == 7, "full, high and super speed descriptors present")
        let counts = [Self.le32(block, 12), Self.le32(block, 16), Self.le32(block, 20)].map(Int.init)
        #expect(counts == [3, 3, 5])
        // Walk the descriptors of each speed by their bLength.
        var index = 24
        var speeds: [[[UInt8]]] = []
        for count in counts {
            var descriptors: [[UInt8]] = []
            for _ in 0..<count {
                let length = Int(block[index])
                descriptors.append(Array(block[index..<index + length]))
                index += length
            }
            speeds.append(descriptors)
        }
        #expect(index == block.count, "no stray bytes")
        for (speed, packet) in zip(speeds, [64, 512, 1024]) {
            let interface = speed[0]
            #expect(interface[1] == 4 && interface[4] == 2, "an interface with two endpoints")
            #expect(Array(interface[5...7]) == [0xFF, 0xF0, 0x00], "the iAP interface class, subclass and protocol")
            let endpoints = speed.filter { $0[1] == 5 }
            #expect(endpoints.map { $0[2] } == [0x81, 0x02], "bulk IN 1 then bulk OUT 2")
            #expect(endpoints.allSatisfy { $0[3] == 2 }, "bulk")
            #expect(endpoints.allSatisfy { Int($0[4]) | Int($0[5]) << 8 == packet })
        }
        #expect(speeds[2].filter { $0[1] == 0x30 }.count == 2, "each super-speed endpoint has its companion")
    }

    @Test func stringsBlockNamesTheInterface() {
        let block = FunctionFSDescriptors.strings
        #expect(Self.le32(block, 0) == 2)
        #expect(Int(Self.le32(block, 4)) == block.count)
        #expect(Self.le32(block, 8) == 1 && Self.le32(block, 12) == 1)
        #expect(Array(block[16...17]) == [0x09, 0x04])
        #expect(String(decoding: block[18..<block.count - 1], as: UTF8.self) == "iAP Interface")
        #expect(block.last == 0)
    }

    /// What a real iPhone's configuration 2 holds for iAP: a HID interface
    /// with one interrupt IN endpoint and the 208-byte report descriptor.
    @Test func theHIDFunctionLooksLikeAnIPhones() throws {
        let report = FunctionFSDescriptors.iPhoneReportDescriptor
        #expect(report.count == 208)
        let reports = try IAPHIDReports(descriptor: report)
        #expect(reports.input.map(\.count) == [5, 9, 13, 17, 25, 49, 95, 193, 257, 385, 513, 767])
        #expect(reports.output.map(\.count) == [5, 9, 13, 17, 25, 49, 95, 193, 255])
        let block = FunctionFSDescriptors.hid(reportDescriptor: report)
        #expect(Int(Self.le32(block, 4)) == block.count)
        #expect(Self.le32(block, 8) & 7 == 7 && Self.le32(block, 8) & 64 == 64, "three speeds; requests to the device reach the function")
        let counts = [Self.le32(block, 12), Self.le32(block, 16), Self.le32(block, 20)].map(Int.init)
        var index = 24
        for count in counts {
            var descriptors: [[UInt8]] = []
            for _ in 0..<count {
                let length = Int(block[index])
                descriptors.append(Array(block[index..<index + length]))
                index += length
            }
            #expect(Array(descriptors[0][4...7]) == [1, 0x03, 0x00, 0x00], "a HID interface with one endpoint")
            #expect(descriptors[1] == [9, 0x21, 0x11, 0x01, 0, 1, 0x22, 208, 0], "HID 1.11, a 208-byte report descriptor")
            #expect(Array(descriptors[2][2...5]) == [0x81, 0x03, 64, 0], "interrupt IN, 64-byte packets")
        }
        #expect(index == block.count, "no stray bytes")
    }

    @Test func aHIDFunctionWhoseDescriptorCarriesNoIAPIsRefused() {
        #expect { try FunctionFSGadget(mountPoint: "/nonexistent-ffs", function: .hid(reportDescriptor: [0x06, 0x00, 0xFF, 0xC0])) } throws: { error in
            "\(error)".contains("offers no iAP reports")
        }
    }

    @Test func aMissingMountIsAClearError() {
        #expect { try FunctionFSGadget(mountPoint: "/nonexistent-ffs") } throws: { error in
            "\(error)".contains("is functionfs mounted there?")
        }
    }
}
