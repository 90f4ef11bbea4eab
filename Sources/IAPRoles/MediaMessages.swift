import IAPWire

/// The messages the phone and head-unit roles exchange, typed. Standard
/// iAP2 messages keep their iAP2 form; the rest is the dev-kit extension in
/// 0xB100...0xB1FF (Docs/Messages.md). Ids and names come from the catalog.
public enum MediaMessage: Hashable, Sendable {
    case browseRequest(requestID: UInt32, containerID: String, offset: UInt32, count: UInt16)
    case browseResponse(BrowseResponse)
    case playItem(requestID: UInt32, itemID: String, imageRowEntryID: String?)
    case requestStatus(requestID: UInt32, RequestStatus, error: String?)
    case remoteCommand(requestID: UInt32, RemoteCommand)
    case advertisedCommands([AdvertisedCommand])
    case appInformation(name: String, hasContentTree: Bool)
    case limits(HeadUnitLimits)
    case queueRequest(requestID: UInt32, offset: UInt32, count: UInt16)
    case queueResponse(QueueResponse)
    case imageRequest(requestID: UInt32, imageID: String, scale: UInt8)
    case imageResponse(requestID: UInt32, RequestStatus, transferID: UInt8?, error: String?)
    case startNowPlayingUpdates
    case stopNowPlayingUpdates
    case nowPlayingUpdate(NowPlayingUpdate)
    case setNowPlayingInformation(elapsedMilliseconds: UInt32?, queueIndex: UInt32?)
    /// The head unit's media-remote HID component (standard iAP2).
    case startHID(StartHIDMessage)
    case accessoryHIDReport(AccessoryHIDReportMessage)
    case stopHID(StopHIDMessage)

    /// Every id the roles send or receive, for identification's declared lists.
    public static let phoneSends: [UInt16] = [MessageID.browseResponse, MessageID.requestStatus, MessageID.advertisedCommands, MessageID.mediaAppInformation,
                                              MessageID.queueResponse, MessageID.imageResponse, MessageID.nowPlayingUpdate]
    public static let headUnitSends: [UInt16] = [MessageID.browseRequest, MessageID.playItemRequest, MessageID.remoteCommand, MessageID.headUnitLimits, MessageID.queueRequest,
                                                 MessageID.imageRequest, MessageID.startNowPlayingUpdates, MessageID.stopNowPlayingUpdates,
                                                 MessageID.setNowPlayingInformation, MessageID.startHID, MessageID.accessoryHIDReport,
                                                 MessageID.stopHID]

    // MARK: Encoding

    public var controlMessage: ControlMessage {
        switch self {
        case .browseRequest(let id, let container, let offset, let count):
            return ControlMessage(id: MessageID.browseRequest, parameters: [.uint32(0, id), .string(1, container), .uint32(2, offset), .uint16(3, count)])
        case .browseResponse(let response):
            var parameters: [Parameter] = [.uint32(0, response.requestID), .uint8(1, response.status.rawValue),
                                           .uint32(2, response.totalCount), .uint32(3, response.offset)]
            parameters += response.items.map(Self.itemParameter)
            parameters += response.sections.map(Self.sectionParameter)
            if let error = response.error { parameters.append(.string(6, error)) }
            return ControlMessage(id: MessageID.browseResponse, parameters: parameters)
        case .playItem(let id, let item, let entry):
            var parameters: [Parameter] = [.uint32(0, id), .string(1, item)]
            if let entry { parameters.append(.string(2, entry)) }
            return ControlMessage(id: MessageID.playItemRequest, parameters: parameters)
        case .requestStatus(let id, let status, let error):
            var parameters: [Parameter] = [.uint32(0, id), .uint8(1, status.rawValue)]
            if let error { parameters.append(.string(2, error)) }
            return ControlMessage(id: MessageID.requestStatus, parameters: parameters)
        case .remoteCommand(let id, let command):
            var parameters: [Parameter] = [.uint32(0, id), .uint8(1, command.kind.rawValue)]
            switch command {
            case .changePlaybackPosition(let ms), .skipForward(let ms), .skipBackward(let ms): parameters.append(.uint32(2, ms))
            case .changeRepeatMode(let mode): parameters.append(.uint8(3, mode.rawValue))
            case .changeShuffleMode(let mode): parameters.append(.uint8(3, mode.rawValue))
            case .seekForward(let begin), .seekBackward(let begin), .like(let begin), .dislike(let begin), .bookmark(let begin):
                parameters.append(.bool(4, begin))
            default: break
            }
            return ControlMessage(id: MessageID.remoteCommand, parameters: parameters)
        case .advertisedCommands(let commands):
            return ControlMessage(id: MessageID.advertisedCommands, parameters: commands.map { command in
                group(0, [.uint8(0, command.kind.rawValue), .bool(1, command.enabled)])
            })
        case .appInformation(let name, let hasContent):
            return ControlMessage(id: MessageID.mediaAppInformation, parameters: [.string(0, name), .bool(1, hasContent)])
        case .limits(let limits):
            return ControlMessage(id: MessageID.headUnitLimits, parameters: [
                .uint8(0, UInt8(clamping: limits.maximumTabs)), .uint16(1, UInt16(clamping: limits.maximumPageSize)),
                .uint8(2, UInt8(clamping: limits.maximumImageRowImages)), .uint8(3, UInt8(clamping: limits.imageScale)),
            ])
        case .queueRequest(let id, let offset, let count):
            return ControlMessage(id: MessageID.queueRequest, parameters: [.uint32(0, id), .uint32(1, offset), .uint16(2, count)])
        case .queueResponse(let response):
            var parameters: [Parameter] = [.uint32(0, response.requestID), .uint8(1, response.status.rawValue), .uint32(2, response.totalCount),
                                           .uint32(3, response.offset), .uint32(4, response.currentIndex)]
            parameters += response.items.map { item in
                var parameter = Self.itemParameter(item)
                parameter.id = 5
                return parameter
            }
            if let error = response.error { parameters.append(.string(6, error)) }
            return ControlMessage(id: MessageID.queueResponse, parameters: parameters)
        case .imageRequest(let id, let image, let scale):
            return ControlMessage(id: MessageID.imageRequest, parameters: [.uint32(0, id), .string(1, image), .uint8(2, scale)])
        case .imageResponse(let id, let status, let transfer, let error):
            var parameters: [Parameter] = [.uint32(0, id), .uint8(1, status.rawValue)]
            if let transfer { parameters.append(.uint8(2, transfer)) }
            if let error { parameters.append(.string(3, error)) }
            return ControlMessage(id: MessageID.imageResponse, parameters: parameters)
        case .startNowPlayingUpdates:
            return ControlMessage(id: MessageID.startNowPlayingUpdates, parameters: [
                group(0, NowPlayingUpdate.mediaAttributeIDs.map { .none($0) }),
                group(1, NowPlayingUpdate.playbackAttributeIDs.map { .none($0) }),
            ])
        case .stopNowPlayingUpdates:
            return ControlMessage(id: MessageID.stopNowPlayingUpdates)
        case .nowPlayingUpdate(let update):
            return update.message
        case .setNowPlayingInformation(let elapsed, let index):
            var parameters: [Parameter] = []
            if let elapsed { parameters.append(.uint32(0, elapsed)) }
            if let index { parameters.append(.uint32(1, index)) }
            return ControlMessage(id: MessageID.setNowPlayingInformation, parameters: parameters)
        case .startHID(let message): return message.message
        case .accessoryHIDReport(let message): return message.message
        case .stopHID(let message): return message.message
        }
    }

    static func itemParameter(_ item: ContentItem) -> Parameter {
        var members: [Parameter] = [.string(0, item.id), .uint8(1, item.kind.rawValue), .string(2, item.text)]
        if let detail = item.detailText { members.append(.string(3, detail)) }
        if let image = item.imageID { members.append(.string(4, image)) }
        members.append(.uint8(5, item.accessory.rawValue))
        if item.playingIndicator != .none { members.append(.uint8(6, item.playingIndicator.rawValue)) }
        members.append(.bool(7, item.isEnabled))
        if let value = item.appValue { members.append(.blob(8, value)) }
        if let row = item.imageRow {
            members.append(group(9, [.string(0, row.title)] + row.entries.map { entry in
                group(1, [.string(0, entry.id), .string(1, entry.imageID), .bool(2, entry.selectable)])
            }))
        }
        members.append(.uint16(10, item.section))
        if let badge = item.badge { members.append(.string(11, badge)) }
        return group(4, members)
    }

    static func sectionParameter(_ section: ContentSection) -> Parameter {
        var members: [Parameter] = [.uint16(0, section.id)]
        switch section.kind {
        case .plain(let title):
            members.append(.uint8(1, 0))
            if let title { members.append(.string(2, title)) }
        case .loading: members.append(.uint8(1, 1))
        case .playAll(let count): members += [.uint8(1, 2), .uint32(3, count)]
        case .empty(let text): members += [.uint8(1, 3), .string(2, text)]
        case .loadFailed(let text): members += [.uint8(1, 4), .string(2, text)]
        }
        return group(5, members)
    }

    // MARK: Decoding

    /// The typed form of a control message, nil when it is not one of the
    /// media messages. Malformed messages throw with the reason.
    public init?(_ message: ControlMessage) throws(WireError) {
        let reader = MessageReader(message)
        switch message.id {
        case MessageID.browseRequest:
            self = .browseRequest(requestID: try reader.u32(0), containerID: try reader.string(1), offset: try reader.u32(2), count: try reader.u16(3))
        case MessageID.browseResponse:
            self = .browseResponse(BrowseResponse(
                requestID: try reader.u32(0), status: try reader.status(1), totalCount: try reader.u32(2), offset: try reader.u32(3),
                items: try message.parameters(4).map(Self.item), sections: try message.parameters(5).map(Self.section),
                error: try reader.optionalString(6)))
        case MessageID.playItemRequest:
            self = .playItem(requestID: try reader.u32(0), itemID: try reader.string(1), imageRowEntryID: try reader.optionalString(2))
        case MessageID.requestStatus:
            self = .requestStatus(requestID: try reader.u32(0), try reader.status(1), error: try reader.optionalString(2))
        case MessageID.remoteCommand:
            let kindValue = try reader.u8(1)
            guard let kind = RemoteCommand.Kind(rawValue: kindValue) else {
                throw WireError(.badValue, "RemoteCommand has unknown command \(kindValue)")
            }
            self = .remoteCommand(requestID: try reader.u32(0), try Self.command(kind, reader))
        case MessageID.advertisedCommands:
            self = .advertisedCommands(try message.parameters(0).map { parameter throws(WireError) in
                let entry = MessageReader(ControlMessage(id: 0, parameters: try parameter.group()))
                let value = try entry.u8(0)
                guard let kind = RemoteCommand.Kind(rawValue: value) else {
                    throw WireError(.badValue, "AdvertisedCommands lists unknown command \(value)")
                }
                return AdvertisedCommand(kind, enabled: try entry.bool(1))
            })
        case MessageID.mediaAppInformation:
            self = .appInformation(name: try reader.string(0), hasContentTree: try reader.bool(1))
        case MessageID.headUnitLimits:
            self = .limits(HeadUnitLimits(maximumTabs: Int(try reader.u8(0)), maximumPageSize: Int(try reader.u16(1)),
                                          maximumImageRowImages: Int(try reader.u8(2)), imageScale: Int(try reader.u8(3))))
        case MessageID.queueRequest:
            self = .queueRequest(requestID: try reader.u32(0), offset: try reader.u32(1), count: try reader.u16(2))
        case MessageID.queueResponse:
            self = .queueResponse(QueueResponse(
                requestID: try reader.u32(0), status: try reader.status(1), totalCount: try reader.u32(2), offset: try reader.u32(3),
                currentIndex: try reader.u32(4), items: try message.parameters(5).map(Self.item), error: try reader.optionalString(6)))
        case MessageID.imageRequest:
            self = .imageRequest(requestID: try reader.u32(0), imageID: try reader.string(1), scale: try reader.u8(2))
        case MessageID.imageResponse:
            self = .imageResponse(requestID: try reader.u32(0), try reader.status(1),
                                  transferID: message.parameter(2) == nil ? nil : try reader.u8(2), error: try reader.optionalString(3))
        case MessageID.startNowPlayingUpdates:
            self = .startNowPlayingUpdates
        case MessageID.stopNowPlayingUpdates:
            self = .stopNowPlayingUpdates
        case MessageID.nowPlayingUpdate:
            self = .nowPlayingUpdate(try NowPlayingUpdate(message))
        case MessageID.setNowPlayingInformation:
            self = .setNowPlayingInformation(elapsedMilliseconds: message.parameter(0) == nil ? nil : try reader.u32(0),
                                             queueIndex: message.parameter(1) == nil ? nil : try reader.u32(1))
        case MessageID.startHID: self = .startHID(try StartHIDMessage(message))
        case MessageID.accessoryHIDReport: self = .accessoryHIDReport(try AccessoryHIDReportMessage(message))
        case MessageID.stopHID: self = .stopHID(try StopHIDMessage(message))
        default:
            return nil
        }
    }

    static func command(_ kind: RemoteCommand.Kind, _ reader: MessageReader) throws(WireError) -> RemoteCommand {
        switch kind {
        case .play: return .play
        case .pause: return .pause
        case .stop: return .stop
        case .togglePlayPause: return .togglePlayPause
        case .nextTrack: return .nextTrack
        case .previousTrack: return .previousTrack
        case .changePlaybackRate: return .changePlaybackRate
        case .changePlaybackPosition: return .changePlaybackPosition(milliseconds: try reader.u32(2))
        case .skipForward: return .skipForward(milliseconds: try reader.u32(2))
        case .skipBackward: return .skipBackward(milliseconds: try reader.u32(2))
        case .seekForward: return .seekForward(begin: try reader.bool(4))
        case .seekBackward: return .seekBackward(begin: try reader.bool(4))
        case .like: return .like(try reader.bool(4))
        case .dislike: return .dislike(try reader.bool(4))
        case .bookmark: return .bookmark(try reader.bool(4))
        case .changeRepeatMode:
            let value = try reader.u8(3)
            guard let mode = RepeatMode(rawValue: value) else { throw WireError(.badValue, "repeat mode \(value) is not 0, 1 or 2") }
            return .changeRepeatMode(mode)
        case .changeShuffleMode:
            let value = try reader.u8(3)
            guard let mode = ShuffleMode(rawValue: value) else { throw WireError(.badValue, "shuffle mode \(value) is not 0, 1 or 2") }
            return .changeShuffleMode(mode)
        }
    }

    static func item(_ parameter: Parameter) throws(WireError) -> ContentItem {
        let members = try parameter.group()
        let reader = MessageReader(ControlMessage(id: 0, parameters: members))
        guard let kind = ContentItem.Kind(rawValue: try reader.u8(1)) else { throw WireError(.badValue, "item kind is not container or playable") }
        var row: ContentItem.ImageRow?
        if let rowParameter = members.first(where: { $0.id == 9 }) {
            let rowMembers = try rowParameter.group()
            let rowReader = MessageReader(ControlMessage(id: 0, parameters: rowMembers))
            row = ContentItem.ImageRow(title: try rowReader.string(0), entries: try rowMembers.filter { $0.id == 1 }.map { entry throws(WireError) in
                let entryReader = MessageReader(ControlMessage(id: 0, parameters: try entry.group()))
                return .init(id: try entryReader.string(0), imageID: try entryReader.string(1), selectable: try entryReader.bool(2))
            })
        }
        return ContentItem(
            id: try reader.string(0), kind: kind, text: try reader.string(2), detailText: try reader.optionalString(3),
            imageID: try reader.optionalString(4), accessory: ContentItem.Accessory(rawValue: try reader.u8(5)) ?? ContentItem.Accessory.none,
            playingIndicator: members.contains { $0.id == 6 } ? ContentItem.PlayingIndicator(rawValue: try reader.u8(6)) ?? .none : .none,
            isEnabled: try reader.bool(7), appValue: members.first { $0.id == 8 }?.data, imageRow: row,
            section: try reader.u16(10), badge: try reader.optionalString(11))
    }

    static func section(_ parameter: Parameter) throws(WireError) -> ContentSection {
        let reader = MessageReader(ControlMessage(id: 0, parameters: try parameter.group()))
        let id = try reader.u16(0)
        switch try reader.u8(1) {
        case 0: return ContentSection(id: id, kind: .plain(title: try reader.optionalString(2)))
        case 1: return ContentSection(id: id, kind: .loading)
        case 2: return ContentSection(id: id, kind: .playAll(itemCount: try reader.u32(3)))
        case 3: return ContentSection(id: id, kind: .empty(text: try reader.string(2)))
        case 4: return ContentSection(id: id, kind: .loadFailed(text: try reader.string(2)))
        case let other: throw WireError(.badValue, "section kind \(other) is unknown")
        }
    }
}

public struct BrowseResponse: Hashable, Sendable {
    public var requestID: UInt32
    public var status: RequestStatus
    /// Children of the container in all, of which `items` start at `offset`.
    public var totalCount: UInt32
    public var offset: UInt32
    public var items: [ContentItem]
    public var sections: [ContentSection]
    public var error: String?

    public init(requestID: UInt32, status: RequestStatus, totalCount: UInt32 = 0, offset: UInt32 = 0, items: [ContentItem] = [],
                sections: [ContentSection] = [], error: String? = nil) {
        self.requestID = requestID
        self.status = status
        self.totalCount = totalCount
        self.offset = offset
        self.items = items
        self.sections = sections
        self.error = error
    }
}

public struct QueueResponse: Hashable, Sendable {
    public var requestID: UInt32
    public var status: RequestStatus
    public var totalCount: UInt32
    public var offset: UInt32
    public var currentIndex: UInt32
    /// "Up next" may hold items that are not in the browse tree.
    public var items: [ContentItem]
    public var error: String?

    public init(requestID: UInt32, status: RequestStatus, totalCount: UInt32 = 0, offset: UInt32 = 0, currentIndex: UInt32 = 0,
                items: [ContentItem] = [], error: String? = nil) {
        self.error = error
        self.requestID = requestID
        self.status = status
        self.totalCount = totalCount
        self.offset = offset
        self.currentIndex = currentIndex
        self.items = items
    }
}

/// A NowPlayingUpdate: each field is present only when the update carries
/// it (iAP2 updates may be partial; this project's phone sends them whole).
public struct NowPlayingUpdate: Hashable, Sendable {
    public var info: NowPlayingInfo
    /// Media item and playback attribute ids present, per group (0, 1).
    public var present: Set<UInt32>
    /// The update carries a media item group (possibly empty: no item).
    public var hasMediaItemGroup: Bool
    /// Values the update carries that are out of range. An out-of-range
    /// playback status makes the state `.unknown`; other out-of-range values
    /// are not applied (the attribute is not in `present`).
    public var outOfRange: [OutOfRangeValue] = []

    static let mediaAttributeIDs: [UInt16] = [0, 1, 4, 6, 12, 16, 26, 0x4000]
    static let playbackAttributeIDs: [UInt16] = [0, 1, 2, 3, 5, 6, 7, 12, 0x4000, 0x4001]

    static func key(_ group: UInt16, _ id: UInt16) -> UInt32 { UInt32(group) << 16 | UInt32(id) }

    /// A full update of `info`.
    public init(full info: NowPlayingInfo) {
        self.info = info
        present = Set(Self.mediaAttributeIDs.map { Self.key(0, $0) } + Self.playbackAttributeIDs.map { Self.key(1, $0) })
        hasMediaItemGroup = true
    }

    var message: ControlMessage {
        var media: [Parameter] = []
        if let id = info.itemID { media.append(.uint64(0, id)) }
        if let title = info.title { media.append(.string(1, title)) }
        if let duration = info.durationMilliseconds { media.append(.uint32(4, duration)) }
        if let album = info.albumTitle { media.append(.string(6, album)) }
        if let artist = info.artist { media.append(.string(12, artist)) }
        if let genre = info.genre { media.append(.string(16, genre)) }
        if let artwork = info.artworkTransferID { media.append(.uint8(26, artwork)) }
        if let date = info.releaseDate { media.append(.string(0x4000, date)) }
        var playback: [Parameter] = [
            .uint8(0, Self.iAP2Status(info.state)), .uint32(1, info.elapsedMilliseconds),
        ]
        if let index = info.queueIndex { playback.append(.uint32(2, index)) }
        if let count = info.queueCount { playback.append(.uint32(3, count)) }
        playback += [.uint8(5, info.shuffleMode.rawValue), .uint8(6, info.repeatMode.rawValue)]
        if let app = info.appName { playback.append(.string(7, app)) }
        playback += [.uint16(12, Self.hundredths(info.playbackRate)), .uint8(0x4000, info.state.rawValue),
                     .uint16(0x4001, Self.hundredths(info.defaultPlaybackRate))]
        return ControlMessage(id: MessageID.nowPlayingUpdate, parameters: [group(0, media), group(1, playback)])
    }

    init(_ message: ControlMessage) throws(WireError) {
        info = NowPlayingInfo()
        present = []
        hasMediaItemGroup = message.parameter(0) != nil
        var statusOutOfRange = false
        var extendedState: NowPlayingInfo.PlaybackState?
        for groupParameter in message.parameters where groupParameter.id <= 1 {
            let members = try groupParameter.group()
            let reader = MessageReader(ControlMessage(id: 0, parameters: members))
            for member in members {
                present.insert(Self.key(groupParameter.id, member.id))
                switch (groupParameter.id, member.id) {
                case (0, 0): info.itemID = try reader.u64(0)
                case (0, 1): info.title = try reader.string(1)
                case (0, 4): info.durationMilliseconds = try reader.u32(4)
                case (0, 6): info.albumTitle = try reader.string(6)
                case (0, 12): info.artist = try reader.string(12)
                case (0, 16): info.genre = try reader.string(16)
                case (0, 26): info.artworkTransferID = try reader.u8(26)
                case (0, 0x4000): info.releaseDate = try reader.string(0x4000)
                case (1, 0):
                    switch try reader.u8(0) {
                    case 0: info.state = .stopped
                    case 1: info.state = .playing
                    case 2, 3, 4: info.state = .paused
                    case let value:
                        info.state = .unknown
                        statusOutOfRange = true
                        outOfRange.append(OutOfRangeValue(.playbackStatus, value: UInt64(value)))
                    }
                case (1, 1): info.elapsedMilliseconds = try reader.u32(1)
                case (1, 2): info.queueIndex = try reader.u32(2)
                case (1, 3): info.queueCount = try reader.u32(3)
                case (1, 5):
                    let value = try reader.u8(5)
                    if let mode = ShuffleMode(rawValue: value) { info.shuffleMode = mode } else {
                        present.remove(Self.key(1, 5))
                        outOfRange.append(OutOfRangeValue(.shuffleMode, value: UInt64(value)))
                    }
                case (1, 6):
                    let value = try reader.u8(6)
                    if let mode = RepeatMode(rawValue: value) { info.repeatMode = mode } else {
                        present.remove(Self.key(1, 6))
                        outOfRange.append(OutOfRangeValue(.repeatMode, value: UInt64(value)))
                    }
                case (1, 7): info.appName = try reader.string(7)
                case (1, 12): info.playbackRate = Double(try reader.u16(12)) / 100
                case (1, 0x4000):
                    let value = try reader.u8(0x4000)
                    if let state = NowPlayingInfo.PlaybackState(rawValue: value) { extendedState = state } else {
                        outOfRange.append(OutOfRangeValue(.playbackState, value: UInt64(value)))
                    }
                case (1, 0x4001): info.defaultPlaybackRate = Double(try reader.u16(0x4001)) / 100
                default: break
                }
            }
        }
        // The extended state refines a valid status (interrupted is paused
        // there); after an out-of-range status the state stays unknown.
        if statusOutOfRange {
            present.remove(Self.key(1, 0x4000))
        } else if let extendedState {
            info.state = extendedState
        } else {
            present.remove(Self.key(1, 0x4000))
        }
    }

    /// `base` with the fields this update carries replaced. A media item
    /// group describes the item whole, so its absent attributes become
    /// unknown (a title must not outlive its track); playback attributes
    /// are replaced one by one.
    public func applied(to base: NowPlayingInfo) -> NowPlayingInfo {
        var result = base
        if hasMediaItemGroup {
            result.itemID = nil
            result.title = nil
            result.artist = nil
            result.albumTitle = nil
            result.genre = nil
            result.releaseDate = nil
            result.durationMilliseconds = nil
            result.artworkTransferID = nil
        }
        // Plain lookups, no closures: applying an update allocates nothing.
        let present = self.present
        if present.contains(0x0_0000) { result.itemID = info.itemID }
        if present.contains(0x0_0001) { result.title = info.title }
        if present.contains(0x0_0004) { result.durationMilliseconds = info.durationMilliseconds }
        if present.contains(0x0_0006) { result.albumTitle = info.albumTitle }
        if present.contains(0x0_000C) { result.artist = info.artist }
        if present.contains(0x0_0010) { result.genre = info.genre }
        if present.contains(0x0_001A) { result.artworkTransferID = info.artworkTransferID }
        if present.contains(0x0_4000) { result.releaseDate = info.releaseDate }
        if present.contains(0x1_0000) || present.contains(0x1_4000) { result.state = info.state }
        if present.contains(0x1_0001) { result.elapsedMilliseconds = info.elapsedMilliseconds }
        if present.contains(0x1_0002) { result.queueIndex = info.queueIndex }
        if present.contains(0x1_0003) { result.queueCount = info.queueCount }
        if present.contains(0x1_0005) { result.shuffleMode = info.shuffleMode }
        if present.contains(0x1_0006) { result.repeatMode = info.repeatMode }
        if present.contains(0x1_0007) { result.appName = info.appName }
        if present.contains(0x1_000C) { result.playbackRate = info.playbackRate }
        if present.contains(0x1_4001) { result.defaultPlaybackRate = info.defaultPlaybackRate }
        return result
    }

    static func iAP2Status(_ state: NowPlayingInfo.PlaybackState) -> UInt8 {
        switch state {
        case .playing: 1
        case .paused, .interrupted: 2
        case .stopped, .unknown: 0
        }
    }

    /// The rate in hundredths, clamped to the field: the app's rate can be
    /// anything (negative and NaN are 0).
    static func hundredths(_ rate: Double) -> UInt16 {
        guard rate > 0 else { return 0 }
        return UInt16(min(rate * 100, Double(UInt16.max)).rounded())
    }
}

/// A now-playing value outside the range its attribute allows: reported,
/// never shown as if it were a valid one.
public struct OutOfRangeValue: Hashable, Sendable, CustomStringConvertible {
    public enum Attribute: String, Hashable, Sendable {
        case playbackStatus = "playback status"
        case playbackState = "playback state"
        case shuffleMode = "shuffle mode"
        case repeatMode = "repeat mode"
        case elapsedTime = "elapsed time"
    }

    public var attribute: Attribute
    public var value: UInt64
    /// The values allowed, in words.
    public var allowed: String

    public init(_ attribute: Attribute, value: UInt64, allowed: String? = nil) {
        self.attribute = attribute
        self.value = value
        self.allowed = allowed ?? Self.allowed(attribute)
    }

    static func allowed(_ attribute: Attribute) -> String {
        switch attribute {
        case .playbackStatus: "0...4"
        case .playbackState: "0...4"
        case .shuffleMode, .repeatMode: "0...2"
        case .elapsedTime: "at most the duration"
        }
    }

    public var description: String {
        attribute == .elapsedTime ? "\(attribute.rawValue) \(value) ms out of range (\(allowed))" : "\(attribute.rawValue) \(value) out of range (\(allowed))"
    }
}

/// Typed reads of a message's parameters that say which one is missing or
/// malformed.
struct MessageReader {
    let message: ControlMessage
    init(_ message: ControlMessage) { self.message = message }

    private func parameter(_ id: UInt16) throws(WireError) -> Parameter {
        guard let parameter = message.parameter(id) else {
            let name = MessageCatalog.message(message.id)?.name ?? "message 0x\(String(message.id, radix: 16))"
            throw WireError(.truncated, "\(name) lacks parameter \(id)")
        }
        return parameter
    }

    func u8(_ id: UInt16) throws(WireError) -> UInt8 { try parameter(id).integer(as: UInt8.self) }
    func u16(_ id: UInt16) throws(WireError) -> UInt16 { try parameter(id).integer(as: UInt16.self) }
    func u32(_ id: UInt16) throws(WireError) -> UInt32 { try parameter(id).integer(as: UInt32.self) }
    func u64(_ id: UInt16) throws(WireError) -> UInt64 { try parameter(id).integer(as: UInt64.self) }
    func bool(_ id: UInt16) throws(WireError) -> Bool { try parameter(id).bool() }
    func string(_ id: UInt16) throws(WireError) -> String { try parameter(id).string() }
    func optionalString(_ id: UInt16) throws(WireError) -> String? {
        guard message.parameter(id) != nil else { return nil }
        return try string(id)
    }
    func status(_ id: UInt16) throws(WireError) -> RequestStatus {
        let value = try u8(id)
        guard let status = RequestStatus(rawValue: value) else { throw WireError(.badValue, "status \(value) is unknown") }
        return status
    }
}

/// A group parameter. A member longer than a parameter can be makes the
/// whole message too long, which `ControlMessage.encode` refuses, so nothing
/// truncated ever reaches the wire.
func group(_ id: UInt16, _ members: [Parameter]) -> Parameter {
    var data: [UInt8] = []
    data.reserveCapacity(members.reduce(0) { $0 + $1.encodedLength })
    for member in members {
        data.appendBigEndian(UInt16(truncatingIfNeeded: member.encodedLength))
        data.appendBigEndian(member.id)
        data.append(contentsOf: member.data)
    }
    return Parameter(id: id, data: data)
}
