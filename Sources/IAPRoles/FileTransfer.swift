import IAPWire

// The iAP2 file-transfer session (artwork and other files the device pushes),
// as two sans-IO state machines over `FileTransferDatagram`s:
//
//   sender (device)                         receiver (accessory)
//   Setup [u64 size][u8 0][u16 type]  --->
//                                     <---  Start            (or Cancel: refused)
//   FirstData … Data … LastData       --->  (or one FirstAndOnlyData)
//                                     <---  Success          (or Cancel: wrong byte count)
//   Cancel and Pause may come from either end at any time.
//
// Source: usenocturne/nocturne `crates/iap2/src/session/file_transfer.rs`, the
// one open implementation (Tests/IAPWireTests/Fixtures/public/SOURCES.md a).
// Cancel and Pause carry no arguments on the wire, so the reasons this module
// gives for a cancel are local only.
//
// Resuming after a pause (this module's design; nocturne only logs Pause):
// - The receiver pauses with Pause and resumes by sending Start again. The
//   sender then continues where it stopped (never repeating FirstData), and
//   data already handed to the link is not sent again: the link delivers it.
// - The sender pauses with Pause and resumes by simply sending data again.
// - Data already on its way when a pause is sent is still accepted.

/// File types announced in a Setup (the u16 after the reserved byte).
public enum FileTransferFileType {
    /// Media item artwork, the type nocturne handles.
    public static let artwork: UInt16 = 2
    /// A media library playlist's items: big-endian u64 persistent ids
    /// (MediaLibraryUpdatePlaylistContents, MEDIA-LIBRARY-FACTS.md §3).
    public static let playlistContents: UInt16 = 4
}

/// An input one end of a file transfer cannot act on. Nothing has changed
/// when one is thrown.
public enum FileTransferError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The end was created with settings it cannot work with.
    case invalidConfiguration(String)
    /// The bytes do not form a file-transfer datagram.
    case malformed(WireError)
    /// A datagram or action for a transfer id this end does not know.
    case unknownTransfer(UInt8)
    /// File data for a transfer that was never set up.
    case dataBeforeSetup(transferID: UInt8, control: FileTransferDatagram.Control)
    /// A control only this end sends (the receiver getting Start, the sender getting data).
    case wrongDirection(transferID: UInt8, control: FileTransferDatagram.Control)
    /// A control byte no source names.
    case unknownControl(transferID: UInt8, control: FileTransferDatagram.Control)
    /// The receiver confirmed the file before the sender had sent all of it.
    case successBeforeAllData(transferID: UInt8, sentBytes: Int, fileSize: Int)
    /// An input that is legal in other states but not in this one.
    case notAllowed(transferID: UInt8, what: String, state: String)

    public var description: String {
        switch self {
        case .invalidConfiguration(let detail):
            "invalid file-transfer configuration: \(detail)"
        case .malformed(let error):
            "malformed file-transfer datagram: \(error.detail)"
        case .unknownTransfer(let id):
            "no file transfer with id \(id) is known here"
        case .dataBeforeSetup(let id, let control):
            "\(control) for transfer \(id), which was never set up"
        case .wrongDirection(let id, let control):
            "\(control) for transfer \(id) is only ever sent by this end, never received"
        case .unknownControl(let id, let control):
            "transfer \(id): unknown control 0x\(String(control.rawValue, radix: 16, uppercase: true))"
        case .successBeforeAllData(let id, let sent, let size):
            "transfer \(id): Success after only \(sent) of \(size) bytes were sent"
        case .notAllowed(let id, let what, let state):
            "transfer \(id): \(what) is not allowed while \(state)"
        }
    }
}

// MARK: - Sender

/// The sending end of one file transfer (the device side for artwork).
/// Sans-IO: each input is answered with the datagrams to send and the new
/// state. Data is cut into datagrams of at most `maximumDataPerDatagram`
/// bytes and handed out at most `maximumDatagramsPerOutput` at a time; the
/// caller asks for the rest with `.sendMore` when its link has room, which is
/// what makes a pause take effect mid-file.
public struct FileTransferSender: Sendable {
    /// The transfer id and control byte in front of every datagram's data.
    public static let datagramHeaderSize = 2

    public enum State: Sendable, Hashable, CustomStringConvertible {
        /// `start()` has not been called.
        case idle
        /// Setup sent; waiting for the receiver's Start.
        case awaitingStart
        /// Data flowing; more remains (ask with `.sendMore`).
        case sending(sentBytes: Int)
        /// Paused by the receiver (until it sends Start), by this end (until
        /// `.resume`), or both.
        case paused(sentBytes: Int, byPeer: Bool, byThisEnd: Bool)
        /// Every byte is out; waiting for the receiver's Success.
        case awaitingSuccess
        /// The receiver confirmed the whole file.
        case finished
        case cancelled(byPeer: Bool)

        public var description: String {
            switch self {
            case .idle: "idle"
            case .awaitingStart: "awaiting Start"
            case .sending(let sent): "sending (\(sent) bytes sent)"
            case .paused(let sent, let byPeer, let byThisEnd):
                "paused by \(byPeer && byThisEnd ? "both ends" : byPeer ? "the receiver" : "this end") (\(sent) bytes sent)"
            case .awaitingSuccess: "awaiting Success"
            case .finished: "finished"
            case .cancelled(let byPeer): "cancelled by \(byPeer ? "the receiver" : "this end")"
            }
        }
    }

    public enum Input: Sendable, Hashable {
        /// A datagram from the receiver.
        case received(FileTransferDatagram)
        /// The link has room: hand out the next datagrams, if data may flow.
        case sendMore
        /// This end pauses (sends Pause).
        case pause
        /// This end resumes after its own `.pause`.
        case resume
        /// This end gives up (sends Cancel).
        case cancel
    }

    public struct Output: Sendable, Hashable {
        public var datagrams: [FileTransferDatagram]
        public var state: State
        public init(datagrams: [FileTransferDatagram], state: State) {
            self.datagrams = datagrams
            self.state = state
        }
    }

    private enum Phase: Sendable {
        case idle, open, finished
        case cancelled(byPeer: Bool)
    }

    public let transferID: UInt8
    /// Announced in the Setup; nil sends the 8-byte Setup (size only).
    public let fileType: UInt16?
    public let maximumDataPerDatagram: Int
    public let maximumDatagramsPerOutput: Int
    private let file: [UInt8]
    private var phase = Phase.idle
    private var startReceived = false
    private var pausedByPeer = false
    private var pausedLocally = false
    /// Bytes handed out so far.
    private var offset = 0
    /// The FirstData (or FirstAndOnlyData) datagram is out.
    private var sentFirst = false

    /// - Parameters:
    ///   - transferID: the id the receiver knows the file by (named in the message that announced it).
    ///   - file: the file's bytes.
    ///   - fileType: the type in the setup datagram (artwork by default); nil leaves it out.
    ///   - maximumDataPerDatagram: file bytes per datagram: the link's
    ///     negotiated payload size minus `datagramHeaderSize`. At least 1.
    ///   - maximumDatagramsPerOutput: at most this many data datagrams per
    ///     output (at least 1); the default hands out the whole file on Start.
    public init(transferID: UInt8, file: [UInt8], fileType: UInt16? = FileTransferFileType.artwork,
                maximumDataPerDatagram: Int, maximumDatagramsPerOutput: Int = .max) throws(FileTransferError) {
        guard maximumDataPerDatagram >= 1 else {
            throw .invalidConfiguration("maximumDataPerDatagram must be at least 1, got \(maximumDataPerDatagram)")
        }
        guard maximumDatagramsPerOutput >= 1 else {
            throw .invalidConfiguration("maximumDatagramsPerOutput must be at least 1, got \(maximumDatagramsPerOutput)")
        }
        self.transferID = transferID
        self.file = file
        self.fileType = fileType
        self.maximumDataPerDatagram = maximumDataPerDatagram
        self.maximumDatagramsPerOutput = maximumDatagramsPerOutput
    }

    public var fileSize: Int { file.count }

    public var state: State {
        switch phase {
        case .idle: return .idle
        case .finished: return .finished
        case .cancelled(let byPeer): return .cancelled(byPeer: byPeer)
        case .open:
            if pausedByPeer || pausedLocally { return .paused(sentBytes: offset, byPeer: pausedByPeer, byThisEnd: pausedLocally) }
            if !startReceived { return .awaitingStart }
            return allSent ? .awaitingSuccess : .sending(sentBytes: offset)
        }
    }

    private var allSent: Bool { sentFirst && offset == file.count }

    /// Opens the transfer: the Setup datagram to send.
    public mutating func start() throws(FileTransferError) -> FileTransferDatagram {
        guard case .idle = phase else { throw notAllowed("start()") }
        phase = .open
        var body: [UInt8] = []
        body.appendBigEndian(UInt64(file.count))
        if let fileType {
            body.append(0)  // reserved
            body.appendBigEndian(fileType)
        }
        return FileTransferDatagram(transferID: transferID, control: .setup, body: body)
    }

    public mutating func handle(_ input: Input) throws(FileTransferError) -> Output {
        switch input {
        case .received(let datagram): return try received(datagram)
        case .sendMore:
            switch phase {
            case .idle, .finished, .cancelled: throw notAllowed("sending more data")
            case .open: return burstOutput()
            }
        case .pause:
            guard case .open = phase, !pausedLocally, !(startReceived && allSent) else { throw notAllowed("pausing") }
            pausedLocally = true
            return output([datagram(.pause)])
        case .resume:
            guard case .open = phase, pausedLocally else { throw notAllowed("resuming") }
            pausedLocally = false
            return burstOutput()
        case .cancel:
            switch phase {
            case .idle:
                phase = .cancelled(byPeer: false)
                return output([])  // the receiver never heard of it
            case .open:
                phase = .cancelled(byPeer: false)
                return output([datagram(.cancel)])
            case .finished, .cancelled: throw notAllowed("cancelling")
            }
        }
    }

    private mutating func received(_ datagram: FileTransferDatagram) throws(FileTransferError) -> Output {
        guard datagram.transferID == transferID else { throw .unknownTransfer(datagram.transferID) }
        let control = datagram.control
        switch control {
        case .setup, .data, .firstData, .lastData, .firstAndOnlyData:
            throw .wrongDirection(transferID: transferID, control: control)
        case .start, .success, .pause, .cancel: break
        default:
            throw .unknownControl(transferID: transferID, control: control)
        }
        switch phase {
        case .idle, .finished, .cancelled(byPeer: true):
            throw notAllowed("receiving \(control)")
        case .cancelled(byPeer: false):
            return output([])  // crossed our Cancel on the wire
        case .open:
            break
        }
        switch control {
        case .start:
            // The first Start accepts the Setup; a later one ends the receiver's pause.
            guard !startReceived || pausedByPeer else { throw notAllowed("a second Start") }
            startReceived = true
            pausedByPeer = false
            return burstOutput()
        case .success:
            guard startReceived, allSent else {
                throw .successBeforeAllData(transferID: transferID, sentBytes: offset, fileSize: file.count)
            }
            phase = .finished
            return output([])
        case .pause:
            pausedByPeer = true
            return output([])
        default:  // .cancel
            phase = .cancelled(byPeer: true)
            return output([])
        }
    }

    /// The next data datagrams, if data may flow now.
    private mutating func nextBurst() -> [FileTransferDatagram] {
        guard case .open = phase, startReceived, !pausedByPeer, !pausedLocally else { return [] }
        var datagrams: [FileTransferDatagram] = []
        while !allSent && datagrams.count < maximumDatagramsPerOutput {
            let end = offset + Swift.min(maximumDataPerDatagram, file.count - offset)
            let first = !sentFirst
            let last = end == file.count
            let control: FileTransferDatagram.Control =
                first ? (last ? .firstAndOnlyData : .firstData) : (last ? .lastData : .data)
            datagrams.append(FileTransferDatagram(transferID: transferID, control: control, body: Array(file[offset..<end])))
            offset = end
            sentFirst = true
        }
        return datagrams
    }

    /// The next burst with the state after it (`output(nextBurst())` would
    /// read the state before the burst: the receiver is evaluated first).
    private mutating func burstOutput() -> Output {
        let datagrams = nextBurst()
        return output(datagrams)
    }

    private func datagram(_ control: FileTransferDatagram.Control) -> FileTransferDatagram {
        FileTransferDatagram(transferID: transferID, control: control)
    }

    private func output(_ datagrams: [FileTransferDatagram]) -> Output { Output(datagrams: datagrams, state: state) }

    private func notAllowed(_ what: String) -> FileTransferError {
        .notAllowed(transferID: transferID, what: what, state: state.description)
    }
}

// MARK: - Receiver

/// The receiving end of the file-transfer session (the accessory side for
/// artwork): every transfer on one session, by id. Bounded: at most
/// `limits.maximumConcurrentTransfers` files in progress, each at most
/// `limits.maximumFileSize` bytes, so a peer can never make it allocate more
/// than their product. Setups over a limit are refused with Cancel.
public struct FileTransferReceiver: Sendable {
    public struct Limits: Sendable, Hashable {
        public var maximumConcurrentTransfers: Int
        public var maximumFileSize: Int

        /// Negative values count as 0 (every Setup refused).
        public init(maximumConcurrentTransfers: Int = 4, maximumFileSize: Int = 8 << 20) {
            self.maximumConcurrentTransfers = Swift.max(0, maximumConcurrentTransfers)
            self.maximumFileSize = Swift.max(0, maximumFileSize)
        }
    }

    /// Why a transfer ended without a file. Known only to this end: Cancel
    /// carries no reason on the wire.
    public enum CancelReason: Sendable, Hashable, CustomStringConvertible {
        case fileTooLarge(announced: UInt64, limit: Int)
        case tooManyTransfers(limit: Int)
        /// The Setup's arguments were neither 8, 10 nor 11 bytes.
        case malformedSetup(argumentBytes: Int)
        /// More data than announced (`received` counts the offending datagram).
        case tooManyBytes(announced: Int, received: Int)
        /// The last datagram came before the announced size was reached.
        case tooFewBytes(announced: Int, received: Int)
        /// FirstData twice, or Data/LastData before FirstData.
        case outOfOrder(FileTransferDatagram.Control)
        /// A new Setup for the same id replaced the transfer in progress.
        case replacedBySetup
        case cancelledBySender
        case cancelledByThisEnd

        public var description: String {
            switch self {
            case .fileTooLarge(let announced, let limit): "file of \(announced) bytes is over the limit of \(limit)"
            case .tooManyTransfers(let limit): "already \(limit) transfers in progress"
            case .malformedSetup(let count): "Setup with \(count) argument bytes (expected 8, 10 or 11)"
            case .tooManyBytes(let announced, let received): "\(received) bytes received, more than the \(announced) announced"
            case .tooFewBytes(let announced, let received): "last data after \(received) bytes, fewer than the \(announced) announced"
            case .outOfOrder(let control): "\(control) out of order"
            case .replacedBySetup: "replaced by a new Setup with the same id"
            case .cancelledBySender: "cancelled by the sender"
            case .cancelledByThisEnd: "cancelled by this end"
            }
        }
    }

    public enum Output: Sendable, Hashable {
        case send(FileTransferDatagram)
        /// A whole file, its size checked against the Setup. Follows the Success it answers.
        case completed(transferID: UInt8, bytes: [UInt8], fileType: UInt16?)
        /// A transfer ended (or a Setup was refused) without a file; any partial data is gone.
        case cancelled(transferID: UInt8, reason: CancelReason)
        /// The sender paused; the partial file is kept.
        case paused(transferID: UInt8)
    }

    private struct Transfer: Sendable {
        var announced: Int
        var fileType: UInt16?
        var bytes: [UInt8] = []
        var gotFirst = false
        var pausedByThisEnd = false
    }

    public let limits: Limits
    private var transfers: [UInt8: Transfer] = [:]
    /// Ids whose transfer ended here; their late datagrams (already on the
    /// wire when we cancelled) are dropped quietly until a new Setup. At most 256.
    private var ended: Set<UInt8> = []

    public init(limits: Limits = Limits()) { self.limits = limits }

    /// The transfers in progress, in id order.
    public var activeTransferIDs: [UInt8] { transfers.keys.sorted() }

    /// Bytes received so far and the announced size, for a transfer in progress.
    public func progress(of transferID: UInt8) -> (received: Int, announced: Int)? {
        transfers[transferID].map { ($0.bytes.count, $0.announced) }
    }

    /// Decodes and handles one datagram's bytes as delivered on the session.
    public mutating func receive(encoded bytes: some Collection<UInt8>) throws(FileTransferError) -> [Output] {
        let datagram: FileTransferDatagram
        do { datagram = try FileTransferDatagram(decoding: bytes) } catch { throw .malformed(error) }
        return try receive(datagram)
    }

    public mutating func receive(_ datagram: FileTransferDatagram) throws(FileTransferError) -> [Output] {
        let id = datagram.transferID
        let control = datagram.control
        switch control {
        case .setup:
            return setup(id, arguments: datagram.body)
        case .data, .firstData, .lastData, .firstAndOnlyData:
            guard let transfer = transfers.removeValue(forKey: id) else {
                if ended.contains(id) { return [] }
                throw .dataBeforeSetup(transferID: id, control: control)
            }
            return data(id, control: control, body: datagram.body, into: transfer)
        case .cancel:
            guard transfers.removeValue(forKey: id) != nil else {
                if ended.contains(id) { return [] }
                throw .unknownTransfer(id)
            }
            ended.insert(id)
            return [.cancelled(transferID: id, reason: .cancelledBySender)]
        case .pause:
            guard transfers[id] != nil else {
                if ended.contains(id) { return [] }
                throw .unknownTransfer(id)
            }
            return [.paused(transferID: id)]
        case .start, .success:
            throw .wrongDirection(transferID: id, control: control)
        default:
            throw .unknownControl(transferID: id, control: control)
        }
    }

    /// This end gives up on a transfer in progress: sends Cancel, drops the partial file.
    public mutating func cancel(transferID id: UInt8) throws(FileTransferError) -> [Output] {
        guard transfers.removeValue(forKey: id) != nil else { throw .unknownTransfer(id) }
        return refuse(id, .cancelledByThisEnd)
    }

    /// This end asks the sender to pause (sends Pause); `resume` sends Start.
    public mutating func pause(transferID id: UInt8) throws(FileTransferError) -> [Output] {
        guard transfers[id] != nil else { throw .unknownTransfer(id) }
        guard transfers[id]?.pausedByThisEnd == false else {
            throw .notAllowed(transferID: id, what: "pausing", state: "already paused by this end")
        }
        transfers[id]?.pausedByThisEnd = true
        return [.send(FileTransferDatagram(transferID: id, control: .pause))]
    }

    /// Ends this end's pause: sends Start again, which tells the sender to continue.
    public mutating func resume(transferID id: UInt8) throws(FileTransferError) -> [Output] {
        guard transfers[id] != nil else { throw .unknownTransfer(id) }
        guard transfers[id]?.pausedByThisEnd == true else {
            throw .notAllowed(transferID: id, what: "resuming", state: "not paused by this end")
        }
        transfers[id]?.pausedByThisEnd = false
        return [.send(FileTransferDatagram(transferID: id, control: .start))]
    }

    private mutating func setup(_ id: UInt8, arguments: [UInt8]) -> [Output] {
        var outputs: [Output] = []
        if transfers.removeValue(forKey: id) != nil {
            outputs.append(.cancelled(transferID: id, reason: .replacedBySetup))
        }
        ended.remove(id)
        // The size alone; nocturne's [u64][u8 reserved][u16 type]; the
        // production head-unit stack's [u64][u16 type], which types 4 and 7
        // follow with the playlist's id and library's (ignored here: the
        // message that named the transfer id said which playlist it is).
        // Known types are below 256, so a zero byte 9 marks nocturne's shape.
        let fileType: UInt16?
        switch arguments.count {
        case 8: fileType = nil
        case 10: fileType = UInt16(arguments[8]) << 8 | UInt16(arguments[9])
        case 11... where arguments[9] == 0: fileType = UInt16(arguments[9]) << 8 | UInt16(arguments[10])
        case 11...: fileType = UInt16(arguments[8]) << 8 | UInt16(arguments[9])
        default: return outputs + refuse(id, .malformedSetup(argumentBytes: arguments.count))
        }
        let announced = arguments[0..<8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        guard announced <= UInt64(limits.maximumFileSize) else {
            return outputs + refuse(id, .fileTooLarge(announced: announced, limit: limits.maximumFileSize))
        }
        guard transfers.count < limits.maximumConcurrentTransfers else {
            return outputs + refuse(id, .tooManyTransfers(limit: limits.maximumConcurrentTransfers))
        }
        transfers[id] = Transfer(announced: Int(announced), fileType: fileType)
        return outputs + [.send(FileTransferDatagram(transferID: id, control: .start))]
    }

    /// `transfer` has been taken out of the table (so its buffer grows in
    /// place); it goes back unless the transfer ends here.
    private mutating func data(_ id: UInt8, control: FileTransferDatagram.Control, body: [UInt8], into transfer: Transfer) -> [Output] {
        var transfer = transfer
        let first = control == .firstData || control == .firstAndOnlyData
        let last = control == .lastData || control == .firstAndOnlyData
        guard first != transfer.gotFirst else { return refuse(id, .outOfOrder(control)) }
        let received = transfer.bytes.count + body.count
        guard received <= transfer.announced else {
            return refuse(id, .tooManyBytes(announced: transfer.announced, received: received))
        }
        if first {
            transfer.gotFirst = true
            transfer.bytes.reserveCapacity(transfer.announced)  // bounded by the Setup check
        }
        transfer.bytes.append(contentsOf: body)
        guard last else {
            transfers[id] = transfer
            return []
        }
        guard received == transfer.announced else {
            return refuse(id, .tooFewBytes(announced: transfer.announced, received: received))
        }
        ended.insert(id)
        return [
            .send(FileTransferDatagram(transferID: id, control: .success)),
            .completed(transferID: id, bytes: transfer.bytes, fileType: transfer.fileType),
        ]
    }

    /// Sends Cancel for a transfer no longer in the table.
    private mutating func refuse(_ id: UInt8, _ reason: CancelReason) -> [Output] {
        ended.insert(id)
        return [.send(FileTransferDatagram(transferID: id, control: .cancel)), .cancelled(transferID: id, reason: reason)]
    }
}
