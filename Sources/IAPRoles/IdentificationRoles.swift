import IAPWire

/// What a role wants done after an input.
public enum RoleOutput: Sendable, Equatable {
    case send(ControlMessage)
    /// A line for the log, in words.
    case log(String)
}

/// The device (phone) end of identification, as iAP2 does it: after link-up
/// it sends StartIdentification and checks the accessory's
/// IdentificationInformation, accepting it or rejecting it with every missing
/// or malformed parameter named. Sans-IO: fed messages, it answers with
/// outputs. What follows identification is the media role's.
public struct PhoneIdentificationRole: Sendable {
    public enum State: Sendable, Equatable {
        case disconnected
        case awaitingIdentification
        case identified(AccessoryIdentity)
    }

    public private(set) var state = State.disconnected

    public init() {}

    public mutating func linkUp() -> [RoleOutput] {
        state = .awaitingIdentification
        return [.send(ControlMessage(id: MessageID.startIdentification)), .log("sent StartIdentification")]
    }

    /// The accessory may close the connection at any moment: forget it.
    public mutating func linkDown() -> [RoleOutput] {
        let was = state
        state = .disconnected
        if case .identified(let identity) = was { return [.log("disconnected from \(identity.name)")] }
        return []
    }

    public mutating func received(_ message: ControlMessage) -> [RoleOutput] {
        let name = MessageCatalog.name(of: message.id) ?? "0x\(String(message.id, radix: 16, uppercase: true))"
        switch (state, message.id) {
        case (.awaitingIdentification, MessageID.identificationInformation):
            switch AccessoryIdentity.validate(message) {
            case .success(let identity):
                state = .identified(identity)
                return [.send(ControlMessage(id: MessageID.identificationAccepted)),
                        .log("identified \(identity.name) (\(identity.manufacturer) \(identity.modelIdentifier), serial \(identity.serialNumber), firmware \(identity.firmwareVersion)): accepted")]
            case .failure(let problems):
                return [.send(problems.rejection), .log("identification rejected: \(problems)")]
            }
        case (.identified(let identity), _) where !identity.messagesSent.contains(message.id):
            return [.log("error: \(identity.name) sent \(name), which it did not declare in MessagesSentByAccessory; ignored")]
        case (.identified, _):
            return [.log("received \(name)")]
        default:
            return [.log("error: \(name) before identification; ignored")]
        }
    }
}

/// The accessory (head unit) end of identification: answers
/// StartIdentification with its identity and reports the device's verdict.
///
/// A device that rejects the declared message lists (one that knows only
/// standard iAP2 and refuses the dev-kit extension's ids) gets a second
/// IdentificationInformation with the standard messages only; the lists
/// then in force are `identity`'s.
public struct HeadUnitIdentificationRole: Sendable {
    /// The identity as configured.
    public let configuredIdentity: AccessoryIdentity
    /// The identity last declared on this connection.
    public private(set) var identity: AccessoryIdentity
    public private(set) var identified = false

    public init(identity: AccessoryIdentity = .devKitHeadUnit) {
        configuredIdentity = identity
        self.identity = identity
    }

    public mutating func linkDown() {
        identified = false
        identity = configuredIdentity
    }

    public mutating func received(_ message: ControlMessage) -> [RoleOutput] {
        switch message.id {
        case MessageID.startIdentification:
            identity = configuredIdentity
            return [.send(identity.message), .log("sent IdentificationInformation as \(identity.name)")]
        case MessageID.identificationAccepted:
            identified = true
            return [.log("identification accepted")]
        case MessageID.identificationRejected:
            let spec = MessageCatalog.message(MessageID.identificationInformation)
            let names = message.parameters.map { spec?.parameter($0.id)?.name ?? "parameter \($0.id)" }
            let objection = "identification rejected; the device objects to: \(names.joined(separator: ", "))"
            let lists: Set<UInt16> = [ParameterID.IdentificationInformation.messagesSentByAccessory, ParameterID.IdentificationInformation.messagesReceivedFromDevice]
            if identity == configuredIdentity, identity.declaresNonStandardMessages, message.parameters.contains(where: { lists.contains($0.id) }) {
                identity = configuredIdentity.standardOnly
                return [.log("\(objection). Identifying again with standard iAP2 messages only (the dev-kit extension and the diagnostic ping left out)"),
                        .send(identity.message)]
            }
            return [.log(objection)]
        default:
            return [.log("received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16, uppercase: true))")")]
        }
    }
}

extension AccessoryIdentity {
    /// The head unit `iapctl head-unit` identifies as.
    public static let devKitHeadUnit: AccessoryIdentity = {
        // The standard iAP2 messages first, each id declared once.
        let standard = [MessageID.startNowPlayingUpdates, MessageID.stopNowPlayingUpdates, MessageID.startHID, MessageID.accessoryHIDReport, MessageID.stopHID]
            + MediaMessage.mediaLibraryAccessorySends
        return AccessoryIdentity(
            name: "iap-devkit head unit", modelIdentifier: "DK-HU1", manufacturer: "iap-devkit", serialNumber: "DK-0001",
            firmwareVersion: "0.1.0", hardwareVersion: "sim", messagesSent: standard + MediaMessage.headUnitSends.filter { !standard.contains($0) }
                + Array(stride(from: DiagnosticPing.requestIDs.lowerBound, through: DiagnosticPing.requestIDs.upperBound, by: 2)),
            messagesReceived: MediaMessage.phoneSends, powerProvidingCapability: 0, maximumCurrentDrawnMilliamps: 0,
            currentLanguage: "en", supportedLanguages: ["en", "de"], transportComponent: .usbHost(id: 1, name: "iAP2 over USB"),
            hidComponents: [HIDComponent(id: 1, name: "Steering wheel", function: 1)])
    }()
}

