import IAPWire

/// A USB device's descriptors as the kernel keeps them: the device descriptor
/// followed by every configuration with its interfaces and endpoints (the
/// sysfs `descriptors` file, the same bytes usbfs hands to libusb). Parsed
/// without trusting any length: a descriptor that claims more bytes than are
/// left, or fewer than its header, ends the parse with what was read so far.
public struct USBDescriptors: Hashable, Sendable {
    public struct Endpoint: Hashable, Sendable {
        public var address: UInt8
        public var attributes: UInt8
        public var maxPacketSize: UInt16
        public var isIn: Bool { address & 0x80 != 0 }
        public var isBulk: Bool { attributes & 0x03 == 0x02 }
        public var isInterrupt: Bool { attributes & 0x03 == 0x03 }
    }

    public struct Interface: Hashable, Sendable {
        public var number: UInt8
        public var alternateSetting: UInt8
        public var interfaceClass: UInt8
        public var subclass: UInt8
        public var interfaceProtocol: UInt8
        public var endpoints: [Endpoint] = []
        /// A HID interface's report descriptor length, from its HID class
        /// descriptor (type 0x21); nil elsewhere.
        public var reportDescriptorLength: Int?

        /// The iAP interface: vendor specific class 0xFF, subclass 0xF0, protocol 0x00.
        public var isIAP: Bool { IAPBulkInterface.matches(class: interfaceClass, subclass: subclass, protocol: interfaceProtocol) }
        public var isHID: Bool { interfaceClass == 0x03 }
        public var bulkIn: Endpoint? { endpoints.first { $0.isBulk && $0.isIn } }
        public var bulkOut: Endpoint? { endpoints.first { $0.isBulk && !$0.isIn } }
        public var interruptIn: Endpoint? { endpoints.first { $0.isInterrupt && $0.isIn } }
    }

    public struct Configuration: Hashable, Sendable {
        public var value: UInt8
        public var interfaces: [Interface] = []
        /// Whether it holds an audio interface (class 1), as a phone's
        /// "iPod USB Interface" configuration does.
        public var hasAudio: Bool { interfaces.contains { $0.interfaceClass == 0x01 } }
    }

    /// How a device carries iAP, and where (shared USB-HID-FACTS.md §3).
    public enum IAPAccess: Hashable, Sendable, CustomStringConvertible {
        /// The bulk "iAP Interface" (class 0xFF, subclass 0xF0, protocol
        /// 0x00): what an accessory presents after the role switch, and the
        /// project's lab gadget.
        case bulk(configuration: UInt8, interface: Interface)
        /// iAP over HID: a real iPhone or iPod, in the configuration that
        /// holds its HID interface ("iPod USB Interface", configuration 2 on
        /// real devices), with an interrupt IN endpoint; output reports go
        /// by SET_REPORT.
        case hid(configuration: UInt8, interface: Interface)

        public var configuration: UInt8 {
            switch self {
            case .bulk(let configuration, _), .hid(let configuration, _): configuration
            }
        }
        public var interface: Interface {
            switch self {
            case .bulk(_, let interface), .hid(_, let interface): interface
            }
        }
        public var description: String {
            switch self {
            case .bulk(let configuration, let interface):
                "bulk iAP interface \(interface.number) in configuration \(configuration)"
            case .hid(let configuration, let interface):
                "iAP over HID, interface \(interface.number) in configuration \(configuration)"
            }
        }
    }

    /// Apple's vendor id, and its phones' and iPods' product ids: 0x1200 to
    /// 0x12FF (Linux's apple-mfi-fastcharge and ADIT's head-unit stack match
    /// the same range).
    public static let appleVendorID: UInt16 = 0x05AC
    public static func isApplePhone(vendorID: UInt16, productID: UInt16) -> Bool {
        vendorID == appleVendorID && productID & 0xFF00 == 0x1200
    }

    public var usbVersion: UInt16 = 0
    public var vendorID: UInt16 = 0
    public var productID: UInt16 = 0
    public var configurations: [Configuration] = []
    /// Why parsing stopped early, if it did.
    public var problem: String?

    /// The iAP interface with bulk IN and OUT endpoints, in whichever
    /// configuration has one.
    public var iapInterface: (configuration: UInt8, interface: Interface)? {
        for configuration in configurations {
            for interface in configuration.interfaces where interface.isIAP && interface.bulkIn != nil && interface.bulkOut != nil {
                return (configuration.value, interface)
            }
        }
        return nil
    }

    /// How this device carries iAP: the bulk iAP interface in any
    /// configuration when it has one (it keeps working as it always did);
    /// else, on an Apple phone or iPod, its HID interface with an interrupt
    /// IN endpoint, preferring a configuration that also holds audio (the
    /// "iPod USB Interface"); nil when neither.
    public var iapAccess: IAPAccess? {
        if let (configuration, interface) = iapInterface { return .bulk(configuration: configuration, interface: interface) }
        guard Self.isApplePhone(vendorID: vendorID, productID: productID) else { return nil }
        let candidates = configurations.flatMap { configuration in
            configuration.interfaces.filter { $0.isHID && $0.interruptIn != nil }.map { (configuration, $0) }
        }
        guard let (configuration, interface) = candidates.first(where: { $0.0.hasAudio }) ?? candidates.first else { return nil }
        return .hid(configuration: configuration.value, interface: interface)
    }

    public init(_ bytes: some Collection<UInt8>) {
        let bytes = Array(bytes)
        var offset = 0
        while offset < bytes.count {
            guard offset + 2 <= bytes.count else { problem = "a truncated descriptor header at byte \(offset)"; return }
            let length = Int(bytes[offset]), type = bytes[offset + 1]
            guard length >= 2, offset + length <= bytes.count else {
                problem = "a descriptor at byte \(offset) claims \(length) bytes with \(bytes.count - offset) left"
                return
            }
            let body = bytes[offset..<(offset + length)]
            func byte(_ index: Int) -> UInt8 { index < length ? body[offset + index] : 0 }
            func word(_ index: Int) -> UInt16 { UInt16(byte(index)) | UInt16(byte(index + 1)) << 8 }
            switch type {
            case 0x01 where length >= 18:
                usbVersion = word(2)
                vendorID = word(8)
                productID = word(10)
            case 0x02 where length >= 9:
                configurations.append(Configuration(value: byte(5)))
            case 0x04 where length >= 9 && !configurations.isEmpty:
                configurations[configurations.count - 1].interfaces.append(
                    Interface(number: byte(2), alternateSetting: byte(3), interfaceClass: byte(5), subclass: byte(6), interfaceProtocol: byte(7)))
            case 0x05 where length >= 7 && !(configurations.last?.interfaces.isEmpty ?? true):
                let endpoint = Endpoint(address: byte(2), attributes: byte(3), maxPacketSize: word(4) & 0x07FF)
                let last = configurations.count - 1
                configurations[last].interfaces[configurations[last].interfaces.count - 1].endpoints.append(endpoint)
            case 0x21 where length >= 9 && !(configurations.last?.interfaces.isEmpty ?? true):
                // HID class descriptor: bNumDescriptors at 5, then (type, length) pairs; the report descriptor is type 0x22.
                let last = configurations.count - 1
                let pairs = min(Int(byte(5)), (length - 6) / 3)
                for pair in 0..<pairs where byte(6 + 3 * pair) == 0x22 {
                    configurations[last].interfaces[configurations[last].interfaces.count - 1].reportDescriptorLength = Int(word(7 + 3 * pair))
                }
            default:
                break // class-specific, string, BOS and other descriptors are not needed here
            }
            offset += length
        }
    }
}
