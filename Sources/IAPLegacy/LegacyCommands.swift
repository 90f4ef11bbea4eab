/// Command ids, statuses and codes of the legacy iPod accessory protocol
/// (iAP1) that the phone answers, as public device-side implementations use
/// them (IAP-FACTS.md; Rockbox `apps/iap`, libiap, oandrew/ipod).
enum General {
    static let lingo: UInt8 = 0x00

    static let identify: UInt16 = 0x01
    static let ack: UInt16 = 0x02
    static let requestRemoteUIMode: UInt16 = 0x03
    static let returnRemoteUIMode: UInt16 = 0x04
    static let enterRemoteUIMode: UInt16 = 0x05
    static let exitRemoteUIMode: UInt16 = 0x06
    static let requestName: UInt16 = 0x07
    static let returnName: UInt16 = 0x08
    static let requestSoftwareVersion: UInt16 = 0x09
    static let returnSoftwareVersion: UInt16 = 0x0A
    static let requestSerialNumber: UInt16 = 0x0B
    static let returnSerialNumber: UInt16 = 0x0C
    static let requestModelNumber: UInt16 = 0x0D
    static let returnModelNumber: UInt16 = 0x0E
    static let requestLingoProtocolVersion: UInt16 = 0x0F
    static let returnLingoProtocolVersion: UInt16 = 0x10
    static let requestTransportMaxPayloadSize: UInt16 = 0x11
    static let returnTransportMaxPayloadSize: UInt16 = 0x12
    static let identifyDeviceLingoes: UInt16 = 0x13
    static let getDevAuthenticationInfo: UInt16 = 0x14
    static let retDevAuthenticationInfo: UInt16 = 0x15
    static let ackDevAuthenticationInfo: UInt16 = 0x16
    static let getDevAuthenticationSignature: UInt16 = 0x17
    static let retDevAuthenticationSignature: UInt16 = 0x18
    static let ackDevAuthenticationStatus: UInt16 = 0x19
    static let getOptions: UInt16 = 0x24
    static let returnOptions: UInt16 = 0x25
    static let getPreferences: UInt16 = 0x29
    static let retPreferences: UInt16 = 0x2A
    static let startIDPS: UInt16 = 0x38
    static let setFIDTokenValues: UInt16 = 0x39
    static let retFIDTokenValueAcks: UInt16 = 0x3A
    static let endIDPS: UInt16 = 0x3B
    static let idpsStatus: UInt16 = 0x3C
    static let getOptionsForLingo: UInt16 = 0x4B
    static let retOptionsForLingo: UInt16 = 0x4C
    static let getSupportedEventNotification: UInt16 = 0x4F
    static let retSupportedEventNotification: UInt16 = 0x51
}

enum Extended {
    static let lingo: UInt8 = 0x04

    static let ack: UInt16 = 0x0001
    static let getChapterInfo: UInt16 = 0x0002
    static let returnChapterInfo: UInt16 = 0x0003
    static let requestProtocolVersion: UInt16 = 0x0012
    static let returnProtocolVersion: UInt16 = 0x0013
    static let requestName: UInt16 = 0x0014
    static let returnName: UInt16 = 0x0015
    static let resetDBSelection: UInt16 = 0x0016
    static let selectDBRecord: UInt16 = 0x0017
    static let getNumberCategorizedDBRecords: UInt16 = 0x0018
    static let returnNumberCategorizedDBRecords: UInt16 = 0x0019
    static let retrieveCategorizedDatabaseRecords: UInt16 = 0x001A
    static let returnCategorizedDatabaseRecord: UInt16 = 0x001B
    static let getPlayStatus: UInt16 = 0x001C
    static let returnPlayStatus: UInt16 = 0x001D
    static let getCurrentPlayingTrackIndex: UInt16 = 0x001E
    static let returnCurrentPlayingTrackIndex: UInt16 = 0x001F
    static let getIndexedPlayingTrackTitle: UInt16 = 0x0020
    static let getIndexedPlayingTrackArtist: UInt16 = 0x0022
    static let getIndexedPlayingTrackAlbum: UInt16 = 0x0024
    static let setPlayStatusChangeNotification: UInt16 = 0x0026
    static let playStatusChangeNotification: UInt16 = 0x0027
    static let playCurrentSelection: UInt16 = 0x0028
    static let playControl: UInt16 = 0x0029
    static let getShuffle: UInt16 = 0x002C
    static let returnShuffle: UInt16 = 0x002D
    static let setShuffle: UInt16 = 0x002E
    static let getRepeat: UInt16 = 0x002F
    static let returnRepeat: UInt16 = 0x0030
    static let setRepeat: UInt16 = 0x0031
    static let getNumPlayingTracks: UInt16 = 0x0035
    static let returnNumPlayingTracks: UInt16 = 0x0036
    static let setCurrentPlayingTrack: UInt16 = 0x0037
    static let selectSortDBRecord: UInt16 = 0x0038
    /// The first command of the range a real device serves only to an
    /// authenticated accessory (0x003B and above).
    static let firstAuthenticatedCommand: UInt16 = 0x003B
    static let resetDBSelectionHierarchy: UInt16 = 0x003B
}

/// The status byte of iPodAck (General) and ACK (Extended Interface).
enum LegacyStatus: UInt8 {
    case success = 0x00
    case commandFailed = 0x02
    case badParameter = 0x04
    case notAuthenticated = 0x07
    case badAuthenticationVersion = 0x08
    case certificateInvalid = 0x0A
}

/// Database categories of the Extended Interface. The phone's content tree
/// is read as nested playlists: containers are playlists, playable items
/// tracks, level by level; the music-library categories (artist, album,
/// genre, …) have no records.
enum Category: UInt8 {
    case playlist = 0x01
    case track = 0x05
    case nestedPlaylist = 0x09
}

/// PlayStatusChangeNotification types and the mask bits that enable them.
enum Notification {
    static let stopped: UInt8 = 0x00
    static let trackIndex: UInt8 = 0x01
    static let trackPositionMilliseconds: UInt8 = 0x04
    static let extendedStatus: UInt8 = 0x06
    static let trackPositionSeconds: UInt8 = 0x07
    static let contentsChanged: UInt8 = 0x0E

    /// Mask bits (the 4-byte form of SetPlayStatusChangeNotification).
    static let basicBit: UInt32 = 1 << 0
    static let extendedStatusBit: UInt32 = 1 << 1
    static let trackIndexBit: UInt32 = 1 << 2
    static let trackMillisecondsBit: UInt32 = 1 << 3
    static let trackSecondsBit: UInt32 = 1 << 4
    static let contentsBit: UInt32 = 1 << 12
    /// What the 1-byte form's "enable" turns on: the basic events, track
    /// index and position in milliseconds (types 0x00 to 0x05).
    static let oneByteEnable: UInt32 = basicBit | trackIndexBit | trackMillisecondsBit
}
