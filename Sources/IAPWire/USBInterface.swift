/// The USB interface that carries iAP2 link packets over two bulk
/// endpoints: vendor-specific class 0xFF, subclass 0xF0, protocol 0x00,
/// named "iAP Interface" (an accessory's after the role switch, a Linux
/// gadget's, USB-HID-FACTS.md). The one home of these numbers: the gadget
/// writes them, the host side looks for them.
public enum IAPBulkInterface {
    public static let interfaceClass: UInt8 = 0xFF
    public static let interfaceSubclass: UInt8 = 0xF0
    public static let interfaceProtocol: UInt8 = 0x00
    public static let name = "iAP Interface"

    /// Whether an interface descriptor's class, subclass and protocol are the iAP interface's.
    public static func matches(class interfaceClass: UInt8, subclass: UInt8, protocol interfaceProtocol: UInt8) -> Bool {
        interfaceClass == Self.interfaceClass && subclass == interfaceSubclass && interfaceProtocol == Self.interfaceProtocol
    }
}
