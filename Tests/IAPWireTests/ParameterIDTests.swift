import Testing
import IAPWire

/// `ParameterID` is the one definition of the parameter ids the stack uses,
/// and the catalog's rows are written with it, so each constant is pinned
/// here to its wire value (the catalog's before the constants existed) and
/// the catalog must name that parameter as the protocol does.
@Suite struct ParameterIDTests {
    /// One constant: the message it belongs to, the group parameters that
    /// lead from the message to its parent (empty for a top-level one), its
    /// wire value and the catalog's name for it.
    struct Row: Sendable, CustomTestStringConvertible {
        let message: UInt16
        let groups: [UInt16]
        let constant: UInt16
        let wire: UInt16
        let name: String

        init(_ message: UInt16, _ groups: [UInt16], _ constant: UInt16, _ wire: UInt16, _ name: String) {
            self.message = message
            self.groups = groups
            self.constant = constant
            self.wire = wire
            self.name = name
        }

        init(_ message: UInt16, _ constant: UInt16, _ wire: UInt16, _ name: String) { self.init(message, [], constant, wire, name) }

        var path: String { (["0x" + String(message, radix: 16, uppercase: true)] + groups.map(String.init)).joined(separator: "/") }
        var testDescription: String { "\(path) \(wire) \(name)" }
    }

    static let authentication: [Row] = [
        Row(MessageID.authenticationCertificate, ParameterID.AuthenticationCertificate.certificate, 0, "AuthenticationCertificate"),
        Row(MessageID.requestAuthenticationChallengeResponse, ParameterID.RequestAuthenticationChallengeResponse.challenge, 0, "AuthenticationChallenge"),
        Row(MessageID.authenticationResponse, ParameterID.AuthenticationResponse.response, 0, "AuthenticationResponse"),
        Row(MessageID.accessoryAuthenticationSerialNumber, ParameterID.AccessoryAuthenticationSerialNumber.serialNumber, 0, "SerialNumber"),
    ]

    static let identification: [Row] = {
        let message = MessageID.identificationInformation
        typealias Information = ParameterID.IdentificationInformation
        var rows = [
            Row(message, Information.name, 0, "Name"),
            Row(message, Information.modelIdentifier, 1, "ModelIdentifier"),
            Row(message, Information.manufacturer, 2, "Manufacturer"),
            Row(message, Information.serialNumber, 3, "SerialNumber"),
            Row(message, Information.firmwareVersion, 4, "FirmwareVersion"),
            Row(message, Information.hardwareVersion, 5, "HardwareVersion"),
            Row(message, Information.messagesSentByAccessory, 6, "MessagesSentByAccessory"),
            Row(message, Information.messagesReceivedFromDevice, 7, "MessagesReceivedFromDevice"),
            Row(message, Information.powerProvidingCapability, 8, "PowerProvidingCapability"),
            Row(message, Information.maximumCurrentDrawnFromDevice, 9, "MaximumCurrentDrawnFromDevice"),
            Row(message, Information.supportedExternalAccessoryProtocol, 10, "SupportedExternalAccessoryProtocol"),
            Row(message, Information.appMatchTeamID, 11, "AppMatchTeamID"),
            Row(message, Information.currentLanguage, 12, "CurrentLanguage"),
            Row(message, Information.supportedLanguage, 13, "SupportedLanguage"),
            Row(message, Information.serialTransportComponent, 14, "SerialTransportComponent"),
            Row(message, Information.usbDeviceTransportComponent, 15, "USBDeviceTransportComponent"),
            Row(message, Information.usbHostTransportComponent, 16, "USBHostTransportComponent"),
            Row(message, Information.bluetoothTransportComponent, 17, "BluetoothTransportComponent"),
            Row(message, Information.iAP2HIDComponent, 18, "iAP2HIDComponent"),
        ]
        let externalAccessory = [Information.supportedExternalAccessoryProtocol]
        rows += [
            Row(message, externalAccessory, ParameterID.ExternalAccessoryProtocol.identifier, 0, "ExternalAccessoryProtocolIdentifier"),
            Row(message, externalAccessory, ParameterID.ExternalAccessoryProtocol.name, 1, "ExternalAccessoryProtocolName"),
            Row(message, externalAccessory, ParameterID.ExternalAccessoryProtocol.matchAction, 2, "ExternalAccessoryProtocolMatchAction"),
            Row(message, externalAccessory, ParameterID.ExternalAccessoryProtocol.nativeTransportComponentIdentifier, 3, "NativeTransportComponentIdentifier"),
        ]
        let transports = [Information.serialTransportComponent, Information.usbDeviceTransportComponent, Information.usbHostTransportComponent,
                          Information.bluetoothTransportComponent]
        for transport in transports {
            rows += [
                Row(message, [transport], ParameterID.TransportComponent.identifier, 0, "TransportComponentIdentifier"),
                Row(message, [transport], ParameterID.TransportComponent.name, 1, "TransportComponentName"),
                Row(message, [transport], ParameterID.TransportComponent.supportsiAP2Connection, 2, "TransportSupportsiAP2Connection"),
            ]
        }
        rows += [
            Row(message, [Information.usbDeviceTransportComponent], ParameterID.TransportComponent.usbDeviceSupportedAudioSampleRate, 3,
                "USBDeviceSupportedAudioSampleRate"),
            Row(message, [Information.usbHostTransportComponent], ParameterID.TransportComponent.usbHostCarPlayInterfaceNumber, 3,
                "USBHostTransportCarPlayInterfaceNumber"),
            Row(message, [Information.bluetoothTransportComponent], ParameterID.TransportComponent.bluetoothMediaAccessControlAddress, 3,
                "BluetoothTransportMediaAccessControlAddress"),
            Row(message, [Information.iAP2HIDComponent], ParameterID.HIDComponent.identifier, 0, "HIDComponentIdentifier"),
            Row(message, [Information.iAP2HIDComponent], ParameterID.HIDComponent.name, 1, "HIDComponentName"),
            Row(message, [Information.iAP2HIDComponent], ParameterID.HIDComponent.function, 2, "HIDComponentFunction"),
        ]
        return rows
    }()

    static let nowPlaying: [Row] = {
        let update = MessageID.nowPlayingUpdate
        let media = [ParameterID.NowPlayingUpdate.mediaItemAttributes], playback = [ParameterID.NowPlayingUpdate.playbackAttributes]
        return [
            Row(update, ParameterID.NowPlayingUpdate.mediaItemAttributes, 0, "MediaItemAttributes"),
            Row(update, ParameterID.NowPlayingUpdate.playbackAttributes, 1, "PlaybackAttributes"),
            Row(update, media, ParameterID.MediaItem.persistentIdentifier, 0, "MediaItemPersistentIdentifier"),
            Row(update, media, ParameterID.MediaItem.title, 1, "MediaItemTitle"),
            Row(update, media, ParameterID.MediaItem.mediaType, 2, "MediaItemMediaType"),
            Row(update, media, ParameterID.MediaItem.rating, 3, "MediaItemRating"),
            Row(update, media, ParameterID.MediaItem.playbackDurationInMilliseconds, 4, "MediaItemPlaybackDurationInMilliseconds"),
            Row(update, media, ParameterID.MediaItem.albumPersistentIdentifier, 5, "MediaItemAlbumPersistentIdentifier"),
            Row(update, media, ParameterID.MediaItem.albumTitle, 6, "MediaItemAlbumTitle"),
            Row(update, media, ParameterID.MediaItem.albumTrackNumber, 7, "MediaItemAlbumTrackNumber"),
            Row(update, media, ParameterID.MediaItem.albumTrackCount, 8, "MediaItemAlbumTrackCount"),
            Row(update, media, ParameterID.MediaItem.albumDiscNumber, 9, "MediaItemAlbumDiscNumber"),
            Row(update, media, ParameterID.MediaItem.albumDiscCount, 10, "MediaItemAlbumDiscCount"),
            Row(update, media, ParameterID.MediaItem.artistPersistentIdentifier, 11, "MediaItemArtistPersistentIdentifier"),
            Row(update, media, ParameterID.MediaItem.artist, 12, "MediaItemArtist"),
            Row(update, media, ParameterID.MediaItem.albumArtistPersistentIdentifier, 13, "MediaItemAlbumArtistPersistentIdentifier"),
            Row(update, media, ParameterID.MediaItem.albumArtist, 14, "MediaItemAlbumArtist"),
            Row(update, media, ParameterID.MediaItem.genrePersistentIdentifier, 15, "MediaItemGenrePersistentIdentifier"),
            Row(update, media, ParameterID.MediaItem.genre, 16, "MediaItemGenre"),
            Row(update, media, ParameterID.MediaItem.composerPersistentIdentifier, 17, "MediaItemComposerPersistentIdentifier"),
            Row(update, media, ParameterID.MediaItem.composer, 18, "MediaItemComposer"),
            Row(update, media, ParameterID.MediaItem.isPartOfCompilation, 19, "MediaItemIsPartOfCompilation"),
            Row(update, media, ParameterID.MediaItem.isLikeSupported, 21, "MediaItemIsLikeSupported"),
            Row(update, media, ParameterID.MediaItem.isBanSupported, 22, "MediaItemIsBanSupported"),
            Row(update, media, ParameterID.MediaItem.isLiked, 23, "MediaItemIsLiked"),
            Row(update, media, ParameterID.MediaItem.isBanned, 24, "MediaItemIsBanned"),
            Row(update, media, ParameterID.MediaItem.isResidentOnDevice, 25, "MediaItemIsResidentOnDevice"),
            Row(update, media, ParameterID.MediaItem.artworkFileTransferIdentifier, 26, "MediaItemArtworkFileTransferIdentifier"),
            Row(update, media, ParameterID.MediaItem.chapterCount, 27, "MediaItemChapterCount"),
            Row(update, media, ParameterID.MediaItem.devKitReleaseDate, 0x4000, "DevKitReleaseDate"),
            Row(update, playback, ParameterID.Playback.status, 0, "PlaybackStatus"),
            Row(update, playback, ParameterID.Playback.elapsedTimeInMilliseconds, 1, "PlaybackElapsedTimeInMilliseconds"),
            Row(update, playback, ParameterID.Playback.queueIndex, 2, "PlaybackQueueIndex"),
            Row(update, playback, ParameterID.Playback.queueCount, 3, "PlaybackQueueCount"),
            Row(update, playback, ParameterID.Playback.queueChapterIndex, 4, "PlaybackQueueChapterIndex"),
            Row(update, playback, ParameterID.Playback.shuffleMode, 5, "PlaybackShuffleMode"),
            Row(update, playback, ParameterID.Playback.repeatMode, 6, "PlaybackRepeatMode"),
            Row(update, playback, ParameterID.Playback.appName, 7, "PlaybackAppName"),
            Row(update, playback, ParameterID.Playback.mediaLibraryUniqueIdentifier, 8, "PlaybackMediaLibraryUniqueIdentifier"),
            Row(update, playback, ParameterID.Playback.appleMusicRadioAd, 9, "PlaybackAppleMusicRadioAd"),
            Row(update, playback, ParameterID.Playback.appleMusicRadioStationName, 10, "PlaybackAppleMusicRadioStationName"),
            Row(update, playback, ParameterID.Playback.speed, 12, "PlaybackSpeed"),
            Row(update, playback, ParameterID.Playback.setElapsedTimeAvailable, 13, "SetElapsedTimeAvailable"),
            Row(update, playback, ParameterID.Playback.queueListAvail, 14, "PlaybackQueueListAvail"),
            Row(update, playback, ParameterID.Playback.queueListTransferID, 15, "PlaybackQueueListTransferID"),
            Row(update, playback, ParameterID.Playback.appBundleID, 16, "PlaybackAppBundleID"),
            Row(update, playback, ParameterID.Playback.queueListContentTransfer, 17, "PlaybackQueueListContentTransfer"),
            Row(update, playback, ParameterID.Playback.devKitPlaybackState, 0x4000, "DevKitPlaybackState"),
            Row(update, playback, ParameterID.Playback.devKitDefaultPlaybackRate, 0x4001, "DevKitDefaultPlaybackRate"),
            Row(MessageID.setNowPlayingInformation, ParameterID.SetNowPlayingInformation.elapsedTime, 0, "ElapsedTime"),
            Row(MessageID.setNowPlayingInformation, ParameterID.SetNowPlayingInformation.playbackQueueIndex, 1, "PlaybackQueueIndex"),
            Row(MessageID.setNowPlayingInformation, ParameterID.SetNowPlayingInformation.playbackQueueListContentTransferStartIndex, 2,
                "PlaybackQueueListContentTransferStartIndex"),
        ]
    }()

    static let hid: [Row] = [
        Row(MessageID.startHID, ParameterID.StartHID.hidComponentIdentifier, 0, "HIDComponentIdentifier"),
        Row(MessageID.startHID, ParameterID.StartHID.vendorIdentifier, 1, "VendorIdentifier"),
        Row(MessageID.startHID, ParameterID.StartHID.productIdentifier, 2, "ProductIdentifier"),
        Row(MessageID.startHID, ParameterID.StartHID.localizedKeyboardCountryCode, 3, "LocalizedKeyboardCountryCode"),
        Row(MessageID.startHID, ParameterID.StartHID.hidReportDescriptor, 4, "HIDReportDescriptor"),
        Row(MessageID.deviceHIDReport, ParameterID.DeviceHIDReport.hidComponentIdentifier, 0, "HIDComponentIdentifier"),
        Row(MessageID.deviceHIDReport, ParameterID.DeviceHIDReport.hidReport, 1, "HIDReport"),
        Row(MessageID.accessoryHIDReport, ParameterID.AccessoryHIDReport.hidComponentIdentifier, 0, "HIDComponentIdentifier"),
        Row(MessageID.accessoryHIDReport, ParameterID.AccessoryHIDReport.hidReport, 1, "HIDReport"),
        Row(MessageID.stopHID, ParameterID.StopHID.hidComponentIdentifier, 0, "HIDComponentIdentifier"),
    ]

    /// An Item group's members, under BrowseResponse and QueueResponse alike.
    static func contentItem(_ message: UInt16, item: UInt16) -> [Row] {
        let row = [item, ParameterID.ContentItem.imageRow], image = row + [ParameterID.ImageRow.image]
        return [
            Row(message, [item], ParameterID.ContentItem.itemIdentifier, 0, "ItemIdentifier"),
            Row(message, [item], ParameterID.ContentItem.itemKind, 1, "ItemKind"),
            Row(message, [item], ParameterID.ContentItem.text, 2, "Text"),
            Row(message, [item], ParameterID.ContentItem.detailText, 3, "DetailText"),
            Row(message, [item], ParameterID.ContentItem.imageIdentifier, 4, "ImageIdentifier"),
            Row(message, [item], ParameterID.ContentItem.accessory, 5, "Accessory"),
            Row(message, [item], ParameterID.ContentItem.playingIndicator, 6, "PlayingIndicator"),
            Row(message, [item], ParameterID.ContentItem.enabled, 7, "Enabled"),
            Row(message, [item], ParameterID.ContentItem.appValue, 8, "AppValue"),
            Row(message, [item], ParameterID.ContentItem.imageRow, 9, "ImageRow"),
            Row(message, [item], ParameterID.ContentItem.section, 10, "Section"),
            Row(message, [item], ParameterID.ContentItem.badge, 11, "Badge"),
            Row(message, row, ParameterID.ImageRow.title, 0, "Title"),
            Row(message, row, ParameterID.ImageRow.image, 1, "Image"),
            Row(message, image, ParameterID.ImageRowImage.entryIdentifier, 0, "EntryIdentifier"),
            Row(message, image, ParameterID.ImageRowImage.imageIdentifier, 1, "ImageIdentifier"),
            Row(message, image, ParameterID.ImageRowImage.selectable, 2, "Selectable"),
        ]
    }

    static let devKitExtension: [Row] = [
        Row(MessageID.browseRequest, ParameterID.BrowseRequest.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.browseRequest, ParameterID.BrowseRequest.containerIdentifier, 1, "ContainerIdentifier"),
        Row(MessageID.browseRequest, ParameterID.BrowseRequest.offset, 2, "Offset"),
        Row(MessageID.browseRequest, ParameterID.BrowseRequest.count, 3, "Count"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.status, 1, "Status"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.totalCount, 2, "TotalCount"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.offset, 3, "Offset"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.item, 4, "Item"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.section, 5, "Section"),
        Row(MessageID.browseResponse, ParameterID.BrowseResponse.errorText, 6, "ErrorText"),
        Row(MessageID.browseResponse, [ParameterID.BrowseResponse.section], ParameterID.Section.sectionIdentifier, 0, "SectionIdentifier"),
        Row(MessageID.browseResponse, [ParameterID.BrowseResponse.section], ParameterID.Section.sectionKind, 1, "SectionKind"),
        Row(MessageID.browseResponse, [ParameterID.BrowseResponse.section], ParameterID.Section.title, 2, "Title"),
        Row(MessageID.browseResponse, [ParameterID.BrowseResponse.section], ParameterID.Section.itemCount, 3, "ItemCount"),
        Row(MessageID.playItemRequest, ParameterID.PlayItemRequest.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.playItemRequest, ParameterID.PlayItemRequest.itemIdentifier, 1, "ItemIdentifier"),
        Row(MessageID.playItemRequest, ParameterID.PlayItemRequest.imageRowEntryIdentifier, 2, "ImageRowEntryIdentifier"),
        Row(MessageID.requestStatus, ParameterID.RequestStatus.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.requestStatus, ParameterID.RequestStatus.status, 1, "Status"),
        Row(MessageID.requestStatus, ParameterID.RequestStatus.errorText, 2, "ErrorText"),
        Row(MessageID.remoteCommand, ParameterID.RemoteCommand.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.remoteCommand, ParameterID.RemoteCommand.command, 1, "Command"),
        Row(MessageID.remoteCommand, ParameterID.RemoteCommand.milliseconds, 2, "Milliseconds"),
        Row(MessageID.remoteCommand, ParameterID.RemoteCommand.mode, 3, "Mode"),
        Row(MessageID.remoteCommand, ParameterID.RemoteCommand.active, 4, "Active"),
        Row(MessageID.advertisedCommands, ParameterID.AdvertisedCommands.command, 0, "Command"),
        Row(MessageID.advertisedCommands, [ParameterID.AdvertisedCommands.command], ParameterID.AdvertisedCommand.command, 0, "Command"),
        Row(MessageID.advertisedCommands, [ParameterID.AdvertisedCommands.command], ParameterID.AdvertisedCommand.enabled, 1, "Enabled"),
        Row(MessageID.mediaAppInformation, ParameterID.MediaAppInformation.appName, 0, "AppName"),
        Row(MessageID.mediaAppInformation, ParameterID.MediaAppInformation.hasContentTree, 1, "HasContentTree"),
        Row(MessageID.headUnitLimits, ParameterID.HeadUnitLimits.maximumTabs, 0, "MaximumTabs"),
        Row(MessageID.headUnitLimits, ParameterID.HeadUnitLimits.maximumPageSize, 1, "MaximumPageSize"),
        Row(MessageID.headUnitLimits, ParameterID.HeadUnitLimits.maximumImageRowImages, 2, "MaximumImageRowImages"),
        Row(MessageID.headUnitLimits, ParameterID.HeadUnitLimits.imageScale, 3, "ImageScale"),
        Row(MessageID.queueRequest, ParameterID.QueueRequest.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.queueRequest, ParameterID.QueueRequest.offset, 1, "Offset"),
        Row(MessageID.queueRequest, ParameterID.QueueRequest.count, 2, "Count"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.status, 1, "Status"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.totalCount, 2, "TotalCount"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.offset, 3, "Offset"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.currentIndex, 4, "CurrentIndex"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.item, 5, "Item"),
        Row(MessageID.queueResponse, ParameterID.QueueResponse.errorText, 6, "ErrorText"),
        Row(MessageID.imageRequest, ParameterID.ImageRequest.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.imageRequest, ParameterID.ImageRequest.imageIdentifier, 1, "ImageIdentifier"),
        Row(MessageID.imageRequest, ParameterID.ImageRequest.scale, 2, "Scale"),
        Row(MessageID.imageResponse, ParameterID.ImageResponse.requestIdentifier, 0, "RequestIdentifier"),
        Row(MessageID.imageResponse, ParameterID.ImageResponse.status, 1, "Status"),
        Row(MessageID.imageResponse, ParameterID.ImageResponse.fileTransferIdentifier, 2, "FileTransferIdentifier"),
        Row(MessageID.imageResponse, ParameterID.ImageResponse.errorText, 3, "ErrorText"),
    ] + contentItem(MessageID.browseResponse, item: ParameterID.BrowseResponse.item)
        + contentItem(MessageID.queueResponse, item: ParameterID.QueueResponse.item)

    /// The first diagnostic ping id and its answer (0xFE00...0xFEFF).
    static let diagnostics: [Row] = [UInt16(0xFE00), 0xFE01].flatMap { message in
        [Row(message, ParameterID.DiagnosticPing.sequence, 0, "Sequence"), Row(message, ParameterID.DiagnosticPing.padding, 1, "Padding")]
    }

    static let rows = authentication + identification + nowPlaying + hid + devKitExtension + diagnostics

    /// The catalog's parameters of a message, or of the group `groups` leads to.
    static func specs(_ message: UInt16, _ groups: [UInt16]) -> [ParameterSpec]? {
        guard var specs = MessageCatalog.message(message)?.parameters else { return nil }
        for group in groups {
            guard let spec = specs.first(where: { $0.id == group }), spec.type == .group else { return nil }
            specs = spec.members
        }
        return specs
    }

    @Test(arguments: rows)
    func eachConstantIsTheCatalogsParameter(_ row: Row) {
        #expect(row.constant == row.wire, "the constant for \(row.name) at \(row.path)")
        guard let specs = Self.specs(row.message, row.groups) else {
            Issue.record("the catalog has no parameters at \(row.path)")
            return
        }
        let named = specs.filter { $0.id == row.wire }.map(\.name)
        #expect(named == [row.name], "\(row.path) parameter \(row.wire)")
    }

    /// Every catalog parameter of the messages and groups above is in the
    /// table, so each has its constant.
    @Test func everyParameterOfThoseMessagesHasAConstant() {
        var listed: [String: Set<String>] = [:]
        for row in Self.rows { listed[row.path, default: []].insert("\(row.wire) \(row.name)") }
        for row in Self.rows where listed[row.path] != nil {
            guard let specs = Self.specs(row.message, row.groups) else {
                Issue.record("the catalog has no parameters at \(row.path)")
                continue
            }
            let catalog = Set(specs.map { "\($0.id) \($0.name)" }), table = listed[row.path] ?? []
            #expect(catalog.subtracting(table).sorted() == [], "at \(row.path), in the catalog but not in the table")
            #expect(table.subtracting(catalog).sorted() == [], "at \(row.path), in the table but not in the catalog")
            listed[row.path] = nil
        }
    }
}
