import CLibUSB
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
            #expect("\(bad)") { try TransportSpec(parsing: bad) } throws: { ($0 as? TransportError)?.kind == .invalidSpec }
        }
    }

    /// No such device on this machine (CI has no USB bus): a clear error, and
    /// libusb left as it was found.
    @Test func anAbsentDeviceIsAClearError() {
        let transport = USBHostTransport(selector: USBDeviceSelector(vendorID: 0x1209, productID: 0xFFFE))
        #expect { try transport.start { _ in } } throws: { error in
            guard let error = error as? TransportError else { return false }
            let text = error.description
            return text.contains("usb:1209:fffe") && ((text.contains("no 1209:fffe is connected") && error.kind == .notFound) || text.contains("cannot initialise libusb"))
        }
    }

    /// The role switch to a phone that is not there: said, not attempted.
    @Test func aRoleSwitchWithNoPhoneIsAClearError() {
        #expect { _ = try USBRoleSwitch.perform(on: USBDeviceSelector(vendorID: 0x05AC, productID: 0x12FE), mode: .iap) } throws: { error in
            guard let error = error as? TransportError else { return false }
            let text = error.description
            return (text == "role switch: no 05ac:12fe is connected" && error.kind == .notFound) || text.contains("cannot initialise libusb")
        }
    }

    @Test func libusbErrorsHaveNames() {
        #expect(USBError.noDevice.name == "LIBUSB_ERROR_NO_DEVICE")
        #expect(USBError.access.description.hasPrefix("LIBUSB_ERROR_ACCESS: "))
    }

    @Test func libusbErrorsMapToKinds() {
        let table: [(libusb_error, String, TransportError.Kind)] = [
            (LIBUSB_ERROR_ACCESS, "LIBUSB_ERROR_ACCESS", .permission),
            (LIBUSB_ERROR_NO_DEVICE, "LIBUSB_ERROR_NO_DEVICE", .notFound),
            (LIBUSB_ERROR_NOT_FOUND, "LIBUSB_ERROR_NOT_FOUND", .notFound),
            (LIBUSB_ERROR_BUSY, "LIBUSB_ERROR_BUSY", .busy),
            (LIBUSB_ERROR_TIMEOUT, "LIBUSB_ERROR_TIMEOUT", .timedOut),
            (LIBUSB_ERROR_IO, "LIBUSB_ERROR_IO", .other),
            (LIBUSB_ERROR_PIPE, "LIBUSB_ERROR_PIPE", .other),
        ]
        for (code, name, kind) in table {
            let error = USBError(Int32(code.rawValue))
            #expect(error.name == name)
            #expect(error.kind == kind, "\(name)")
            let failure = TransportError("cannot claim interface 0", error)
            #expect(failure.kind == kind)
            #expect(failure.description.hasPrefix("cannot claim interface 0: \(name): "), "\(failure)")
        }
    }
}
