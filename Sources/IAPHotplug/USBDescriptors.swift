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
    }

    public struct Interface: Hashable, Sendable {
        public var number: UInt8
        public var alternateSetting: UInt8
        public var interfaceClass: UInt8
        public var subclass: UInt8
        public var interfaceProtocol: UInt8
        public var endpoints: [Endpoint] = []

        /// The iAP interface: vendor specific class 0xFF, subclass 0xF0, protocol 0x00.
        public var isIAP: Bool { interfaceClass == 0xFF && subclass == 0xF0 && interfaceProtocol == 0x00 }
        public var bulkIn: Endpoint? { endpoints.first { $0.isBulk && $0.isIn } }
        public var bulkOut: Endpoint? { endpoints.first { $0.isBulk && !$0.isIn } }
    }

    public struct Configuration: Hashable, Sendable {
        public var value: UInt8
        public var interfaces: [Interface] = []
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
            default:
                break // class-specific, string, BOS and other descriptors are not needed here
            }
            offset += length
        }
    }
}
