import IAPWire

/// The phone end of the media protocol, sans-IO: browse requests are
/// answered from a content source, remote commands run through the command
/// center, and now playing goes out when it changes meaningfully.
///
/// Loading content is the app's business and may be slow: the role emits
/// `.load` with a token and the edge calls `complete(token:with:now:)` when
/// the app answers. Every request is answered on every path: with the
/// content, with the app's error, or with `.timedOut` when the app does not
/// answer within `loadTimeout`.
///
/// The command set is part of the role from its first moment (the only
/// initialiser takes it), and on every connection the advertised commands
/// go out before the app says it has a content tree, so a head unit can
/// never be offered content before it knows the commands.
public struct PhoneMediaRole: Sendable {
    public enum Output: Hashable, Sendable {
        case send(MediaMessage)
        /// A message written whole already (a media library batch).
        case sendMessage(ControlMessage)
        /// Ask the app; answer with `complete`.
        case load(token: UInt32, LoadRequest)
        /// Run the app's handler for this command (`commands.perform`, which
        /// fails one not advertised or not enabled); answer with `performed`.
        case perform(RemoteCommand, CommandOrigin)
        /// Send this file over the file-transfer session with this id and
        /// file type (`FileTransferFileType`).
        case transferFile(id: UInt8, bytes: [UInt8], type: UInt16)
        /// The app's player must pause (the head unit went away).
        case pausePlayback
        case connected(connection: Int)
        case disconnected(connection: Int)
        case log(String)
    }

    /// What asked for a command, and so where its status goes.
    public enum CommandOrigin: Hashable, Sendable {
        /// The extension's RemoteCommand: the status answers the request.
        case remoteCommand(requestID: UInt32)
        /// A media-remote HID button: the status is only logged.
        case hidButton(HIDRemote.Button)
        /// SetNowPlayingInformation's elapsed time, as a seek: logged.
        case setNowPlayingInformation
    }

    public enum LoadRequest: Hashable, Sendable {
        case tabs
        case children(containerID: String, offset: Int, count: Int)
        case play(itemID: String, imageRowEntryID: String?)
        case queue(offset: Int, count: Int)
        case image(id: String, scale: Int)
        /// Media Library Access: play these library items as the queue,
        /// from `startIndex` (a play request of the head unit, resolved).
        case playLibraryItems(libraryID: String, items: [UInt64], startIndex: Int)
        /// Media Library Access: play what the app has selected.
        case playLibraryCurrentSelection(libraryID: String)
    }

    public enum LoadResult: Hashable, Sendable {
        case page(items: [ContentItem], sections: [ContentSection], totalCount: Int)
        case queue(items: [ContentItem], totalCount: Int, currentIndex: Int)
        case image([UInt8])
        case done
        case failed(RequestStatus, String)
    }

    /// Per-connection state: created at connect, dropped at disconnect.
    private struct Connection: Sendable {
        let number: Int
        var limits = HeadUnitLimits.audioApps
        /// What the head unit asked for in StartNowPlayingUpdates; nil: not subscribed.
        var subscription: NowPlayingSelection?
        var lastSent: (info: NowPlayingInfo, at: LinkInstant)?
        /// The now-playing artwork this head unit has or is getting: the
        /// app's image id and, once the file is on its way, its transfer id.
        var artwork: (imageID: String, transferID: UInt8?)?
        /// Loads by token; a nil request id is the role's own artwork load.
        var pending: [UInt32: (requestID: UInt32?, request: LoadRequest, deadline: LinkInstant)] = [:]
    }

    public let appName: String
    public let offersContent: Bool
    public let loadTimeout: Duration
    public private(set) var commands: RemoteCommandCenter
    /// The now-playing center: what is playing and since when.
    public private(set) var nowPlaying = NowPlayingInfo()
    private var nowPlayingAt = LinkInstant.zero
    private var connection: Connection?
    private var connections = 0
    private var nextToken: UInt32 = 1
    private var nextTransfer: UInt8 = 1
    private var hid = HIDRemoteInterpreter()
    /// The app's media library as Media Library Access serves it.
    public private(set) var mediaLibrary: MediaLibraryServer

    public init(appName: String, commands: RemoteCommandCenter, offersContent: Bool, loadTimeout: Duration = .seconds(5), library: MediaLibrary? = nil) {
        self.appName = appName
        self.commands = commands
        self.offersContent = offersContent
        self.loadTimeout = loadTimeout
        mediaLibrary = MediaLibraryServer(library: library)
        nowPlaying.appName = appName
    }

    public var isConnected: Bool { connection != nil }
    public var isSubscribed: Bool { connection?.subscription != nil }
    public var limits: HeadUnitLimits? { connection?.limits }

    // MARK: Connection life cycle

    public mutating func connect(now: LinkInstant) -> [Output] {
        var outputs: [Output] = []
        if connection != nil { outputs += disconnect(now: now) }
        connections += 1
        connection = Connection(number: connections)
        hid.reset()
        outputs.append(.connected(connection: connections))
        outputs.append(.send(.advertisedCommands(commands.advertised)))
        outputs.append(.send(.appInformation(name: appName, hasContentTree: offersContent)))
        return outputs
    }

    public mutating func disconnect(now: LinkInstant) -> [Output] {
        guard let ended = connection else { return [] }
        connection = nil
        mediaLibrary.disconnect()
        var outputs: [Output] = [.disconnected(connection: ended.number)]
        if nowPlaying.state == .playing {
            nowPlaying.elapsedMilliseconds = elapsed(at: now)
            nowPlaying.state = .paused
            nowPlaying.playbackRate = 0
            nowPlayingAt = now
            outputs.append(.pausePlayback)
            outputs.append(.log("paused playback: the head unit disconnected"))
        }
        return outputs
    }

    // MARK: Now playing center

    /// The elapsed time the published state implies at `now`.
    public func elapsed(at now: LinkInstant) -> UInt32 {
        NowPlayingModel.extrapolate(nowPlaying, from: nowPlayingAt, to: now)
    }

    /// Sets what is playing. An update goes to a subscribed head unit only
    /// when something meaningful changed: the track, the state, the rate, the
    /// modes or queue position, or the position beyond what time alone
    /// explains (a seek). Time passing is never a reason to send.
    public mutating func setNowPlaying(_ info: NowPlayingInfo, now: LinkInstant) -> [Output] {
        var info = info
        if info.state != .playing { info.playbackRate = 0 }
        // The head unit shows the app's name whatever is playing.
        if info.appName == nil { info.appName = appName }
        // Field by field, not through a list of key paths: this runs after
        // every input, and the list cost an allocation and key-path calls each time.
        info.title = info.title.map(Self.cut)
        info.artist = info.artist.map(Self.cut)
        info.albumTitle = info.albumTitle.map(Self.cut)
        info.genre = info.genre.map(Self.cut)
        info.releaseDate = info.releaseDate.map(Self.cut)
        info.appName = info.appName.map(Self.cut)
        nowPlaying = info
        nowPlayingAt = now
        guard var current = connection, current.subscription != nil else { return [] }
        defer { connection = current }
        return publish(in: &current, now: now) + fetchArtwork(in: &current, now: now)
    }

    /// Now playing as this head unit sees it: the artwork as the transfer it
    /// has been sent (none while it loads), the app's image id left out.
    private func published(_ current: Connection, now: LinkInstant) -> NowPlayingInfo {
        var info = nowPlaying
        info.elapsedMilliseconds = elapsed(at: now)
        if info.artworkImageID != nil { info.artworkTransferID = current.artwork?.transferID }
        info.artworkImageID = nil
        return info
    }

    /// Sends now playing to a subscribed head unit, unless nothing changed
    /// meaningfully since the last update (`always`: send anyway).
    private func publish(in current: inout Connection, now: LinkInstant, always: Bool = false,
                         only attributes: NowPlayingSelection? = nil) -> [Output] {
        guard let selection = current.subscription else { return [] }
        let info = published(current, now: now)
        if !always, let last = current.lastSent, !Self.meaningfullyDifferent(last.info, sentAt: last.at, from: info, at: now) { return [] }
        current.lastSent = (info, now)
        var sent = selection
        if let attributes {
            sent.mediaItem.formIntersection(attributes.mediaItem)
            sent.playback.formIntersection(attributes.playback)
        }
        return [.send(.nowPlayingUpdate(NowPlayingUpdate(full: info, selection: sent)))]
    }

    /// When what is playing names artwork this head unit does not have, asks
    /// the app for it at the head unit's scale; the file and an update
    /// naming its transfer follow the app's answer (`complete`).
    private mutating func fetchArtwork(in current: inout Connection, now: LinkInstant) -> [Output] {
        guard current.subscription?.mediaItem.contains(ParameterID.MediaItem.artworkFileTransferIdentifier) == true,
              nowPlaying.artworkImageID != current.artwork?.imageID else { return [] }
        guard let imageID = nowPlaying.artworkImageID else {
            current.artwork = nil
            return []
        }
        current.artwork = (imageID, nil)
        return [startLoad(.image(id: imageID, scale: min(3, max(1, current.limits.imageScale))), requestID: nil, in: &current, now: now)]
    }

    /// The app's artwork arrived: unless the item changed meanwhile, an
    /// update naming the transfer (the media item whole, as a group must
    /// be), then the file.
    private mutating func artworkLoaded(_ bytes: [UInt8], imageID: String, in current: inout Connection, now: LinkInstant) -> [Output] {
        guard let artwork = current.artwork, artwork.imageID == imageID, artwork.transferID == nil else {
            return [.log("artwork \(imageID) arrived after the item changed: not sent")]
        }
        if let format = AnimatedImage.format(of: bytes) {
            return [.log("artwork \(imageID) not sent: animated images (\(format)) are not allowed")]
        }
        let transfer = takeTransferID()
        current.artwork = (imageID, transfer)
        let mediaItem = NowPlayingSelection(mediaItem: Set(NowPlayingUpdate.mediaAttributeIDs), playback: [])
        return publish(in: &current, now: now, always: true, only: mediaItem) + [.transferFile(id: transfer, bytes: bytes, type: FileTransferFileType.artwork)]
    }

    private mutating func takeTransferID() -> UInt8 { Self.take(&nextTransfer) }

    /// Transfer ids run 1...255 and round again (0 is never used).
    private static func take(_ next: inout UInt8) -> UInt8 {
        let transfer = next
        next = next == 255 ? 1 : next + 1
        return transfer
    }

    static func meaningfullyDifferent(_ old: NowPlayingInfo, sentAt: LinkInstant, from new: NowPlayingInfo, at now: LinkInstant) -> Bool {
        var oldComparable = old
        var newComparable = new
        oldComparable.elapsedMilliseconds = 0
        newComparable.elapsedMilliseconds = 0
        if oldComparable != newComparable { return true }
        let expected = Int(NowPlayingModel.extrapolate(old, from: sentAt, to: now))
        return abs(Int(new.elapsedMilliseconds) - expected) > 1000
    }

    /// Changes the command set; a connected head unit is told at once.
    public mutating func updateCommands(_ change: (inout RemoteCommandCenter) -> Void) -> [Output] {
        change(&commands)
        return connection == nil ? [] : [.send(.advertisedCommands(commands.advertised))]
    }

    // MARK: Media Library Access

    /// Whether a library sync has a message to send (`nextLibraryMessage`).
    public var hasLibraryMessage: Bool { connection != nil && mediaLibrary.hasMessageToSend }

    /// The next message of a library sync, at most `budget` bytes, and the
    /// contents of the playlists it names (sent over the file-transfer session).
    public mutating func nextLibraryMessage(budget: Int) -> [Output] {
        guard connection != nil else { return [] }
        var transfer = nextTransfer
        let next = mediaLibrary.nextMessage(budget: budget, transferID: { Self.take(&transfer) })
        nextTransfer = transfer
        guard let next else { return [] }
        var outputs: [Output] = [.sendMessage(next.message)]
        for contents in next.contents {
            outputs.append(.transferFile(id: contents.transferID, bytes: contents.bytes, type: FileTransferFileType.playlistContents))
        }
        return outputs
    }

    /// The app's library changed: a head unit syncing it hears what changed.
    public mutating func updateLibrary(_ library: MediaLibrary) -> [Output] {
        let old = mediaLibrary.library?.revision
        mediaLibrary.update(library)
        return old == library.revision ? [] : [.log("media library \(library.description.name) is now revision \(library.revision)")]
    }

    private mutating func receiveLibrary(_ message: MediaMessage, in current: inout Connection, now: LinkInstant) -> [Output] {
        switch message {
        case .startMediaLibraryInformation:
            let libraries = mediaLibrary.libraries
            return [.send(.mediaLibraryInformation(libraries)),
                    .log(libraries.isEmpty ? "media library information: this phone offers no library"
                                           : "media library information: \(libraries.map { "\($0.name) (\($0.uniqueIdentifier))" }.joined(separator: ", "))")]
        case .stopMediaLibraryInformation:
            return [.log("the head unit stopped media library information")]
        case .startMediaLibraryUpdates(let request):
            switch mediaLibrary.start(request) {
            case .started(let revision, let kind): return [.log("media library \(request.libraryID): syncing to revision \(revision): \(kind)")]
            case .unknownLibrary: return [.log("StartMediaLibraryUpdates for \(request.libraryID), which is not a library of this phone; ignored")]
            }
        case .stopMediaLibraryUpdates(let library):
            mediaLibrary.stop(library)
            return [.log("media library \(library): updates stopped")]
        case .playMediaLibrary(let request):
            switch mediaLibrary.resolve(request) {
            case .failure(let error):
                return [.log("play from the media library refused: \(error)")]
            case .success(let queue):
                if case .currentSelection(let library) = request {
                    return [startLoad(.playLibraryCurrentSelection(libraryID: library), requestID: nil, in: &current, now: now)]
                }
                return [startLoad(.playLibraryItems(libraryID: request.libraryID, items: queue.items, startIndex: queue.startIndex),
                                  requestID: nil, in: &current, now: now)]
            }
        default:
            return []
        }
    }

    // MARK: Requests

    public mutating func receive(_ message: MediaMessage, now: LinkInstant) -> [Output] {
        guard var current = connection else { return [.log("ignored a message while not connected")] }
        defer { connection = current }
        switch message {
        case .limits(let limits):
            current.limits = limits
            return [.log("head unit limits: \(limits.maximumTabs) tabs, pages of \(limits.maximumPageSize), \(limits.maximumImageRowImages) images per row, scale \(limits.imageScale)")]
        case .startNowPlayingUpdates(let selection):
            current.subscription = selection
            current.artwork = nil
            return publish(in: &current, now: now, always: true) + fetchArtwork(in: &current, now: now)
        case .stopNowPlayingUpdates:
            current.subscription = nil
            current.lastSent = nil
            current.artwork = nil
            return []
        case .browseRequest(let id, let container, let offset, let count):
            guard offersContent else {
                return [.send(.browseResponse(BrowseResponse(requestID: id, status: .noSuchContent, error: "\(appName) offers no content tree")))]
            }
            guard Int(count) <= current.limits.maximumPageSize else {
                return [.send(.browseResponse(BrowseResponse(requestID: id, status: .exceedsLimits,
                                                              error: "a page of \(count) exceeds the stated maximum of \(current.limits.maximumPageSize)")))]
            }
            let request: LoadRequest = container.isEmpty ? .tabs : .children(containerID: container, offset: Int(offset), count: Int(count))
            return [startLoad(request, requestID: id, in: &current, now: now)]
        case .playItem(let id, let item, let entry):
            return [startLoad(.play(itemID: item, imageRowEntryID: entry), requestID: id, in: &current, now: now)]
        case .queueRequest(let id, let offset, let count):
            guard Int(count) <= current.limits.maximumPageSize else {
                return [.send(.queueResponse(QueueResponse(requestID: id, status: .exceedsLimits,
                                                           error: "a page of \(count) exceeds the stated maximum of \(current.limits.maximumPageSize)")))]
            }
            return [startLoad(.queue(offset: Int(offset), count: Int(count)), requestID: id, in: &current, now: now)]
        case .imageRequest(let id, let image, let scale):
            guard (1...3).contains(scale) else {
                return [.send(.imageResponse(requestID: id, .commandFailed, transferID: nil, error: "image scale \(scale) is not 1, 2 or 3"))]
            }
            return [startLoad(.image(id: image, scale: Int(scale)), requestID: id, in: &current, now: now)]
        case .remoteCommand(let id, let command):
            return [.perform(command, .remoteCommand(requestID: id))]
        case .startHID, .accessoryHIDReport, .stopHID:
            var outputs: [Output] = []
            for event in hid.receive(message.controlMessage) {
                switch event {
                case .started(let start): outputs.append(.log("HID component \(start.componentIdentifier) started (\(start.reportDescriptor.count)-byte descriptor)"))
                case .stopped(let component): outputs.append(.log("HID component \(component) stopped"))
                case .problem(let problem): outputs.append(.log("HID: \(problem)"))
                case .pressed(_, let button):
                    guard let command = Self.command(for: button) else {
                        outputs.append(.log("HID \(button) pressed: not a media command here"))
                        continue
                    }
                    outputs.append(.perform(command, .hidButton(button)))
                }
            }
            return outputs
        case .setNowPlayingInformation(let elapsed, let queueIndex):
            var outputs: [Output] = []
            if let queueIndex {
                // Play the queue's item at that index: the app names it, then plays it in place.
                outputs.append(startLoad(.queue(offset: Int(queueIndex), count: 1), requestID: nil, in: &current, now: now))
            }
            if let elapsed {
                outputs.append(.perform(.changePlaybackPosition(milliseconds: elapsed), .setNowPlayingInformation))
            }
            return outputs
        case .startMediaLibraryInformation, .stopMediaLibraryInformation, .startMediaLibraryUpdates, .stopMediaLibraryUpdates, .playMediaLibrary:
            return receiveLibrary(message, in: &current, now: now)
        default:
            return [.log("ignored \(message.controlMessage.id == 0 ? "a message" : "an unexpected message") from the head unit")]
        }
    }

    /// The app ran (or could not run) a command the role asked for: the
    /// extension's request gets its status; the rest are logged.
    public func performed(_ command: RemoteCommand, for origin: CommandOrigin, status: RequestStatus, now: LinkInstant) -> [Output] {
        switch origin {
        case .remoteCommand(let id):
            guard connection != nil else { return [.log("command \(command.kind): \(status), after the head unit went away")] }
            return [.send(.requestStatus(requestID: id, status, error: nil)), .log("command \(command.kind): \(status)")]
        case .hidButton(let button):
            return [.log("HID \(button) pressed: \(command.kind) \(status)")]
        case .setNowPlayingInformation:
            guard case .changePlaybackPosition(let elapsed) = command else { return [.log("command \(command.kind): \(status)")] }
            return [.log("seek to \(elapsed) ms requested with SetNowPlayingInformation: \(status)")]
        }
    }

    /// What a remote's button does. Buttons without a value to carry
    /// (shuffle, repeat) are not turned into mode changes: the phone applies
    /// modes only as values it is given.
    static func command(for button: HIDRemote.Button) -> RemoteCommand? {
        switch button {
        case .playPause: .togglePlayPause
        case .play: .play
        case .pause: .pause
        case .stop: .stop
        case .nextTrack: .nextTrack
        case .previousTrack: .previousTrack
        case .fastForward: .skipForward(milliseconds: 15_000)
        case .rewind: .skipBackward(milliseconds: 15_000)
        default: nil
        }
    }

    /// Requests waiting for the app at once; more are refused, so a head
    /// unit that floods the phone cannot make it grow.
    public static let maximumPendingRequests = 64

    private mutating func startLoad(_ request: LoadRequest, requestID: UInt32?, in current: inout Connection, now: LinkInstant) -> Output {
        guard current.pending.count < Self.maximumPendingRequests else {
            return answerFailure(request, requestID: requestID, status: .exceedsLimits,
                                 error: "\(Self.maximumPendingRequests) requests are already waiting for the app")
        }
        let token = nextToken
        nextToken &+= 1
        current.pending[token] = (requestID, request, now + loadTimeout)
        return .load(token: token, request)
    }

    /// The app's answer to a `.load`. Answers that come after the request
    /// timed out, or after the connection ended, are dropped.
    public mutating func complete(token: UInt32, with result: LoadResult, now: LinkInstant) -> [Output] {
        guard var current = connection, let pending = current.pending.removeValue(forKey: token) else { return [] }
        defer { connection = current }
        guard let id = pending.requestID else {
            // The role's own loads: the now-playing artwork, and the queue's
            // item a SetNowPlayingInformation names, then its play.
            switch (pending.request, result) {
            case (.image(let imageID, _), .image(let bytes)):
                return artworkLoaded(bytes, imageID: imageID, in: &current, now: now)
            case (.queue(let index, _), .queue(let items, _, _)):
                guard let item = items.first else { return [.log("queue index \(index) from SetNowPlayingInformation: the queue has no such item")] }
                return [startLoad(.play(itemID: item.id, imageRowEntryID: nil), requestID: nil, in: &current, now: now)]
            case (.play(let itemID, _), .done):
                return [.log("playing \(itemID), the queue's item SetNowPlayingInformation named")]
            case (.playLibraryItems(let library, let items, let start), .done):
                return [.log("playing \(items.count) items of media library \(library) from item \(start + 1)")]
            case (.playLibraryCurrentSelection(let library), .done):
                return [.log("playing the current selection of media library \(library)")]
            case (_, .failed(let status, let error)):
                return [answerFailure(pending.request, requestID: nil, status: status, error: error)]
            default:
                return [answerFailure(pending.request, requestID: nil, status: .commandFailed,
                                      error: "the app answered \(Self.kind(of: result)) to a \(Self.kind(of: pending.request)) request")]
            }
        }
        switch (pending.request, result) {
        case (_, .failed(let status, let error)):
            return [answerFailure(pending.request, requestID: id, status: status, error: error)]
        case (.tabs, .page(let items, let sections, let total)):
            guard items.count <= current.limits.tabsShown else {
                return [.send(.browseResponse(BrowseResponse(requestID: id, status: .exceedsLimits,
                                                              error: "\(items.count) tabs offered; the head unit shows at most \(current.limits.tabsShown)")))]
            }
            var response = BrowseResponse(requestID: id, status: .success, totalCount: UInt32(clamping: total), offset: 0, items: items, sections: sections)
            if MediaMessage.encodedLength(of: response) > ControlMessage.maximumLength {
                response = BrowseResponse(requestID: id, status: .exceedsLimits, error: "the tabs do not fit in one message")
            }
            return [.send(.browseResponse(response))]
        case (.children(_, let offset, let count), .page(let items, let sections, let total)):
            if let row = items.compactMap(\.imageRow).first(where: { $0.entries.count > current.limits.maximumImageRowImages }) {
                return [.send(.browseResponse(BrowseResponse(requestID: id, status: .exceedsLimits,
                                                              error: "image row \"\(row.title)\" has \(row.entries.count) images; the head unit shows at most \(current.limits.maximumImageRowImages)")))]
            }
            let page = Array(items.prefix(count))
            var response = BrowseResponse(requestID: id, status: .success, totalCount: UInt32(clamping: total), offset: UInt32(clamping: offset),
                                          items: page, sections: sections)
            if MediaMessage.encodedLength(of: response) > ControlMessage.maximumLength {
                response = BrowseResponse(requestID: id, status: .exceedsLimits, error: "the page does not fit in one message; ask for fewer items")
            }
            return [.send(.browseResponse(response))]
        case (.play, .done):
            return [.send(.requestStatus(requestID: id, .success, error: nil))]
        case (.queue(let offset, let count), .queue(let items, let total, let currentIndex)):
            var response = QueueResponse(requestID: id, status: .success, totalCount: UInt32(clamping: total), offset: UInt32(clamping: offset),
                                         currentIndex: UInt32(clamping: currentIndex), items: Array(items.prefix(count)))
            if MediaMessage.encodedLength(of: response) > ControlMessage.maximumLength {
                response = QueueResponse(requestID: id, status: .exceedsLimits, error: "the page does not fit in one message; ask for fewer items")
            }
            return [.send(.queueResponse(response))]
        case (.image, .image(let bytes)):
            // Animated images crashed head units: GIF, APNG and animated WebP are refused.
            if let format = AnimatedImage.format(of: bytes) {
                return [.send(.imageResponse(requestID: id, .commandFailed, transferID: nil, error: "animated images (\(format)) are not allowed"))]
            }
            let transfer = takeTransferID()
            return [.send(.imageResponse(requestID: id, .success, transferID: transfer, error: nil)), .transferFile(id: transfer, bytes: bytes, type: FileTransferFileType.artwork)]
        default:
            // Kinds only: the values (a page of items, an item id from the
            // head unit) can be too long for one message.
            return [answerFailure(pending.request, requestID: id, status: .commandFailed,
                                  error: "the app answered \(Self.kind(of: result)) to a \(Self.kind(of: pending.request)) request")]
        }
    }

    static func kind(of result: LoadResult) -> String {
        switch result {
        case .page: "a page"
        case .queue: "a queue"
        case .image: "an image"
        case .done: "done"
        case .failed: "a failure"
        }
    }

    static func kind(of request: LoadRequest) -> String {
        switch request {
        case .tabs: "tabs"
        case .children: "browse"
        case .play: "play"
        case .queue: "queue"
        case .image: "image"
        case .playLibraryItems, .playLibraryCurrentSelection: "media library play"
        }
    }

    /// Longest text (an error, a title) a message carries: the app's own can
    /// be anything, and a message holds 64 KiB.
    static let maximumTextLength = 1024

    static func cut(_ text: String) -> String {
        text.utf8.count <= maximumTextLength ? text : String(decoding: text.utf8.prefix(maximumTextLength), as: UTF8.self)
    }

    private func answerFailure(_ request: LoadRequest, requestID: UInt32?, status: RequestStatus, error: String) -> Output {
        let error = Self.cut(error)
        guard let id = requestID else {
            // Nobody waits for an answer (the artwork, the queue's item
            // SetNowPlayingInformation named): nothing to answer, only to say.
            switch request {
            case .playLibraryItems, .playLibraryCurrentSelection: return .log("\(Self.kind(of: request)) failed: \(status): \(error)")
            default: break
            }
            guard case .image(let imageID, _) = request else { return .log("\(Self.kind(of: request)) for the phone's own use failed: \(status): \(error)") }
            return .log("artwork \(imageID) not sent: \(status): \(error)")
        }
        return switch request {
        case .tabs, .children: .send(.browseResponse(BrowseResponse(requestID: id, status: status, error: error)))
        case .play: .send(.requestStatus(requestID: id, status, error: error))
        case .queue: .send(.queueResponse(QueueResponse(requestID: id, status: status, error: error)))
        case .image: .send(.imageResponse(requestID: id, status, transferID: nil, error: error))
        // Media Library Access has no answer to a play: only the log says.
        case .playLibraryItems, .playLibraryCurrentSelection: .log("\(Self.kind(of: request)) failed: \(status): \(error)")
        }
    }

    /// A request from the head unit that does not decode (an unknown command,
    /// a mode out of range, a parameter missing) is still answered when its
    /// request identifier can be read: a failure naming what was wrong, where
    /// silence would leave the head unit waiting for its own timeout.
    public func receiveMalformed(_ message: ControlMessage, _ error: WireError) -> [Output] {
        guard connection != nil else { return [] }
        let reader = MessageReader(message)
        // Every request carries its identifier as parameter 0.
        guard let id = try? reader.u32(ParameterID.RemoteCommand.requestIdentifier) else { return [] }
        let text = Self.cut("malformed \(MessageCatalog.name(of: message.id) ?? "request"): \(error.detail)")
        switch message.id {
        case MessageID.remoteCommand, MessageID.playItemRequest: return [.send(.requestStatus(requestID: id, .commandFailed, error: text))]
        case MessageID.browseRequest: return [.send(.browseResponse(BrowseResponse(requestID: id, status: .commandFailed, error: text)))]
        case MessageID.queueRequest: return [.send(.queueResponse(QueueResponse(requestID: id, status: .commandFailed, error: text)))]
        case MessageID.imageRequest: return [.send(.imageResponse(requestID: id, .commandFailed, transferID: nil, error: text))]
        default: return []
        }
    }

    /// Answers requests the app has not answered in time.
    public mutating func tick(now: LinkInstant) -> [Output] {
        guard var current = connection else { return [] }
        let expired = current.pending.filter { $0.value.deadline <= now }.sorted { $0.key < $1.key }
        for (token, _) in expired { current.pending[token] = nil }
        connection = current
        return expired.map { answerFailure($0.value.request, requestID: $0.value.requestID, status: .timedOut,
                                           error: "the app did not answer within \(loadTimeout)") }
    }

    public var nextDeadline: LinkInstant? { connection?.pending.values.map(\.deadline).min() }
}

/// What the head unit knows about now playing, and the elapsed time it
/// implies at any moment.
public struct NowPlayingModel: Hashable, Sendable {
    public private(set) var info = NowPlayingInfo()
    public private(set) var receivedAt = LinkInstant.zero
    public private(set) var updates = 0
    /// Whether any update carried a playback rate (PlaybackSpeed).
    public private(set) var rateReceived = false

    /// Attributes whose last value received was out of range, each with that
    /// value; an attribute leaves the list when a valid value arrives. Such a
    /// value is never stored as if valid (an out-of-range playback status is
    /// `.unknown`; other attributes keep their previous value).
    public private(set) var outOfRange: [OutOfRangeValue] = []

    /// Elapsed times from this many milliseconds on are negative values
    /// wrapped to unsigned (4294967 s and the like), not positions.
    public static let elapsedLimit: UInt32 = 1 << 31

    public init() {}

    public mutating func apply(_ update: NowPlayingUpdate, at now: LinkInstant) {
        var result = update.applied(to: info)
        // PlaybackSpeed is optional: a phone that has never sent it is taken
        // to play at normal speed, or its position would stand still.
        if update.present.contains(NowPlayingUpdate.playbackKey(ParameterID.Playback.speed)) { rateReceived = true }
        if !rateReceived { result.playbackRate = result.state == .playing ? 1 : 0 }
        var found = update.outOfRange
        var carried = update.present
        let elapsedKey = NowPlayingUpdate.playbackKey(ParameterID.Playback.elapsedTimeInMilliseconds)
        if update.present.contains(elapsedKey) {
            let elapsed = update.info.elapsedMilliseconds
            let duration = result.durationMilliseconds
            if elapsed >= Self.elapsedLimit || duration.map({ elapsed > $0 }) == true {
                found.append(OutOfRangeValue(.elapsedTime, value: UInt64(elapsed),
                                             allowed: duration.map { "at most the duration, \($0) ms" } ?? "under \(Self.elapsedLimit) ms"))
                // Keep the position as it was, carried on to now.
                result.elapsedMilliseconds = Self.extrapolate(info, from: receivedAt, to: now)
                carried.remove(elapsedKey)
            }
        }
        for value in found { carried.insert(Self.key(value.attribute)) }
        outOfRange = outOfRange.filter { !carried.contains(Self.key($0.attribute)) } + found
        info = result
        receivedAt = now
        updates += 1
    }

    /// Whether the elapsed time shown is one the phone sent in range.
    public var elapsedIsValid: Bool { !outOfRange.contains { $0.attribute == .elapsedTime } }

    static func key(_ attribute: OutOfRangeValue.Attribute) -> UInt32 {
        switch attribute {
        case .playbackStatus: NowPlayingUpdate.playbackKey(ParameterID.Playback.status)
        case .playbackState: NowPlayingUpdate.playbackKey(ParameterID.Playback.devKitPlaybackState)
        case .elapsedTime: NowPlayingUpdate.playbackKey(ParameterID.Playback.elapsedTimeInMilliseconds)
        case .shuffleMode: NowPlayingUpdate.playbackKey(ParameterID.Playback.shuffleMode)
        case .repeatMode: NowPlayingUpdate.playbackKey(ParameterID.Playback.repeatMode)
        }
    }

    /// Elapsed time at `now`, from the last update, its rate and when it came.
    public func elapsed(at now: LinkInstant) -> UInt32 { Self.extrapolate(info, from: receivedAt, to: now) }

    /// The elapsed time of `info`, set at `then`, run on to `now` at its playback rate while playing.
    public static func extrapolate(_ info: NowPlayingInfo, from then: LinkInstant, to now: LinkInstant) -> UInt32 {
        guard info.state == .playing, info.playbackRate > 0, now > then else { return info.elapsedMilliseconds }
        let advanced = Double(now.nanoseconds - then.nanoseconds) / 1e6 * info.playbackRate
        let value = Double(info.elapsedMilliseconds) + advanced
        let limit = info.durationMilliseconds.map(Double.init) ?? Double(UInt32.max)
        return UInt32(min(max(0, value), limit))
    }
}
