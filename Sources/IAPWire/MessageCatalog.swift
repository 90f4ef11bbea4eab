/// How a parameter's data is to be read.
public enum ParameterType: String, Hashable, Sendable {
    /// Header-only flag (length 4, no data).
    case none
    case bool
    /// One byte naming a value from a fixed set.
    case enumeration = "enum"
    case uint8, uint16, uint32, uint64
    case int8, int16, int32, int64
    /// NUL-terminated UTF-8.
    case utf8
    case blob
    /// A list of big-endian u16 message ids (identification's message lists).
    case messageIDList = "message_id_list"
    /// A list of big-endian u64 persistent ids.
    case uint64List = "uint64_list"
    /// A nested parameter list.
    case group
}

/// The name, type and (for groups) members of one parameter.
public struct ParameterSpec: Sendable {
    public let id: UInt16
    public let name: String
    public let type: ParameterType
    public let members: [ParameterSpec]
    /// Names of enumeration values, where they are known.
    public let values: [UInt64: String]

    public init(_ id: UInt16, _ name: String, _ type: ParameterType, members: [ParameterSpec] = [], values: [UInt64: String] = [:]) {
        self.id = id
        self.name = name
        self.type = type
        self.members = members
        self.values = values
    }

    public func member(_ id: UInt16) -> ParameterSpec? { members.first { $0.id == id } }

    /// The same names as header-only flags: how Start…Updates messages list
    /// the attributes they want.
    func asWantedList() -> ParameterSpec {
        ParameterSpec(id, name, type == .group ? .group : .none, members: members.map { $0.asWantedList() })
    }
}

/// A control-session message's id, name and parameters.
public struct MessageSpec: Sendable {
    public let id: UInt16
    public let name: String
    public let parameters: [ParameterSpec]

    public init(_ id: UInt16, _ name: String, _ parameters: [ParameterSpec] = []) {
        self.id = id
        self.name = name
        self.parameters = parameters
    }

    public func parameter(_ id: UInt16) -> ParameterSpec? { parameters.first { $0.id == id } }
}

/// The one table of message ids, names and parameter layouts. The decoder
/// uses it for display; the ids the stack uses are `MessageID` and
/// `ParameterID`, which its rows are written with. Sources:
/// ../shared/IAP-FACTS.md (two public message tables cross-checked) and the
/// fixtures' SOURCES.md.
public enum MessageCatalog {
    public static func message(_ id: UInt16) -> MessageSpec? { index[id] }
    public static func name(of id: UInt16) -> String? { index[id]?.name }

    public static let messages: [MessageSpec] = authentication + identification + externalAccessory
        + nowPlaying + mediaLibrary + hid + power + communications + usbDeviceModeAudio + devKitExtension + diagnostics

    private static let index: [UInt16: MessageSpec] = Dictionary(messages.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })

    // MARK: Authentication

    static let authentication: [MessageSpec] = [
        MessageSpec(MessageID.requestAuthenticationCertificate, "RequestAuthenticationCertificate"),
        MessageSpec(MessageID.authenticationCertificate, "AuthenticationCertificate", [
            ParameterSpec(ParameterID.AuthenticationCertificate.certificate, "AuthenticationCertificate", .blob),
        ]),
        MessageSpec(MessageID.requestAuthenticationChallengeResponse, "RequestAuthenticationChallengeResponse", [
            ParameterSpec(ParameterID.RequestAuthenticationChallengeResponse.challenge, "AuthenticationChallenge", .blob),
        ]),
        MessageSpec(MessageID.authenticationResponse, "AuthenticationResponse", [
            ParameterSpec(ParameterID.AuthenticationResponse.response, "AuthenticationResponse", .blob),
        ]),
        MessageSpec(MessageID.authenticationFailed, "AuthenticationFailed"),
        MessageSpec(MessageID.authenticationSucceeded, "AuthenticationSucceeded"),
        MessageSpec(MessageID.accessoryAuthenticationSerialNumber, "AccessoryAuthenticationSerialNumber", [
            ParameterSpec(ParameterID.AccessoryAuthenticationSerialNumber.serialNumber, "SerialNumber", .blob),
        ]),
    ]

    // MARK: Identification

    static let transportComponentMembers: [ParameterSpec] = [
        ParameterSpec(ParameterID.TransportComponent.identifier, "TransportComponentIdentifier", .uint16),
        ParameterSpec(ParameterID.TransportComponent.name, "TransportComponentName", .utf8),
        ParameterSpec(ParameterID.TransportComponent.supportsiAP2Connection, "TransportSupportsiAP2Connection", .none),
    ]

    public static let hidComponentFunctions: [UInt64: String] = [
        0: "keyboard", 1: "media_playback_remote", 2: "assistive_touch_pointer", 4: "gamepad_form_fitting",
        6: "gamepad_non_form_fitting", 7: "assistive_switch", 8: "headset", 10: "braille",
    ]

    static let identificationParameters: [ParameterSpec] = [
        ParameterSpec(ParameterID.IdentificationInformation.name, "Name", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.modelIdentifier, "ModelIdentifier", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.manufacturer, "Manufacturer", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.serialNumber, "SerialNumber", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.firmwareVersion, "FirmwareVersion", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.hardwareVersion, "HardwareVersion", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.messagesSentByAccessory, "MessagesSentByAccessory", .messageIDList),
        ParameterSpec(ParameterID.IdentificationInformation.messagesReceivedFromDevice, "MessagesReceivedFromDevice", .messageIDList),
        ParameterSpec(ParameterID.IdentificationInformation.powerProvidingCapability, "PowerProvidingCapability", .enumeration, values: [0: "none", 1: "reserved", 2: "advanced"]),
        ParameterSpec(ParameterID.IdentificationInformation.maximumCurrentDrawnFromDevice, "MaximumCurrentDrawnFromDevice", .uint16),
        ParameterSpec(ParameterID.IdentificationInformation.supportedExternalAccessoryProtocol, "SupportedExternalAccessoryProtocol", .group, members: [
            ParameterSpec(ParameterID.ExternalAccessoryProtocol.identifier, "ExternalAccessoryProtocolIdentifier", .uint8),
            ParameterSpec(ParameterID.ExternalAccessoryProtocol.name, "ExternalAccessoryProtocolName", .utf8),
            ParameterSpec(ParameterID.ExternalAccessoryProtocol.matchAction, "ExternalAccessoryProtocolMatchAction", .enumeration),
            ParameterSpec(ParameterID.ExternalAccessoryProtocol.nativeTransportComponentIdentifier, "NativeTransportComponentIdentifier", .uint16),
        ]),
        ParameterSpec(ParameterID.IdentificationInformation.appMatchTeamID, "AppMatchTeamID", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.currentLanguage, "CurrentLanguage", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.supportedLanguage, "SupportedLanguage", .utf8),
        ParameterSpec(ParameterID.IdentificationInformation.serialTransportComponent, "SerialTransportComponent", .group, members: transportComponentMembers),
        ParameterSpec(ParameterID.IdentificationInformation.usbDeviceTransportComponent, "USBDeviceTransportComponent", .group, members: transportComponentMembers + [
            ParameterSpec(ParameterID.TransportComponent.usbDeviceSupportedAudioSampleRate, "USBDeviceSupportedAudioSampleRate", .enumeration),
        ]),
        ParameterSpec(ParameterID.IdentificationInformation.usbHostTransportComponent, "USBHostTransportComponent", .group, members: transportComponentMembers + [
            ParameterSpec(ParameterID.TransportComponent.usbHostCarPlayInterfaceNumber, "USBHostTransportCarPlayInterfaceNumber", .uint8),
        ]),
        ParameterSpec(ParameterID.IdentificationInformation.bluetoothTransportComponent, "BluetoothTransportComponent", .group, members: transportComponentMembers + [
            ParameterSpec(ParameterID.TransportComponent.bluetoothMediaAccessControlAddress, "BluetoothTransportMediaAccessControlAddress", .blob),
        ]),
        ParameterSpec(ParameterID.IdentificationInformation.iAP2HIDComponent, "iAP2HIDComponent", .group, members: [
            ParameterSpec(ParameterID.HIDComponent.identifier, "HIDComponentIdentifier", .uint16),
            ParameterSpec(ParameterID.HIDComponent.name, "HIDComponentName", .utf8),
            ParameterSpec(ParameterID.HIDComponent.function, "HIDComponentFunction", .enumeration, values: hidComponentFunctions),
        ]),
    ]

    static let identification: [MessageSpec] = [
        MessageSpec(MessageID.startIdentification, "StartIdentification"),
        MessageSpec(MessageID.identificationInformation, "IdentificationInformation", identificationParameters),
        MessageSpec(MessageID.identificationAccepted, "IdentificationAccepted"),
        // Rejection names the offending IdentificationInformation parameters by id.
        MessageSpec(MessageID.identificationRejected, "IdentificationRejected", identificationParameters.map { $0.type == .messageIDList ? $0 : $0.asWantedList() }),
        MessageSpec(MessageID.cancelIdentification, "CancelIdentification"),
        MessageSpec(MessageID.identificationInformationUpdate, "IdentificationInformationUpdate", identificationParameters),
    ]

    // MARK: External accessory

    static let externalAccessory: [MessageSpec] = [
        MessageSpec(0xEA00, "StartExternalAccessoryProtocolSession", [
            ParameterSpec(0, "ExternalAccessoryProtocolIdentifier", .uint8),
            ParameterSpec(1, "ExternalAccessoryProtocolSessionIdentifier", .uint16),
        ]),
        MessageSpec(0xEA01, "StopExternalAccessoryProtocolSession", [
            ParameterSpec(0, "ExternalAccessoryProtocolSessionIdentifier", .uint16),
        ]),
        MessageSpec(0xEA02, "RequestAppLaunch", [ParameterSpec(0, "AppBundleID", .utf8)]),
        MessageSpec(0xEA03, "StatusExternalAccessoryProtocolSession", [
            ParameterSpec(0, "ExternalAccessoryProtocolSessionIdentifier", .uint16),
            ParameterSpec(1, "ExternalAccessoryProtocolSessionStatus", .enumeration),
        ]),
    ]

    // MARK: Now playing

    public static let playbackStatusValues: [UInt64: String] = [0: "stopped", 1: "playing", 2: "paused", 3: "seek_forward", 4: "seek_backward"]
    public static let shuffleModeValues: [UInt64: String] = [0: "off", 1: "songs", 2: "albums"]
    public static let repeatModeValues: [UInt64: String] = [0: "off", 1: "one", 2: "all"]

    /// Media item attributes (NowPlayingUpdate group 0; media library items).
    public static let mediaItemAttributes: [ParameterSpec] = [
        ParameterSpec(ParameterID.MediaItem.persistentIdentifier, "MediaItemPersistentIdentifier", .uint64),
        ParameterSpec(ParameterID.MediaItem.title, "MediaItemTitle", .utf8),
        ParameterSpec(ParameterID.MediaItem.mediaType, "MediaItemMediaType", .enumeration,
                      values: [0: "music", 1: "podcast", 2: "audiobook", 3: "iTunes U"]),
        ParameterSpec(ParameterID.MediaItem.rating, "MediaItemRating", .uint8),
        ParameterSpec(ParameterID.MediaItem.playbackDurationInMilliseconds, "MediaItemPlaybackDurationInMilliseconds", .uint32),
        ParameterSpec(ParameterID.MediaItem.albumPersistentIdentifier, "MediaItemAlbumPersistentIdentifier", .uint64),
        ParameterSpec(ParameterID.MediaItem.albumTitle, "MediaItemAlbumTitle", .utf8),
        ParameterSpec(ParameterID.MediaItem.albumTrackNumber, "MediaItemAlbumTrackNumber", .uint16),
        ParameterSpec(ParameterID.MediaItem.albumTrackCount, "MediaItemAlbumTrackCount", .uint16),
        ParameterSpec(ParameterID.MediaItem.albumDiscNumber, "MediaItemAlbumDiscNumber", .uint16),
        ParameterSpec(ParameterID.MediaItem.albumDiscCount, "MediaItemAlbumDiscCount", .uint16),
        ParameterSpec(ParameterID.MediaItem.artistPersistentIdentifier, "MediaItemArtistPersistentIdentifier", .uint64),
        ParameterSpec(ParameterID.MediaItem.artist, "MediaItemArtist", .utf8),
        ParameterSpec(ParameterID.MediaItem.albumArtistPersistentIdentifier, "MediaItemAlbumArtistPersistentIdentifier", .uint64),
        ParameterSpec(ParameterID.MediaItem.albumArtist, "MediaItemAlbumArtist", .utf8),
        ParameterSpec(ParameterID.MediaItem.genrePersistentIdentifier, "MediaItemGenrePersistentIdentifier", .uint64),
        ParameterSpec(ParameterID.MediaItem.genre, "MediaItemGenre", .utf8),
        ParameterSpec(ParameterID.MediaItem.composerPersistentIdentifier, "MediaItemComposerPersistentIdentifier", .uint64),
        ParameterSpec(ParameterID.MediaItem.composer, "MediaItemComposer", .utf8),
        ParameterSpec(ParameterID.MediaItem.isPartOfCompilation, "MediaItemIsPartOfCompilation", .bool),
        ParameterSpec(ParameterID.MediaItem.isLikeSupported, "MediaItemIsLikeSupported", .bool),
        ParameterSpec(ParameterID.MediaItem.isBanSupported, "MediaItemIsBanSupported", .bool),
        ParameterSpec(ParameterID.MediaItem.isLiked, "MediaItemIsLiked", .bool),
        ParameterSpec(ParameterID.MediaItem.isBanned, "MediaItemIsBanned", .bool),
        ParameterSpec(ParameterID.MediaItem.isResidentOnDevice, "MediaItemIsResidentOnDevice", .bool),
        ParameterSpec(ParameterID.MediaItem.artworkFileTransferIdentifier, "MediaItemArtworkFileTransferIdentifier", .uint8),
        ParameterSpec(ParameterID.MediaItem.chapterCount, "MediaItemChapterCount", .uint16),
        // Dev-kit extension attributes (Docs/Messages.md).
        ParameterSpec(ParameterID.MediaItem.devKitReleaseDate, "DevKitReleaseDate", .utf8),
    ]

    /// Playback attributes (NowPlayingUpdate group 1).
    public static let playbackAttributes: [ParameterSpec] = [
        ParameterSpec(ParameterID.Playback.status, "PlaybackStatus", .enumeration, values: playbackStatusValues),
        ParameterSpec(ParameterID.Playback.elapsedTimeInMilliseconds, "PlaybackElapsedTimeInMilliseconds", .uint32),
        ParameterSpec(ParameterID.Playback.queueIndex, "PlaybackQueueIndex", .uint32),
        ParameterSpec(ParameterID.Playback.queueCount, "PlaybackQueueCount", .uint32),
        ParameterSpec(ParameterID.Playback.queueChapterIndex, "PlaybackQueueChapterIndex", .uint32),
        ParameterSpec(ParameterID.Playback.shuffleMode, "PlaybackShuffleMode", .enumeration, values: shuffleModeValues),
        ParameterSpec(ParameterID.Playback.repeatMode, "PlaybackRepeatMode", .enumeration, values: repeatModeValues),
        ParameterSpec(ParameterID.Playback.appName, "PlaybackAppName", .utf8),
        ParameterSpec(ParameterID.Playback.mediaLibraryUniqueIdentifier, "PlaybackMediaLibraryUniqueIdentifier", .utf8),
        ParameterSpec(ParameterID.Playback.appleMusicRadioAd, "PlaybackAppleMusicRadioAd", .none),
        ParameterSpec(ParameterID.Playback.appleMusicRadioStationName, "PlaybackAppleMusicRadioStationName", .utf8),
        ParameterSpec(ParameterID.Playback.speed, "PlaybackSpeed", .uint16),
        ParameterSpec(ParameterID.Playback.setElapsedTimeAvailable, "SetElapsedTimeAvailable", .bool),
        ParameterSpec(ParameterID.Playback.queueListAvail, "PlaybackQueueListAvail", .bool),
        ParameterSpec(ParameterID.Playback.queueListTransferID, "PlaybackQueueListTransferID", .uint8),
        ParameterSpec(ParameterID.Playback.appBundleID, "PlaybackAppBundleID", .utf8),
        ParameterSpec(ParameterID.Playback.queueListContentTransfer, "PlaybackQueueListContentTransfer", .none),
        // Dev-kit extension attributes (Docs/Messages.md): iAP2's status has no
        // "unknown" or "interrupted", and no default rate.
        ParameterSpec(ParameterID.Playback.devKitPlaybackState, "DevKitPlaybackState", .enumeration, values: [0: "unknown", 1: "playing", 2: "paused", 3: "stopped", 4: "interrupted"]),
        ParameterSpec(ParameterID.Playback.devKitDefaultPlaybackRate, "DevKitDefaultPlaybackRate", .uint16),
    ]

    static let nowPlayingGroups: [ParameterSpec] = [
        ParameterSpec(ParameterID.NowPlayingUpdate.mediaItemAttributes, "MediaItemAttributes", .group, members: mediaItemAttributes),
        ParameterSpec(ParameterID.NowPlayingUpdate.playbackAttributes, "PlaybackAttributes", .group, members: playbackAttributes),
    ]

    static let nowPlaying: [MessageSpec] = [
        MessageSpec(MessageID.startNowPlayingUpdates, "StartNowPlayingUpdates", nowPlayingGroups.map { $0.asWantedList() }),
        MessageSpec(MessageID.nowPlayingUpdate, "NowPlayingUpdate", nowPlayingGroups),
        MessageSpec(MessageID.stopNowPlayingUpdates, "StopNowPlayingUpdates"),
        MessageSpec(MessageID.setNowPlayingInformation, "SetNowPlayingInformation", [
            ParameterSpec(ParameterID.SetNowPlayingInformation.elapsedTime, "ElapsedTime", .uint32),
            ParameterSpec(ParameterID.SetNowPlayingInformation.playbackQueueIndex, "PlaybackQueueIndex", .uint32),
            ParameterSpec(ParameterID.SetNowPlayingInformation.playbackQueueListContentTransferStartIndex, "PlaybackQueueListContentTransferStartIndex", .uint32),
        ]),
    ]

    // MARK: Media library

    static let mediaPlaylistProperties: [ParameterSpec] = [
        ParameterSpec(0, "MediaPlaylistPersistentIdentifier", .uint64),
        ParameterSpec(1, "MediaPlaylistName", .utf8),
        ParameterSpec(2, "MediaPlaylistParentPersistentIdentifier", .uint64),
        ParameterSpec(3, "MediaPlaylistIsGeniusMix", .bool),
        ParameterSpec(4, "MediaPlaylistIsFolder", .bool),
        ParameterSpec(5, "MediaPlaylistContainedMediaItemsFileTransferIdentifier", .uint8),
        ParameterSpec(6, "MediaPlaylistIsAppleMusicRadioStation", .bool),
        ParameterSpec(7, "MediaPlaylistContentTransfer", .none),
    ]

    static let mediaLibrary: [MessageSpec] = [
        MessageSpec(0x4C00, "StartMediaLibraryInformation"),
        MessageSpec(0x4C01, "MediaLibraryInformation", [
            ParameterSpec(0, "MediaLibraryInformation", .group, members: [
                ParameterSpec(0, "MediaLibraryName", .utf8),
                ParameterSpec(1, "MediaLibraryUniqueIdentifier", .utf8),
                ParameterSpec(2, "MediaLibraryType", .enumeration, values: [0: "local device library", 2: "Apple Music Radio"]),
            ]),
        ]),
        MessageSpec(0x4C02, "StopMediaLibraryInformation"),
        MessageSpec(0x4C03, "StartMediaLibraryUpdates", [
            ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(1, "LastKnownMediaLibraryRevision", .utf8),
            ParameterSpec(2, "MediaItemProperties", .group, members: mediaItemAttributes).asWantedList(),
            ParameterSpec(3, "MediaPlaylistProperties", .group, members: mediaPlaylistProperties).asWantedList(),
            ParameterSpec(4, "MediaLibraryUpdateProgress", .none),
            ParameterSpec(5, "MediaLibraryIsHidingRemoteItems", .none),
            ParameterSpec(6, "PlayAllSongsCapable", .none),
            ParameterSpec(7, "MediaPlaylistContentTransferInfoRequest", .group, members: mediaItemAttributes).asWantedList(),
        ]),
        MessageSpec(0x4C04, "MediaLibraryUpdate", [
            ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(1, "MediaLibraryRevision", .utf8),
            ParameterSpec(2, "MediaItem", .group, members: mediaItemAttributes),
            ParameterSpec(3, "MediaPlaylist", .group, members: mediaPlaylistProperties),
            ParameterSpec(4, "MediaItemDeletePersistentIdentifier", .uint64),
            ParameterSpec(5, "MediaPlaylistDeletePersistentIdentifier", .uint64),
            ParameterSpec(6, "MediaLibraryReset", .none),
            ParameterSpec(7, "MediaLibraryUpdateProgress", .uint8),
            ParameterSpec(8, "MediaLibraryIsHidingRemoteItems", .bool),
            ParameterSpec(9, "PlayAllSongsCapable", .bool),
        ]),
        MessageSpec(0x4C05, "StopMediaLibraryUpdates", [ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8)]),
        MessageSpec(0x4C06, "PlayMediaLibraryCurrentSelection", [ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8)]),
        MessageSpec(0x4C07, "PlayMediaLibraryItems", [
            ParameterSpec(0, "ItemsPersistentIdentifiers", .uint64List),
            ParameterSpec(1, "ItemsStartingIndex", .uint32),
            ParameterSpec(2, "MediaLibraryUniqueIdentifier", .utf8),
        ]),
        MessageSpec(0x4C08, "PlayMediaLibraryCollection", [
            ParameterSpec(0, "CollectionPersistentIdentifier", .uint64),
            ParameterSpec(1, "CollectionType", .enumeration,
                          values: [0: "playlist", 1: "artist", 2: "album", 3: "album artist", 4: "genre", 5: "composer"]),
            ParameterSpec(2, "CollectionStartingIndex", .uint32),
            ParameterSpec(3, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(4, "StartingMediaItemPersistentIdentifier", .uint64),
        ]),
        MessageSpec(0x4C09, "PlayMediaLibrarySpecial", [
            ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(1, "AllSongs", .none),
            ParameterSpec(2, "StartingMediaItemPersistentIdentifier", .uint64),
        ]),
    ]

    // MARK: HID

    static let hid: [MessageSpec] = [
        MessageSpec(MessageID.startHID, "StartHID", [
            ParameterSpec(ParameterID.StartHID.hidComponentIdentifier, "HIDComponentIdentifier", .uint16),
            ParameterSpec(ParameterID.StartHID.vendorIdentifier, "VendorIdentifier", .uint16),
            ParameterSpec(ParameterID.StartHID.productIdentifier, "ProductIdentifier", .uint16),
            ParameterSpec(ParameterID.StartHID.localizedKeyboardCountryCode, "LocalizedKeyboardCountryCode", .uint8),
            ParameterSpec(ParameterID.StartHID.hidReportDescriptor, "HIDReportDescriptor", .blob),
        ]),
        MessageSpec(MessageID.deviceHIDReport, "DeviceHIDReport", [
            ParameterSpec(ParameterID.DeviceHIDReport.hidComponentIdentifier, "HIDComponentIdentifier", .uint16),
            ParameterSpec(ParameterID.DeviceHIDReport.hidReport, "HIDReport", .blob),
        ]),
        MessageSpec(MessageID.accessoryHIDReport, "AccessoryHIDReport", [
            ParameterSpec(ParameterID.AccessoryHIDReport.hidComponentIdentifier, "HIDComponentIdentifier", .uint16),
            ParameterSpec(ParameterID.AccessoryHIDReport.hidReport, "HIDReport", .blob),
        ]),
        MessageSpec(MessageID.stopHID, "StopHID", [ParameterSpec(ParameterID.StopHID.hidComponentIdentifier, "HIDComponentIdentifier", .uint16)]),
        MessageSpec(0x6806, "StartNativeHID"),
        MessageSpec(0x6807, "HIDComponentUpdate", [
            ParameterSpec(0, "HIDComponentIdentifier", .uint16),
            ParameterSpec(1, "HIDComponentEnabled", .bool),
        ]),
    ]

    // MARK: Power

    static let powerUpdateAttributes: [ParameterSpec] = [
        ParameterSpec(0, "MaximumCurrentDrawnFromAccessory", .uint16),
        ParameterSpec(1, "DeviceBatteryWillChargeIfPowerIsPresent", .bool),
        ParameterSpec(2, "AccessoryPowerMode", .enumeration),
        ParameterSpec(4, "IsExternalChargerConnected", .bool),
        ParameterSpec(5, "BatteryChargingState", .enumeration),
        ParameterSpec(6, "BatteryChargeLevel", .uint16),
    ]

    static let power: [MessageSpec] = [
        MessageSpec(0xAE00, "StartPowerUpdates", powerUpdateAttributes.map { $0.asWantedList() }),
        MessageSpec(0xAE01, "PowerUpdate", powerUpdateAttributes),
        MessageSpec(0xAE02, "StopPowerUpdates"),
        MessageSpec(0xAE03, "PowerSourceUpdate", [
            ParameterSpec(0, "AvailableCurrentForDevice", .uint16),
            ParameterSpec(1, "DeviceBatteryShouldChargeIfPowerIsPresent", .bool),
        ]),
        MessageSpec(0xAE05, "AccessoryPowerUpdate"),
    ]

    // MARK: USB device mode audio

    static let usbDeviceModeAudio: [MessageSpec] = [
        MessageSpec(0xDA00, "StartUSBDeviceModeAudio"),
        MessageSpec(0xDA01, "USBDeviceModeAudioInformation", [ParameterSpec(0, "SampleRate", .enumeration)]),
        MessageSpec(0xDA02, "StopUSBDeviceModeAudio"),
    ]

    // MARK: Dev-kit extension (Docs/Messages.md)

    /// What iAP2 lacks (hierarchical browsing with paging, commands with
    /// explicit values and statuses, the advertised command set, the playback
    /// queue, images by id), in 0xB100...0xB1FF: a range no public iAP2
    /// message table uses.
    public static let extensionRange: ClosedRange<UInt16> = 0xB100...0xB1FF

    static let contentItemMembers: [ParameterSpec] = [
        ParameterSpec(ParameterID.ContentItem.itemIdentifier, "ItemIdentifier", .utf8),
        ParameterSpec(ParameterID.ContentItem.itemKind, "ItemKind", .enumeration, values: [0: "container", 1: "playable"]),
        ParameterSpec(ParameterID.ContentItem.text, "Text", .utf8),
        ParameterSpec(ParameterID.ContentItem.detailText, "DetailText", .utf8),
        ParameterSpec(ParameterID.ContentItem.imageIdentifier, "ImageIdentifier", .utf8),
        ParameterSpec(ParameterID.ContentItem.accessory, "Accessory", .enumeration, values: [0: "none", 1: "disclosure_indicator", 2: "cloud"]),
        ParameterSpec(ParameterID.ContentItem.playingIndicator, "PlayingIndicator", .enumeration, values: [0: "none", 1: "leading", 2: "trailing"]),
        ParameterSpec(ParameterID.ContentItem.enabled, "Enabled", .bool),
        ParameterSpec(ParameterID.ContentItem.appValue, "AppValue", .blob),
        ParameterSpec(ParameterID.ContentItem.imageRow, "ImageRow", .group, members: [
            ParameterSpec(ParameterID.ImageRow.title, "Title", .utf8),
            ParameterSpec(ParameterID.ImageRow.image, "Image", .group, members: [
                ParameterSpec(ParameterID.ImageRowImage.entryIdentifier, "EntryIdentifier", .utf8),
                ParameterSpec(ParameterID.ImageRowImage.imageIdentifier, "ImageIdentifier", .utf8),
                ParameterSpec(ParameterID.ImageRowImage.selectable, "Selectable", .bool),
            ]),
        ]),
        ParameterSpec(ParameterID.ContentItem.section, "Section", .uint16),
        ParameterSpec(ParameterID.ContentItem.badge, "Badge", .utf8),
    ]

    static let sectionMembers: [ParameterSpec] = [
        ParameterSpec(ParameterID.Section.sectionIdentifier, "SectionIdentifier", .uint16),
        ParameterSpec(ParameterID.Section.sectionKind, "SectionKind", .enumeration, values: [0: "plain", 1: "loading", 2: "play_all", 3: "empty", 4: "load_failed"]),
        ParameterSpec(ParameterID.Section.title, "Title", .utf8),
        ParameterSpec(ParameterID.Section.itemCount, "ItemCount", .uint32),
    ]

    public static let commandKinds: [UInt64: String] = [
        0: "play", 1: "pause", 2: "stop", 3: "toggle_play_pause", 4: "next_track", 5: "previous_track",
        6: "change_playback_position", 7: "seek_forward", 8: "seek_backward", 9: "skip_forward", 10: "skip_backward",
        11: "change_repeat_mode", 12: "change_shuffle_mode", 13: "change_playback_rate", 14: "like", 15: "dislike", 16: "bookmark",
    ]

    public static let requestStatuses: [UInt64: String] = [
        0: "success", 1: "no_such_content", 2: "no_actionable_now_playing_item", 3: "device_not_found", 4: "command_failed",
        5: "timed_out", 6: "exceeds_limits",
    ]

    static let devKitExtension: [MessageSpec] = [
        MessageSpec(MessageID.browseRequest, "BrowseRequest", [
            ParameterSpec(ParameterID.BrowseRequest.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.BrowseRequest.containerIdentifier, "ContainerIdentifier", .utf8),
            ParameterSpec(ParameterID.BrowseRequest.offset, "Offset", .uint32),
            ParameterSpec(ParameterID.BrowseRequest.count, "Count", .uint16),
        ]),
        MessageSpec(MessageID.browseResponse, "BrowseResponse", [
            ParameterSpec(ParameterID.BrowseResponse.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.BrowseResponse.status, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(ParameterID.BrowseResponse.totalCount, "TotalCount", .uint32),
            ParameterSpec(ParameterID.BrowseResponse.offset, "Offset", .uint32),
            ParameterSpec(ParameterID.BrowseResponse.item, "Item", .group, members: contentItemMembers),
            ParameterSpec(ParameterID.BrowseResponse.section, "Section", .group, members: sectionMembers),
            ParameterSpec(ParameterID.BrowseResponse.errorText, "ErrorText", .utf8),
        ]),
        MessageSpec(MessageID.playItemRequest, "PlayItemRequest", [
            ParameterSpec(ParameterID.PlayItemRequest.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.PlayItemRequest.itemIdentifier, "ItemIdentifier", .utf8),
            ParameterSpec(ParameterID.PlayItemRequest.imageRowEntryIdentifier, "ImageRowEntryIdentifier", .utf8),
        ]),
        MessageSpec(MessageID.requestStatus, "RequestStatus", [
            ParameterSpec(ParameterID.RequestStatus.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.RequestStatus.status, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(ParameterID.RequestStatus.errorText, "ErrorText", .utf8),
        ]),
        MessageSpec(MessageID.remoteCommand, "RemoteCommand", [
            ParameterSpec(ParameterID.RemoteCommand.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.RemoteCommand.command, "Command", .enumeration, values: commandKinds),
            ParameterSpec(ParameterID.RemoteCommand.milliseconds, "Milliseconds", .uint32),
            ParameterSpec(ParameterID.RemoteCommand.mode, "Mode", .uint8),
            ParameterSpec(ParameterID.RemoteCommand.active, "Active", .bool),
        ]),
        MessageSpec(MessageID.advertisedCommands, "AdvertisedCommands", [
            ParameterSpec(ParameterID.AdvertisedCommands.command, "Command", .group, members: [
                ParameterSpec(ParameterID.AdvertisedCommand.command, "Command", .enumeration, values: commandKinds),
                ParameterSpec(ParameterID.AdvertisedCommand.enabled, "Enabled", .bool),
            ]),
        ]),
        MessageSpec(MessageID.mediaAppInformation, "MediaAppInformation", [
            ParameterSpec(ParameterID.MediaAppInformation.appName, "AppName", .utf8),
            ParameterSpec(ParameterID.MediaAppInformation.hasContentTree, "HasContentTree", .bool),
        ]),
        MessageSpec(MessageID.headUnitLimits, "HeadUnitLimits", [
            ParameterSpec(ParameterID.HeadUnitLimits.maximumTabs, "MaximumTabs", .uint8),
            ParameterSpec(ParameterID.HeadUnitLimits.maximumPageSize, "MaximumPageSize", .uint16),
            ParameterSpec(ParameterID.HeadUnitLimits.maximumImageRowImages, "MaximumImageRowImages", .uint8),
            ParameterSpec(ParameterID.HeadUnitLimits.imageScale, "ImageScale", .uint8),
        ]),
        MessageSpec(MessageID.queueRequest, "QueueRequest", [
            ParameterSpec(ParameterID.QueueRequest.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.QueueRequest.offset, "Offset", .uint32),
            ParameterSpec(ParameterID.QueueRequest.count, "Count", .uint16),
        ]),
        MessageSpec(MessageID.queueResponse, "QueueResponse", [
            ParameterSpec(ParameterID.QueueResponse.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.QueueResponse.status, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(ParameterID.QueueResponse.totalCount, "TotalCount", .uint32),
            ParameterSpec(ParameterID.QueueResponse.offset, "Offset", .uint32),
            ParameterSpec(ParameterID.QueueResponse.currentIndex, "CurrentIndex", .uint32),
            ParameterSpec(ParameterID.QueueResponse.item, "Item", .group, members: contentItemMembers),
            ParameterSpec(ParameterID.QueueResponse.errorText, "ErrorText", .utf8),
        ]),
        MessageSpec(MessageID.imageRequest, "ImageRequest", [
            ParameterSpec(ParameterID.ImageRequest.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.ImageRequest.imageIdentifier, "ImageIdentifier", .utf8),
            ParameterSpec(ParameterID.ImageRequest.scale, "Scale", .uint8),
        ]),
        MessageSpec(MessageID.imageResponse, "ImageResponse", [
            ParameterSpec(ParameterID.ImageResponse.requestIdentifier, "RequestIdentifier", .uint32),
            ParameterSpec(ParameterID.ImageResponse.status, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(ParameterID.ImageResponse.fileTransferIdentifier, "FileTransferIdentifier", .uint8),
            ParameterSpec(ParameterID.ImageResponse.errorText, "ErrorText", .utf8),
        ]),
    ]

    /// The diagnostic ping (0xFE00...0xFEFE even, answered with id + 1).
    static let diagnostics: [MessageSpec] = stride(from: 0xFE00, through: 0xFEFE, by: 2).flatMap { id -> [MessageSpec] in
        [MessageSpec(UInt16(id), "DiagnosticPing", diagnosticPingParameters),
         MessageSpec(UInt16(id + 1), "DiagnosticPingAnswer", diagnosticPingParameters)]
    }

    static let diagnosticPingParameters: [ParameterSpec] = [
        ParameterSpec(ParameterID.DiagnosticPing.sequence, "Sequence", .uint32),
        ParameterSpec(ParameterID.DiagnosticPing.padding, "Padding", .blob),
    ]

    // MARK: Communications (ids only)

    static let communications: [MessageSpec] = [
        MessageSpec(0x4154, "StartCallStateUpdates"),
        MessageSpec(0x4155, "CallStateUpdate"),
        MessageSpec(0x4156, "StopCallStateUpdates"),
        MessageSpec(0x4171, "ListUpdate"),
        MessageSpec(0x4172, "StopListUpdates"),
    ]
}
