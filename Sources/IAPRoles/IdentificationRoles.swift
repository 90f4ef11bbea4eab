import IAPWire

/// What a role wants done after an input.
public enum RoleOutput: Sendable, Equatable {
    case send(ControlMessage)
    /// A line for the log, in words.
    case log(String)
}

/// The device (phone) end of identification and now playing, as iAP2 does
/// them: after link-up it sends StartIdentification, checks the accessory's
/// IdentificationInformation (accepting, or rejecting with every missing or
/// malformed parameter named), then answers StartNowPlayingUpdates with a
/// full NowPlayingUpdate of its current track. Sans-IO: fed messages, it
/// answers with outputs.
public struct PhoneIdentificationRole: Sendable {
    public enum State: Sendable, Equatable {
        case disconnected
        case awaitingIdentification
        case identified(AccessoryIdentity)
    }

    public private(set) var state = State.disconnected
    public var track: SampleTrack
    /// Attribute ids the accessory asked for, per group (`ParameterID.NowPlayingUpdate`).
    public private(set) var subscription: [UInt16: [UInt16]]?

    public init(track: SampleTrack = .kindOfBlue) { self.track = track }

    public mutating func linkUp() -> [RoleOutput] {
        state = .awaitingIdentification
        subscription = nil
        return [.send(ControlMessage(id: MessageID.startIdentification)), .log("sent StartIdentification")]
    }

    /// The accessory may close the connection at any moment: forget it.
    public mutating func linkDown() -> [RoleOutput] {
        let was = state
        state = .disconnected
        subscription = nil
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
        case (.identified, MessageID.startNowPlayingUpdates):
            var wanted: [UInt16: [UInt16]] = [:]
            let mediaItem = ParameterID.NowPlayingUpdate.mediaItemAttributes, playback = ParameterID.NowPlayingUpdate.playbackAttributes
            for group in message.parameters where group.id == mediaItem || group.id == playback {
                wanted[group.id] = ((try? group.group()) ?? []).map(\.id)
            }
            subscription = wanted
            return [.send(track.nowPlayingUpdate(wanted: wanted)),
                    .log("now playing requested (\(wanted[mediaItem]?.count ?? 0) item and \(wanted[playback]?.count ?? 0) playback attributes): sent \(track.title)")]
        case (.identified, MessageID.stopNowPlayingUpdates):
            subscription = nil
            return [.log("now playing updates stopped")]
        case (.identified, _):
            return [.log("received \(name)")]
        default:
            return [.log("error: \(name) before identification; ignored")]
        }
    }
}

/// The accessory (head unit) end: answers StartIdentification with its
/// identity, then subscribes to now playing and logs each update.
public struct HeadUnitIdentificationRole: Sendable {
    public let identity: AccessoryIdentity
    /// Subscribe to now playing itself once accepted (off when the media
    /// role, which does it on connect, runs on top).
    public var subscribesToNowPlaying = true
    public private(set) var identified = false
    public private(set) var nowPlaying: [InterpretedParameter] = []
    public private(set) var updates = 0

    public init(identity: AccessoryIdentity = .devKitHeadUnit) { self.identity = identity }

    /// The attributes the head unit shows.
    public static let wantedMediaItem: [UInt16] = [
        ParameterID.MediaItem.persistentIdentifier, ParameterID.MediaItem.title, ParameterID.MediaItem.playbackDurationInMilliseconds,
        ParameterID.MediaItem.albumTitle, ParameterID.MediaItem.albumTrackNumber, ParameterID.MediaItem.albumTrackCount, ParameterID.MediaItem.artist,
        ParameterID.MediaItem.genre, ParameterID.MediaItem.artworkFileTransferIdentifier,
    ]
    public static let wantedPlayback: [UInt16] = [
        ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds, ParameterID.Playback.queueIndex, ParameterID.Playback.queueCount,
        ParameterID.Playback.shuffleMode, ParameterID.Playback.repeatMode, ParameterID.Playback.appName,
    ]

    public mutating func linkDown() {
        identified = false
    }

    public mutating func received(_ message: ControlMessage) -> [RoleOutput] {
        switch message.id {
        case MessageID.startIdentification:
            return [.send(identity.message), .log("sent IdentificationInformation as \(identity.name)")]
        case MessageID.identificationAccepted:
            identified = true
            guard subscribesToNowPlaying else { return [.log("identification accepted")] }
            let start = ControlMessage(id: MessageID.startNowPlayingUpdates, parameters: [
                (try? .group(ParameterID.NowPlayingUpdate.mediaItemAttributes, Self.wantedMediaItem.map { .none($0) }))
                    ?? .none(ParameterID.NowPlayingUpdate.mediaItemAttributes),
                (try? .group(ParameterID.NowPlayingUpdate.playbackAttributes, Self.wantedPlayback.map { .none($0) }))
                    ?? .none(ParameterID.NowPlayingUpdate.playbackAttributes),
            ])
            return [.log("identification accepted"), .send(start), .log("sent StartNowPlayingUpdates")]
        case MessageID.identificationRejected:
            let spec = MessageCatalog.message(MessageID.identificationInformation)
            let names = message.parameters.map { spec?.parameter($0.id)?.name ?? "parameter \($0.id)" }
            return [.log("identification rejected; the device objects to: \(names.joined(separator: ", "))")]
        case MessageID.nowPlayingUpdate:
            updates += 1
            nowPlaying = MessageCatalog.interpret(message)
            return [.log("now playing: " + Self.summary(nowPlaying))]
        default:
            return [.log("received \(MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16, uppercase: true))")")]
        }
    }

    static func summary(_ parameters: [InterpretedParameter]) -> String {
        var fields: [String] = []
        for group in parameters {
            guard case .group(let members) = group.value else { continue }
            for member in members {
                let value: String
                switch member.value {
                case .string(let text): value = "\"\(text)\""
                case .unsigned(let number): value = String(number)
                case .enumeration(let number, let name): value = name ?? String(number)
                case .bool(let flag): value = String(flag)
                default: continue
                }
                fields.append("\(member.name ?? String(member.id))=\(value)")
            }
        }
        return fields.joined(separator: " ")
    }
}

extension AccessoryIdentity {
    /// The head unit `iapctl head-unit` identifies as.
    public static let devKitHeadUnit = AccessoryIdentity(
        name: "iap-devkit head unit", modelIdentifier: "DK-HU1", manufacturer: "iap-devkit", serialNumber: "DK-0001",
        firmwareVersion: "0.1.0", hardwareVersion: "sim", messagesSent: [
            MessageID.startNowPlayingUpdates, MessageID.stopNowPlayingUpdates, MessageID.startHID, MessageID.accessoryHIDReport, MessageID.stopHID,
        ] + MediaMessage.headUnitSends.filter { $0 != MessageID.startNowPlayingUpdates && $0 != MessageID.stopNowPlayingUpdates }
            + Array(stride(from: DiagnosticPing.requestIDs.lowerBound, through: DiagnosticPing.requestIDs.upperBound, by: 2)),
        messagesReceived: MediaMessage.phoneSends, powerProvidingCapability: 0, maximumCurrentDrawnMilliamps: 0,
        currentLanguage: "en", supportedLanguages: ["en", "de"], transportComponent: .usbHost(id: 1, name: "iAP2 over USB"),
        hidComponents: [HIDComponent(id: 1, name: "Steering wheel", function: 1)])
}

