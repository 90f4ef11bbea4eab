import IAPWire

/// The head unit's media-playback-remote HID component: iAP2 carries
/// transport controls (play/pause, next track, volume...) as USB HID reports
/// of an accessory HID component. The accessory declares the component in
/// identification (parameter 18, function 1 = media playback remote), sends
/// StartHID with the report descriptor below, then one AccessoryHIDReport per
/// change of the buttons' state, and StopHID when it is done. Sans-IO: this
/// type only builds messages.
public struct HIDRemote: Hashable, Sendable {
    /// The buttons of the remote, in report bit order; the raw value is the
    /// usage id on the Consumer page (HID Usage Tables, section 15).
    public enum Button: UInt16, CaseIterable, Hashable, Sendable, CustomStringConvertible {
        case playPause = 0xCD
        case nextTrack = 0xB5        // Scan Next Track
        case previousTrack = 0xB6    // Scan Previous Track
        case stop = 0xB7
        case play = 0xB0
        case pause = 0xB1
        case fastForward = 0xB3
        case rewind = 0xB4
        case volumeUp = 0xE9         // Volume Increment
        case volumeDown = 0xEA       // Volume Decrement
        case mute = 0xE2
        case shuffle = 0xB9          // Random Play
        case `repeat` = 0xBC
        case voiceCommand = 0xCF     // the steering wheel's voice button
        case menu = 0x40
        case back = 0x46             // Menu Escape

        /// The Consumer-page usage id.
        public var usage: UInt16 { rawValue }

        /// The bit in the report: bit `n % 8` of byte `n / 8` (HID reports
        /// are little-endian, the first field in the lowest bit).
        public var bit: Int { Self.bits[self]! }

        private static let bits: [Button: Int] = Dictionary(uniqueKeysWithValues: allCases.enumerated().map { ($1, $0) })

        public var description: String {
            switch self {
            case .playPause: "play/pause"
            case .nextTrack: "next track"
            case .previousTrack: "previous track"
            case .stop: "stop"
            case .play: "play"
            case .pause: "pause"
            case .fastForward: "fast forward"
            case .rewind: "rewind"
            case .volumeUp: "volume up"
            case .volumeDown: "volume down"
            case .mute: "mute"
            case .shuffle: "shuffle"
            case .repeat: "repeat"
            case .voiceCommand: "voice command"
            case .menu: "menu"
            case .back: "back"
            }
        }
    }

    /// The report descriptor (HID 1.11, section 6.2.2): short items, each a
    /// prefix byte `tag << 4 | type << 2 | size` and `size` data bytes. One
    /// application collection holding one input report of sixteen 1-bit
    /// buttons, no report id, so a report is exactly two bytes.
    public static let reportDescriptor: [UInt8] = [
        0x05, 0x0C,  // Usage Page (Consumer)            global, tag 0
        0x09, 0x01,  // Usage (Consumer Control)         local, tag 0
        0xA1, 0x01,  // Collection (Application)         main, tag 10
        0x15, 0x00,  //   Logical Minimum (0)            global, tag 1
        0x25, 0x01,  //   Logical Maximum (1)            global, tag 2
        0x75, 0x01,  //   Report Size (1 bit)            global, tag 7
        0x95, 0x10,  //   Report Count (16)              global, tag 9
        0x09, 0xCD,  //   Usage (Play/Pause)             bit 0
        0x09, 0xB5,  //   Usage (Scan Next Track)        bit 1
        0x09, 0xB6,  //   Usage (Scan Previous Track)    bit 2
        0x09, 0xB7,  //   Usage (Stop)                   bit 3
        0x09, 0xB0,  //   Usage (Play)                   bit 4
        0x09, 0xB1,  //   Usage (Pause)                  bit 5
        0x09, 0xB3,  //   Usage (Fast Forward)           bit 6
        0x09, 0xB4,  //   Usage (Rewind)                 bit 7
        0x09, 0xE9,  //   Usage (Volume Increment)       bit 8
        0x09, 0xEA,  //   Usage (Volume Decrement)       bit 9
        0x09, 0xE2,  //   Usage (Mute)                   bit 10
        0x09, 0xB9,  //   Usage (Random Play)            bit 11
        0x09, 0xBC,  //   Usage (Repeat)                 bit 12
        0x09, 0xCF,  //   Usage (Voice Command)          bit 13
        0x09, 0x40,  //   Usage (Menu)                   bit 14
        0x09, 0x46,  //   Usage (Menu Escape)            bit 15
        0x81, 0x02,  //   Input (Data,Var,Abs)           main, tag 8
        0xC0,        // End Collection                   main, tag 12
    ]

    /// Bytes in one input report.
    public static let reportLength = 2

    /// The bitmap report with `pressed` buttons set.
    public static func report(pressed: Set<Button>) -> [UInt8] {
        var report = [UInt8](repeating: 0, count: reportLength)
        for button in pressed { report[button.bit / 8] |= 1 << UInt8(button.bit % 8) }
        return report
    }

    /// The buttons a report holds down; a report that is not exactly
    /// `reportLength` bytes is an error.
    public static func buttons(in report: [UInt8]) throws(WireError) -> Set<Button> {
        guard report.count == reportLength else {
            throw WireError(.badLength, "a media remote report is \(reportLength) bytes, got \(report.count)")
        }
        return Set(Button.allCases.filter { report[$0.bit / 8] & (1 << UInt8($0.bit % 8)) != 0 })
    }

    public var componentIdentifier: UInt16
    /// USB ids given in StartHID; public implementations report that the
    /// phone silently ignores a StartHID without them.
    public var vendorIdentifier: UInt16
    public var productIdentifier: UInt16

    public init(componentIdentifier: UInt16, vendorIdentifier: UInt16, productIdentifier: UInt16) {
        self.componentIdentifier = componentIdentifier
        self.vendorIdentifier = vendorIdentifier
        self.productIdentifier = productIdentifier
    }

    /// StartHID declaring this remote.
    public var startHID: ControlMessage {
        StartHIDMessage(componentIdentifier: componentIdentifier, vendorIdentifier: vendorIdentifier,
                        productIdentifier: productIdentifier, reportDescriptor: Self.reportDescriptor).message
    }

    /// AccessoryHIDReport with `pressed` held down (empty: all released).
    public func report(pressed: Set<Button>) -> ControlMessage {
        AccessoryHIDReportMessage(componentIdentifier: componentIdentifier, report: Self.report(pressed: pressed)).message
    }

    /// A press: the report with the button down, then the release report.
    public func pressAndRelease(_ button: Button) -> [ControlMessage] {
        [report(pressed: [button]), report(pressed: [])]
    }

    /// StopHID for this remote.
    public var stopHID: ControlMessage { StopHIDMessage(componentIdentifier: componentIdentifier).message }
}

// MARK: - Messages

/// StartHID (0x6800): 0 HIDComponentIdentifier u16, 1 VendorIdentifier u16,
/// 2 ProductIdentifier u16, 4 HIDReportDescriptor blob.
public struct StartHIDMessage: Hashable, Sendable {
    public var componentIdentifier: UInt16
    public var vendorIdentifier: UInt16
    public var productIdentifier: UInt16
    public var reportDescriptor: [UInt8]

    public init(componentIdentifier: UInt16, vendorIdentifier: UInt16, productIdentifier: UInt16, reportDescriptor: [UInt8]) {
        self.componentIdentifier = componentIdentifier
        self.vendorIdentifier = vendorIdentifier
        self.productIdentifier = productIdentifier
        self.reportDescriptor = reportDescriptor
    }

    public var message: ControlMessage {
        ControlMessage(id: MessageID.startHID, parameters: [
            .uint16(ParameterID.StartHID.hidComponentIdentifier, componentIdentifier), .uint16(ParameterID.StartHID.vendorIdentifier, vendorIdentifier),
            .uint16(ParameterID.StartHID.productIdentifier, productIdentifier), .blob(ParameterID.StartHID.hidReportDescriptor, reportDescriptor),
        ])
    }

    public init(_ message: ControlMessage) throws(WireError) {
        let reader = HIDMessageReader(message, expected: MessageID.startHID)
        try reader.checkID()
        componentIdentifier = try reader.uint16(ParameterID.StartHID.hidComponentIdentifier)
        vendorIdentifier = try reader.uint16(ParameterID.StartHID.vendorIdentifier)
        productIdentifier = try reader.uint16(ParameterID.StartHID.productIdentifier)
        reportDescriptor = try reader.required(ParameterID.StartHID.hidReportDescriptor).data
    }
}

/// AccessoryHIDReport (0x6802): 0 HIDComponentIdentifier u16, 1 HIDReport blob.
public struct AccessoryHIDReportMessage: Hashable, Sendable {
    public var componentIdentifier: UInt16
    public var report: [UInt8]

    public init(componentIdentifier: UInt16, report: [UInt8]) {
        self.componentIdentifier = componentIdentifier
        self.report = report
    }

    public var message: ControlMessage {
        ControlMessage(id: MessageID.accessoryHIDReport, parameters: [
            .uint16(ParameterID.AccessoryHIDReport.hidComponentIdentifier, componentIdentifier), .blob(ParameterID.AccessoryHIDReport.hidReport, report),
        ])
    }

    public init(_ message: ControlMessage) throws(WireError) {
        let reader = HIDMessageReader(message, expected: MessageID.accessoryHIDReport)
        try reader.checkID()
        componentIdentifier = try reader.uint16(ParameterID.AccessoryHIDReport.hidComponentIdentifier)
        report = try reader.required(ParameterID.AccessoryHIDReport.hidReport).data
    }
}

/// StopHID (0x6803): 0 HIDComponentIdentifier u16.
public struct StopHIDMessage: Hashable, Sendable {
    public var componentIdentifier: UInt16

    public init(componentIdentifier: UInt16) { self.componentIdentifier = componentIdentifier }

    public var message: ControlMessage {
        ControlMessage(id: MessageID.stopHID, parameters: [.uint16(ParameterID.StopHID.hidComponentIdentifier, componentIdentifier)])
    }

    public init(_ message: ControlMessage) throws(WireError) {
        let reader = HIDMessageReader(message, expected: MessageID.stopHID)
        try reader.checkID()
        componentIdentifier = try reader.uint16(ParameterID.StopHID.hidComponentIdentifier)
    }
}

/// Reads required parameters, naming the message and parameter in errors.
private struct HIDMessageReader {
    let message: ControlMessage
    let expected: UInt16

    init(_ message: ControlMessage, expected: UInt16) {
        self.message = message
        self.expected = expected
    }

    var messageName: String { MessageCatalog.name(of: expected) ?? hex(expected) }

    func parameterName(_ id: UInt16) -> String {
        MessageCatalog.message(expected)?.parameter(id)?.name ?? "parameter"
    }

    func checkID() throws(WireError) {
        guard message.id == expected else {
            let found = MessageCatalog.name(of: message.id).map { "\($0) (\(hex(message.id)))" } ?? hex(message.id)
            throw WireError(.badValue, "expected \(messageName) (\(hex(expected))), got \(found)")
        }
    }

    func required(_ id: UInt16) throws(WireError) -> Parameter {
        guard let parameter = message.parameter(id) else {
            throw WireError(.badValue, "\(messageName) is missing \(parameterName(id)) (parameter \(id))")
        }
        return parameter
    }

    func uint16(_ id: UInt16) throws(WireError) -> UInt16 {
        let parameter = try required(id)
        guard parameter.data.count == 2 else {
            throw WireError(.badLength, "\(messageName) \(parameterName(id)) (parameter \(id)) has \(parameter.data.count) bytes, a UInt16 needs 2")
        }
        return UInt16(parameter.data[0]) << 8 | UInt16(parameter.data[1])
    }

    func hex(_ id: UInt16) -> String { "0x" + String(id, radix: 16, uppercase: true) }
}

// MARK: - Report descriptor layout

/// What a report descriptor says about its input reports: for each report
/// id, its length and which usage each field carries. Parsed from the short
/// items of HID 1.11 section 6.2.2 (long items are skipped); Push and Pop are
/// honoured. Output and Feature reports are not needed here and are only
/// checked for form.
public struct HIDInputLayout: Hashable, Sendable {
    /// An extended usage: page in the high 16 bits, id in the low 16.
    public typealias Usage = UInt32

    public enum Field: Hashable, Sendable {
        /// One value per usage (buttons: nonzero means active).
        case variable(bitOffset: Int, bitCount: Int, usage: Usage)
        /// A slot holding the index (from `logicalMinimum`) of an active
        /// usage; out-of-range values mean "none".
        case array(bitOffset: Int, bitCount: Int, logicalMinimum: Int64, usages: [Usage])
    }

    public struct Report: Hashable, Sendable {
        /// Bits after the report id byte, if any.
        public var bitLength = 0
        public var fields: [Field] = []
    }

    /// Input reports by report id; 0 when the descriptor declares none (the
    /// report then has no id byte; HID reserves id 0).
    public private(set) var reports: [UInt8: Report] = [:]

    public var usesReportIDs: Bool { reports.keys.contains { $0 != 0 } }

    /// The largest descriptor accepted (the StartHID parameter's own limit).
    public static let maximumDescriptorLength = 0xFFFF - Parameter.headerLength
    /// Usages one descriptor may name: a remote has a few dozen; the bound
    /// keeps a hostile descriptor from costing memory.
    public static let maximumUsages = 4096

    public init(descriptor: [UInt8]) throws(WireError) {
        guard !descriptor.isEmpty else { throw WireError(.badLength, "the report descriptor is empty") }
        guard descriptor.count <= Self.maximumDescriptorLength else {
            throw WireError(.tooLarge, "the report descriptor is \(descriptor.count) bytes, over \(Self.maximumDescriptorLength)")
        }
        struct Globals {
            var usagePage: UInt32 = 0
            var logicalMinimum: Int64 = 0
            var reportSize = 0
            var reportCount = 0
            var reportID: UInt8 = 0
        }
        var globals = Globals()
        var stack: [Globals] = []
        var usages: [Usage] = []
        // Usages named so far in the whole descriptor, against `maximumUsages`.
        var usageTotal = 0
        var usageMinimum: Usage?
        var collectionDepth = 0
        var sawReportID = false
        var index = 0
        func extended(_ value: UInt32, size: Int, page: UInt32) -> Usage {
            size == 4 ? value : page << 16 | value
        }
        while index < descriptor.count {
            let prefix = descriptor[index]
            if prefix == 0xFE {  // long item: FE, size, tag, data
                guard index + 2 < descriptor.count else {
                    throw WireError(.truncated, "long item at offset \(index) has no size and tag")
                }
                let size = Int(descriptor[index + 1])
                guard index + 3 + size <= descriptor.count else {
                    throw WireError(.truncated, "long item at offset \(index) claims \(size) bytes, \(descriptor.count - index - 3) remain")
                }
                index += 3 + size
                continue
            }
            let size = [0, 1, 2, 4][Int(prefix & 0x03)]
            guard index + 1 + size <= descriptor.count else {
                throw WireError(.truncated, "item 0x\(String(prefix, radix: 16)) at offset \(index) needs \(size) data bytes, \(descriptor.count - index - 1) remain")
            }
            var value: UInt32 = 0
            for k in 0..<size { value |= UInt32(descriptor[index + 1 + k]) << (8 * k) }  // little-endian
            let signed: Int64 = size == 0 ? 0 : Int64(Int32(bitPattern: value << (32 - 8 * UInt32(size))) >> (32 - 8 * UInt32(size)))
            let tag = prefix >> 4
            let offset = index
            index += 1 + size
            switch (prefix >> 2) & 0x03 {
            case 0:  // main
                switch tag {
                case 0x8, 0x9, 0xB:  // Input, Output, Feature
                    let bits = globals.reportSize * globals.reportCount
                    guard globals.reportSize > 0 else {
                        throw WireError(.badValue, "main item at offset \(offset) comes before any Report Size")
                    }
                    if tag == 0x8 {
                        var report = reports[globals.reportID] ?? Report()
                        let constant = value & 0x01 != 0, variable = value & 0x02 != 0
                        var list = usages
                        if let usageMinimum { list.append(usageMinimum) }  // an unmatched minimum is a single usage
                        if !constant && !list.isEmpty {
                            if variable {
                                for n in 0..<globals.reportCount {
                                    // Fewer usages than fields: the last usage repeats.
                                    report.fields.append(.variable(bitOffset: report.bitLength + n * globals.reportSize,
                                                                   bitCount: globals.reportSize, usage: list[min(n, list.count - 1)]))
                                }
                            } else {
                                for n in 0..<globals.reportCount {
                                    report.fields.append(.array(bitOffset: report.bitLength + n * globals.reportSize, bitCount: globals.reportSize,
                                                                logicalMinimum: globals.logicalMinimum, usages: list))
                                }
                            }
                        }
                        report.bitLength += bits
                        reports[globals.reportID] = report
                    }
                case 0xA:  // Collection
                    collectionDepth += 1
                case 0xC:  // End Collection
                    guard collectionDepth > 0 else {
                        throw WireError(.badValue, "End Collection at offset \(offset) closes no collection")
                    }
                    collectionDepth -= 1
                default:
                    throw WireError(.badValue, "unknown main item tag \(tag) at offset \(offset)")
                }
                usages = []  // local items apply to one main item
                usageMinimum = nil
            case 1:  // global
                switch tag {
                case 0x0: globals.usagePage = value & 0xFFFF
                case 0x1: globals.logicalMinimum = signed
                case 0x7: globals.reportSize = Int(value)
                case 0x8:
                    guard value >= 1 && value <= 0xFF else {
                        throw WireError(.badValue, "Report ID \(value) at offset \(offset) is outside 1...255")
                    }
                    globals.reportID = UInt8(value)
                    sawReportID = true
                case 0x9: globals.reportCount = Int(value)
                case 0xA: stack.append(globals)  // Push
                case 0xB:  // Pop
                    guard let top = stack.popLast() else { throw WireError(.badValue, "Pop at offset \(offset) without a Push") }
                    globals = top
                default: break  // Logical Maximum, physical range, unit: not needed to place fields
                }
                guard globals.reportSize <= 32, globals.reportCount <= 0xFFFF else {
                    throw WireError(.badValue, "report size \(globals.reportSize) or count \(globals.reportCount) at offset \(offset) is out of range")
                }
            case 2:  // local
                switch tag {
                case 0x0:
                    usageTotal += 1
                    guard usageTotal <= Self.maximumUsages else {
                        throw WireError(.tooLarge, "the descriptor names more than \(Self.maximumUsages) usages")
                    }
                    usages.append(extended(value, size: size, page: globals.usagePage))
                case 0x1: usageMinimum = extended(value, size: size, page: globals.usagePage)
                case 0x2:
                    let maximum = extended(value, size: size, page: globals.usagePage)
                    guard let minimum = usageMinimum, minimum <= maximum, maximum - minimum < 0x10000 else {
                        throw WireError(.badValue, "Usage Maximum at offset \(offset) has no Usage Minimum at or below it")
                    }
                    usageTotal += Int(maximum - minimum) + 1
                    guard usageTotal <= Self.maximumUsages else {
                        throw WireError(.tooLarge, "the descriptor names more than \(Self.maximumUsages) usages")
                    }
                    usages += Array(minimum...maximum)
                    usageMinimum = nil
                default: break  // designators, strings, delimiters
                }
            default:
                throw WireError(.badValue, "reserved item type in prefix 0x\(String(prefix, radix: 16)) at offset \(offset)")
            }
        }
        guard collectionDepth == 0 else {
            throw WireError(.badValue, "\(collectionDepth) collection(s) not closed by End Collection")
        }
        if sawReportID && reports[0] != nil {
            throw WireError(.badValue, "input fields appear both before and after a Report ID")
        }
        guard !reports.isEmpty else { throw WireError(.badValue, "the descriptor declares no input report") }
        for (id, report) in reports where report.bitLength % 8 != 0 {
            throw WireError(.badValue, "input report \(id) is \(report.bitLength) bits, not a whole number of bytes")
        }
    }

    /// The usages active in one input report (with its id byte when the
    /// descriptor uses report ids).
    public func activeUsages(in bytes: [UInt8]) throws(WireError) -> Set<Usage> {
        let id: UInt8 = usesReportIDs ? (bytes.first ?? 0) : 0
        guard let report = reports[id] else {
            throw WireError(.badValue, bytes.isEmpty ? "the report is empty" : "the descriptor declares no input report \(id)")
        }
        let body = usesReportIDs ? Array(bytes.dropFirst()) : bytes
        guard body.count * 8 == report.bitLength else {
            throw WireError(.badLength, "input report\(usesReportIDs ? " \(id)" : "") is \(report.bitLength / 8) bytes, got \(body.count)")
        }
        func read(_ offset: Int, _ count: Int) -> UInt64 {
            var value: UInt64 = 0
            for n in 0..<count where body[(offset + n) / 8] & (1 << UInt8((offset + n) % 8)) != 0 { value |= 1 << UInt64(n) }
            return value
        }
        var active = Set<Usage>()
        for field in report.fields {
            switch field {
            case .variable(let offset, let count, let usage):
                if read(offset, count) != 0 { active.insert(usage) }
            case .array(let offset, let count, let minimum, let usages):
                let index = Int64(read(offset, count)) - minimum
                if index >= 0 && index < Int64(usages.count) { active.insert(usages[Int(index)]) }
            }
        }
        return active
    }
}

// MARK: - Phone side

/// The phone's reading of accessory HID components that act as media
/// remotes. Sans-IO: fed messages, it answers with events. StartHID records
/// a component after checking its descriptor; each AccessoryHIDReport is
/// compared with the component's previous report, and only buttons that go
/// from released to pressed are reported, so holding a button is one press
/// and a release is none. StopHID forgets the component.
public struct HIDRemoteInterpreter: Sendable {
    public enum Event: Hashable, Sendable {
        case started(StartHIDMessage)
        case pressed(component: UInt16, button: HIDRemote.Button)
        case stopped(component: UInt16)
        /// A HID message that could not be used, and why.
        case problem(String)
    }

    private struct Component: Sendable {
        var start: StartHIDMessage
        var layout: HIDInputLayout
        var held: Set<HIDRemote.Button> = []
    }

    private var components: [UInt16: Component] = [:]
    /// Components one accessory may start at once.
    public static let maximumComponents = 8

    public init() {}

    /// The identifiers of the started components.
    public var componentIdentifiers: Set<UInt16> { Set(components.keys) }

    /// The StartHID a component was started with.
    public func start(of component: UInt16) -> StartHIDMessage? { components[component]?.start }

    /// The buttons a component currently holds down.
    public func held(by component: UInt16) -> Set<HIDRemote.Button> { components[component]?.held ?? [] }

    /// Forgets every component (a new connection).
    public mutating func reset() { components = [:] }

    /// Reads one message. Messages other than StartHID, AccessoryHIDReport
    /// and StopHID give no events.
    public mutating func receive(_ message: ControlMessage) -> [Event] {
        do {
            switch message.id {
            case MessageID.startHID:
                let start = try StartHIDMessage(message)
                let layout: HIDInputLayout
                do { layout = try HIDInputLayout(descriptor: start.reportDescriptor) } catch {
                    return [.problem("StartHID for component \(start.componentIdentifier): unusable report descriptor (\(start.reportDescriptor.count) bytes): \(error.detail)")]
                }
                guard components[start.componentIdentifier] != nil || components.count < Self.maximumComponents else {
                    return [.problem("StartHID for component \(start.componentIdentifier): already \(Self.maximumComponents) components started")]
                }
                // A repeated StartHID replaces the component and starts with nothing held.
                components[start.componentIdentifier] = Component(start: start, layout: layout)
                return [.started(start)]
            case MessageID.accessoryHIDReport:
                let report = try AccessoryHIDReportMessage(message)
                guard var component = components[report.componentIdentifier] else {
                    return [.problem("AccessoryHIDReport for component \(report.componentIdentifier), which no StartHID declared")]
                }
                let usages: Set<HIDInputLayout.Usage>
                do { usages = try component.layout.activeUsages(in: report.report) } catch {
                    return [.problem("AccessoryHIDReport for component \(report.componentIdentifier): \(error.detail)")]
                }
                let now = Set(usages.compactMap { usage in
                    usage >> 16 == 0x0C ? HIDRemote.Button(rawValue: UInt16(usage & 0xFFFF)) : nil
                })
                let pressed = HIDRemote.Button.allCases.filter { now.contains($0) && !component.held.contains($0) }
                component.held = now
                components[report.componentIdentifier] = component
                return pressed.map { .pressed(component: report.componentIdentifier, button: $0) }
            case MessageID.stopHID:
                let stop = try StopHIDMessage(message)
                guard components.removeValue(forKey: stop.componentIdentifier) != nil else {
                    return [.problem("StopHID for component \(stop.componentIdentifier), which is not started")]
                }
                return [.stopped(component: stop.componentIdentifier)]
            default:
                return []
            }
        } catch {
            return [.problem(error.detail)]
        }
    }
}
