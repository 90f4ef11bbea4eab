import IAPWire

/// What an accessory says about itself in IdentificationInformation
/// (0x1D01). Parameter ids follow the catalog.
public struct AccessoryIdentity: Hashable, Sendable {
    public var name: String
    public var modelIdentifier: String
    public var manufacturer: String
    public var serialNumber: String
    public var firmwareVersion: String
    public var hardwareVersion: String
    public var messagesSent: [UInt16]
    public var messagesReceived: [UInt16]
    /// 0 none, 2 advanced.
    public var powerProvidingCapability: UInt8
    public var maximumCurrentDrawnMilliamps: UInt16
    public var currentLanguage: String
    public var supportedLanguages: [String]
    public var transportComponent: TransportComponent
    /// iAP2 HID components (IdentificationInformation's iAP2HIDComponent).
    public var hidComponents: [HIDComponent]

    public struct HIDComponent: Hashable, Sendable {
        public var id: UInt16
        public var name: String
        /// 1 is a media playback remote (the catalog names the others).
        public var function: UInt8
        public init(id: UInt16, name: String, function: UInt8) {
            self.id = id
            self.name = name
            self.function = function
        }
    }

    public enum TransportComponent: Hashable, Sendable {
        case serial(id: UInt16, name: String)
        case usbDevice(id: UInt16, name: String)
        case usbHost(id: UInt16, name: String)
        case bluetooth(id: UInt16, name: String, address: [UInt8])

        var parameterID: UInt16 {
            switch self {
            case .serial: ParameterID.IdentificationInformation.serialTransportComponent
            case .usbDevice: ParameterID.IdentificationInformation.usbDeviceTransportComponent
            case .usbHost: ParameterID.IdentificationInformation.usbHostTransportComponent
            case .bluetooth: ParameterID.IdentificationInformation.bluetoothTransportComponent
            }
        }

        /// The four transport component parameters, in id order.
        static let parameterIDs: [UInt16] = [
            ParameterID.IdentificationInformation.serialTransportComponent, ParameterID.IdentificationInformation.usbDeviceTransportComponent,
            ParameterID.IdentificationInformation.usbHostTransportComponent, ParameterID.IdentificationInformation.bluetoothTransportComponent,
        ]
    }

    public init(name: String, modelIdentifier: String, manufacturer: String, serialNumber: String, firmwareVersion: String,
                hardwareVersion: String, messagesSent: [UInt16], messagesReceived: [UInt16], powerProvidingCapability: UInt8 = 0,
                maximumCurrentDrawnMilliamps: UInt16 = 0, currentLanguage: String = "en", supportedLanguages: [String] = ["en"],
                transportComponent: TransportComponent, hidComponents: [HIDComponent] = []) {
        self.name = name
        self.modelIdentifier = modelIdentifier
        self.manufacturer = manufacturer
        self.serialNumber = serialNumber
        self.firmwareVersion = firmwareVersion
        self.hardwareVersion = hardwareVersion
        self.messagesSent = messagesSent
        self.messagesReceived = messagesReceived
        self.powerProvidingCapability = powerProvidingCapability
        self.maximumCurrentDrawnMilliamps = maximumCurrentDrawnMilliamps
        self.currentLanguage = currentLanguage
        self.supportedLanguages = supportedLanguages
        self.transportComponent = transportComponent
        self.hidComponents = hidComponents
    }

    /// Whether the declared lists name messages outside standard iAP2: the
    /// dev-kit extension or the diagnostic ping.
    public var declaresNonStandardMessages: Bool {
        (messagesSent + messagesReceived).contains(where: Self.isNonStandard)
    }

    /// The same identity declaring standard iAP2 messages only, for a device
    /// that rejects the dev-kit extension and the diagnostic ping.
    public var standardOnly: AccessoryIdentity {
        var identity = self
        identity.messagesSent.removeAll(where: Self.isNonStandard)
        identity.messagesReceived.removeAll(where: Self.isNonStandard)
        return identity
    }

    static func isNonStandard(_ id: UInt16) -> Bool {
        MessageID.devKitExtension.contains(id) || (DiagnosticPing.requestIDs.lowerBound...DiagnosticPing.requestIDs.upperBound + 1).contains(id)
    }

    public var message: ControlMessage {
        var parameters: [Parameter] = [
            .string(ParameterID.IdentificationInformation.name, name),
            .string(ParameterID.IdentificationInformation.modelIdentifier, modelIdentifier),
            .string(ParameterID.IdentificationInformation.manufacturer, manufacturer),
            .string(ParameterID.IdentificationInformation.serialNumber, serialNumber),
            .string(ParameterID.IdentificationInformation.firmwareVersion, firmwareVersion),
            .string(ParameterID.IdentificationInformation.hardwareVersion, hardwareVersion),
            .blob(ParameterID.IdentificationInformation.messagesSentByAccessory, messagesSent.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
            .blob(ParameterID.IdentificationInformation.messagesReceivedFromDevice, messagesReceived.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
            .uint8(ParameterID.IdentificationInformation.powerProvidingCapability, powerProvidingCapability),
            .uint16(ParameterID.IdentificationInformation.maximumCurrentDrawnFromDevice, maximumCurrentDrawnMilliamps),
            .string(ParameterID.IdentificationInformation.currentLanguage, currentLanguage),
        ]
        parameters += supportedLanguages.map { .string(ParameterID.IdentificationInformation.supportedLanguage, $0) }
        var component: [Parameter]
        switch transportComponent {
        case .serial(let id, let name), .usbDevice(let id, let name), .usbHost(let id, let name):
            component = [.uint16(ParameterID.TransportComponent.identifier, id), .string(ParameterID.TransportComponent.name, name),
                         .none(ParameterID.TransportComponent.supportsiAP2Connection)]
        case .bluetooth(let id, let name, let address):
            component = [.uint16(ParameterID.TransportComponent.identifier, id), .string(ParameterID.TransportComponent.name, name),
                         .none(ParameterID.TransportComponent.supportsiAP2Connection),
                         .blob(ParameterID.TransportComponent.bluetoothMediaAccessControlAddress, address)]
        }
        // Group encoding cannot fail for these sizes.
        if let group = try? Parameter.group(transportComponent.parameterID, component) { parameters.append(group) }
        for hid in hidComponents {
            let members: [Parameter] = [.uint16(ParameterID.HIDComponent.identifier, hid.id), .string(ParameterID.HIDComponent.name, hid.name),
                                        .uint8(ParameterID.HIDComponent.function, hid.function)]
            if let group = try? Parameter.group(ParameterID.IdentificationInformation.iAP2HIDComponent, members) { parameters.append(group) }
        }
        return ControlMessage(id: MessageID.identificationInformation, parameters: parameters)
    }

    /// Reads and checks an IdentificationInformation message. Every missing
    /// or malformed parameter is named; nothing is guessed.
    public static func validate(_ message: ControlMessage) -> Result<AccessoryIdentity, IdentificationProblems> {
        var problems: [IdentificationProblems.Problem] = []
        func string(_ id: UInt16) -> String {
            guard let parameter = message.parameter(id) else {
                problems.append(.init(parameter: id, issue: "missing"))
                return ""
            }
            do { return try parameter.string() } catch {
                problems.append(.init(parameter: id, issue: "malformed: \(error.detail)"))
                return ""
            }
        }
        func integer<T: FixedWidthInteger>(_ id: UInt16, _ type: T.Type) -> T {
            guard let parameter = message.parameter(id) else {
                problems.append(.init(parameter: id, issue: "missing"))
                return 0
            }
            do { return try parameter.integer(as: T.self) } catch {
                problems.append(.init(parameter: id, issue: "malformed: \(error.detail)"))
                return 0
            }
        }
        func ids(_ id: UInt16) -> [UInt16] {
            guard let parameter = message.parameter(id) else {
                problems.append(.init(parameter: id, issue: "missing"))
                return []
            }
            // A view, not `data`: `data` copies a decoded message's bytes on
            // every access, which made this loop quadratic in the list (a
            // 64 KiB list cost gigabytes of copying).
            let bytes = parameter.bytes
            guard bytes.count % 2 == 0 else {
                problems.append(.init(parameter: id, issue: "malformed: \(bytes.count) bytes is not a list of u16 message ids"))
                return []
            }
            return stride(from: bytes.startIndex, to: bytes.endIndex, by: 2).map { UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]) }
        }
        let name = string(ParameterID.IdentificationInformation.name), model = string(ParameterID.IdentificationInformation.modelIdentifier)
        let manufacturer = string(ParameterID.IdentificationInformation.manufacturer), serial = string(ParameterID.IdentificationInformation.serialNumber)
        let firmware = string(ParameterID.IdentificationInformation.firmwareVersion), hardware = string(ParameterID.IdentificationInformation.hardwareVersion)
        let sent = ids(ParameterID.IdentificationInformation.messagesSentByAccessory), received = ids(ParameterID.IdentificationInformation.messagesReceivedFromDevice)
        let power = integer(ParameterID.IdentificationInformation.powerProvidingCapability, UInt8.self)
        let current = integer(ParameterID.IdentificationInformation.maximumCurrentDrawnFromDevice, UInt16.self)
        let language = string(ParameterID.IdentificationInformation.currentLanguage)
        var languages: [String] = []
        let supported = message.parameters(ParameterID.IdentificationInformation.supportedLanguage)
        if supported.isEmpty { problems.append(.init(parameter: ParameterID.IdentificationInformation.supportedLanguage, issue: "missing")) }
        for parameter in supported {
            do { languages.append(try parameter.string()) } catch {
                problems.append(.init(parameter: ParameterID.IdentificationInformation.supportedLanguage, issue: "malformed: \(error.detail)"))
            }
        }
        var component: TransportComponent?
        for id in TransportComponent.parameterIDs {
            guard let parameter = message.parameter(id) else { continue }
            do {
                let members = try parameter.group()
                guard let identifier = try members.first(where: { $0.id == ParameterID.TransportComponent.identifier })?.integer(as: UInt16.self),
                      let componentName = try members.first(where: { $0.id == ParameterID.TransportComponent.name })?.string() else {
                    problems.append(.init(parameter: id, issue: "malformed: the component needs an identifier (\(ParameterID.TransportComponent.identifier))"
                                              + " and a name (\(ParameterID.TransportComponent.name))"))
                    continue
                }
                switch id {
                case ParameterID.IdentificationInformation.serialTransportComponent: component = .serial(id: identifier, name: componentName)
                case ParameterID.IdentificationInformation.usbDeviceTransportComponent: component = .usbDevice(id: identifier, name: componentName)
                case ParameterID.IdentificationInformation.usbHostTransportComponent: component = .usbHost(id: identifier, name: componentName)
                default:
                    let address = members.first { $0.id == ParameterID.TransportComponent.bluetoothMediaAccessControlAddress }?.data ?? []
                    component = .bluetooth(id: identifier, name: componentName, address: address)
                }
            } catch {
                problems.append(.init(parameter: id, issue: "malformed: \(error.detail)"))
            }
        }
        if component == nil && !problems.contains(where: { TransportComponent.parameterIDs.contains($0.parameter) }) {
            problems.append(.init(parameter: ParameterID.IdentificationInformation.usbDeviceTransportComponent,
                                  issue: "missing: no transport component (\(ParameterID.IdentificationInformation.serialTransportComponent) serial,"
                                      + " \(ParameterID.IdentificationInformation.usbDeviceTransportComponent) USB device,"
                                      + " \(ParameterID.IdentificationInformation.usbHostTransportComponent) USB host"
                                      + " or \(ParameterID.IdentificationInformation.bluetoothTransportComponent) Bluetooth)"))
        }
        var hidComponents: [HIDComponent] = []
        for parameter in message.parameters(ParameterID.IdentificationInformation.iAP2HIDComponent) {
            do {
                let members = try parameter.group()
                guard let id = try members.first(where: { $0.id == ParameterID.HIDComponent.identifier })?.integer(as: UInt16.self),
                      let name = try members.first(where: { $0.id == ParameterID.HIDComponent.name })?.string(),
                      let function = try members.first(where: { $0.id == ParameterID.HIDComponent.function })?.integer(as: UInt8.self) else {
                    problems.append(.init(parameter: ParameterID.IdentificationInformation.iAP2HIDComponent,
                                          issue: "malformed: an HID component needs an identifier (\(ParameterID.HIDComponent.identifier)),"
                                              + " a name (\(ParameterID.HIDComponent.name)) and a function (\(ParameterID.HIDComponent.function))"))
                    continue
                }
                hidComponents.append(HIDComponent(id: id, name: name, function: function))
            } catch {
                problems.append(.init(parameter: ParameterID.IdentificationInformation.iAP2HIDComponent, issue: "malformed: \(error.detail)"))
            }
        }
        guard problems.isEmpty, let component else { return .failure(IdentificationProblems(problems: problems)) }
        return .success(AccessoryIdentity(
            name: name, modelIdentifier: model, manufacturer: manufacturer, serialNumber: serial, firmwareVersion: firmware,
            hardwareVersion: hardware, messagesSent: sent, messagesReceived: received, powerProvidingCapability: power,
            maximumCurrentDrawnMilliamps: current, currentLanguage: language, supportedLanguages: languages, transportComponent: component,
            hidComponents: hidComponents))
    }
}

/// Why an identification was rejected: each offending parameter with what
/// is wrong with it.
public struct IdentificationProblems: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Problem: Hashable, Sendable {
        public var parameter: UInt16
        public var issue: String
    }
    public var problems: [Problem]

    /// IdentificationRejected names each offending parameter with a
    /// header-only parameter of the same id.
    public var rejection: ControlMessage {
        var seen = Set<UInt16>()
        let ids = problems.map(\.parameter).filter { seen.insert($0).inserted }
        return ControlMessage(id: MessageID.identificationRejected, parameters: ids.map { .none($0) })
    }

    public var description: String {
        problems.map { problem in
            let name = MessageCatalog.message(MessageID.identificationInformation)?.parameter(problem.parameter)?.name ?? "parameter \(problem.parameter)"
            return "\(name) (\(problem.parameter)) \(problem.issue)"
        }.joined(separator: "; ")
    }
}
