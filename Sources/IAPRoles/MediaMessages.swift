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
    /// The head unit subscribes to now playing, naming the attributes it wants.
    case startNowPlayingUpdates(NowPlayingSelection)
    case stopNowPlayingUpdates
    case nowPlayingUpdate(NowPlayingUpdate)
    case setNowPlayingInformation(elapsedMilliseconds: UInt32?, queueIndex: UInt32?)
    /// The head unit's media-remote HID component (standard iAP2).
    case startHID(StartHIDMessage)
    case accessoryHIDReport(AccessoryHIDReportMessage)
    case stopHID(StopHIDMessage)
    /// Media Library Access (standard iAP2, MediaLibraryMessages.swift).
    case startMediaLibraryInformation
    case mediaLibraryInformation([MediaLibraryDescription])
    case stopMediaLibraryInformation
    case startMediaLibraryUpdates(MediaLibraryUpdateRequest)
    case mediaLibraryUpdate(MediaLibraryUpdate)
    case stopMediaLibraryUpdates(libraryID: String)
    case playMediaLibrary(MediaLibraryPlayRequest)

    /// Every id the roles send or receive, for identification's declared lists.
    public static let phoneSends: [UInt16] = [MessageID.browseResponse, MessageID.requestStatus, MessageID.advertisedCommands, MessageID.mediaAppInformation,
                                              MessageID.queueResponse, MessageID.imageResponse, MessageID.nowPlayingUpdate,
                                              MessageID.mediaLibraryInformation, MessageID.mediaLibraryUpdate]
    /// Media Library Access as an accessory sends it.
    public static let mediaLibraryAccessorySends: [UInt16] = [
        MessageID.startMediaLibraryInformation, MessageID.stopMediaLibraryInformation, MessageID.startMediaLibraryUpdates, MessageID.stopMediaLibraryUpdates,
        MessageID.playMediaLibraryCurrentSelection, MessageID.playMediaLibraryItems, MessageID.playMediaLibraryCollection, MessageID.playMediaLibrarySpecial,
    ]
    public static let headUnitSends: [UInt16] = [MessageID.browseRequest, MessageID.playItemRequest, MessageID.remoteCommand, MessageID.headUnitLimits, MessageID.queueRequest,
                                                 MessageID.imageRequest, MessageID.startNowPlayingUpdates, MessageID.stopNowPlayingUpdates,
                                                 MessageID.setNowPlayingInformation, MessageID.startHID, MessageID.accessoryHIDReport,
                                                 MessageID.stopHID] + mediaLibraryAccessorySends

    // MARK: Encoding

    public var controlMessage: ControlMessage {
        switch self {
        case .browseRequest(let id, let container, let offset, let count):
            return ControlMessage(id: MessageID.browseRequest, capacity: 32 + container.utf8.count) { parameters in
                parameters.appendInteger(ParameterID.BrowseRequest.requestIdentifier, id)
                parameters.appendString(ParameterID.BrowseRequest.containerIdentifier, container)
                parameters.appendInteger(ParameterID.BrowseRequest.offset, offset)
                parameters.appendInteger(ParameterID.BrowseRequest.count, count)
            }
        case .browseResponse(let response):
            return ControlMessage(id: MessageID.browseResponse, capacity: Self.pageCapacity(items: response.items.count, sections: response.sections.count)) {
                Self.write(response, to: &$0)
            }
        case .playItem(let id, let item, let entry):
            return ControlMessage(id: MessageID.playItemRequest, capacity: 64) { parameters in
                parameters.appendInteger(ParameterID.PlayItemRequest.requestIdentifier, id)
                parameters.appendString(ParameterID.PlayItemRequest.itemIdentifier, item)
                if let entry { parameters.appendString(ParameterID.PlayItemRequest.imageRowEntryIdentifier, entry) }
            }
        case .requestStatus(let id, let status, let error):
            return ControlMessage(id: MessageID.requestStatus, capacity: 64) { parameters in
                parameters.appendInteger(ParameterID.RequestStatus.requestIdentifier, id)
                parameters.appendInteger(ParameterID.RequestStatus.status, status.rawValue)
                if let error { parameters.appendString(ParameterID.RequestStatus.errorText, error) }
            }
        case .remoteCommand(let id, let command):
            return ControlMessage(id: MessageID.remoteCommand, capacity: 32) { parameters in
                parameters.appendInteger(ParameterID.RemoteCommand.requestIdentifier, id)
                parameters.appendInteger(ParameterID.RemoteCommand.command, command.kind.rawValue)
                switch command {
                case .changePlaybackPosition(let ms), .skipForward(let ms), .skipBackward(let ms):
                    parameters.appendInteger(ParameterID.RemoteCommand.milliseconds, ms)
                case .changeRepeatMode(let mode): parameters.appendInteger(ParameterID.RemoteCommand.mode, mode.rawValue)
                case .changeShuffleMode(let mode): parameters.appendInteger(ParameterID.RemoteCommand.mode, mode.rawValue)
                case .seekForward(let begin), .seekBackward(let begin), .like(let begin), .dislike(let begin), .bookmark(let begin):
                    parameters.appendBool(ParameterID.RemoteCommand.active, begin)
                default: break
                }
            }
        case .advertisedCommands(let commands):
            return ControlMessage(id: MessageID.advertisedCommands, capacity: commands.count * 14) { parameters in
                for command in commands {
                    parameters.appendGroup(ParameterID.AdvertisedCommands.command) { members in
                        members.appendInteger(ParameterID.AdvertisedCommand.command, command.kind.rawValue)
                        members.appendBool(ParameterID.AdvertisedCommand.enabled, command.enabled)
                    }
                }
            }
        case .appInformation(let name, let hasContent):
            return ControlMessage(id: MessageID.mediaAppInformation, capacity: 16 + name.utf8.count) { parameters in
                parameters.appendString(ParameterID.MediaAppInformation.appName, name)
                parameters.appendBool(ParameterID.MediaAppInformation.hasContentTree, hasContent)
            }
        case .limits(let limits):
            return ControlMessage(id: MessageID.headUnitLimits, capacity: 32) { parameters in
                parameters.appendInteger(ParameterID.HeadUnitLimits.maximumTabs, UInt8(clamping: limits.maximumTabs))
                parameters.appendInteger(ParameterID.HeadUnitLimits.maximumPageSize, UInt16(clamping: limits.maximumPageSize))
                parameters.appendInteger(ParameterID.HeadUnitLimits.maximumImageRowImages, UInt8(clamping: limits.maximumImageRowImages))
                parameters.appendInteger(ParameterID.HeadUnitLimits.imageScale, UInt8(clamping: limits.imageScale))
            }
        case .queueRequest(let id, let offset, let count):
            return ControlMessage(id: MessageID.queueRequest, capacity: 32) { parameters in
                parameters.appendInteger(ParameterID.QueueRequest.requestIdentifier, id)
                parameters.appendInteger(ParameterID.QueueRequest.offset, offset)
                parameters.appendInteger(ParameterID.QueueRequest.count, count)
            }
        case .queueResponse(let response):
            return ControlMessage(id: MessageID.queueResponse, capacity: Self.pageCapacity(items: response.items.count, sections: 0)) {
                Self.write(response, to: &$0)
            }
        case .imageRequest(let id, let image, let scale):
            return ControlMessage(id: MessageID.imageRequest, capacity: 24 + image.utf8.count) { parameters in
                parameters.appendInteger(ParameterID.ImageRequest.requestIdentifier, id)
                parameters.appendString(ParameterID.ImageRequest.imageIdentifier, image)
                parameters.appendInteger(ParameterID.ImageRequest.scale, scale)
            }
        case .imageResponse(let id, let status, let transfer, let error):
            return ControlMessage(id: MessageID.imageResponse, capacity: 64) { parameters in
                parameters.appendInteger(ParameterID.ImageResponse.requestIdentifier, id)
                parameters.appendInteger(ParameterID.ImageResponse.status, status.rawValue)
                if let transfer { parameters.appendInteger(ParameterID.ImageResponse.fileTransferIdentifier, transfer) }
                if let error { parameters.appendString(ParameterID.ImageResponse.errorText, error) }
            }
        case .startNowPlayingUpdates(let selection):
            return ControlMessage(id: MessageID.startNowPlayingUpdates, capacity: 8 + 4 * (selection.mediaItem.count + selection.playback.count)) { parameters in
                parameters.appendGroup(ParameterID.NowPlayingUpdate.mediaItemAttributes) { members in
                    for id in selection.mediaItem.sorted() { members.appendEmpty(id) }
                }
                parameters.appendGroup(ParameterID.NowPlayingUpdate.playbackAttributes) { members in
                    for id in selection.playback.sorted() { members.appendEmpty(id) }
                }
            }
        case .stopNowPlayingUpdates:
            return ControlMessage(id: MessageID.stopNowPlayingUpdates)
        case .nowPlayingUpdate(let update):
            return update.message
        case .setNowPlayingInformation(let elapsed, let index):
            return ControlMessage(id: MessageID.setNowPlayingInformation, capacity: 16) { parameters in
                if let elapsed { parameters.appendInteger(ParameterID.SetNowPlayingInformation.elapsedTime, elapsed) }
                if let index { parameters.appendInteger(ParameterID.SetNowPlayingInformation.playbackQueueIndex, index) }
            }
        case .startHID(let message): return message.message
        case .accessoryHIDReport(let message): return message.message
        case .stopHID(let message): return message.message
        case .startMediaLibraryInformation: return ControlMessage(id: MessageID.startMediaLibraryInformation)
        case .mediaLibraryInformation(let libraries): return MediaLibraryCodec.information(libraries)
        case .stopMediaLibraryInformation: return ControlMessage(id: MessageID.stopMediaLibraryInformation)
        case .startMediaLibraryUpdates(let request): return MediaLibraryCodec.updateRequest(request)
        case .mediaLibraryUpdate(let update): return update.controlMessage
        case .stopMediaLibraryUpdates(let library):
            return ControlMessage(id: MessageID.stopMediaLibraryUpdates, capacity: 8 + library.utf8.count) { parameters in
                parameters.appendString(ParameterID.MediaLibraryNamed.uniqueIdentifier, library)
            }
        case .playMediaLibrary(let request): return request.controlMessage
        }
    }

    /// Room for a page of items and sections: a guess that fits typical
    /// rows (identifiers, a title and a subtitle of a few dozen bytes each),
    /// so that most pages are written with one allocation.
    static func pageCapacity(items: Int, sections: Int) -> Int { 48 + items * 160 + sections * 48 }

    /// A BrowseResponse's message on the wire, counted without writing it.
    static func encodedLength(of response: BrowseResponse) -> Int {
        var counter = ParameterLengthCounter()
        write(response, to: &counter)
        return ControlMessage.headerLength + counter.length
    }

    /// A QueueResponse's message on the wire, counted without writing it.
    static func encodedLength(of response: QueueResponse) -> Int {
        var counter = ParameterLengthCounter()
        write(response, to: &counter)
        return ControlMessage.headerLength + counter.length
    }

    /// A BrowseResponse's parameters, written or counted.
    static func write<Writer: ParameterWriter>(_ response: BrowseResponse, to parameters: inout Writer) {
        parameters.appendInteger(ParameterID.BrowseResponse.requestIdentifier, response.requestID)
        parameters.appendInteger(ParameterID.BrowseResponse.status, response.status.rawValue)
        parameters.appendInteger(ParameterID.BrowseResponse.totalCount, response.totalCount)
        parameters.appendInteger(ParameterID.BrowseResponse.offset, response.offset)
        for item in response.items { appendItem(item, id: ParameterID.BrowseResponse.item, to: &parameters) }
        for section in response.sections { appendSection(section, to: &parameters) }
        if let error = response.error { parameters.appendString(ParameterID.BrowseResponse.errorText, error) }
    }

    /// A QueueResponse's parameters, written or counted.
    static func write<Writer: ParameterWriter>(_ response: QueueResponse, to parameters: inout Writer) {
        parameters.appendInteger(ParameterID.QueueResponse.requestIdentifier, response.requestID)
        parameters.appendInteger(ParameterID.QueueResponse.status, response.status.rawValue)
        parameters.appendInteger(ParameterID.QueueResponse.totalCount, response.totalCount)
        parameters.appendInteger(ParameterID.QueueResponse.offset, response.offset)
        parameters.appendInteger(ParameterID.QueueResponse.currentIndex, response.currentIndex)
        for item in response.items { appendItem(item, id: ParameterID.QueueResponse.item, to: &parameters) }
        if let error = response.error { parameters.appendString(ParameterID.QueueResponse.errorText, error) }
    }

    /// An Item group of BrowseResponse or QueueResponse (`id` says which).
    static func appendItem<Writer: ParameterWriter>(_ item: ContentItem, id: UInt16, to parameters: inout Writer) {
        parameters.appendGroup(id) { members in
            members.appendString(ParameterID.ContentItem.itemIdentifier, item.id)
            members.appendInteger(ParameterID.ContentItem.itemKind, item.kind.rawValue)
            members.appendString(ParameterID.ContentItem.text, item.text)
            if let detail = item.detailText { members.appendString(ParameterID.ContentItem.detailText, detail) }
            if let image = item.imageID { members.appendString(ParameterID.ContentItem.imageIdentifier, image) }
            members.appendInteger(ParameterID.ContentItem.accessory, item.accessory.rawValue)
            if item.playingIndicator != .none { members.appendInteger(ParameterID.ContentItem.playingIndicator, item.playingIndicator.rawValue) }
            members.appendBool(ParameterID.ContentItem.enabled, item.isEnabled)
            if let value = item.appValue { members.appendBlob(ParameterID.ContentItem.appValue, value) }
            if let row = item.imageRow {
                members.appendGroup(ParameterID.ContentItem.imageRow) { rowMembers in
                    rowMembers.appendString(ParameterID.ImageRow.title, row.title)
                    for entry in row.entries {
                        rowMembers.appendGroup(ParameterID.ImageRow.image) { image in
                            image.appendString(ParameterID.ImageRowImage.entryIdentifier, entry.id)
                            image.appendString(ParameterID.ImageRowImage.imageIdentifier, entry.imageID)
                            image.appendBool(ParameterID.ImageRowImage.selectable, entry.selectable)
                        }
                    }
                }
            }
            members.appendInteger(ParameterID.ContentItem.section, item.section)
            if let badge = item.badge { members.appendString(ParameterID.ContentItem.badge, badge) }
        }
    }

    static func appendSection<Writer: ParameterWriter>(_ section: ContentSection, to parameters: inout Writer) {
        parameters.appendGroup(ParameterID.BrowseResponse.section) { members in
            let kind = ParameterID.Section.sectionKind
            members.appendInteger(ParameterID.Section.sectionIdentifier, section.id)
            switch section.kind {
            case .plain(let title):
                members.appendInteger(kind, UInt8(0))
                if let title { members.appendString(ParameterID.Section.title, title) }
            case .loading:
                members.appendInteger(kind, UInt8(1))
            case .playAll(let count):
                members.appendInteger(kind, UInt8(2))
                members.appendInteger(ParameterID.Section.itemCount, count)
            case .empty(let text):
                members.appendInteger(kind, UInt8(3))
                members.appendString(ParameterID.Section.title, text)
            case .loadFailed(let text):
                members.appendInteger(kind, UInt8(4))
                members.appendString(ParameterID.Section.title, text)
            }
        }
    }

    // MARK: Decoding

    /// The typed form of a control message, nil when it is not one of the
    /// media messages. Malformed messages throw with the reason.
    public init?(_ message: ControlMessage) throws(WireError) {
        let reader = MessageReader(message)
        switch message.id {
        case MessageID.browseRequest:
            self = .browseRequest(requestID: try reader.u32(ParameterID.BrowseRequest.requestIdentifier),
                                  containerID: try reader.string(ParameterID.BrowseRequest.containerIdentifier),
                                  offset: try reader.u32(ParameterID.BrowseRequest.offset), count: try reader.u16(ParameterID.BrowseRequest.count))
        case MessageID.browseResponse:
            self = .browseResponse(BrowseResponse(
                requestID: try reader.u32(ParameterID.BrowseResponse.requestIdentifier), status: try reader.status(ParameterID.BrowseResponse.status),
                totalCount: try reader.u32(ParameterID.BrowseResponse.totalCount), offset: try reader.u32(ParameterID.BrowseResponse.offset),
                items: try reader.all(ParameterID.BrowseResponse.item, Self.item),
                sections: try reader.all(ParameterID.BrowseResponse.section, Self.section).compactMap { $0 },
                error: try reader.optionalString(ParameterID.BrowseResponse.errorText)))
        case MessageID.playItemRequest:
            self = .playItem(requestID: try reader.u32(ParameterID.PlayItemRequest.requestIdentifier),
                             itemID: try reader.string(ParameterID.PlayItemRequest.itemIdentifier),
                             imageRowEntryID: try reader.optionalString(ParameterID.PlayItemRequest.imageRowEntryIdentifier))
        case MessageID.requestStatus:
            self = .requestStatus(requestID: try reader.u32(ParameterID.RequestStatus.requestIdentifier), try reader.status(ParameterID.RequestStatus.status),
                                  error: try reader.optionalString(ParameterID.RequestStatus.errorText))
        case MessageID.remoteCommand:
            let kindValue = try reader.u8(ParameterID.RemoteCommand.command)
            guard let kind = RemoteCommand.Kind(rawValue: kindValue) else {
                throw WireError(.badValue, "RemoteCommand has unknown command \(kindValue)")
            }
            self = .remoteCommand(requestID: try reader.u32(ParameterID.RemoteCommand.requestIdentifier), try Self.command(kind, reader))
        case MessageID.advertisedCommands:
            // A command of a kind this end does not know (a newer phone's) is
            // left out; the rest of the set still stands.
            self = .advertisedCommands(try reader.all(ParameterID.AdvertisedCommands.command) { parameter throws(WireError) -> AdvertisedCommand? in
                let entry = MessageReader(group: try parameter.group())
                let enabled = try entry.bool(ParameterID.AdvertisedCommand.enabled)
                return RemoteCommand.Kind(rawValue: try entry.u8(ParameterID.AdvertisedCommand.command)).map { AdvertisedCommand($0, enabled: enabled) }
            }.compactMap { $0 })
        case MessageID.mediaAppInformation:
            self = .appInformation(name: try reader.string(ParameterID.MediaAppInformation.appName),
                                   hasContentTree: try reader.bool(ParameterID.MediaAppInformation.hasContentTree))
        case MessageID.headUnitLimits:
            self = .limits(HeadUnitLimits(maximumTabs: Int(try reader.u8(ParameterID.HeadUnitLimits.maximumTabs)),
                                          maximumPageSize: Int(try reader.u16(ParameterID.HeadUnitLimits.maximumPageSize)),
                                          maximumImageRowImages: Int(try reader.u8(ParameterID.HeadUnitLimits.maximumImageRowImages)),
                                          imageScale: Int(try reader.u8(ParameterID.HeadUnitLimits.imageScale))))
        case MessageID.queueRequest:
            self = .queueRequest(requestID: try reader.u32(ParameterID.QueueRequest.requestIdentifier), offset: try reader.u32(ParameterID.QueueRequest.offset),
                                 count: try reader.u16(ParameterID.QueueRequest.count))
        case MessageID.queueResponse:
            self = .queueResponse(QueueResponse(
                requestID: try reader.u32(ParameterID.QueueResponse.requestIdentifier), status: try reader.status(ParameterID.QueueResponse.status),
                totalCount: try reader.u32(ParameterID.QueueResponse.totalCount), offset: try reader.u32(ParameterID.QueueResponse.offset),
                currentIndex: try reader.u32(ParameterID.QueueResponse.currentIndex),
                items: try reader.all(ParameterID.QueueResponse.item, Self.item),
                error: try reader.optionalString(ParameterID.QueueResponse.errorText)))
        case MessageID.imageRequest:
            self = .imageRequest(requestID: try reader.u32(ParameterID.ImageRequest.requestIdentifier),
                                 imageID: try reader.string(ParameterID.ImageRequest.imageIdentifier), scale: try reader.u8(ParameterID.ImageRequest.scale))
        case MessageID.imageResponse:
            let transfer = ParameterID.ImageResponse.fileTransferIdentifier
            self = .imageResponse(requestID: try reader.u32(ParameterID.ImageResponse.requestIdentifier), try reader.status(ParameterID.ImageResponse.status),
                                  transferID: message.parameter(transfer) == nil ? nil : try reader.u8(transfer),
                                  error: try reader.optionalString(ParameterID.ImageResponse.errorText))
        case MessageID.startNowPlayingUpdates:
            self = .startNowPlayingUpdates(try NowPlayingSelection(message))
        case MessageID.stopNowPlayingUpdates:
            self = .stopNowPlayingUpdates
        case MessageID.nowPlayingUpdate:
            self = .nowPlayingUpdate(try NowPlayingUpdate(message))
        case MessageID.setNowPlayingInformation:
            let elapsed = ParameterID.SetNowPlayingInformation.elapsedTime, index = ParameterID.SetNowPlayingInformation.playbackQueueIndex
            self = .setNowPlayingInformation(elapsedMilliseconds: message.parameter(elapsed) == nil ? nil : try reader.u32(elapsed),
                                             queueIndex: message.parameter(index) == nil ? nil : try reader.u32(index))
        case MessageID.startHID: self = .startHID(try StartHIDMessage(message))
        case MessageID.accessoryHIDReport: self = .accessoryHIDReport(try AccessoryHIDReportMessage(message))
        case MessageID.stopHID: self = .stopHID(try StopHIDMessage(message))
        case MessageID.startMediaLibraryInformation: self = .startMediaLibraryInformation
        case MessageID.mediaLibraryInformation: self = .mediaLibraryInformation(try MediaLibraryCodec.information(message))
        case MessageID.stopMediaLibraryInformation: self = .stopMediaLibraryInformation
        case MessageID.startMediaLibraryUpdates: self = .startMediaLibraryUpdates(try MediaLibraryCodec.updateRequest(message))
        case MessageID.mediaLibraryUpdate: self = .mediaLibraryUpdate(try MediaLibraryCodec.update(message))
        case MessageID.stopMediaLibraryUpdates: self = .stopMediaLibraryUpdates(libraryID: try reader.string(ParameterID.MediaLibraryNamed.uniqueIdentifier))
        case MessageID.playMediaLibraryCurrentSelection, MessageID.playMediaLibraryItems, MessageID.playMediaLibraryCollection, MessageID.playMediaLibrarySpecial:
            self = .playMediaLibrary(try MediaLibraryCodec.playRequest(message))
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
        case .changePlaybackPosition: return .changePlaybackPosition(milliseconds: try reader.u32(ParameterID.RemoteCommand.milliseconds))
        case .skipForward: return .skipForward(milliseconds: try reader.u32(ParameterID.RemoteCommand.milliseconds))
        case .skipBackward: return .skipBackward(milliseconds: try reader.u32(ParameterID.RemoteCommand.milliseconds))
        case .seekForward: return .seekForward(begin: try reader.bool(ParameterID.RemoteCommand.active))
        case .seekBackward: return .seekBackward(begin: try reader.bool(ParameterID.RemoteCommand.active))
        case .like: return .like(try reader.bool(ParameterID.RemoteCommand.active))
        case .dislike: return .dislike(try reader.bool(ParameterID.RemoteCommand.active))
        case .bookmark: return .bookmark(try reader.bool(ParameterID.RemoteCommand.active))
        case .changeRepeatMode:
            let value = try reader.u8(ParameterID.RemoteCommand.mode)
            guard let mode = RepeatMode(rawValue: value) else { throw WireError(.badValue, "repeat mode \(value) is not 0, 1 or 2") }
            return .changeRepeatMode(mode)
        case .changeShuffleMode:
            let value = try reader.u8(ParameterID.RemoteCommand.mode)
            guard let mode = ShuffleMode(rawValue: value) else { throw WireError(.badValue, "shuffle mode \(value) is not 0, 1 or 2") }
            return .changeShuffleMode(mode)
        }
    }

    static func item(_ parameter: Parameter) throws(WireError) -> ContentItem {
        let members = try parameter.group()
        let reader = MessageReader(group: members)
        guard let kind = ContentItem.Kind(rawValue: try reader.u8(ParameterID.ContentItem.itemKind)) else {
            throw WireError(.badValue, "item kind is not container or playable")
        }
        var row: ContentItem.ImageRow?
        if let rowParameter = members.first(where: { $0.id == ParameterID.ContentItem.imageRow }) {
            let rowReader = MessageReader(group: try rowParameter.group())
            row = ContentItem.ImageRow(
                title: try rowReader.string(ParameterID.ImageRow.title),
                entries: try rowReader.all(ParameterID.ImageRow.image) { entry throws(WireError) in
                    let entryReader = MessageReader(group: try entry.group())
                    return .init(id: try entryReader.string(ParameterID.ImageRowImage.entryIdentifier),
                                 imageID: try entryReader.string(ParameterID.ImageRowImage.imageIdentifier),
                                 selectable: try entryReader.bool(ParameterID.ImageRowImage.selectable))
                })
        }
        let indicator = ParameterID.ContentItem.playingIndicator
        return ContentItem(
            id: try reader.string(ParameterID.ContentItem.itemIdentifier), kind: kind, text: try reader.string(ParameterID.ContentItem.text),
            detailText: try reader.optionalString(ParameterID.ContentItem.detailText), imageID: try reader.optionalString(ParameterID.ContentItem.imageIdentifier),
            accessory: ContentItem.Accessory(rawValue: try reader.u8(ParameterID.ContentItem.accessory)) ?? ContentItem.Accessory.none,
            playingIndicator: members.contains { $0.id == indicator } ? ContentItem.PlayingIndicator(rawValue: try reader.u8(indicator)) ?? .none : .none,
            isEnabled: try reader.bool(ParameterID.ContentItem.enabled), appValue: members.first { $0.id == ParameterID.ContentItem.appValue }?.data,
            imageRow: row, section: try reader.u16(ParameterID.ContentItem.section), badge: try reader.optionalString(ParameterID.ContentItem.badge))
    }

    /// nil for a section of a kind this end does not know (a newer phone's):
    /// it is left out, and rows that refer to it show without one.
    static func section(_ parameter: Parameter) throws(WireError) -> ContentSection? {
        let reader = MessageReader(group: try parameter.group())
        let id = try reader.u16(ParameterID.Section.sectionIdentifier), title = ParameterID.Section.title
        switch try reader.u8(ParameterID.Section.sectionKind) {
        case 0: return ContentSection(id: id, kind: .plain(title: try reader.optionalString(title)))
        case 1: return ContentSection(id: id, kind: .loading)
        case 2: return ContentSection(id: id, kind: .playAll(itemCount: try reader.u32(ParameterID.Section.itemCount)))
        case 3: return ContentSection(id: id, kind: .empty(text: try reader.string(title)))
        case 4: return ContentSection(id: id, kind: .loadFailed(text: try reader.string(title)))
        default: return nil
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

/// The now-playing attributes a head unit asks for in StartNowPlayingUpdates:
/// each group lists the wanted ids as header-only parameters (IAP-FACTS.md).
/// The phone sends only these.
public struct NowPlayingSelection: Hashable, Sendable {
    /// Media item attribute ids (`ParameterID.MediaItem`).
    public var mediaItem: Set<UInt16>
    /// Playback attribute ids (`ParameterID.Playback`).
    public var playback: Set<UInt16>

    public init(mediaItem: Set<UInt16>, playback: Set<UInt16>) {
        self.mediaItem = mediaItem
        self.playback = playback
    }

    /// Every attribute the roles know, the dev-kit extensions included: what
    /// this project's head unit asks for, and what a StartNowPlayingUpdates
    /// without any list gets.
    public static let all = NowPlayingSelection(mediaItem: Set(NowPlayingUpdate.mediaAttributeIDs), playback: Set(NowPlayingUpdate.playbackAttributeIDs))

    init(_ message: ControlMessage) throws(WireError) {
        let mediaItem = message.parameter(ParameterID.NowPlayingUpdate.mediaItemAttributes)
        let playback = message.parameter(ParameterID.NowPlayingUpdate.playbackAttributes)
        guard mediaItem != nil || playback != nil else {
            self = .all
            return
        }
        self.mediaItem = Set(try mediaItem?.group().map(\.id) ?? [])
        self.playback = Set(try playback?.group().map(\.id) ?? [])
    }
}

/// A NowPlayingUpdate: each field is present only when the update carries
/// it (iAP2 updates may be partial; this project's phone sends every
/// attribute the head unit asked for).
public struct NowPlayingUpdate: Hashable, Sendable {
    public var info: NowPlayingInfo
    /// Media item and playback attributes present, each as its group's id
    /// << 16 | its own id (`ParameterID.NowPlayingUpdate`, `.MediaItem`,
    /// `.Playback`).
    public var present: Set<UInt32>
    /// The update carries a media item group (possibly empty: no item).
    public var hasMediaItemGroup: Bool
    /// Values the update carries that are out of range. An out-of-range
    /// playback status makes the state `.unknown`; other out-of-range values
    /// are not applied (the attribute is not in `present`).
    public var outOfRange: [OutOfRangeValue] = []

    static let mediaAttributeIDs: [UInt16] = [
        ParameterID.MediaItem.persistentIdentifier, ParameterID.MediaItem.title, ParameterID.MediaItem.playbackDurationInMilliseconds,
        ParameterID.MediaItem.albumTitle, ParameterID.MediaItem.artist, ParameterID.MediaItem.genre, ParameterID.MediaItem.artworkFileTransferIdentifier,
        ParameterID.MediaItem.devKitReleaseDate,
    ]
    static let playbackAttributeIDs: [UInt16] = [
        ParameterID.Playback.status, ParameterID.Playback.elapsedTimeInMilliseconds, ParameterID.Playback.queueIndex, ParameterID.Playback.queueCount,
        ParameterID.Playback.shuffleMode, ParameterID.Playback.repeatMode, ParameterID.Playback.appName, ParameterID.Playback.mediaLibraryUniqueIdentifier,
        ParameterID.Playback.speed,
        ParameterID.Playback.devKitPlaybackState, ParameterID.Playback.devKitDefaultPlaybackRate,
    ]

    static func key(_ group: UInt16, _ id: UInt16) -> UInt32 { UInt32(group) << 16 | UInt32(id) }
    static func mediaItemKey(_ id: UInt16) -> UInt32 { key(ParameterID.NowPlayingUpdate.mediaItemAttributes, id) }
    static func playbackKey(_ id: UInt16) -> UInt32 { key(ParameterID.NowPlayingUpdate.playbackAttributes, id) }

    /// An update of `info` carrying every attribute `selection` asks for
    /// (all of them by default); the media item group goes only when at
    /// least one of its attributes is asked for.
    public init(full info: NowPlayingInfo, selection: NowPlayingSelection = .all) {
        self.info = info
        let media = Self.mediaAttributeIDs.filter(selection.mediaItem.contains)
        present = Set(media.map(Self.mediaItemKey) + Self.playbackAttributeIDs.filter(selection.playback.contains).map(Self.playbackKey))
        hasMediaItemGroup = !media.isEmpty
    }

    /// The update as a message: the attributes in `present` that have a
    /// value, in their groups.
    var message: ControlMessage {
        ControlMessage(id: MessageID.nowPlayingUpdate, capacity: 256) { parameters in
            func media(_ id: UInt16) -> Bool { present.contains(Self.mediaItemKey(id)) }
            func playback(_ id: UInt16) -> Bool { present.contains(Self.playbackKey(id)) }
            if hasMediaItemGroup {
                parameters.appendGroup(ParameterID.NowPlayingUpdate.mediaItemAttributes) { group in
                    if media(ParameterID.MediaItem.persistentIdentifier), let id = info.itemID { group.appendInteger(ParameterID.MediaItem.persistentIdentifier, id) }
                    if media(ParameterID.MediaItem.title), let title = info.title { group.appendString(ParameterID.MediaItem.title, title) }
                    if media(ParameterID.MediaItem.playbackDurationInMilliseconds), let duration = info.durationMilliseconds {
                        group.appendInteger(ParameterID.MediaItem.playbackDurationInMilliseconds, duration)
                    }
                    if media(ParameterID.MediaItem.albumTitle), let album = info.albumTitle { group.appendString(ParameterID.MediaItem.albumTitle, album) }
                    if media(ParameterID.MediaItem.artist), let artist = info.artist { group.appendString(ParameterID.MediaItem.artist, artist) }
                    if media(ParameterID.MediaItem.genre), let genre = info.genre { group.appendString(ParameterID.MediaItem.genre, genre) }
                    if media(ParameterID.MediaItem.artworkFileTransferIdentifier), let artwork = info.artworkTransferID {
                        group.appendInteger(ParameterID.MediaItem.artworkFileTransferIdentifier, artwork)
                    }
                    if media(ParameterID.MediaItem.devKitReleaseDate), let date = info.releaseDate { group.appendString(ParameterID.MediaItem.devKitReleaseDate, date) }
                }
            }
            guard Self.playbackAttributeIDs.contains(where: playback) else { return }
            parameters.appendGroup(ParameterID.NowPlayingUpdate.playbackAttributes) { group in
                if playback(ParameterID.Playback.status) { group.appendInteger(ParameterID.Playback.status, Self.iAP2Status(info.state)) }
                if playback(ParameterID.Playback.elapsedTimeInMilliseconds) { group.appendInteger(ParameterID.Playback.elapsedTimeInMilliseconds, info.elapsedMilliseconds) }
                if playback(ParameterID.Playback.queueIndex), let index = info.queueIndex { group.appendInteger(ParameterID.Playback.queueIndex, index) }
                if playback(ParameterID.Playback.queueCount), let count = info.queueCount { group.appendInteger(ParameterID.Playback.queueCount, count) }
                if playback(ParameterID.Playback.shuffleMode) { group.appendInteger(ParameterID.Playback.shuffleMode, info.shuffleMode.rawValue) }
                if playback(ParameterID.Playback.repeatMode) { group.appendInteger(ParameterID.Playback.repeatMode, info.repeatMode.rawValue) }
                if playback(ParameterID.Playback.appName), let app = info.appName { group.appendString(ParameterID.Playback.appName, app) }
                if playback(ParameterID.Playback.mediaLibraryUniqueIdentifier), let library = info.mediaLibraryID {
                    group.appendString(ParameterID.Playback.mediaLibraryUniqueIdentifier, library)
                }
                if playback(ParameterID.Playback.speed) { group.appendInteger(ParameterID.Playback.speed, Self.hundredths(info.playbackRate)) }
                if playback(ParameterID.Playback.devKitPlaybackState) { group.appendInteger(ParameterID.Playback.devKitPlaybackState, info.state.rawValue) }
                if playback(ParameterID.Playback.devKitDefaultPlaybackRate) {
                    group.appendInteger(ParameterID.Playback.devKitDefaultPlaybackRate, Self.hundredths(info.defaultPlaybackRate))
                }
            }
        }
    }

    init(_ message: ControlMessage) throws(WireError) {
        let mediaItem = ParameterID.NowPlayingUpdate.mediaItemAttributes, playback = ParameterID.NowPlayingUpdate.playbackAttributes
        info = NowPlayingInfo()
        present = []
        hasMediaItemGroup = message.parameter(mediaItem) != nil
        var statusOutOfRange = false
        var extendedState: NowPlayingInfo.PlaybackState?
        for groupParameter in message.parameters where groupParameter.id == mediaItem || groupParameter.id == playback {
            let members = try groupParameter.group()
            let reader = MessageReader(group: members)
            for member in members {
                present.insert(Self.key(groupParameter.id, member.id))
                switch (groupParameter.id, member.id) {
                case (mediaItem, ParameterID.MediaItem.persistentIdentifier): info.itemID = try reader.u64(member.id)
                case (mediaItem, ParameterID.MediaItem.title): info.title = try reader.string(member.id)
                case (mediaItem, ParameterID.MediaItem.playbackDurationInMilliseconds): info.durationMilliseconds = try reader.u32(member.id)
                case (mediaItem, ParameterID.MediaItem.albumTitle): info.albumTitle = try reader.string(member.id)
                case (mediaItem, ParameterID.MediaItem.artist): info.artist = try reader.string(member.id)
                case (mediaItem, ParameterID.MediaItem.genre): info.genre = try reader.string(member.id)
                case (mediaItem, ParameterID.MediaItem.artworkFileTransferIdentifier): info.artworkTransferID = try reader.u8(member.id)
                case (mediaItem, ParameterID.MediaItem.devKitReleaseDate): info.releaseDate = try reader.string(member.id)
                case (playback, ParameterID.Playback.status):
                    switch try reader.u8(member.id) {
                    case 0: info.state = .stopped
                    case 1: info.state = .playing
                    case 2, 3, 4: info.state = .paused
                    case let value:
                        info.state = .unknown
                        statusOutOfRange = true
                        outOfRange.append(OutOfRangeValue(.playbackStatus, value: UInt64(value)))
                    }
                case (playback, ParameterID.Playback.elapsedTimeInMilliseconds): info.elapsedMilliseconds = try reader.u32(member.id)
                case (playback, ParameterID.Playback.queueIndex): info.queueIndex = try reader.u32(member.id)
                case (playback, ParameterID.Playback.queueCount): info.queueCount = try reader.u32(member.id)
                case (playback, ParameterID.Playback.shuffleMode):
                    let value = try reader.u8(member.id)
                    if let mode = ShuffleMode(rawValue: value) { info.shuffleMode = mode } else {
                        present.remove(Self.playbackKey(ParameterID.Playback.shuffleMode))
                        outOfRange.append(OutOfRangeValue(.shuffleMode, value: UInt64(value)))
                    }
                case (playback, ParameterID.Playback.repeatMode):
                    let value = try reader.u8(member.id)
                    if let mode = RepeatMode(rawValue: value) { info.repeatMode = mode } else {
                        present.remove(Self.playbackKey(ParameterID.Playback.repeatMode))
                        outOfRange.append(OutOfRangeValue(.repeatMode, value: UInt64(value)))
                    }
                case (playback, ParameterID.Playback.appName): info.appName = try reader.string(member.id)
                case (playback, ParameterID.Playback.mediaLibraryUniqueIdentifier): info.mediaLibraryID = try reader.string(member.id)
                case (playback, ParameterID.Playback.speed): info.playbackRate = Double(try reader.u16(member.id)) / 100
                case (playback, ParameterID.Playback.devKitPlaybackState):
                    let value = try reader.u8(member.id)
                    if let state = NowPlayingInfo.PlaybackState(rawValue: value) { extendedState = state } else {
                        outOfRange.append(OutOfRangeValue(.playbackState, value: UInt64(value)))
                    }
                case (playback, ParameterID.Playback.devKitDefaultPlaybackRate): info.defaultPlaybackRate = Double(try reader.u16(member.id)) / 100
                default: break
                }
            }
        }
        // The extended state refines a valid status (interrupted is paused
        // there); after an out-of-range status the state stays unknown.
        if statusOutOfRange {
            present.remove(Self.playbackKey(ParameterID.Playback.devKitPlaybackState))
        } else if let extendedState {
            info.state = extendedState
        } else {
            present.remove(Self.playbackKey(ParameterID.Playback.devKitPlaybackState))
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
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.persistentIdentifier)) { result.itemID = info.itemID }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.title)) { result.title = info.title }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.playbackDurationInMilliseconds)) { result.durationMilliseconds = info.durationMilliseconds }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.albumTitle)) { result.albumTitle = info.albumTitle }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.artist)) { result.artist = info.artist }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.genre)) { result.genre = info.genre }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.artworkFileTransferIdentifier)) { result.artworkTransferID = info.artworkTransferID }
        if present.contains(Self.mediaItemKey(ParameterID.MediaItem.devKitReleaseDate)) { result.releaseDate = info.releaseDate }
        if present.contains(Self.playbackKey(ParameterID.Playback.status)) || present.contains(Self.playbackKey(ParameterID.Playback.devKitPlaybackState)) {
            result.state = info.state
        }
        if present.contains(Self.playbackKey(ParameterID.Playback.elapsedTimeInMilliseconds)) { result.elapsedMilliseconds = info.elapsedMilliseconds }
        if present.contains(Self.playbackKey(ParameterID.Playback.queueIndex)) { result.queueIndex = info.queueIndex }
        if present.contains(Self.playbackKey(ParameterID.Playback.queueCount)) { result.queueCount = info.queueCount }
        if present.contains(Self.playbackKey(ParameterID.Playback.shuffleMode)) { result.shuffleMode = info.shuffleMode }
        if present.contains(Self.playbackKey(ParameterID.Playback.repeatMode)) { result.repeatMode = info.repeatMode }
        if present.contains(Self.playbackKey(ParameterID.Playback.appName)) { result.appName = info.appName }
        if present.contains(Self.playbackKey(ParameterID.Playback.mediaLibraryUniqueIdentifier)) { result.mediaLibraryID = info.mediaLibraryID }
        if present.contains(Self.playbackKey(ParameterID.Playback.speed)) { result.playbackRate = info.playbackRate }
        if present.contains(Self.playbackKey(ParameterID.Playback.devKitDefaultPlaybackRate)) { result.defaultPlaybackRate = info.defaultPlaybackRate }
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
    let parameters: ParameterList
    /// The message's id, to name it in errors; 0 for a group's members.
    let messageID: UInt16

    init(_ message: ControlMessage) {
        parameters = message.parameters
        messageID = message.id
    }

    init(group members: ParameterList) {
        parameters = members
        messageID = 0
    }

    private func parameter(_ id: UInt16) throws(WireError) -> Parameter {
        guard let parameter = parameters.first(withID: id) else {
            let name = MessageCatalog.message(messageID)?.name ?? "message 0x\(String(messageID, radix: 16))"
            throw WireError(.truncated, "\(name) lacks parameter \(id)")
        }
        return parameter
    }

    /// Every parameter with `id` (a repeated parameter is a list), each read
    /// by `read`, into an array allocated once.
    func all<T>(_ id: UInt16, _ read: (Parameter) throws(WireError) -> T) throws(WireError) -> [T] {
        var result: [T] = []
        result.reserveCapacity(parameters.count(withID: id))
        for parameter in parameters where parameter.id == id { result.append(try read(parameter)) }
        return result
    }

    func u8(_ id: UInt16) throws(WireError) -> UInt8 { try parameter(id).integer(as: UInt8.self) }
    func u16(_ id: UInt16) throws(WireError) -> UInt16 { try parameter(id).integer(as: UInt16.self) }
    func u32(_ id: UInt16) throws(WireError) -> UInt32 { try parameter(id).integer(as: UInt32.self) }
    func u64(_ id: UInt16) throws(WireError) -> UInt64 { try parameter(id).integer(as: UInt64.self) }
    func bool(_ id: UInt16) throws(WireError) -> Bool { try parameter(id).bool() }
    func string(_ id: UInt16) throws(WireError) -> String { try parameter(id).string() }
    func optionalString(_ id: UInt16) throws(WireError) -> String? {
        try parameters.first(withID: id)?.string()
    }
    func status(_ id: UInt16) throws(WireError) -> RequestStatus {
        let value = try u8(id)
        guard let status = RequestStatus(rawValue: value) else { throw WireError(.badValue, "status \(value) is unknown") }
        return status
    }
}
