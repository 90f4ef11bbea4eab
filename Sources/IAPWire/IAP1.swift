/// A legacy iAP1 packet (the older iPod accessory protocol), as found in
/// traces from older head units.
///
/// Frame: `[FF] 55 len payload checksum`, where `len` is one byte, or
/// `00 hi lo` for payloads over 255 bytes, and the checksum makes the length
/// bytes, payload and checksum sum to zero. The payload is `lingo command
/// [transaction id] data`; the Extended Interface lingo (0x04) uses 16-bit
/// command ids, the others 8-bit.
public struct IAP1Packet: Hashable, Sendable {
    public static let extendedInterfaceLingo: UInt8 = 0x04
    public static let generalLingo: UInt8 = 0x00

    public var lingo: UInt8
    public var command: UInt16
    public var transactionID: UInt16?
    public var data: [UInt8]

    public init(lingo: UInt8, command: UInt16, transactionID: UInt16? = nil, data: [UInt8] = []) {
        self.lingo = lingo
        self.command = command
        self.transactionID = transactionID
        self.data = data
    }

    public static func commandWidth(lingo: UInt8) -> Int { lingo == extendedInterfaceLingo ? 2 : 1 }

    /// Whether a frame's payload identifies an accessory to a device: General
    /// lingo Identify (0x01), IdentifyDeviceLingoes (0x13) or StartIDPS
    /// (0x38). What a device waits for before it takes a peer for a legacy
    /// head unit, so that noise that frames as iAP1 starts nothing.
    public static func isIdentification(_ payload: some Collection<UInt8>) -> Bool {
        let bytes = Array(payload.prefix(2))
        guard bytes.count == 2, bytes[0] == generalLingo else { return false }
        let command = UInt16(bytes[1])
        return command == IAP1General.identify || command == IAP1General.identifyDeviceLingoes || command == IAP1General.startIDPS
    }

    public var payload: [UInt8] {
        var bytes: [UInt8] = [lingo]
        if Self.commandWidth(lingo: lingo) == 2 { bytes.appendBigEndian(command) } else { bytes.append(UInt8(truncatingIfNeeded: command)) }
        if let transactionID { bytes.appendBigEndian(transactionID) }
        return bytes + data
    }

    /// The framed packet, with the `FF` sync byte when `sync` is true (UART).
    public func encoded(sync: Bool = false) throws(WireError) -> [UInt8] {
        let payload = self.payload
        guard payload.count <= 0xFFFF else {
            throw WireError(.tooLarge, "iAP1 payload of \(payload.count) bytes exceeds 65535")
        }
        var bytes: [UInt8] = sync ? [0xFF, 0x55] : [0x55]
        let lengthStart = bytes.count
        if payload.count <= 0xFF {
            bytes.append(UInt8(payload.count))
        } else {
            bytes.append(0)
            bytes.appendBigEndian(UInt16(payload.count))
        }
        bytes.append(contentsOf: payload)
        bytes.append(Checksum.of(bytes[lengthStart...]))
        return bytes
    }

    /// Reads lingo, command, optional transaction id and data from a frame payload.
    public init(payload: some Collection<UInt8>, hasTransactionID: Bool) throws(WireError) {
        let bytes = Array(payload)
        guard let lingo = bytes.first else { throw WireError(.truncated, "iAP1 payload is empty") }
        let width = Self.commandWidth(lingo: lingo)
        let header = 1 + width + (hasTransactionID ? 2 : 0)
        guard bytes.count >= header else {
            throw WireError(.truncated, "iAP1 payload of \(bytes.count) bytes is shorter than lingo, command\(hasTransactionID ? " and transaction id" : "")")
        }
        let command = width == 2 ? UInt16(bytes[1]) << 8 | UInt16(bytes[2]) : UInt16(bytes[1])
        let transaction = hasTransactionID ? UInt16(bytes[1 + width]) << 8 | UInt16(bytes[2 + width]) : nil
        self.init(lingo: lingo, command: command, transactionID: transaction, data: Array(bytes[header...]))
    }

    public var name: String? { IAP1Catalog.name(lingo: lingo, command: command) }
}

/// A frame located in a buffer whose boundaries are known (a reassembled
/// USB HID report): the payload range and whether the checksum holds.
public struct IAP1Frame: Hashable, Sendable {
    public var payloadRange: Range<Int>
    public var encodedLength: Int
    public var checksumValid: Bool

    /// Parses a frame starting at `start` (an optional `FF`, then `55`).
    /// Returns nil when no frame starts there or it does not fit in `bytes`.
    public static func parse(_ bytes: [UInt8], at start: Int) -> IAP1Frame? {
        var index = start
        if index < bytes.count, bytes[index] == 0xFF { index += 1 }
        guard index < bytes.count, bytes[index] == 0x55 else { return nil }
        let lengthStart = index + 1
        guard lengthStart < bytes.count else { return nil }
        var length = Int(bytes[lengthStart])
        var lengthBytes = 1
        if length == 0 {
            guard lengthStart + 2 < bytes.count else { return nil }
            length = Int(bytes[lengthStart + 1]) << 8 | Int(bytes[lengthStart + 2])
            lengthBytes = 3
        }
        let payloadStart = lengthStart + lengthBytes
        let end = payloadStart + length + 1
        guard length >= 2, end <= bytes.count else { return nil }
        let valid = Checksum.of(bytes[lengthStart..<end - 1]) == bytes[end - 1]
        return IAP1Frame(payloadRange: payloadStart..<end - 1, encodedLength: end - start, checksumValid: valid)
    }
}

/// Decides whether iAP1 payloads carry transaction ids. They do once IDPS
/// identification has started (StartIDPS carries the first one). When a trace
/// starts mid-session, the mode is inferred from commands whose data length
/// is fixed: a payload two bytes longer than the command takes can only hold
/// a transaction id.
public struct IAP1TransactionTracker: Hashable, Sendable {
    public enum Mode: Hashable, Sendable { case unknown, present, absent }
    public private(set) var mode: Mode = .unknown

    public init(mode: Mode = .unknown) { self.mode = mode }

    /// Reads a frame payload, updating the mode first from what it shows.
    public mutating func packet(fromPayload payload: some Collection<UInt8>) throws(WireError) -> IAP1Packet {
        let bytes = Array(payload)
        guard bytes.count >= 2 else { throw WireError(.truncated, "iAP1 payload of \(bytes.count) bytes has no command") }
        let lingo = bytes[0]
        let width = IAP1Packet.commandWidth(lingo: lingo)
        guard bytes.count >= 1 + width else { throw WireError(.truncated, "iAP1 payload of \(bytes.count) bytes has no command") }
        let command = width == 2 ? UInt16(bytes[1]) << 8 | UInt16(bytes[2]) : UInt16(bytes[1])
        let dataLength = bytes.count - 1 - width

        if lingo == IAP1Packet.generalLingo && (command == IAP1General.startIDPS) {
            mode = dataLength >= 2 ? .present : mode
        } else if lingo == IAP1Packet.generalLingo && command == IAP1General.identifyDeviceLingoes {
            // Identification without IDPS: no transaction ids on this link.
            mode = .absent
        } else if mode == .unknown, let lengths = IAP1Catalog.fixedDataLengths[IAP1Catalog.key(lingo, command)] {
            let withTransaction = dataLength >= 2 && lengths.contains(dataLength - 2)
            let without = lengths.contains(dataLength)
            if withTransaction && !without { mode = .present } else if without && !withTransaction { mode = .absent }
        }
        return try IAP1Packet(payload: bytes, hasTransactionID: mode == .present)
    }
}

/// Names of the iAP1 lingoes and commands that traces of head units show.
public enum IAP1Catalog {

    static func key(_ lingo: UInt8, _ command: UInt16) -> UInt32 { UInt32(lingo) << 16 | UInt32(command) }

    public static let lingoNames: [UInt8: String] = [
        0x00: "General", 0x01: "Microphone", 0x02: "SimpleRemote", 0x03: "DisplayRemote",
        0x04: "ExtendedInterface", 0x05: "AccessoryPower", 0x06: "USBHostMode", 0x07: "RFTuner",
        0x08: "AccessoryEqualizer", 0x09: "Sports", 0x0A: "DigitalAudio", 0x0C: "Storage",
    ]

    public static func name(lingo: UInt8, command: UInt16) -> String? { commandNames[key(lingo, command)] }

    static let commandNames: [UInt32: String] = {
        var names: [UInt32: String] = [:]
        let general: [(UInt16, String)] = [
            (0x00, "RequestIdentify"), (IAP1General.identify, "Identify"), (IAP1General.ack, "iPodAck"),
            (IAP1General.requestRemoteUIMode, "RequestRemoteUIMode"), (IAP1General.returnRemoteUIMode, "ReturnRemoteUIMode"), (IAP1General.enterRemoteUIMode, "EnterRemoteUIMode"), (IAP1General.exitRemoteUIMode, "ExitRemoteUIMode"),
            (IAP1General.requestName, "RequestiPodName"), (IAP1General.returnName, "ReturniPodName"), (IAP1General.requestSoftwareVersion, "RequestiPodSoftwareVersion"),
            (IAP1General.returnSoftwareVersion, "ReturniPodSoftwareVersion"), (IAP1General.requestSerialNumber, "RequestiPodSerialNum"), (IAP1General.returnSerialNumber, "ReturniPodSerialNum"),
            (IAP1General.requestModelNumber, "RequestiPodModelNum"), (IAP1General.returnModelNumber, "ReturniPodModelNum"), (IAP1General.requestLingoProtocolVersion, "RequestLingoProtocolVersion"),
            (IAP1General.returnLingoProtocolVersion, "ReturnLingoProtocolVersion"), (IAP1General.requestTransportMaxPayloadSize, "RequestTransportMaxPayloadSize"), (IAP1General.returnTransportMaxPayloadSize, "ReturnTransportMaxPayloadSize"),
            (IAP1General.identifyDeviceLingoes, "IdentifyDeviceLingoes"),
            (IAP1General.getDevAuthenticationInfo, "GetDevAuthenticationInfo"), (IAP1General.retDevAuthenticationInfo, "RetDevAuthenticationInfo"), (IAP1General.ackDevAuthenticationInfo, "AckDevAuthenticationInfo"),
            (IAP1General.getDevAuthenticationSignature, "GetDevAuthenticationSignature"), (IAP1General.retDevAuthenticationSignature, "RetDevAuthenticationSignature"), (IAP1General.ackDevAuthenticationStatus, "AckDevAuthenticationStatus"),
            (IAP1General.getOptions, "GetiPodOptions"), (IAP1General.returnOptions, "RetiPodOptions"), (IAP1General.getPreferences, "GetiPodPreferences"), (IAP1General.retPreferences, "RetiPodPreferences"),
            (IAP1General.startIDPS, "StartIDPS"), (IAP1General.setFIDTokenValues, "SetFIDTokenValues"), (IAP1General.retFIDTokenValueAcks, "RetFIDTokenValueACKs"),
            (IAP1General.endIDPS, "EndIDPS"), (IAP1General.idpsStatus, "IDPSStatus"), (IAP1General.getOptionsForLingo, "GetiPodOptionsForLingo"), (IAP1General.retOptionsForLingo, "RetiPodOptionsForLingo"),
            (IAP1General.getSupportedEventNotification, "GetSupportedEventNotification"), (IAP1General.retSupportedEventNotification, "RetSupportedEventNotification"),
            (0xEE, "iAP2Detect"),
        ]
        let extended: [(UInt16, String)] = [
            (IAP1Extended.ack, "ACK"),
            (IAP1Extended.getChapterInfo, "GetCurrentPlayingTrackChapterInfo"), (IAP1Extended.returnChapterInfo, "ReturnCurrentPlayingTrackChapterInfo"),
            (IAP1Extended.requestProtocolVersion, "RequestProtocolVersion"), (IAP1Extended.returnProtocolVersion, "ReturnProtocolVersion"),
            (IAP1Extended.requestName, "RequestiPodName"), (IAP1Extended.returnName, "ReturniPodName"),
            (IAP1Extended.resetDBSelection, "ResetDBSelection"), (IAP1Extended.selectDBRecord, "SelectDBRecord"),
            (IAP1Extended.getNumberCategorizedDBRecords, "GetNumberCategorizedDBRecords"), (IAP1Extended.returnNumberCategorizedDBRecords, "ReturnNumberCategorizedDBRecords"),
            (IAP1Extended.retrieveCategorizedDatabaseRecords, "RetrieveCategorizedDatabaseRecords"), (IAP1Extended.returnCategorizedDatabaseRecord, "ReturnCategorizedDatabaseRecord"),
            (IAP1Extended.getPlayStatus, "GetPlayStatus"), (IAP1Extended.returnPlayStatus, "ReturnPlayStatus"),
            (IAP1Extended.getCurrentPlayingTrackIndex, "GetCurrentPlayingTrackIndex"), (IAP1Extended.returnCurrentPlayingTrackIndex, "ReturnCurrentPlayingTrackIndex"),
            (IAP1Extended.getIndexedPlayingTrackTitle, "GetIndexedPlayingTrackTitle"), (0x0021, "ReturnIndexedPlayingTrackTitle"),
            (IAP1Extended.getIndexedPlayingTrackArtist, "GetIndexedPlayingTrackArtistName"), (0x0023, "ReturnIndexedPlayingTrackArtistName"),
            (IAP1Extended.getIndexedPlayingTrackAlbum, "GetIndexedPlayingTrackAlbumName"), (0x0025, "ReturnIndexedPlayingTrackAlbumName"),
            (IAP1Extended.setPlayStatusChangeNotification, "SetPlayStatusChangeNotification"), (IAP1Extended.playStatusChangeNotification, "PlayStatusChangeNotification"),
            (IAP1Extended.playCurrentSelection, "PlayCurrentSelection"), (IAP1Extended.playControl, "PlayControl"),
            (IAP1Extended.getShuffle, "GetShuffle"), (IAP1Extended.returnShuffle, "ReturnShuffle"), (IAP1Extended.setShuffle, "SetShuffle"),
            (IAP1Extended.getRepeat, "GetRepeat"), (IAP1Extended.returnRepeat, "ReturnRepeat"), (IAP1Extended.setRepeat, "SetRepeat"),
            (IAP1Extended.getNumPlayingTracks, "GetNumPlayingTracks"), (IAP1Extended.returnNumPlayingTracks, "ReturnNumPlayingTracks"),
            (IAP1Extended.setCurrentPlayingTrack, "SetCurrentPlayingTrack"), (IAP1Extended.selectSortDBRecord, "SelectSortDBRecord"), (IAP1Extended.resetDBSelectionHierarchy, "ResetDBSelectionHierarchy"),
        ]
        for (command, name) in general { names[key(0x00, command)] = name }
        for (command, name) in extended { names[key(0x04, command)] = name }
        return names
    }()

    /// Data lengths (after lingo, command and any transaction id) of commands
    /// whose size is fixed by their definition; used to infer whether a trace
    /// that starts mid-session uses transaction ids.
    static let fixedDataLengths: [UInt32: Set<Int>] = [
        key(0x00, 0x00): [0],            // RequestIdentify
        key(0x00, 0x02): [2, 6],         // iPodAck: status, command [, pending ms]
        key(0x00, 0x14): [0],            // GetDevAuthenticationInfo
        key(0x00, 0x17): [],
        key(0x00, 0x4B): [1],            // GetiPodOptionsForLingo: lingo
        key(0x04, 0x0001): [3],          // ACK: status, command (u16)
        key(0x04, 0x0016): [0],          // ResetDBSelection
        key(0x04, 0x0018): [1],          // GetNumberCategorizedDBRecords: category
        key(0x04, 0x0019): [4],          // ReturnNumberCategorizedDBRecords: count
        key(0x04, 0x001C): [0],          // GetPlayStatus
        key(0x04, 0x001D): [9],          // ReturnPlayStatus: length, position, state
        key(0x04, 0x001E): [0],          // GetCurrentPlayingTrackIndex
        key(0x04, 0x001F): [4],          // ReturnCurrentPlayingTrackIndex
        key(0x04, 0x0020): [4], key(0x04, 0x0022): [4], key(0x04, 0x0024): [4],
        key(0x04, 0x0028): [4],          // PlayCurrentSelection: record index
        key(0x04, 0x0029): [1],          // PlayControl: control code
        key(0x04, 0x002C): [0], key(0x04, 0x002D): [1],
        key(0x04, 0x002F): [0], key(0x04, 0x0030): [1],
        key(0x04, 0x0035): [0], key(0x04, 0x0036): [4],
        key(0x04, 0x0037): [4],          // SetCurrentPlayingTrack: index
    ]
}

/// The HID reassembler's earlier name, from when it served iAP1 traces only.
@available(*, deprecated, renamed: "IAPHIDReassembler")
public typealias IAP1HIDReassembler = IAPHIDReassembler
