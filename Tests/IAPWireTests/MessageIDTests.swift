import Testing
import IAPWire

/// `MessageID` is the one definition of the ids the stack uses; the catalog
/// names each one as the protocol does, so the two cannot drift apart.
@Suite struct MessageIDTests {
    @Test(arguments: [
        (MessageID.requestAuthenticationCertificate, "RequestAuthenticationCertificate"),
        (MessageID.authenticationCertificate, "AuthenticationCertificate"),
        (MessageID.requestAuthenticationChallengeResponse, "RequestAuthenticationChallengeResponse"),
        (MessageID.authenticationResponse, "AuthenticationResponse"),
        (MessageID.authenticationFailed, "AuthenticationFailed"),
        (MessageID.authenticationSucceeded, "AuthenticationSucceeded"),
        (MessageID.accessoryAuthenticationSerialNumber, "AccessoryAuthenticationSerialNumber"),
        (MessageID.startIdentification, "StartIdentification"),
        (MessageID.identificationInformation, "IdentificationInformation"),
        (MessageID.identificationAccepted, "IdentificationAccepted"),
        (MessageID.identificationRejected, "IdentificationRejected"),
        (MessageID.cancelIdentification, "CancelIdentification"),
        (MessageID.identificationInformationUpdate, "IdentificationInformationUpdate"),
        (MessageID.startNowPlayingUpdates, "StartNowPlayingUpdates"),
        (MessageID.nowPlayingUpdate, "NowPlayingUpdate"),
        (MessageID.stopNowPlayingUpdates, "StopNowPlayingUpdates"),
        (MessageID.setNowPlayingInformation, "SetNowPlayingInformation"),
        (MessageID.startHID, "StartHID"),
        (MessageID.deviceHIDReport, "DeviceHIDReport"),
        (MessageID.accessoryHIDReport, "AccessoryHIDReport"),
        (MessageID.stopHID, "StopHID"),
        (MessageID.browseRequest, "BrowseRequest"),
        (MessageID.browseResponse, "BrowseResponse"),
        (MessageID.playItemRequest, "PlayItemRequest"),
        (MessageID.requestStatus, "RequestStatus"),
        (MessageID.remoteCommand, "RemoteCommand"),
        (MessageID.advertisedCommands, "AdvertisedCommands"),
        (MessageID.mediaAppInformation, "MediaAppInformation"),
        (MessageID.headUnitLimits, "HeadUnitLimits"),
        (MessageID.queueRequest, "QueueRequest"),
        (MessageID.queueResponse, "QueueResponse"),
        (MessageID.imageRequest, "ImageRequest"),
        (MessageID.imageResponse, "ImageResponse"),
    ])
    func eachConstantIsTheCatalogsMessage(id: UInt16, name: String) {
        #expect(MessageCatalog.name(of: id) == name)
    }

    /// The wire values from public sources (IAP-FACTS.md) for the exchange
    /// every session starts with.
    @Test func theSessionsFirstMessagesHaveTheirPublicIds() {
        #expect(MessageID.authentication.prefix(6) == [0xAA00, 0xAA01, 0xAA02, 0xAA03, 0xAA04, 0xAA05])
        #expect(MessageID.identification == 0x1D00...0x1D06)
        #expect([MessageID.startNowPlayingUpdates, MessageID.nowPlayingUpdate, MessageID.startHID] == [0x5000, 0x5001, 0x6800])
    }
}
