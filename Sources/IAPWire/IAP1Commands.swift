/// Command ids of the two iAP1 lingoes this stack speaks and decodes
/// (General 0x00, Extended Interface 0x04), as public device-side
/// implementations use them (IAP-FACTS.md; Rockbox `apps/iap`, libiap,
/// oandrew/ipod): the one home of these numbers, for the legacy phone that
/// answers them and the trace decoder that names them.
public enum IAP1General {
    public static let lingo: UInt8 = 0x00

    public static let identify: UInt16 = 0x01
    public static let ack: UInt16 = 0x02
    public static let requestRemoteUIMode: UInt16 = 0x03
    public static let returnRemoteUIMode: UInt16 = 0x04
    public static let enterRemoteUIMode: UInt16 = 0x05
    public static let exitRemoteUIMode: UInt16 = 0x06
    public static let requestName: UInt16 = 0x07
    public static let returnName: UInt16 = 0x08
    public static let requestSoftwareVersion: UInt16 = 0x09
    public static let returnSoftwareVersion: UInt16 = 0x0A
    public static let requestSerialNumber: UInt16 = 0x0B
    public static let returnSerialNumber: UInt16 = 0x0C
    public static let requestModelNumber: UInt16 = 0x0D
    public static let returnModelNumber: UInt16 = 0x0E
    public static let requestLingoProtocolVersion: UInt16 = 0x0F
    public static let returnLingoProtocolVersion: UInt16 = 0x10
    public static let requestTransportMaxPayloadSize: UInt16 = 0x11
    public static let returnTransportMaxPayloadSize: UInt16 = 0x12
    public static let identifyDeviceLingoes: UInt16 = 0x13
    public static let getDevAuthenticationInfo: UInt16 = 0x14
    public static let retDevAuthenticationInfo: UInt16 = 0x15
    public static let ackDevAuthenticationInfo: UInt16 = 0x16
    public static let getDevAuthenticationSignature: UInt16 = 0x17
    public static let retDevAuthenticationSignature: UInt16 = 0x18
    public static let ackDevAuthenticationStatus: UInt16 = 0x19
    public static let getOptions: UInt16 = 0x24
    public static let returnOptions: UInt16 = 0x25
    public static let getPreferences: UInt16 = 0x29
    public static let retPreferences: UInt16 = 0x2A
    public static let startIDPS: UInt16 = 0x38
    public static let setFIDTokenValues: UInt16 = 0x39
    public static let retFIDTokenValueAcks: UInt16 = 0x3A
    public static let endIDPS: UInt16 = 0x3B
    public static let idpsStatus: UInt16 = 0x3C
    public static let getOptionsForLingo: UInt16 = 0x4B
    public static let retOptionsForLingo: UInt16 = 0x4C
    public static let getSupportedEventNotification: UInt16 = 0x4F
    public static let retSupportedEventNotification: UInt16 = 0x51
}

public enum IAP1Extended {
    public static let lingo: UInt8 = 0x04

    public static let ack: UInt16 = 0x0001
    public static let getChapterInfo: UInt16 = 0x0002
    public static let returnChapterInfo: UInt16 = 0x0003
    public static let requestProtocolVersion: UInt16 = 0x0012
    public static let returnProtocolVersion: UInt16 = 0x0013
    public static let requestName: UInt16 = 0x0014
    public static let returnName: UInt16 = 0x0015
    public static let resetDBSelection: UInt16 = 0x0016
    public static let selectDBRecord: UInt16 = 0x0017
    public static let getNumberCategorizedDBRecords: UInt16 = 0x0018
    public static let returnNumberCategorizedDBRecords: UInt16 = 0x0019
    public static let retrieveCategorizedDatabaseRecords: UInt16 = 0x001A
    public static let returnCategorizedDatabaseRecord: UInt16 = 0x001B
    public static let getPlayStatus: UInt16 = 0x001C
    public static let returnPlayStatus: UInt16 = 0x001D
    public static let getCurrentPlayingTrackIndex: UInt16 = 0x001E
    public static let returnCurrentPlayingTrackIndex: UInt16 = 0x001F
    public static let getIndexedPlayingTrackTitle: UInt16 = 0x0020
    public static let getIndexedPlayingTrackArtist: UInt16 = 0x0022
    public static let getIndexedPlayingTrackAlbum: UInt16 = 0x0024
    public static let setPlayStatusChangeNotification: UInt16 = 0x0026
    public static let playStatusChangeNotification: UInt16 = 0x0027
    public static let playCurrentSelection: UInt16 = 0x0028
    public static let playControl: UInt16 = 0x0029
    public static let getShuffle: UInt16 = 0x002C
    public static let returnShuffle: UInt16 = 0x002D
    public static let setShuffle: UInt16 = 0x002E
    public static let getRepeat: UInt16 = 0x002F
    public static let returnRepeat: UInt16 = 0x0030
    public static let setRepeat: UInt16 = 0x0031
    public static let getNumPlayingTracks: UInt16 = 0x0035
    public static let returnNumPlayingTracks: UInt16 = 0x0036
    public static let setCurrentPlayingTrack: UInt16 = 0x0037
    public static let selectSortDBRecord: UInt16 = 0x0038
    /// The first command of the range a real device serves only to an
    /// authenticated accessory (0x003B and above).
    public static let firstAuthenticatedCommand: UInt16 = 0x003B
    public static let resetDBSelectionHierarchy: UInt16 = 0x003B
}
