/// The control-message parameter ids this stack encodes, decodes or names:
/// the one definition, used by the catalog's table, the codecs, the roles,
/// the session and the trace tools alike. A parameter id means something
/// only within its message or group, so each message (or group) has its own
/// namespace, named as the catalog names it; `MessageCatalog` names each
/// parameter (a test checks every constant against the catalog).
///
/// Messages the stack only names in the catalog and never builds or reads
/// (external accessory 0xEA.., media library 0x4C.., power 0xAE.., USB audio
/// 0xDA.., StartNativeHID and HIDComponentUpdate) keep literal ids in their
/// catalog rows, as they keep literal message ids.
public enum ParameterID {
    // MARK: Authentication

    public enum AuthenticationCertificate {
        public static let certificate: UInt16 = 0
    }

    public enum RequestAuthenticationChallengeResponse {
        public static let challenge: UInt16 = 0
    }

    public enum AuthenticationResponse {
        public static let response: UInt16 = 0
    }

    public enum AccessoryAuthenticationSerialNumber {
        public static let serialNumber: UInt16 = 0
    }

    // MARK: Identification

    /// IdentificationInformation; IdentificationRejected names the same ids,
    /// and IdentificationInformationUpdate carries the same parameters.
    public enum IdentificationInformation {
        public static let name: UInt16 = 0
        public static let modelIdentifier: UInt16 = 1
        public static let manufacturer: UInt16 = 2
        public static let serialNumber: UInt16 = 3
        public static let firmwareVersion: UInt16 = 4
        public static let hardwareVersion: UInt16 = 5
        public static let messagesSentByAccessory: UInt16 = 6
        public static let messagesReceivedFromDevice: UInt16 = 7
        public static let powerProvidingCapability: UInt16 = 8
        public static let maximumCurrentDrawnFromDevice: UInt16 = 9
        public static let supportedExternalAccessoryProtocol: UInt16 = 10
        public static let appMatchTeamID: UInt16 = 11
        public static let currentLanguage: UInt16 = 12
        public static let supportedLanguage: UInt16 = 13
        public static let serialTransportComponent: UInt16 = 14
        public static let usbDeviceTransportComponent: UInt16 = 15
        public static let usbHostTransportComponent: UInt16 = 16
        public static let bluetoothTransportComponent: UInt16 = 17
        public static let iAP2HIDComponent: UInt16 = 18
    }

    /// Members of IdentificationInformation's SupportedExternalAccessoryProtocol.
    public enum ExternalAccessoryProtocol {
        public static let identifier: UInt16 = 0
        public static let name: UInt16 = 1
        public static let matchAction: UInt16 = 2
        public static let nativeTransportComponentIdentifier: UInt16 = 3
    }

    /// Members of the four transport component groups of
    /// IdentificationInformation; the last three are each one transport's
    /// member 3.
    public enum TransportComponent {
        public static let identifier: UInt16 = 0
        public static let name: UInt16 = 1
        public static let supportsiAP2Connection: UInt16 = 2
        public static let usbDeviceSupportedAudioSampleRate: UInt16 = 3
        public static let usbHostCarPlayInterfaceNumber: UInt16 = 3
        public static let bluetoothMediaAccessControlAddress: UInt16 = 3
    }

    /// Members of IdentificationInformation's iAP2HIDComponent.
    public enum HIDComponent {
        public static let identifier: UInt16 = 0
        public static let name: UInt16 = 1
        public static let function: UInt16 = 2
    }

    // MARK: Now playing

    /// NowPlayingUpdate's two groups; StartNowPlayingUpdates names the
    /// wanted attributes in groups of the same ids.
    public enum NowPlayingUpdate {
        public static let mediaItemAttributes: UInt16 = 0
        public static let playbackAttributes: UInt16 = 1
    }

    /// Media item attributes (members of NowPlayingUpdate's
    /// MediaItemAttributes group).
    public enum MediaItem {
        public static let persistentIdentifier: UInt16 = 0
        public static let title: UInt16 = 1
        public static let mediaType: UInt16 = 2
        public static let rating: UInt16 = 3
        public static let playbackDurationInMilliseconds: UInt16 = 4
        public static let albumPersistentIdentifier: UInt16 = 5
        public static let albumTitle: UInt16 = 6
        public static let albumTrackNumber: UInt16 = 7
        public static let albumTrackCount: UInt16 = 8
        public static let albumDiscNumber: UInt16 = 9
        public static let albumDiscCount: UInt16 = 10
        public static let artistPersistentIdentifier: UInt16 = 11
        public static let artist: UInt16 = 12
        public static let albumArtistPersistentIdentifier: UInt16 = 13
        public static let albumArtist: UInt16 = 14
        public static let genrePersistentIdentifier: UInt16 = 15
        public static let genre: UInt16 = 16
        public static let composerPersistentIdentifier: UInt16 = 17
        public static let composer: UInt16 = 18
        public static let isPartOfCompilation: UInt16 = 19
        public static let isLikeSupported: UInt16 = 21
        public static let isBanSupported: UInt16 = 22
        public static let isLiked: UInt16 = 23
        public static let isBanned: UInt16 = 24
        public static let isResidentOnDevice: UInt16 = 25
        public static let artworkFileTransferIdentifier: UInt16 = 26
        public static let chapterCount: UInt16 = 27
        /// Dev-kit extension (Docs/Messages.md).
        public static let devKitReleaseDate: UInt16 = 0x4000
    }

    // MARK: Media Library Access (MEDIA-LIBRARY-FACTS.md §2)

    /// Members of MediaLibraryInformation's repeated group (parameter 0).
    public enum MediaLibraryInformation {
        public static let library: UInt16 = 0
        public static let name: UInt16 = 0
        public static let uniqueIdentifier: UInt16 = 1
        public static let type: UInt16 = 2
    }

    public enum StartMediaLibraryUpdates {
        public static let uniqueIdentifier: UInt16 = 0
        public static let lastKnownRevision: UInt16 = 1
        /// A group of header-only members naming `MediaItem` ids.
        public static let mediaItemProperties: UInt16 = 2
        /// A group of header-only members naming `MediaPlaylist` ids.
        public static let mediaPlaylistProperties: UInt16 = 3
        public static let updateProgress: UInt16 = 4
        public static let isHidingRemoteItems: UInt16 = 5
        public static let playAllSongsCapable: UInt16 = 6
        public static let playlistContentTransferInfoRequest: UInt16 = 7
    }

    public enum MediaLibraryUpdate {
        public static let uniqueIdentifier: UInt16 = 0
        public static let revision: UInt16 = 1
        public static let mediaItem: UInt16 = 2
        public static let mediaPlaylist: UInt16 = 3
        public static let deletedItem: UInt16 = 4
        public static let deletedPlaylist: UInt16 = 5
        public static let reset: UInt16 = 6
        public static let progress: UInt16 = 7
        public static let isHidingRemoteItems: UInt16 = 8
        public static let playAllSongsCapable: UInt16 = 9
    }

    /// Members of a MediaPlaylist group.
    public enum MediaPlaylist {
        public static let persistentIdentifier: UInt16 = 0
        public static let name: UInt16 = 1
        public static let parentPersistentIdentifier: UInt16 = 2
        public static let isGeniusMix: UInt16 = 3
        public static let isFolder: UInt16 = 4
        public static let contentsFileTransferIdentifier: UInt16 = 5
        public static let isAppleMusicRadioStation: UInt16 = 6
        public static let contentTransfer: UInt16 = 7
    }

    /// The library named by StopMediaLibraryUpdates and PlayMediaLibraryCurrentSelection.
    public enum MediaLibraryNamed {
        public static let uniqueIdentifier: UInt16 = 0
    }

    public enum PlayMediaLibraryItems {
        /// Big-endian u64 persistent ids, concatenated.
        public static let itemPersistentIdentifiers: UInt16 = 0
        public static let startingIndex: UInt16 = 1
        public static let uniqueIdentifier: UInt16 = 2
    }

    public enum PlayMediaLibraryCollection {
        public static let collectionPersistentIdentifier: UInt16 = 0
        public static let collectionType: UInt16 = 1
        public static let startingIndex: UInt16 = 2
        public static let uniqueIdentifier: UInt16 = 3
        public static let startingItemPersistentIdentifier: UInt16 = 4
    }

    public enum PlayMediaLibrarySpecial {
        public static let uniqueIdentifier: UInt16 = 0
        public static let allSongs: UInt16 = 1
        public static let startingItemPersistentIdentifier: UInt16 = 2
    }

    /// Playback attributes (members of NowPlayingUpdate's PlaybackAttributes
    /// group).
    public enum Playback {
        public static let status: UInt16 = 0
        public static let elapsedTimeInMilliseconds: UInt16 = 1
        public static let queueIndex: UInt16 = 2
        public static let queueCount: UInt16 = 3
        public static let queueChapterIndex: UInt16 = 4
        public static let shuffleMode: UInt16 = 5
        public static let repeatMode: UInt16 = 6
        public static let appName: UInt16 = 7
        public static let mediaLibraryUniqueIdentifier: UInt16 = 8
        public static let appleMusicRadioAd: UInt16 = 9
        public static let appleMusicRadioStationName: UInt16 = 10
        public static let speed: UInt16 = 12
        public static let setElapsedTimeAvailable: UInt16 = 13
        public static let queueListAvail: UInt16 = 14
        public static let queueListTransferID: UInt16 = 15
        public static let appBundleID: UInt16 = 16
        public static let queueListContentTransfer: UInt16 = 17
        /// Dev-kit extension (Docs/Messages.md).
        public static let devKitPlaybackState: UInt16 = 0x4000
        /// Dev-kit extension (Docs/Messages.md).
        public static let devKitDefaultPlaybackRate: UInt16 = 0x4001
    }

    public enum SetNowPlayingInformation {
        public static let elapsedTime: UInt16 = 0
        public static let playbackQueueIndex: UInt16 = 1
        public static let playbackQueueListContentTransferStartIndex: UInt16 = 2
    }

    // MARK: HID

    public enum StartHID {
        public static let hidComponentIdentifier: UInt16 = 0
        public static let vendorIdentifier: UInt16 = 1
        public static let productIdentifier: UInt16 = 2
        public static let localizedKeyboardCountryCode: UInt16 = 3
        public static let hidReportDescriptor: UInt16 = 4
    }

    public enum DeviceHIDReport {
        public static let hidComponentIdentifier: UInt16 = 0
        public static let hidReport: UInt16 = 1
    }

    public enum AccessoryHIDReport {
        public static let hidComponentIdentifier: UInt16 = 0
        public static let hidReport: UInt16 = 1
    }

    public enum StopHID {
        public static let hidComponentIdentifier: UInt16 = 0
    }

    // MARK: Dev-kit extension (Docs/Messages.md)

    public enum BrowseRequest {
        public static let requestIdentifier: UInt16 = 0
        public static let containerIdentifier: UInt16 = 1
        public static let offset: UInt16 = 2
        public static let count: UInt16 = 3
    }

    public enum BrowseResponse {
        public static let requestIdentifier: UInt16 = 0
        public static let status: UInt16 = 1
        public static let totalCount: UInt16 = 2
        public static let offset: UInt16 = 3
        public static let item: UInt16 = 4
        public static let section: UInt16 = 5
        public static let errorText: UInt16 = 6
    }

    /// Members of an Item group (BrowseResponse, QueueResponse).
    public enum ContentItem {
        public static let itemIdentifier: UInt16 = 0
        public static let itemKind: UInt16 = 1
        public static let text: UInt16 = 2
        public static let detailText: UInt16 = 3
        public static let imageIdentifier: UInt16 = 4
        public static let accessory: UInt16 = 5
        public static let playingIndicator: UInt16 = 6
        public static let enabled: UInt16 = 7
        public static let appValue: UInt16 = 8
        public static let imageRow: UInt16 = 9
        public static let section: UInt16 = 10
        public static let badge: UInt16 = 11
    }

    /// Members of an item's ImageRow group.
    public enum ImageRow {
        public static let title: UInt16 = 0
        public static let image: UInt16 = 1
    }

    /// Members of an ImageRow's Image group.
    public enum ImageRowImage {
        public static let entryIdentifier: UInt16 = 0
        public static let imageIdentifier: UInt16 = 1
        public static let selectable: UInt16 = 2
    }

    /// Members of BrowseResponse's Section group.
    public enum Section {
        public static let sectionIdentifier: UInt16 = 0
        public static let sectionKind: UInt16 = 1
        public static let title: UInt16 = 2
        public static let itemCount: UInt16 = 3
    }

    public enum PlayItemRequest {
        public static let requestIdentifier: UInt16 = 0
        public static let itemIdentifier: UInt16 = 1
        public static let imageRowEntryIdentifier: UInt16 = 2
    }

    public enum RequestStatus {
        public static let requestIdentifier: UInt16 = 0
        public static let status: UInt16 = 1
        public static let errorText: UInt16 = 2
    }

    public enum RemoteCommand {
        public static let requestIdentifier: UInt16 = 0
        public static let command: UInt16 = 1
        public static let milliseconds: UInt16 = 2
        public static let mode: UInt16 = 3
        public static let active: UInt16 = 4
    }

    public enum AdvertisedCommands {
        public static let command: UInt16 = 0
    }

    /// Members of AdvertisedCommands' Command group.
    public enum AdvertisedCommand {
        public static let command: UInt16 = 0
        public static let enabled: UInt16 = 1
    }

    public enum MediaAppInformation {
        public static let appName: UInt16 = 0
        public static let hasContentTree: UInt16 = 1
    }

    public enum HeadUnitLimits {
        public static let maximumTabs: UInt16 = 0
        public static let maximumPageSize: UInt16 = 1
        public static let maximumImageRowImages: UInt16 = 2
        public static let imageScale: UInt16 = 3
    }

    public enum QueueRequest {
        public static let requestIdentifier: UInt16 = 0
        public static let offset: UInt16 = 1
        public static let count: UInt16 = 2
    }

    public enum QueueResponse {
        public static let requestIdentifier: UInt16 = 0
        public static let status: UInt16 = 1
        public static let totalCount: UInt16 = 2
        public static let offset: UInt16 = 3
        public static let currentIndex: UInt16 = 4
        public static let item: UInt16 = 5
        public static let errorText: UInt16 = 6
    }

    public enum ImageRequest {
        public static let requestIdentifier: UInt16 = 0
        public static let imageIdentifier: UInt16 = 1
        public static let scale: UInt16 = 2
    }

    public enum ImageResponse {
        public static let requestIdentifier: UInt16 = 0
        public static let status: UInt16 = 1
        public static let fileTransferIdentifier: UInt16 = 2
        public static let errorText: UInt16 = 3
    }

    // MARK: Diagnostics

    /// DiagnosticPing and its answer (the same parameters, echoed).
    public enum DiagnosticPing {
        public static let sequence: UInt16 = 0
        public static let padding: UInt16 = 1
    }
}
