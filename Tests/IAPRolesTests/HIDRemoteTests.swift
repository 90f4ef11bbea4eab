import Testing
import IAPRoles
import IAPWire

@Suite struct HIDRemoteTests {
    /// One short item of a report descriptor, read independently of the
    /// library's parser: prefix `tag << 4 | type << 2 | size code`.
    struct Item: Equatable {
        var type: UInt8   // 0 main, 1 global, 2 local
        var tag: UInt8
        var value: UInt32
    }

    func items(_ descriptor: [UInt8]) throws -> [Item] {
        var result: [Item] = []
        var index = 0
        while index < descriptor.count {
            let prefix = descriptor[index]
            let size = [0, 1, 2, 4][Int(prefix & 3)]
            try #require(prefix != 0xFE, "long item at \(index)")
            try #require(index + 1 + size <= descriptor.count, "item at \(index) runs past the end")
            var value: UInt32 = 0
            for k in 0..<size { value |= UInt32(descriptor[index + 1 + k]) << (8 * k) }
            result.append(Item(type: (prefix >> 2) & 3, tag: prefix >> 4, value: value))
            index += 1 + size
        }
        return result
    }

    let remote = HIDRemote(componentIdentifier: 3, vendorIdentifier: 0x1234, productIdentifier: 0x5678)

    func roundTrip(_ message: ControlMessage) throws -> ControlMessage {
        try ControlMessage(decoding: try message.encoded())
    }

    // MARK: Descriptor

    @Test func descriptorIsWellFormed() throws {
        let items = try items(HIDRemote.reportDescriptor)
        // Every Collection (main 10) is closed by an End Collection (main 12), in order.
        var depth = 0
        for item in items where item.type == 0 {
            if item.tag == 0xA { depth += 1 }
            if item.tag == 0xC { depth -= 1; #expect(depth >= 0) }
        }
        #expect(depth == 0)
        #expect(items.first == Item(type: 1, tag: 0, value: 0x0C))                   // Usage Page (Consumer)
        #expect(items.filter { $0.type == 1 && $0.tag == 0 }.allSatisfy { $0.value == 0x0C })
        #expect(items.contains(Item(type: 0, tag: 0xA, value: 1)))                    // Collection (Application)
        let size = try #require(items.last { $0.type == 1 && $0.tag == 7 }?.value)
        let count = try #require(items.last { $0.type == 1 && $0.tag == 9 }?.value)
        #expect(size * count == 16)
        #expect(Int(size * count) == HIDRemote.reportLength * 8)
        #expect(items.contains(Item(type: 1, tag: 1, value: 0)))                      // Logical Minimum 0
        #expect(items.contains(Item(type: 1, tag: 2, value: 1)))                      // Logical Maximum 1
        let inputs = items.filter { $0.type == 0 && $0.tag == 8 }
        #expect(inputs == [Item(type: 0, tag: 8, value: 0x02)])                       // one Input (Data,Var,Abs)
        #expect(!items.contains { $0.type == 1 && $0.tag == 8 })                      // no Report ID
        // The usages before the Input are the buttons, in bit order.
        let inputIndex = try #require(items.firstIndex { $0.type == 0 && $0.tag == 8 })
        let collectionIndex = try #require(items.firstIndex { $0.type == 0 && $0.tag == 0xA })
        let usages = items[collectionIndex..<inputIndex].filter { $0.type == 2 && $0.tag == 0 }.map(\.value)
        #expect(usages == HIDRemote.Button.allCases.map { UInt32($0.usage) })
        #expect(usages.count == Int(count))
        for (bit, button) in HIDRemote.Button.allCases.enumerated() { #expect(button.bit == bit) }
    }

    @Test func requiredUsagesArePresent() {
        let usages = Set(HIDRemote.Button.allCases.map(\.usage))
        for usage: UInt16 in [0xCD, 0xB5, 0xB6, 0xB7, 0xB0, 0xB1, 0xB3, 0xB4, 0xE9, 0xEA, 0xE2, 0xB9, 0xBC] {
            #expect(usages.contains(usage), "usage 0x\(String(usage, radix: 16))")
        }
        #expect(HIDRemote.Button.allCases.count == 16)
    }

    @Test func libraryLayoutAgreesWithTheDescriptor() throws {
        let layout = try HIDInputLayout(descriptor: HIDRemote.reportDescriptor)
        #expect(!layout.usesReportIDs)
        #expect(layout.reports[0]?.bitLength == 16)
        #expect(layout.reports[0]?.fields.count == 16)
    }

    // MARK: Reports

    @Test func everyButtonRoundTrips() throws {
        for button in HIDRemote.Button.allCases {
            let report = HIDRemote.report(pressed: [button])
            #expect(report.count == 2)
            #expect(report.reduce(0) { $0 + $1.nonzeroBitCount } == 1)
            #expect(try HIDRemote.buttons(in: report) == [button])
        }
        #expect(HIDRemote.report(pressed: [.playPause]) == [0x01, 0x00])
        #expect(HIDRemote.report(pressed: [.volumeUp]) == [0x00, 0x01])
        #expect(HIDRemote.report(pressed: [.back]) == [0x00, 0x80])
        #expect(HIDRemote.report(pressed: []) == [0x00, 0x00])
        #expect(try HIDRemote.buttons(in: [0, 0]) == [])
    }

    @Test func combinationsRoundTrip() throws {
        let all = Set(HIDRemote.Button.allCases)
        #expect(HIDRemote.report(pressed: all) == [0xFF, 0xFF])
        #expect(try HIDRemote.buttons(in: [0xFF, 0xFF]) == all)
        // Every pair, and a spread of larger sets.
        for a in HIDRemote.Button.allCases {
            for b in HIDRemote.Button.allCases {
                #expect(try HIDRemote.buttons(in: HIDRemote.report(pressed: [a, b])) == [a, b])
            }
        }
        for mask in stride(from: 0, through: 0xFFFF, by: 257) {
            let set = Set(HIDRemote.Button.allCases.filter { mask & (1 << $0.bit) != 0 })
            let report = HIDRemote.report(pressed: set)
            #expect(report == [UInt8(mask & 0xFF), UInt8(mask >> 8)])
            #expect(try HIDRemote.buttons(in: report) == set)
        }
    }

    @Test(arguments: [[], [0x01], [0x01, 0x00, 0x00], [UInt8](repeating: 0, count: 64)])
    func wrongLengthReportsAreRejected(report: [UInt8]) {
        #expect {
            _ = try HIDRemote.buttons(in: report)
        } throws: { error in
            guard let error = error as? WireError else { return false }
            return error.kind == .badLength && error.detail.contains("2 bytes") && error.detail.contains("got \(report.count)")
        }
    }

    // MARK: Messages

    @Test func startHIDRoundTrips() throws {
        let message = remote.startHID
        #expect(message.id == 0x6800)
        #expect(message.parameters.map(\.id) == [0, 1, 2, 4])
        let decoded = try roundTrip(message)
        #expect(decoded == message)
        let start = try StartHIDMessage(decoded)
        #expect(start == StartHIDMessage(componentIdentifier: 3, vendorIdentifier: 0x1234, productIdentifier: 0x5678,
                                         reportDescriptor: HIDRemote.reportDescriptor))
        // Exact bytes of the head: 40 40, length, 68 00, then component id 3.
        let bytes = try message.encoded()
        #expect(Array(bytes.prefix(12)) == [0x40, 0x40, 0x00, UInt8(bytes.count), 0x68, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x03])
    }

    @Test func reportAndStopRoundTrip() throws {
        let report = remote.report(pressed: [.nextTrack, .mute])
        #expect(try roundTrip(report) == report)
        let typed = try AccessoryHIDReportMessage(try roundTrip(report))
        #expect(typed.componentIdentifier == 3)
        #expect(try HIDRemote.buttons(in: typed.report) == [.nextTrack, .mute])
        #expect(try report.encoded() == [0x40, 0x40, 0x00, 0x12, 0x68, 0x02, 0x00, 0x06, 0x00, 0x00, 0x00, 0x03,
                                         0x00, 0x06, 0x00, 0x01, 0x02, 0x04])

        let stop = remote.stopHID
        #expect(try stop.encoded() == [0x40, 0x40, 0x00, 0x0C, 0x68, 0x03, 0x00, 0x06, 0x00, 0x00, 0x00, 0x03])
        #expect(try StopHIDMessage(try roundTrip(stop)) == StopHIDMessage(componentIdentifier: 3))
    }

    @Test func pressAndReleaseIsTwoReports() throws {
        let messages = remote.pressAndRelease(.playPause)
        #expect(messages.count == 2)
        let reports = try messages.map { try AccessoryHIDReportMessage(try roundTrip($0)) }
        #expect(reports.map(\.report) == [[0x01, 0x00], [0x00, 0x00]])
        #expect(reports.allSatisfy { $0.componentIdentifier == 3 })
    }

    @Test func missingAndMalformedParametersAreNamed() {
        func failure(_ body: () throws -> Void) -> WireError? {
            do { try body(); return nil } catch { return error as? WireError }
        }
        var start = remote.startHID
        start.parameters.removeAll { $0.id == ParameterID.StartHID.hidReportDescriptor }
        let noDescriptor = failure { _ = try StartHIDMessage(start) }
        #expect(noDescriptor?.detail == "StartHID is missing HIDReportDescriptor (parameter 4)")

        start = remote.startHID
        start.parameters = ParameterList(start.parameters.map {
            $0.id == ParameterID.StartHID.vendorIdentifier ? Parameter(id: ParameterID.StartHID.vendorIdentifier, data: [0x12]) : $0
        })
        let shortVendor = failure { _ = try StartHIDMessage(start) }
        #expect(shortVendor?.kind == .badLength)
        #expect(shortVendor?.detail.contains("VendorIdentifier (parameter 1) has 1 bytes") == true)

        let noComponent = failure {
            _ = try AccessoryHIDReportMessage(ControlMessage(id: MessageID.accessoryHIDReport, parameters: [.blob(ParameterID.AccessoryHIDReport.hidReport, [0, 0])]))
        }
        #expect(noComponent?.detail == "AccessoryHIDReport is missing HIDComponentIdentifier (parameter 0)")
        let noReport = failure {
            _ = try AccessoryHIDReportMessage(ControlMessage(id: MessageID.accessoryHIDReport,
                                                             parameters: [.uint16(ParameterID.AccessoryHIDReport.hidComponentIdentifier, 3)]))
        }
        #expect(noReport?.detail == "AccessoryHIDReport is missing HIDReport (parameter 1)")
        let stopWithByte = failure {
            _ = try StopHIDMessage(ControlMessage(id: MessageID.stopHID, parameters: [.uint8(ParameterID.StopHID.hidComponentIdentifier, 3)]))
        }
        #expect(stopWithByte?.kind == .badLength)

        let wrongMessage = failure { _ = try StopHIDMessage(remote.startHID) }
        #expect(wrongMessage?.detail == "expected StopHID (0x6803), got StartHID (0x6800)")
    }

    @Test func catalogNamesTheParameters() throws {
        let start = MessageCatalog.interpret(try roundTrip(remote.startHID))
        #expect(start.map(\.name) == ["HIDComponentIdentifier", "VendorIdentifier", "ProductIdentifier", "HIDReportDescriptor"])
        #expect(start.map(\.value) == [.unsigned(3), .unsigned(0x1234), .unsigned(0x5678), .blob(HIDRemote.reportDescriptor)])
        #expect(MessageCatalog.name(of: remote.startHID.id) == "StartHID")

        let report = MessageCatalog.interpret(try roundTrip(remote.report(pressed: [.shuffle])))
        #expect(report.map(\.name) == ["HIDComponentIdentifier", "HIDReport"])
        #expect(report.map(\.value) == [.unsigned(3), .blob([0x00, 0x08])])
        #expect(MessageCatalog.name(of: remote.report(pressed: []).id) == "AccessoryHIDReport")

        let stop = MessageCatalog.interpret(try roundTrip(remote.stopHID))
        #expect(stop.map(\.name) == ["HIDComponentIdentifier"])
        #expect(MessageCatalog.name(of: remote.stopHID.id) == "StopHID")
    }

    // MARK: Phone-side interpreter

    func presses(_ events: [HIDRemoteInterpreter.Event]) -> [HIDRemote.Button] {
        events.compactMap { if case .pressed(_, let button) = $0 { button } else { nil } }
    }

    func problem(_ events: [HIDRemoteInterpreter.Event]) -> String? {
        events.compactMap { if case .problem(let reason) = $0 { reason } else { nil } }.first
    }

    @Test func startHIDRecordsTheComponent() throws {
        var phone = HIDRemoteInterpreter()
        let events = phone.receive(try roundTrip(remote.startHID))
        let expected = try StartHIDMessage(try roundTrip(remote.startHID))
        #expect(events == [.started(expected)])
        #expect(phone.componentIdentifiers == [3])
        #expect(phone.start(of: 3)?.vendorIdentifier == 0x1234)
    }

    @Test func pressAndReleaseIsOnePress() throws {
        var phone = HIDRemoteInterpreter()
        _ = phone.receive(remote.startHID)
        let events = try remote.pressAndRelease(.nextTrack).flatMap { phone.receive(try roundTrip($0)) }
        #expect(events == [.pressed(component: 3, button: .nextTrack)])
        #expect(phone.held(by: 3) == [])
    }

    @Test func holdingIsOnePressAndReleaseIsNone() {
        var phone = HIDRemoteInterpreter()
        _ = phone.receive(remote.startHID)
        #expect(presses(phone.receive(remote.report(pressed: [.fastForward]))) == [.fastForward])
        for _ in 0..<5 { #expect(phone.receive(remote.report(pressed: [.fastForward])) == []) }
        #expect(phone.held(by: 3) == [.fastForward])
        // A second button joins while the first is held: only it is new.
        #expect(presses(phone.receive(remote.report(pressed: [.fastForward, .volumeUp]))) == [.volumeUp])
        // Releasing one, then all: no presses.
        #expect(phone.receive(remote.report(pressed: [.volumeUp])) == [])
        #expect(phone.receive(remote.report(pressed: [])) == [])
        // Pressed again after release: a new press.
        #expect(presses(phone.receive(remote.report(pressed: [.fastForward]))) == [.fastForward])
        // Two buttons at once: two presses, in bit order.
        _ = phone.receive(remote.report(pressed: []))
        #expect(presses(phone.receive(remote.report(pressed: [.mute, .playPause]))) == [.playPause, .mute])
    }

    @Test func reportsForUnknownComponentsAreErrors() {
        var phone = HIDRemoteInterpreter()
        let before = phone.receive(remote.report(pressed: [.playPause]))
        #expect(problem(before) == "AccessoryHIDReport for component 3, which no StartHID declared")
        #expect(presses(before).isEmpty)

        _ = phone.receive(remote.startHID)
        let other = HIDRemote(componentIdentifier: 9, vendorIdentifier: 1, productIdentifier: 2)
        #expect(problem(phone.receive(other.report(pressed: [.stop]))) == "AccessoryHIDReport for component 9, which no StartHID declared")
        #expect(problem(phone.receive(other.stopHID)) == "StopHID for component 9, which is not started")
    }

    @Test func wrongLengthReportsAndBadDescriptorsAreErrors() {
        var phone = HIDRemoteInterpreter()
        _ = phone.receive(remote.startHID)
        let short = AccessoryHIDReportMessage(componentIdentifier: 3, report: [0x01]).message
        #expect(problem(phone.receive(short)) == "AccessoryHIDReport for component 3: input report is 2 bytes, got 1")

        let empty = StartHIDMessage(componentIdentifier: 4, vendorIdentifier: 1, productIdentifier: 2, reportDescriptor: [])
        #expect(problem(phone.receive(empty.message))?.contains("the report descriptor is empty") == true)
        let unclosed = StartHIDMessage(componentIdentifier: 4, vendorIdentifier: 1, productIdentifier: 2,
                                       reportDescriptor: Array(HIDRemote.reportDescriptor.dropLast()))
        #expect(problem(phone.receive(unclosed.message))?.contains("not closed by End Collection") == true)
        let cut = StartHIDMessage(componentIdentifier: 4, vendorIdentifier: 1, productIdentifier: 2,
                                  reportDescriptor: [0x05, 0x0C, 0x09])
        #expect(problem(phone.receive(cut.message))?.contains("needs 1 data bytes") == true)
        #expect(!phone.componentIdentifiers.contains(4))

        var noVendor = remote.startHID
        noVendor.parameters.removeAll { $0.id == ParameterID.StartHID.vendorIdentifier }
        #expect(problem(phone.receive(noVendor)) == "StartHID is missing VendorIdentifier (parameter 1)")
    }

    @Test func stopHIDForgetsTheComponent() {
        var phone = HIDRemoteInterpreter()
        _ = phone.receive(remote.startHID)
        _ = phone.receive(remote.report(pressed: [.rewind]))
        #expect(phone.receive(remote.stopHID) == [.stopped(component: 3)])
        #expect(phone.componentIdentifiers.isEmpty)
        #expect(phone.held(by: 3) == [])
        #expect(problem(phone.receive(remote.report(pressed: [.rewind]))) != nil)
        // Started again, the held state starts empty: the same report is a press.
        _ = phone.receive(remote.startHID)
        #expect(presses(phone.receive(remote.report(pressed: [.rewind]))) == [.rewind])
    }

    @Test func otherMessagesGiveNoEvents() {
        var phone = HIDRemoteInterpreter()
        #expect(phone.receive(ControlMessage(id: 0x5002)) == [])
    }

    /// A remote described another way (report id, array field, usage
    /// range, padding) is read by the same interpreter.
    @Test func otherDescriptorShapesAreRead() throws {
        let descriptor: [UInt8] = [
            0x05, 0x0C, 0x09, 0x01, 0xA1, 0x01,  // Consumer, Consumer Control, Collection (Application)
            0x85, 0x02,                          // Report ID 2
            0x15, 0x01, 0x25, 0x03,              // Logical 1...3
            0x75, 0x08, 0x95, 0x01,              // one 8-bit slot
            0x09, 0xB5, 0x09, 0xB6, 0x09, 0xCD,  // next, previous, play/pause
            0x81, 0x00,                          // Input (Data,Array,Abs)
            0x15, 0x00, 0x25, 0x01, 0x75, 0x01, 0x95, 0x02,
            0x19, 0xE9, 0x29, 0xEA,              // Usage Minimum volume up, Maximum volume down
            0x81, 0x02,                          // Input (Data,Var,Abs)
            0x95, 0x06, 0x81, 0x03,              // 6 bits of padding: Input (Cnst,Var,Abs)
            0xC0,
        ]
        let layout = try HIDInputLayout(descriptor: descriptor)
        #expect(layout.usesReportIDs)
        #expect(layout.reports[2]?.bitLength == 16)
        #expect(try layout.activeUsages(in: [0x02, 0x03, 0x02]) == [0x0C_00CD, 0x0C_00EA])
        #expect(try layout.activeUsages(in: [0x02, 0x00, 0x00]) == [])

        var phone = HIDRemoteInterpreter()
        let start = StartHIDMessage(componentIdentifier: 7, vendorIdentifier: 1, productIdentifier: 2, reportDescriptor: descriptor)
        #expect(phone.receive(start.message) == [.started(start)])
        func send(_ report: [UInt8]) -> [HIDRemoteInterpreter.Event] {
            phone.receive(AccessoryHIDReportMessage(componentIdentifier: 7, report: report).message)
        }
        #expect(presses(send([0x02, 0x01, 0x00])) == [.nextTrack])
        #expect(presses(send([0x02, 0x01, 0x01])) == [.volumeUp])
        #expect(send([0x02, 0x00, 0x00]) == [])
        #expect(problem(send([0x05, 0x00, 0x00])) == "AccessoryHIDReport for component 7: the descriptor declares no input report 5")
    }
}
