import IAPLink
import IAPRoles
import IAPWire

/// The app a phone endpoint serves: what the endpoint core asks of it
/// (content to load, what is playing, commands, a pause when the head unit
/// goes away). The core never calls it: it asks with outputs, and the
/// driver calls the app and hands the answers back
/// (`EndpointCore.handle(_:now:answeringFor:)`). `IAPDemo.SampleApp` is
/// one; `IAPKit.Phone` adapts an app developer's data source, now-playing
/// center and command center to it.
public protocol MediaApp: Sendable {
    var appName: String { get }
    /// Whether the app has a content tree to browse.
    var offersContent: Bool { get }
    func commandCenter() -> RemoteCommandCenter
    /// The answer to a load, and how long after `now` it is ready (zero for
    /// an app that answers when it returns). Runs in a task of its own, so
    /// a slow answer holds up nothing else.
    func load(_ request: PhoneMediaRole.LoadRequest, now: LinkInstant) async -> (PhoneMediaRole.LoadResult, after: Duration)
    /// What is playing at `now`, read after every input while a head unit
    /// is connected (the core's `.readNowPlaying`).
    func nowPlaying(at now: LinkInstant) -> NowPlayingInfo
    /// The head unit went away while playing.
    func pause(at now: LinkInstant)
    /// The endpoint's clock, set before each command handler runs, for
    /// apps whose handlers need the time (the sample app's player): a
    /// `RemoteCommandCenter.Handler` is given the command only.
    func setTime(_ now: LinkInstant)
    /// The library a head unit syncs through Media Library Access (nil:
    /// none), read when an endpoint is made. Its plays reach `load` as
    /// `.playLibraryItems` and `.playLibraryCurrentSelection`.
    var mediaLibrary: MediaLibrary? { get }
}

extension MediaApp {
    public var offersContent: Bool { true }
    public var mediaLibrary: MediaLibrary? { nil }
    public func setTime(_ now: LinkInstant) {}
}
