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
/// uses it for display and the message layer for ids; nothing else defines
/// an id. Sources: ../shared/IAP-FACTS.md (two public message tables
/// cross-checked) and the fixtures' SOURCES.md.
public enum MessageCatalog {
    public static func message(_ id: UInt16) -> MessageSpec? { index[id] }
    public static func name(of id: UInt16) -> String? { index[id]?.name }

    public static let messages: [MessageSpec] = authentication + identification + externalAccessory
        + nowPlaying + mediaLibrary + hid + power + communications + usbDeviceModeAudio + devKitExtension + diagnostics

    private static let index: [UInt16: MessageSpec] = Dictionary(messages.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })

    // MARK: Authentication

    static let authentication: [MessageSpec] = [
        MessageSpec(MessageID.requestAuthenticationCertificate, "RequestAuthenticationCertificate"),
        MessageSpec(MessageID.authenticationCertificate, "AuthenticationCertificate", [ParameterSpec(0, "AuthenticationCertificate", .blob)]),
        MessageSpec(MessageID.requestAuthenticationChallengeResponse, "RequestAuthenticationChallengeResponse", [ParameterSpec(0, "AuthenticationChallenge", .blob)]),
        MessageSpec(MessageID.authenticationResponse, "AuthenticationResponse", [ParameterSpec(0, "AuthenticationResponse", .blob)]),
        MessageSpec(MessageID.authenticationFailed, "AuthenticationFailed"),
        MessageSpec(MessageID.authenticationSucceeded, "AuthenticationSucceeded"),
        MessageSpec(MessageID.accessoryAuthenticationSerialNumber, "AccessoryAuthenticationSerialNumber", [ParameterSpec(0, "SerialNumber", .blob)]),
    ]

    // MARK: Identification

    static let transportComponentMembers: [ParameterSpec] = [
        ParameterSpec(0, "TransportComponentIdentifier", .uint16),
        ParameterSpec(1, "TransportComponentName", .utf8),
        ParameterSpec(2, "TransportSupportsiAP2Connection", .none),
    ]

    public static let hidComponentFunctions: [UInt64: String] = [
        0: "keyboard", 1: "media_playback_remote", 2: "assistive_touch_pointer", 4: "gamepad_form_fitting",
        6: "gamepad_non_form_fitting", 7: "assistive_switch", 8: "headset", 10: "braille",
    ]

    static let identificationParameters: [ParameterSpec] = [
        ParameterSpec(0, "Name", .utf8),
        ParameterSpec(1, "ModelIdentifier", .utf8),
        ParameterSpec(2, "Manufacturer", .utf8),
        ParameterSpec(3, "SerialNumber", .utf8),
        ParameterSpec(4, "FirmwareVersion", .utf8),
        ParameterSpec(5, "HardwareVersion", .utf8),
        ParameterSpec(6, "MessagesSentByAccessory", .messageIDList),
        ParameterSpec(7, "MessagesReceivedFromDevice", .messageIDList),
        ParameterSpec(8, "PowerProvidingCapability", .enumeration, values: [0: "none", 1: "reserved", 2: "advanced"]),
        ParameterSpec(9, "MaximumCurrentDrawnFromDevice", .uint16),
        ParameterSpec(10, "SupportedExternalAccessoryProtocol", .group, members: [
            ParameterSpec(0, "ExternalAccessoryProtocolIdentifier", .uint8),
            ParameterSpec(1, "ExternalAccessoryProtocolName", .utf8),
            ParameterSpec(2, "ExternalAccessoryProtocolMatchAction", .enumeration),
            ParameterSpec(3, "NativeTransportComponentIdentifier", .uint16),
        ]),
        ParameterSpec(11, "AppMatchTeamID", .utf8),
        ParameterSpec(12, "CurrentLanguage", .utf8),
        ParameterSpec(13, "SupportedLanguage", .utf8),
        ParameterSpec(14, "SerialTransportComponent", .group, members: transportComponentMembers),
        ParameterSpec(15, "USBDeviceTransportComponent", .group, members: transportComponentMembers + [
            ParameterSpec(3, "USBDeviceSupportedAudioSampleRate", .enumeration),
        ]),
        ParameterSpec(16, "USBHostTransportComponent", .group, members: transportComponentMembers + [
            ParameterSpec(3, "USBHostTransportCarPlayInterfaceNumber", .uint8),
        ]),
        ParameterSpec(17, "BluetoothTransportComponent", .group, members: transportComponentMembers + [
            ParameterSpec(3, "BluetoothTransportMediaAccessControlAddress", .blob),
        ]),
        ParameterSpec(18, "iAP2HIDComponent", .group, members: [
            ParameterSpec(0, "HIDComponentIdentifier", .uint16),
            ParameterSpec(1, "HIDComponentName", .utf8),
            ParameterSpec(2, "HIDComponentFunction", .enumeration, values: hidComponentFunctions),
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
        ParameterSpec(0, "MediaItemPersistentIdentifier", .uint64),
        ParameterSpec(1, "MediaItemTitle", .utf8),
        ParameterSpec(2, "MediaItemMediaType", .uint32),
        ParameterSpec(3, "MediaItemRating", .uint8),
        ParameterSpec(4, "MediaItemPlaybackDurationInMilliseconds", .uint32),
        ParameterSpec(5, "MediaItemAlbumPersistentIdentifier", .uint64),
        ParameterSpec(6, "MediaItemAlbumTitle", .utf8),
        ParameterSpec(7, "MediaItemAlbumTrackNumber", .uint16),
        ParameterSpec(8, "MediaItemAlbumTrackCount", .uint16),
        ParameterSpec(9, "MediaItemAlbumDiscNumber", .uint16),
        ParameterSpec(10, "MediaItemAlbumDiscCount", .uint16),
        ParameterSpec(11, "MediaItemArtistPersistentIdentifier", .uint64),
        ParameterSpec(12, "MediaItemArtist", .utf8),
        ParameterSpec(13, "MediaItemAlbumArtistPersistentIdentifier", .uint64),
        ParameterSpec(14, "MediaItemAlbumArtist", .utf8),
        ParameterSpec(15, "MediaItemGenrePersistentIdentifier", .uint64),
        ParameterSpec(16, "MediaItemGenre", .utf8),
        ParameterSpec(17, "MediaItemComposerPersistentIdentifier", .uint64),
        ParameterSpec(18, "MediaItemComposer", .utf8),
        ParameterSpec(19, "MediaItemIsPartOfCompilation", .bool),
        ParameterSpec(21, "MediaItemIsLikeSupported", .bool),
        ParameterSpec(22, "MediaItemIsBanSupported", .bool),
        ParameterSpec(23, "MediaItemIsLiked", .bool),
        ParameterSpec(24, "MediaItemIsBanned", .bool),
        ParameterSpec(25, "MediaItemIsResidentOnDevice", .bool),
        ParameterSpec(26, "MediaItemArtworkFileTransferIdentifier", .uint8),
        ParameterSpec(27, "MediaItemChapterCount", .uint16),
        // Dev-kit extension attributes (Docs/Messages.md).
        ParameterSpec(0x4000, "DevKitReleaseDate", .utf8),
    ]

    /// Playback attributes (NowPlayingUpdate group 1).
    public static let playbackAttributes: [ParameterSpec] = [
        ParameterSpec(0, "PlaybackStatus", .enumeration, values: playbackStatusValues),
        ParameterSpec(1, "PlaybackElapsedTimeInMilliseconds", .uint32),
        ParameterSpec(2, "PlaybackQueueIndex", .uint32),
        ParameterSpec(3, "PlaybackQueueCount", .uint32),
        ParameterSpec(4, "PlaybackQueueChapterIndex", .uint32),
        ParameterSpec(5, "PlaybackShuffleMode", .enumeration, values: shuffleModeValues),
        ParameterSpec(6, "PlaybackRepeatMode", .enumeration, values: repeatModeValues),
        ParameterSpec(7, "PlaybackAppName", .utf8),
        ParameterSpec(8, "PlaybackMediaLibraryUniqueIdentifier", .utf8),
        ParameterSpec(9, "PlaybackAppleMusicRadioAd", .none),
        ParameterSpec(10, "PlaybackAppleMusicRadioStationName", .utf8),
        ParameterSpec(12, "PlaybackSpeed", .uint16),
        ParameterSpec(13, "SetElapsedTimeAvailable", .bool),
        ParameterSpec(14, "PlaybackQueueListAvail", .bool),
        ParameterSpec(15, "PlaybackQueueListTransferID", .uint8),
        ParameterSpec(16, "PlaybackAppBundleID", .utf8),
        ParameterSpec(17, "PlaybackQueueListContentTransfer", .none),
        // Dev-kit extension attributes (Docs/Messages.md): iAP2's status has no
        // "unknown" or "interrupted", and no default rate.
        ParameterSpec(0x4000, "DevKitPlaybackState", .enumeration, values: [0: "unknown", 1: "playing", 2: "paused", 3: "stopped", 4: "interrupted"]),
        ParameterSpec(0x4001, "DevKitDefaultPlaybackRate", .uint16),
    ]

    static let nowPlayingGroups: [ParameterSpec] = [
        ParameterSpec(0, "MediaItemAttributes", .group, members: mediaItemAttributes),
        ParameterSpec(1, "PlaybackAttributes", .group, members: playbackAttributes),
    ]

    static let nowPlaying: [MessageSpec] = [
        MessageSpec(MessageID.startNowPlayingUpdates, "StartNowPlayingUpdates", nowPlayingGroups.map { $0.asWantedList() }),
        MessageSpec(MessageID.nowPlayingUpdate, "NowPlayingUpdate", nowPlayingGroups),
        MessageSpec(MessageID.stopNowPlayingUpdates, "StopNowPlayingUpdates"),
        MessageSpec(MessageID.setNowPlayingInformation, "SetNowPlayingInformation", [
            ParameterSpec(0, "ElapsedTime", .uint32),
            ParameterSpec(1, "PlaybackQueueIndex", .uint32),
            ParameterSpec(2, "PlaybackQueueListContentTransferStartIndex", .uint32),
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
    ]

    static let mediaLibrary: [MessageSpec] = [
        MessageSpec(0x4C00, "StartMediaLibraryInformation"),
        MessageSpec(0x4C01, "MediaLibraryInformation", [
            ParameterSpec(0, "MediaLibraryInformation", .group, members: [
                ParameterSpec(0, "MediaLibraryName", .utf8),
                ParameterSpec(1, "MediaLibraryUniqueIdentifier", .utf8),
                ParameterSpec(2, "MediaLibraryType", .enumeration),
            ]),
        ]),
        MessageSpec(0x4C02, "StopMediaLibraryInformation"),
        MessageSpec(0x4C03, "StartMediaLibraryUpdates", [
            ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(1, "LastKnownMediaLibraryRevision", .utf8),
            ParameterSpec(2, "MediaItemProperties", .group, members: mediaItemAttributes).asWantedList(),
            ParameterSpec(3, "MediaPlaylistProperties", .group, members: mediaPlaylistProperties).asWantedList(),
        ]),
        MessageSpec(0x4C04, "MediaLibraryUpdate", [
            ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(1, "MediaLibraryRevision", .utf8),
            ParameterSpec(2, "MediaItem", .group, members: mediaItemAttributes),
            ParameterSpec(3, "MediaPlaylist", .group, members: mediaPlaylistProperties),
            ParameterSpec(4, "MediaItemDeletePersistentIdentifier", .uint64),
            ParameterSpec(5, "MediaPlaylistDeletePersistentIdentifier", .uint64),
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
            ParameterSpec(1, "CollectionType", .enumeration),
            ParameterSpec(2, "CollectionStartingIndex", .uint32),
            ParameterSpec(3, "MediaLibraryUniqueIdentifier", .utf8),
        ]),
        MessageSpec(0x4C09, "PlayMediaLibrarySpecial", [
            ParameterSpec(0, "MediaLibraryUniqueIdentifier", .utf8),
            ParameterSpec(1, "AllSongs", .none),
        ]),
    ]

    // MARK: HID

    static let hid: [MessageSpec] = [
        MessageSpec(MessageID.startHID, "StartHID", [
            ParameterSpec(0, "HIDComponentIdentifier", .uint16),
            ParameterSpec(1, "VendorIdentifier", .uint16),
            ParameterSpec(2, "ProductIdentifier", .uint16),
            ParameterSpec(3, "LocalizedKeyboardCountryCode", .uint8),
            ParameterSpec(4, "HIDReportDescriptor", .blob),
        ]),
        MessageSpec(MessageID.deviceHIDReport, "DeviceHIDReport", [
            ParameterSpec(0, "HIDComponentIdentifier", .uint16),
            ParameterSpec(1, "HIDReport", .blob),
        ]),
        MessageSpec(MessageID.accessoryHIDReport, "AccessoryHIDReport", [
            ParameterSpec(0, "HIDComponentIdentifier", .uint16),
            ParameterSpec(1, "HIDReport", .blob),
        ]),
        MessageSpec(MessageID.stopHID, "StopHID", [ParameterSpec(0, "HIDComponentIdentifier", .uint16)]),
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
        ParameterSpec(0, "ItemIdentifier", .utf8),
        ParameterSpec(1, "ItemKind", .enumeration, values: [0: "container", 1: "playable"]),
        ParameterSpec(2, "Text", .utf8),
        ParameterSpec(3, "DetailText", .utf8),
        ParameterSpec(4, "ImageIdentifier", .utf8),
        ParameterSpec(5, "Accessory", .enumeration, values: [0: "none", 1: "disclosure_indicator", 2: "cloud"]),
        ParameterSpec(6, "PlayingIndicator", .enumeration, values: [0: "none", 1: "leading", 2: "trailing"]),
        ParameterSpec(7, "Enabled", .bool),
        ParameterSpec(8, "AppValue", .blob),
        ParameterSpec(9, "ImageRow", .group, members: [
            ParameterSpec(0, "Title", .utf8),
            ParameterSpec(1, "Image", .group, members: [
                ParameterSpec(0, "EntryIdentifier", .utf8),
                ParameterSpec(1, "ImageIdentifier", .utf8),
                ParameterSpec(2, "Selectable", .bool),
            ]),
        ]),
        ParameterSpec(10, "Section", .uint16),
        ParameterSpec(11, "Badge", .utf8),
    ]

    static let sectionMembers: [ParameterSpec] = [
        ParameterSpec(0, "SectionIdentifier", .uint16),
        ParameterSpec(1, "SectionKind", .enumeration, values: [0: "plain", 1: "loading", 2: "play_all", 3: "empty", 4: "load_failed"]),
        ParameterSpec(2, "Title", .utf8),
        ParameterSpec(3, "ItemCount", .uint32),
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
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "ContainerIdentifier", .utf8),
            ParameterSpec(2, "Offset", .uint32),
            ParameterSpec(3, "Count", .uint16),
        ]),
        MessageSpec(MessageID.browseResponse, "BrowseResponse", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(2, "TotalCount", .uint32),
            ParameterSpec(3, "Offset", .uint32),
            ParameterSpec(4, "Item", .group, members: contentItemMembers),
            ParameterSpec(5, "Section", .group, members: sectionMembers),
            ParameterSpec(6, "ErrorText", .utf8),
        ]),
        MessageSpec(MessageID.playItemRequest, "PlayItemRequest", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "ItemIdentifier", .utf8),
            ParameterSpec(2, "ImageRowEntryIdentifier", .utf8),
        ]),
        MessageSpec(MessageID.requestStatus, "RequestStatus", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(2, "ErrorText", .utf8),
        ]),
        MessageSpec(MessageID.remoteCommand, "RemoteCommand", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "Command", .enumeration, values: commandKinds),
            ParameterSpec(2, "Milliseconds", .uint32),
            ParameterSpec(3, "Mode", .uint8),
            ParameterSpec(4, "Active", .bool),
        ]),
        MessageSpec(MessageID.advertisedCommands, "AdvertisedCommands", [
            ParameterSpec(0, "Command", .group, members: [
                ParameterSpec(0, "Command", .enumeration, values: commandKinds),
                ParameterSpec(1, "Enabled", .bool),
            ]),
        ]),
        MessageSpec(MessageID.mediaAppInformation, "MediaAppInformation", [
            ParameterSpec(0, "AppName", .utf8),
            ParameterSpec(1, "HasContentTree", .bool),
        ]),
        MessageSpec(MessageID.headUnitLimits, "HeadUnitLimits", [
            ParameterSpec(0, "MaximumTabs", .uint8),
            ParameterSpec(1, "MaximumPageSize", .uint16),
            ParameterSpec(2, "MaximumImageRowImages", .uint8),
            ParameterSpec(3, "ImageScale", .uint8),
        ]),
        MessageSpec(MessageID.queueRequest, "QueueRequest", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "Offset", .uint32),
            ParameterSpec(2, "Count", .uint16),
        ]),
        MessageSpec(MessageID.queueResponse, "QueueResponse", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(2, "TotalCount", .uint32),
            ParameterSpec(3, "Offset", .uint32),
            ParameterSpec(4, "CurrentIndex", .uint32),
            ParameterSpec(5, "Item", .group, members: contentItemMembers),
            ParameterSpec(6, "ErrorText", .utf8),
        ]),
        MessageSpec(MessageID.imageRequest, "ImageRequest", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "ImageIdentifier", .utf8),
            ParameterSpec(2, "Scale", .uint8),
        ]),
        MessageSpec(MessageID.imageResponse, "ImageResponse", [
            ParameterSpec(0, "RequestIdentifier", .uint32),
            ParameterSpec(1, "Status", .enumeration, values: requestStatuses),
            ParameterSpec(2, "FileTransferIdentifier", .uint8),
            ParameterSpec(3, "ErrorText", .utf8),
        ]),
    ]

    /// The diagnostic ping (0xFE00...0xFEFE even, answered with id + 1).
    static let diagnostics: [MessageSpec] = stride(from: 0xFE00, through: 0xFEFE, by: 2).flatMap { id -> [MessageSpec] in
        [MessageSpec(UInt16(id), "DiagnosticPing", [ParameterSpec(0, "Sequence", .uint32), ParameterSpec(1, "Padding", .blob)]),
         MessageSpec(UInt16(id + 1), "DiagnosticPingAnswer", [ParameterSpec(0, "Sequence", .uint32), ParameterSpec(1, "Padding", .blob)])]
    }

    // MARK: Communications (ids only)

    static let communications: [MessageSpec] = [
        MessageSpec(0x4154, "StartCallStateUpdates"),
        MessageSpec(0x4155, "CallStateUpdate"),
        MessageSpec(0x4156, "StopCallStateUpdates"),
        MessageSpec(0x4171, "ListUpdate"),
        MessageSpec(0x4172, "StopListUpdates"),
    ]
}
