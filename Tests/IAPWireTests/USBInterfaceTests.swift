import Testing
import IAPWire

@Suite struct IAPBulkInterfaceTests {
    /// Only vendor class 0xFF, subclass 0xF0, protocol 0x00 is the iAP interface.
    @Test func onlyTheWholeTripleMatches() {
        #expect(IAPBulkInterface.matches(class: 0xFF, subclass: 0xF0, protocol: 0x00))
        #expect(!IAPBulkInterface.matches(class: 0xFF, subclass: 0x00, protocol: 0x00), "another vendor-specific interface")
        #expect(!IAPBulkInterface.matches(class: 0xFF, subclass: 0xF0, protocol: 0x01))
        #expect(!IAPBulkInterface.matches(class: 0x03, subclass: 0xF0, protocol: 0x00))
    }
}
