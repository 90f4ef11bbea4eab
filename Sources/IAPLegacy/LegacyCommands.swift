import IAPWire

/// Statuses and codes of the legacy iPod accessory protocol (iAP1) that the
/// phone answers, as public device-side implementations use them
/// (IAP-FACTS.md; Rockbox `apps/iap`, libiap, oandrew/ipod). The command ids
/// are IAPWire's.
typealias General = IAP1General
typealias Extended = IAP1Extended


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
