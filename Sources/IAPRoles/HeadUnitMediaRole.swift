import IAPWire

/// The head-unit end of the media protocol, sans-IO: it browses the phone's
/// content tree page by page (with loading, failure and retry states),
/// keeps a now-playing model whose elapsed time is known for any moment,
/// sends commands and surfaces their statuses and timeouts.
public struct HeadUnitMediaRole: Sendable {
    public enum Output: Hashable, Sendable {
        case send(MediaMessage)
        case event(Event)
    }

    public enum Event: Hashable, Sendable {
        case appInformation(name: String, hasContentTree: Bool)
        case controlsChanged(radio: Bool, advertised: [AdvertisedCommand])
        case tabs([ContentItem])
        case page(containerID: String)
        case browseFailed(containerID: String, RequestStatus, String)
        case selection(itemID: String, RequestStatus)
        case commandStatus(RemoteCommand, RequestStatus)
        case nowPlaying(NowPlayingInfo)
        case queue(QueueResponse)
        case image(imageID: String, RequestStatus, transferID: UInt8?)
        /// Media Library Access: the libraries the phone offers (none: it offers no library).
        case mediaLibraries([MediaLibraryDescription])
        /// An update of a library was applied; `progress` is the phone's percent.
        case mediaLibraryUpdated(libraryID: String, progress: UInt8)
        /// A library reached 100 % with every playlist's contents.
        case mediaLibrarySynced(libraryID: String, revision: String?)
        /// Something the phone sent for a library that could not be kept, in words.
        case mediaLibraryProblem(String)
    }

    /// What the head unit shows for one container.
    public struct ContainerState: Hashable, Sendable {
        public var items: [ContentItem] = []
        public var sections: [ContentSection] = []
        public var totalCount = 0
        public var loading = false
        /// Set when the last load failed: the screen shows it with "retry".
        public var failure: String?
        public var isComplete: Bool { items.count >= totalCount && !loading && failure == nil }

        public init(items: [ContentItem] = [], sections: [ContentSection] = [], totalCount: Int = 0, loading: Bool = false, failure: String? = nil) {
            self.items = items
            self.sections = sections
            self.totalCount = totalCount
            self.loading = loading
            self.failure = failure
        }
    }

    private enum Pending: Hashable, Sendable {
        case browse(containerID: String, offset: Int)
        case select(itemID: String)
        case command(RemoteCommand)
        case queue(offset: Int)
        case image(String)
    }

    public let limits: HeadUnitLimits
    public let requestTimeout: Duration
    /// The steering-wheel remote, declared in identification.
    public let remote = HIDRemote(componentIdentifier: 1, vendorIdentifier: 0x1209, productIdentifier: 0x0001)
    public private(set) var appName: String?
    public private(set) var hasContentTree = false
    public private(set) var advertised: [AdvertisedCommand] = []
    /// Whether the phone has sent its command set on this connection. A
    /// head unit browses a content tree only once it has one: a tree offered
    /// before the commands is never asked for, as in the field.
    public private(set) var hasCommandSet = false
    public private(set) var tabs: [ContentItem] = []
    public private(set) var containers: [String: ContainerState] = [:]
    public private(set) var nowPlaying = NowPlayingModel()
    /// "Up next" as far as it has been fetched: every page so far, the
    /// total and current index of the latest, and its status (a failed or
    /// unanswered later page keeps the items held).
    public private(set) var queue: QueueResponse?
    /// The row showing a spinner until the phone completes the selection.
    public private(set) var selecting: String?
    public private(set) var commandLog: [(RemoteCommand, RequestStatus)] = []
    private var pending: [UInt32: (Pending, deadline: LinkInstant)] = [:]
    private var nextRequestID: UInt32 = 1
    /// Whether it asks for the phone's media libraries at connect.
    public let syncsMediaLibrary: Bool
    /// Whether the phone has sent a message of the dev-kit extension on this
    /// connection (its commands or app information). Until it has, this end
    /// sends none (a phone that speaks only standard iAP2 never does):
    /// commands go as HID presses, and nothing waits for the extension.
    public private(set) var phoneSpeaksExtension = false
    /// The phone's libraries as kept, by identifier; kept across connections
    /// (a library's identifier names one phone's library), so a phone that
    /// comes back is asked for what changed since the revision kept.
    public private(set) var mediaLibraries: [String: MediaLibraryMirror]
    /// The libraries the phone offered on this connection, in its order.
    public private(set) var offeredLibraries: [String] = []
    /// Each offered library's progress, as the phone last said (0-100).
    public private(set) var mediaLibraryProgress: [String: UInt8] = [:]
    /// Whether the phone has answered StartMediaLibraryInformation on this connection.
    public private(set) var mediaLibraryInformationReceived = false
    /// File transfers announced for playlist contents: library and playlist.
    private var libraryTransfers: [UInt8: (library: String, playlist: UInt64)] = [:]
    /// Files that arrived before any message named them, newest last: on
    /// the link the file-transfer session can overtake the control message
    /// that announces a playlist's contents.
    private var unclaimedFiles: [(id: UInt8, bytes: [UInt8])] = []
    static let unclaimedFilesKept = 16

    public init(limits: HeadUnitLimits = .audioApps, requestTimeout: Duration = .seconds(8), syncsMediaLibrary: Bool = true,
                mediaLibraries: [MediaLibraryMirror] = []) {
        self.limits = limits
        self.requestTimeout = requestTimeout
        self.syncsMediaLibrary = syncsMediaLibrary
        self.mediaLibraries = Dictionary(mediaLibraries.map { ($0.description.uniqueIdentifier, $0) }, uniquingKeysWith: { $1 })
    }

    /// Radio controls: entered when the phone advertises like, dislike or
    /// bookmark enabled; kept while any of them stays advertised, even
    /// disabled; left only when they are all withdrawn.
    public private(set) var radioControls = false

    /// The transport buttons shown: radio controls have no previous-track button.
    public var buttons: [RemoteCommand.Kind] {
        let shown = Set(advertised.map(\.kind))
        let layout: [RemoteCommand.Kind] = radioControls
            ? [.like, .dislike, .bookmark, .togglePlayPause, .nextTrack]
            : [.previousTrack, .togglePlayPause, .nextTrack, .changeRepeatMode, .changeShuffleMode, .changePlaybackRate]
        return layout.filter { shown.contains($0) }
    }

    // MARK: Connection

    /// Subscribes to now playing, starts the media remote and asks for the
    /// phone's media libraries (standard iAP2, as a production head unit
    /// does, in that order). The limits go when the phone shows it speaks
    /// the dev-kit extension (MediaAppInformation), before any browse.
    public mutating func connect(now: LinkInstant) -> [Output] {
        reset()
        var outputs: [Output] = [
            .send(.startNowPlayingUpdates(.all)),
            .send(.startHID(StartHIDMessage(componentIdentifier: remote.componentIdentifier, vendorIdentifier: remote.vendorIdentifier,
                                            productIdentifier: remote.productIdentifier, reportDescriptor: HIDRemote.reportDescriptor))),
        ]
        if syncsMediaLibrary { outputs.append(.send(.startMediaLibraryInformation)) }
        return outputs
    }

    /// A press of the remote's button: a report with its bit set, then the
    /// release. HID has no answer; the effect shows in now playing.
    public func press(_ button: HIDRemote.Button) -> [Output] {
        [.send(.accessoryHIDReport(AccessoryHIDReportMessage(componentIdentifier: remote.componentIdentifier, report: HIDRemote.report(pressed: [button])))),
         .send(.accessoryHIDReport(AccessoryHIDReportMessage(componentIdentifier: remote.componentIdentifier, report: HIDRemote.report(pressed: []))))]
    }

    public mutating func disconnect() { reset() }

    private mutating func reset() {
        appName = nil
        hasContentTree = false
        advertised = []
        hasCommandSet = false
        radioControls = false
        commandLog = []
        tabs = []
        containers = [:]
        nowPlaying = NowPlayingModel()
        queue = nil
        selecting = nil
        pending = [:]
        offeredLibraries = []
        mediaLibraryProgress = [:]
        mediaLibraryInformationReceived = false
        phoneSpeaksExtension = false
        libraryTransfers = [:]
        unclaimedFiles = []
        for id in mediaLibraries.keys { mediaLibraries[id]?.abandonContents() }
    }

    // MARK: Media Library Access

    /// Asks the phone to play from a library (PlayMediaLibrary…); the
    /// effect shows in now playing, which names the item and the library.
    public func playFromLibrary(_ request: MediaLibraryPlayRequest) -> [Output] { [.send(.playMediaLibrary(request))] }

    private mutating func receiveLibrary(_ message: MediaMessage) -> [Output] {
        switch message {
        case .mediaLibraryInformation(let libraries):
            mediaLibraryInformationReceived = true
            offeredLibraries = []
            var outputs: [Output] = [.event(.mediaLibraries(libraries))]
            for library in libraries where !offeredLibraries.contains(library.uniqueIdentifier) {
                offeredLibraries.append(library.uniqueIdentifier)
                var mirror = mediaLibraries.removeValue(forKey: library.uniqueIdentifier) ?? MediaLibraryMirror(library)
                mirror.description = library
                // Only a whole earlier sync is a revision to build on; a
                // partial one is dropped and the phone sends everything.
                let known = mirror.isSynced ? mirror.revision : nil
                if known == nil { mirror = MediaLibraryMirror(library) }
                mediaLibraries[library.uniqueIdentifier] = mirror
                outputs.append(.send(.startMediaLibraryUpdates(MediaLibraryUpdateRequest(libraryID: library.uniqueIdentifier, lastKnownRevision: known))))
            }
            return outputs
        case .mediaLibraryUpdate(let update):
            // Taken out while it changes: a copy left in the table would make
            // every update copy the whole library.
            guard offeredLibraries.contains(update.libraryID), var mirror = mediaLibraries.removeValue(forKey: update.libraryID) else {
                return [.event(.mediaLibraryProblem("an update for library \(update.libraryID), which the phone did not offer; ignored"))]
            }
            let wasSynced = mirror.isSynced
            let droppedBefore = mirror.dropped
            defer { mediaLibraryProgress[update.libraryID] = mirror.progress }
            var outputs: [Output] = []
            for (transfer, playlist) in mirror.apply(update) {
                if let early = unclaimedFiles.firstIndex(where: { $0.id == transfer }) {
                    let file = unclaimedFiles.remove(at: early)
                    if let problem = mirror.setContents(of: playlist, from: file.bytes) {
                        outputs.append(.event(.mediaLibraryProblem("library \(update.libraryID): \(problem)")))
                    }
                } else {
                    libraryTransfers[transfer] = (update.libraryID, playlist)
                }
            }
            mediaLibraries[update.libraryID] = mirror
            outputs.insert(.event(.mediaLibraryUpdated(libraryID: update.libraryID, progress: mirror.progress)), at: 0)
            if mirror.dropped > droppedBefore {
                outputs.append(.event(.mediaLibraryProblem("library \(update.libraryID): \(mirror.dropped) items or playlists not kept, over the limit of \(MediaLibraryMirror.maximumItems) items and \(MediaLibraryMirror.maximumPlaylists) playlists")))
            }
            if mirror.isSynced && (!wasSynced || update.revision != nil) {
                outputs.append(.event(.mediaLibrarySynced(libraryID: update.libraryID, revision: mirror.revision)))
            }
            return outputs
        default:
            return []
        }
    }

    /// This role as other threads may keep it: without the libraries that
    /// are changing (an update of a library kept elsewhere would copy the
    /// whole library each time). Synced libraries stay.
    public var snapshot: HeadUnitMediaRole {
        var copy = self
        for (id, mirror) in mediaLibraries where !mirror.isSynced { copy.mediaLibraries[id] = nil }
        return copy
    }

    /// Whether a library the phone offered on this connection is still on
    /// its way (below 100 %, or its playlists' contents missing).
    public var isSyncingMediaLibrary: Bool {
        offeredLibraries.contains { mediaLibraries[$0]?.isSynced != true }
    }

    /// Whether a file-transfer id was announced for a playlist's contents.
    public func isLibraryTransfer(_ transferID: UInt8) -> Bool { libraryTransfers[transferID] != nil }

    /// A file no message has named yet (artwork, or a playlist's contents
    /// that overtook the update naming them): the last few are kept for an
    /// update that names them.
    public mutating func keepUnclaimedFile(transferID: UInt8, bytes: [UInt8]) {
        unclaimedFiles.removeAll { $0.id == transferID }
        unclaimedFiles.append((transferID, bytes))
        if unclaimedFiles.count > Self.unclaimedFilesKept { unclaimedFiles.removeFirst() }
    }

    /// A playlist's contents arrived over the file-transfer session.
    public mutating func libraryContentsReceived(transferID: UInt8, bytes: [UInt8]) -> [Output] {
        guard let (library, playlist) = libraryTransfers.removeValue(forKey: transferID), var mirror = mediaLibraries.removeValue(forKey: library) else { return [] }
        let wasSynced = mirror.isSynced
        let problem = mirror.setContents(of: playlist, from: bytes)
        mediaLibraries[library] = mirror
        var outputs: [Output] = problem.map { [.event(.mediaLibraryProblem("library \(library): \($0)"))] } ?? []
        if mirror.isSynced && !wasSynced { outputs.append(.event(.mediaLibrarySynced(libraryID: library, revision: mirror.revision))) }
        return outputs
    }

    /// A playlist's contents will not come (the transfer was cancelled or refused).
    public mutating func libraryContentsFailed(transferID: UInt8, reason: String) -> [Output] {
        guard let (library, playlist) = libraryTransfers.removeValue(forKey: transferID), var mirror = mediaLibraries.removeValue(forKey: library) else { return [] }
        let wasSynced = mirror.isSynced
        mirror.contentsFailed(for: playlist)
        mediaLibraries[library] = mirror
        var outputs: [Output] = [.event(.mediaLibraryProblem("library \(library): the contents of playlist 0x\(String(playlist, radix: 16)) did not arrive: \(reason)"))]
        if mirror.isSynced && !wasSynced { outputs.append(.event(.mediaLibrarySynced(libraryID: library, revision: mirror.revision))) }
        return outputs
    }

    // MARK: User actions

    public mutating func openRoot(now: LinkInstant) -> [Output] {
        request(.browseRequest(requestID: 0, containerID: "", offset: 0, count: UInt16(clamping: min(limits.tabsShown, limits.maximumPageSize))),
                .browse(containerID: "", offset: 0), now: now)
    }

    /// Opens a container from its first page (children are fetched only now).
    public mutating func open(_ containerID: String, now: LinkInstant) -> [Output] {
        containers[containerID] = ContainerState(loading: true)
        return browse(containerID, offset: 0, now: now)
    }

    /// The next page of a container already open.
    public mutating func loadMore(_ containerID: String, now: LinkInstant) -> [Output] {
        guard var state = containers[containerID], !state.loading, state.items.count < state.totalCount else { return [] }
        state.loading = true
        containers[containerID] = state
        return browse(containerID, offset: state.items.count, now: now)
    }

    /// Tries the page that failed again.
    public mutating func retry(_ containerID: String, now: LinkInstant) -> [Output] {
        guard var state = containers[containerID], state.failure != nil else { return [] }
        state.failure = nil
        state.loading = true
        containers[containerID] = state
        return containerID.isEmpty ? openRoot(now: now) : browse(containerID, offset: state.items.count, now: now)
    }

    private mutating func browse(_ containerID: String, offset: Int, now: LinkInstant) -> [Output] {
        request(.browseRequest(requestID: 0, containerID: containerID, offset: UInt32(offset), count: UInt16(limits.maximumPageSize)),
                .browse(containerID: containerID, offset: offset), now: now)
    }

    /// Plays a row (or one image of an image row). A row shown disabled
    /// ("Loading…") or an image not selectable is not: the selection fails
    /// at once and nothing is sent.
    public mutating func select(_ itemID: String, imageRowEntryID: String? = nil, now: LinkInstant) -> [Output] {
        if let row = shownRow(itemID) {
            let entry = imageRowEntryID.flatMap { id in row.imageRow?.entries.first { $0.id == id } }
            guard row.isEnabled, entry?.selectable != false else { return [.event(.selection(itemID: itemID, .commandFailed))] }
        }
        selecting = itemID

        return request(.playItem(requestID: 0, itemID: itemID, imageRowEntryID: imageRowEntryID), .select(itemID: itemID), now: now)
    }

    /// Sends a command (voice control sends the same ones).
    /// The row with this id among those shown (tabs, open containers); nil
    /// for one never shown, such as an "up next" item outside the tree.
    private func shownRow(_ itemID: String) -> ContentItem? {
        if let tab = tabs.first(where: { $0.id == itemID }) { return tab }
        for state in containers.values {
            if let row = state.items.first(where: { $0.id == itemID }) { return row }
        }
        return nil
    }

    public mutating func send(_ command: RemoteCommand, now: LinkInstant) -> [Output] {
        guard phoneSpeaksExtension else {
            // A phone that speaks only standard iAP2 takes commands as the
            // steering-wheel remote's presses; HID has no answer, so the
            // status says the press went out (or that no button does it).
            guard let button = Self.button(for: command) else { return [.event(.commandStatus(command, .commandFailed))] }
            return press(button) + [.event(.commandStatus(command, .success))]
        }
        return request(.remoteCommand(requestID: 0, command), .command(command), now: now)
    }

    /// The phone sent a message of the dev-kit extension: the first time,
    /// the limits go out (before any browse request).
    private mutating func heardExtension() -> [Output] {
        guard !phoneSpeaksExtension else { return [] }
        phoneSpeaksExtension = true
        return [.send(.limits(limits))]
    }

    /// The remote's button for a command, where one does it.
    static func button(for command: RemoteCommand) -> HIDRemote.Button? {
        switch command {
        case .play: .play
        case .pause: .pause
        case .togglePlayPause: .playPause
        case .stop: .stop
        case .nextTrack: .nextTrack
        case .previousTrack: .previousTrack
        case .seekForward(true): .fastForward
        case .seekBackward(true): .rewind
        default: nil
        }
    }

    /// "Up next" from its first item; pages asked for before are no longer
    /// wanted (their answers would not continue this one).
    public mutating func requestQueue(now: LinkInstant) -> [Output] {
        pending = pending.filter { if case .queue = $0.value.0 { false } else { true } }
        return request(.queueRequest(requestID: 0, offset: 0, count: UInt16(limits.maximumPageSize)), .queue(offset: 0), now: now)
    }

    /// Whether a page of "up next" is on its way.
    public var isLoadingQueue: Bool { pending.values.contains { if case .queue = $0.0 { true } else { false } } }

    /// The next page of "up next": nothing before the first page, while a
    /// page is on its way, after a failure, or when every item is held.
    public mutating func loadMoreQueue(now: LinkInstant) -> [Output] {
        guard let queue, queue.status == .success, queue.items.count < Int(queue.totalCount), !isLoadingQueue else { return [] }
        return request(.queueRequest(requestID: 0, offset: UInt32(queue.items.count), count: UInt16(limits.maximumPageSize)),
                       .queue(offset: queue.items.count), now: now)
    }

    public mutating func requestImage(_ imageID: String, now: LinkInstant) -> [Output] {
        request(.imageRequest(requestID: 0, imageID: imageID, scale: UInt8(clamping: limits.imageScale)), .image(imageID), now: now)
    }

    private mutating func request(_ message: MediaMessage, _ kind: Pending, now: LinkInstant) -> [Output] {
        let id = nextRequestID
        nextRequestID &+= 1
        pending[id] = (kind, now + requestTimeout)
        let stamped: MediaMessage
        switch message {
        case .browseRequest(_, let container, let offset, let count): stamped = .browseRequest(requestID: id, containerID: container, offset: offset, count: count)
        case .playItem(_, let item, let entry): stamped = .playItem(requestID: id, itemID: item, imageRowEntryID: entry)
        case .remoteCommand(_, let command): stamped = .remoteCommand(requestID: id, command)
        case .queueRequest(_, let offset, let count): stamped = .queueRequest(requestID: id, offset: offset, count: count)
        case .imageRequest(_, let image, let scale): stamped = .imageRequest(requestID: id, imageID: image, scale: scale)
        default: stamped = message
        }
        return [.send(stamped)]
    }

    // MARK: From the phone

    public mutating func receive(_ message: MediaMessage, now: LinkInstant) -> [Output] {
        switch message {
        case .appInformation(let name, let hasContent):
            appName = name
            hasContentTree = hasContent
            return heardExtension() + [.event(.appInformation(name: name, hasContentTree: hasContent))]
        case .advertisedCommands(let commands):
            let limits = heardExtension()
            advertised = commands
            hasCommandSet = true
            let feedback = commands.filter { $0.kind.isRadioFeedback }
            radioControls = radioControls ? !feedback.isEmpty : feedback.contains { $0.enabled }
            return limits + [.event(.controlsChanged(radio: radioControls, advertised: commands))]
        case .nowPlayingUpdate(let update):
            nowPlaying.apply(update, at: now)
            return [.event(.nowPlaying(nowPlaying.info))]
        case .browseResponse(let response):
            guard case .browse(let container, let offset)? = pending.removeValue(forKey: response.requestID)?.0 else { return [] }
            return browsed(response, containerID: container, offset: offset)
        case .requestStatus(let id, let status, _):
            switch pending.removeValue(forKey: id)?.0 {
            case .select(let item)?:
                if selecting == item { selecting = nil }
                return [.event(.selection(itemID: item, status))]
            case .command(let command)?:
                commandLog.append((command, status))
                return [.event(.commandStatus(command, status))]
            default:
                return []
            }
        case .queueResponse(let response):
            guard case .queue(let offset)? = pending.removeValue(forKey: response.requestID)?.0 else { return [] }
            return queued(response, offset: offset)
        case .imageResponse(let id, let status, let transfer, _):
            guard case .image(let image)? = pending.removeValue(forKey: id)?.0 else { return [] }
            return [.event(.image(imageID: image, status, transferID: transfer))]
        case .mediaLibraryInformation, .mediaLibraryUpdate:
            return receiveLibrary(message)
        default:
            return []
        }
    }

    private mutating func browsed(_ response: BrowseResponse, containerID: String, offset: Int) -> [Output] {
        var state = containers[containerID] ?? ContainerState()
        state.loading = false
        guard response.status == .success else {
            let reason = response.error ?? "\(response.status)"
            state.failure = reason
            containers[containerID] = state
            return [.event(.browseFailed(containerID: containerID, response.status, reason))]
        }
        // What exceeds the limits stated up front is an error shown as such.
        if let reason = exceededLimit(response, root: containerID.isEmpty) {
            state.failure = reason
            containers[containerID] = state
            return [.event(.browseFailed(containerID: containerID, .exceedsLimits, reason))]
        }
        if containerID.isEmpty {
            tabs = response.items
            state.items = response.items
            state.totalCount = response.items.count
            state.failure = nil
            containers[containerID] = state
            return [.event(.tabs(response.items))]
        }
        if offset == 0 {
            state.items = response.items
            state.sections = response.sections
        } else if offset == state.items.count {
            state.items += response.items
            // Items refer to sections by id: a later page updates the
            // sections it sends and keeps the ones earlier rows refer to.
            for section in response.sections {
                if let index = state.sections.firstIndex(where: { $0.id == section.id }) {
                    state.sections[index] = section
                } else {
                    state.sections.append(section)
                }
            }
        } else {
            // A page that does not continue the rows shown (one asked for
            // before the container was opened again) would misplace them;
            // the load in progress, if any, still answers.
            return []
        }
        state.totalCount = Int(response.totalCount)
        state.failure = nil
        containers[containerID] = state
        return [.event(.page(containerID: containerID))]
    }

    /// How a page breaks the limits this head unit stated, if it does: more
    /// tabs or rows than asked for, or an image row with more images than
    /// it shows. Such a page is refused, never cut.
    private func exceededLimit(_ response: BrowseResponse, root: Bool) -> String? {
        let rows = response.items.count
        if root, rows > limits.tabsShown { return "the phone offered \(rows) tabs; at most \(limits.tabsShown) can be shown" }
        if !root, rows > limits.maximumPageSize { return "the phone sent a page of \(rows) rows; a page holds at most \(limits.maximumPageSize)" }
        if let row = response.items.compactMap(\.imageRow).first(where: { $0.entries.count > limits.maximumImageRowImages }) {
            return "image row \"\(row.title)\" has \(row.entries.count) images; at most \(limits.maximumImageRowImages) are shown"
        }
        return nil
    }

    private mutating func queued(_ response: QueueResponse, offset: Int) -> [Output] {
        var response = response
        // A page longer than asked for is refused, as a browse page is.
        if response.status == .success, response.items.count > limits.maximumPageSize {
            response = QueueResponse(requestID: response.requestID, status: .exceedsLimits,
                                     error: "the phone sent a queue page of \(response.items.count) items; a page holds at most \(limits.maximumPageSize)")
        }
        guard offset > 0 else {
            queue = response
            return [.event(.queue(response))]
        }
        // A later page continues the items held, or is stale (up next was opened again).
        guard var merged = queue, offset == merged.items.count else { return [] }
        merged.requestID = response.requestID
        merged.status = response.status
        merged.error = response.error
        if response.status == .success {
            merged.items += response.items
            merged.totalCount = response.totalCount
            merged.currentIndex = response.currentIndex
        }
        queue = merged
        return [.event(.queue(merged))]
    }

    // MARK: Time

    /// Requests the phone did not answer in time: the screen stops spinning
    /// and says so.
    public mutating func tick(now: LinkInstant) -> [Output] {
        let expired = pending.filter { $0.value.deadline <= now }.sorted { $0.key < $1.key }
        var outputs: [Output] = []
        for (id, entry) in expired {
            pending[id] = nil
            switch entry.0 {
            case .browse(let container, _):
                var state = containers[container] ?? ContainerState()
                state.loading = false
                state.failure = "no answer from the phone"
                containers[container] = state
                outputs.append(.event(.browseFailed(containerID: container, .timedOut, "no answer from the phone")))
            case .select(let item):
                if selecting == item { selecting = nil }
                outputs.append(.event(.selection(itemID: item, .timedOut)))
            case .command(let command):
                commandLog.append((command, .timedOut))
                outputs.append(.event(.commandStatus(command, .timedOut)))
            case .queue(let offset):
                let timedOut = QueueResponse(requestID: id, status: .timedOut, error: "no answer from the phone")
                if offset > 0, var held = queue, held.items.count == offset {
                    held.status = .timedOut
                    held.error = timedOut.error
                    queue = held
                    outputs.append(.event(.queue(held)))
                } else {
                    outputs.append(.event(.queue(timedOut)))
                }
            case .image(let image):
                outputs.append(.event(.image(imageID: image, .timedOut, transferID: nil)))
            }
        }
        return outputs
    }

    public var nextDeadline: LinkInstant? { pending.values.map(\.deadline).min() }
}
