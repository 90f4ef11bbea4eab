import Testing
import IAPTransport
import IAPUSB

@Suite struct USBTransportTests {
    @Test func usbTransportNamesParse() throws {
        #expect(try TransportSpec(parsing: "usb:auto") == .usb(vendor: nil, product: nil))
        #expect(try TransportSpec(parsing: "usb:05ac:12a8") == .usb(vendor: 0x05AC, product: 0x12A8))
        #expect(try TransportSpec(parsing: "usb:1209") == .usb(vendor: 0x1209, product: nil))
        #expect(try TransportSpec(parsing: "usb:1209:1").description == "usb:1209:1")
        for bad in ["usb:", "usb:xyz", "usb:1:2:3", "usb:12345"] {
            #expect(throws: TransportError.self, "\(bad)") { try TransportSpec(parsing: bad) }
        }
    }

    /// No such device on this machine (CI has no USB bus): a clear error, and
    /// libusb left as it was found.
    @Test func anAbsentDeviceIsAClearError() {
        let transport = USBHostTransport(selector: USBDeviceSelector(vendorID: 0x1209, productID: 0xFFFE))
        #expect { try transport.start { _ in } } throws: { error in
            let text = "\(error)"
            return text.contains("usb:1209:fffe") && (text.contains("no 1209:fffe is connected") || text.contains("cannot initialise libusb"))
        }
    }

    @Test func libusbErrorsHaveNames() {
        #expect(USBError.noDevice.name == "LIBUSB_ERROR_NO_DEVICE")
        #expect(USBError.access.description.hasPrefix("LIBUSB_ERROR_ACCESS: "))
    }
}
