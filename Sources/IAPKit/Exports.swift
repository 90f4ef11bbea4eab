import IAPAuthentication
import IAPRoles
import IAPSession
import IAPTransport

// The types an app meets in IAPKit's calls, under IAPKit's own name, so
// `import IAPKit` is the one import an app needs. Each is the same type as
// in the module that defines it: code that also imports that module sees
// one type, not two.

// Content and now playing (the phone's app serves them, the head unit shows them).
public typealias ContentItem = IAPRoles.ContentItem
public typealias ContentSection = IAPRoles.ContentSection
public typealias NowPlayingInfo = IAPRoles.NowPlayingInfo
public typealias QueueResponse = IAPRoles.QueueResponse

// Commands and their answers.
public typealias RemoteCommand = IAPRoles.RemoteCommand
public typealias RemoteCommandCenter = IAPRoles.RemoteCommandCenter
public typealias AdvertisedCommand = IAPRoles.AdvertisedCommand
public typealias RequestStatus = IAPRoles.RequestStatus

// Media Library Access.
public typealias MediaLibrary = IAPRoles.MediaLibrary
public typealias MediaLibraryDescription = IAPRoles.MediaLibraryDescription
public typealias MediaLibraryType = IAPRoles.MediaLibraryType
public typealias MediaLibraryItem = IAPRoles.MediaLibraryItem
public typealias MediaLibraryPlaylist = IAPRoles.MediaLibraryPlaylist
public typealias MediaLibraryCollection = IAPRoles.MediaLibraryCollection
public typealias MediaLibraryMirror = IAPRoles.MediaLibraryMirror
public typealias MediaLibraryPlayRequest = IAPRoles.MediaLibraryPlayRequest

// Who is at the other end, and what a head unit asks of a phone.
public typealias AccessoryIdentity = IAPRoles.AccessoryIdentity
public typealias HeadUnitLimits = IAPRoles.HeadUnitLimits

// Authentication.
public typealias AuthenticationPolicy = IAPSession.AuthenticationPolicy
public typealias Authenticator = IAPAuthentication.Authenticator
public typealias SoftwareAuthenticator = IAPAuthentication.SoftwareAuthenticator
public typealias TrustAnchors = IAPAuthentication.TrustAnchors

// Transports given as values (`connect(over:)`, `serve(over:)`).
public typealias Transport = IAPTransport.Transport
public typealias TransportError = IAPTransport.TransportError
public typealias TransportSpec = IAPTransport.TransportSpec
// Writing a transport of one's own (IAPKit.docc, "Writing a transport").
public typealias TransportEvent = IAPTransport.TransportEvent
public typealias LinkPacketSizing = IAPTransport.LinkPacketSizing
