/// The control-message ids this stack sends, receives or decodes by name:
/// the one definition, used by the catalog's table, the codecs, the roles,
/// the session and the trace decoder alike. `MessageCatalog` names each one
/// (a test checks every constant against the catalog).
public enum MessageID {
    // Authentication (IAP-FACTS.md, Authentication).
    public static let requestAuthenticationCertificate: UInt16 = 0xAA00
    public static let authenticationCertificate: UInt16 = 0xAA01
    public static let requestAuthenticationChallengeResponse: UInt16 = 0xAA02
    public static let authenticationResponse: UInt16 = 0xAA03
    public static let authenticationFailed: UInt16 = 0xAA04
    public static let authenticationSucceeded: UInt16 = 0xAA05
    public static let accessoryAuthenticationSerialNumber: UInt16 = 0xAA06

    // Identification.
    public static let startIdentification: UInt16 = 0x1D00
    public static let identificationInformation: UInt16 = 0x1D01
    public static let identificationAccepted: UInt16 = 0x1D02
    public static let identificationRejected: UInt16 = 0x1D03
    public static let cancelIdentification: UInt16 = 0x1D05
    public static let identificationInformationUpdate: UInt16 = 0x1D06

    // Now playing.
    public static let startNowPlayingUpdates: UInt16 = 0x5000
    public static let nowPlayingUpdate: UInt16 = 0x5001
    public static let stopNowPlayingUpdates: UInt16 = 0x5002
    public static let setNowPlayingInformation: UInt16 = 0x5003

    // Media Library Access (MEDIA-LIBRARY-FACTS.md §1).
    public static let startMediaLibraryInformation: UInt16 = 0x4C00
    public static let mediaLibraryInformation: UInt16 = 0x4C01
    public static let stopMediaLibraryInformation: UInt16 = 0x4C02
    public static let startMediaLibraryUpdates: UInt16 = 0x4C03
    public static let mediaLibraryUpdate: UInt16 = 0x4C04
    public static let stopMediaLibraryUpdates: UInt16 = 0x4C05
    public static let playMediaLibraryCurrentSelection: UInt16 = 0x4C06
    public static let playMediaLibraryItems: UInt16 = 0x4C07
    public static let playMediaLibraryCollection: UInt16 = 0x4C08
    public static let playMediaLibrarySpecial: UInt16 = 0x4C09

    // HID.
    public static let startHID: UInt16 = 0x6800
    public static let deviceHIDReport: UInt16 = 0x6801
    public static let accessoryHIDReport: UInt16 = 0x6802
    public static let stopHID: UInt16 = 0x6803

    // The dev-kit extension (0xB100...0xB1FF, Docs/Messages.md).
    public static let devKitExtension: ClosedRange<UInt16> = 0xB100...0xB1FF
    public static let browseRequest: UInt16 = 0xB100
    public static let browseResponse: UInt16 = 0xB101
    public static let playItemRequest: UInt16 = 0xB102
    public static let requestStatus: UInt16 = 0xB103
    public static let remoteCommand: UInt16 = 0xB110
    public static let advertisedCommands: UInt16 = 0xB112
    public static let mediaAppInformation: UInt16 = 0xB113
    public static let headUnitLimits: UInt16 = 0xB114
    public static let queueRequest: UInt16 = 0xB120
    public static let queueResponse: UInt16 = 0xB121
    public static let imageRequest: UInt16 = 0xB130
    public static let imageResponse: UInt16 = 0xB131

    /// The authentication exchange, in the order it runs.
    public static let authentication: [UInt16] = [
        requestAuthenticationCertificate, authenticationCertificate, requestAuthenticationChallengeResponse, authenticationResponse,
        authenticationFailed, authenticationSucceeded, accessoryAuthenticationSerialNumber,
    ]
    /// Identification's messages.
    public static let identification: ClosedRange<UInt16> = startIdentification...identificationInformationUpdate
}
