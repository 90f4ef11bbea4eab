import Testing
import IAPWire
@testable import IAPRoles

/// The media messages are written in place now; their bytes must be what
/// the parameter-by-parameter form wrote, rebuilt here from `Parameter`s.
@Suite struct MediaMessageBytesTests {
    static let row = ContentItem(id: "track:kind-of-blue:3", kind: .playable, text: "Blue in Green", detailText: "5:37", imageID: "art:kind-of-blue",
                                 playingIndicator: .leading, isEnabled: false, appValue: [1, 2, 3],
                                 imageRow: .init(title: "Sessions", entries: [.init(id: "e1", imageID: "i1"), .init(id: "e2", imageID: "i2", selectable: false)]),
                                 section: 2, badge: "new")

    static func itemParameter(_ item: ContentItem, id: UInt16) throws -> Parameter {
        var members: [Parameter] = [.string(ParameterID.ContentItem.itemIdentifier, item.id), .uint8(ParameterID.ContentItem.itemKind, item.kind.rawValue),
                                    .string(ParameterID.ContentItem.text, item.text)]
        if let detail = item.detailText { members.append(.string(ParameterID.ContentItem.detailText, detail)) }
        if let image = item.imageID { members.append(.string(ParameterID.ContentItem.imageIdentifier, image)) }
        members.append(.uint8(ParameterID.ContentItem.accessory, item.accessory.rawValue))
        if item.playingIndicator != .none { members.append(.uint8(ParameterID.ContentItem.playingIndicator, item.playingIndicator.rawValue)) }
        members.append(.bool(ParameterID.ContentItem.enabled, item.isEnabled))
        if let value = item.appValue { members.append(.blob(ParameterID.ContentItem.appValue, value)) }
        if let row = item.imageRow {
            members.append(try .group(ParameterID.ContentItem.imageRow, [.string(ParameterID.ImageRow.title, row.title)] + row.entries.map { entry in
                try .group(ParameterID.ImageRow.image, [.string(ParameterID.ImageRowImage.entryIdentifier, entry.id),
                                                        .string(ParameterID.ImageRowImage.imageIdentifier, entry.imageID),
                                                        .bool(ParameterID.ImageRowImage.selectable, entry.selectable)])
            }))
        }
        members.append(.uint16(ParameterID.ContentItem.section, item.section))
        if let badge = item.badge { members.append(.string(ParameterID.ContentItem.badge, badge)) }
        return try .group(id, members)
    }

    @Test func browseResponseBytesAreUnchanged() throws {
        let plain = ContentItem(id: "album:kind-of-blue", kind: .container, text: "Kind of Blue")
        let response = BrowseResponse(requestID: 7, status: .success, totalCount: 12, offset: 6, items: [Self.row, plain],
                                      sections: [.init(id: 1, kind: .plain(title: "Side A")), .init(id: 2, kind: .playAll(itemCount: 5)),
                                                 .init(id: 3, kind: .loading), .init(id: 4, kind: .empty(text: "none")),
                                                 .init(id: 5, kind: .loadFailed(text: "gone")), .init(id: 6, kind: .plain(title: nil))],
                                      error: "partial")
        let sectionKind = ParameterID.Section.sectionKind, title = ParameterID.Section.title
        func section(_ id: UInt16, _ kind: UInt8, _ rest: [Parameter]) throws -> Parameter {
            try .group(ParameterID.BrowseResponse.section, [.uint16(ParameterID.Section.sectionIdentifier, id), .uint8(sectionKind, kind)] + rest)
        }
        let reference = ControlMessage(id: MessageID.browseResponse, parameters: [
            .uint32(ParameterID.BrowseResponse.requestIdentifier, 7), .uint8(ParameterID.BrowseResponse.status, RequestStatus.success.rawValue),
            .uint32(ParameterID.BrowseResponse.totalCount, 12), .uint32(ParameterID.BrowseResponse.offset, 6),
            try Self.itemParameter(Self.row, id: ParameterID.BrowseResponse.item), try Self.itemParameter(plain, id: ParameterID.BrowseResponse.item),
            try section(1, 0, [.string(title, "Side A")]), try section(2, 2, [.uint32(ParameterID.Section.itemCount, 5)]), try section(3, 1, []),
            try section(4, 3, [.string(title, "none")]), try section(5, 4, [.string(title, "gone")]), try section(6, 0, []),
            .string(ParameterID.BrowseResponse.errorText, "partial"),
        ])
        let message = MediaMessage.browseResponse(response).controlMessage
        #expect(try message.encoded() == reference.encoded())
        #expect(try MediaMessage(ControlMessage(decoding: message.encoded())) == .browseResponse(response))
    }

    @Test func requestAndNowPlayingBytesAreUnchanged() throws {
        let request = ControlMessage(id: MessageID.browseRequest, parameters: [
            .uint32(ParameterID.BrowseRequest.requestIdentifier, 9), .string(ParameterID.BrowseRequest.containerIdentifier, "album:kind-of-blue"),
            .uint32(ParameterID.BrowseRequest.offset, 0), .uint16(ParameterID.BrowseRequest.count, 6),
        ])
        #expect(try MediaMessage.browseRequest(requestID: 9, containerID: "album:kind-of-blue", offset: 0, count: 6).controlMessage.encoded() == request.encoded())

        let info = NowPlayingInfo(itemID: 7, title: "Blue in Green", artist: "Miles Davis", albumTitle: "Kind of Blue", genre: "Jazz",
                                  durationMilliseconds: 337_000, elapsedMilliseconds: 42_000, playbackRate: 1, queueIndex: 2,
                                  queueCount: 5, state: .playing, appName: "iap-devkit Music")
        let update = ControlMessage(id: MessageID.nowPlayingUpdate, parameters: [
            try .group(ParameterID.NowPlayingUpdate.mediaItemAttributes, [
                .uint64(ParameterID.MediaItem.persistentIdentifier, 7), .string(ParameterID.MediaItem.title, "Blue in Green"),
                .uint32(ParameterID.MediaItem.playbackDurationInMilliseconds, 337_000), .string(ParameterID.MediaItem.albumTitle, "Kind of Blue"),
                .string(ParameterID.MediaItem.artist, "Miles Davis"), .string(ParameterID.MediaItem.genre, "Jazz"),
            ]),
            try .group(ParameterID.NowPlayingUpdate.playbackAttributes, [
                .uint8(ParameterID.Playback.status, 1), .uint32(ParameterID.Playback.elapsedTimeInMilliseconds, 42_000),
                .uint32(ParameterID.Playback.queueIndex, 2), .uint32(ParameterID.Playback.queueCount, 5),
                .uint8(ParameterID.Playback.shuffleMode, info.shuffleMode.rawValue), .uint8(ParameterID.Playback.repeatMode, info.repeatMode.rawValue),
                .string(ParameterID.Playback.appName, "iap-devkit Music"), .uint16(ParameterID.Playback.speed, 100),
                .uint8(ParameterID.Playback.devKitPlaybackState, info.state.rawValue), .uint16(ParameterID.Playback.devKitDefaultPlaybackRate, 100),
            ]),
        ])
        #expect(try MediaMessage.nowPlayingUpdate(NowPlayingUpdate(full: info)).controlMessage.encoded() == update.encoded())
    }
}
