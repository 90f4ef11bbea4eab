import IAPRoles
import IAPSession

/// The images a screen can show, gathered from the head unit's events: the
/// browse images the page asked for, and now playing's artwork. Each comes
/// as a file transfer that may arrive before or after the message naming it
/// (a phone may send the artwork's file before the update that names it);
/// either order ends with the image stored under its id.
struct ScreenImages: Sendable {
    /// How many images, and how many files nothing has named yet, are kept.
    static let limit = 64

    /// Image bytes by id, oldest first; now playing's artwork is kept as
    /// `artworkID(transferID)`.
    private(set) var stored: [(id: String, bytes: [UInt8])] = []
    /// Images the phone said it could not send.
    private(set) var missing: Set<String> = []
    /// Files that came before the message naming them, by transfer id.
    private var unclaimed: [UInt8: [UInt8]] = [:]
    /// Images answered whose file has not come yet, by transfer id.
    private var awaited: [UInt8: String] = [:]

    static func artworkID(_ transferID: UInt8) -> String { "artwork:\(transferID)" }

    /// Takes what `event` says about images. `nowPlayingArtwork` is the
    /// transfer the head unit's now playing names as its artwork.
    mutating func take(_ event: Connection.Event, nowPlayingArtwork: UInt8?) {
        switch event {
        case .media(.image(let imageID, let status, let transferID)):
            if status == .success, let transferID {
                if let bytes = unclaimed.removeValue(forKey: transferID) {
                    store(imageID, bytes)
                } else {
                    awaited[transferID] = imageID
                }
            } else {
                missing.insert(imageID)
            }
        case .media(.nowPlaying(let info)):
            if let transferID = info.artworkTransferID, let bytes = unclaimed.removeValue(forKey: transferID) {
                store(Self.artworkID(transferID), bytes)
            }
        case .fileReceived(let transferID, let bytes):
            if let imageID = awaited.removeValue(forKey: transferID) {
                store(imageID, bytes)
            } else if nowPlayingArtwork == transferID {
                store(Self.artworkID(transferID), bytes)
            } else if unclaimed.count < Self.limit {
                unclaimed[transferID] = bytes
            }
        default:
            break
        }
    }

    /// The bytes stored for `id`, if any.
    func bytes(_ id: String) -> [UInt8]? { stored.last { $0.id == id }?.bytes }

    /// The id to show as now playing's artwork, once its file is stored.
    func artwork(_ transferID: UInt8?) -> String? {
        guard let transferID else { return nil }
        let id = Self.artworkID(transferID)
        return bytes(id) == nil ? nil : id
    }

    private mutating func store(_ id: String, _ bytes: [UInt8]) {
        stored.removeAll { $0.id == id }
        stored.append((id, bytes))
        if stored.count > Self.limit { stored.removeFirst() }
    }
}
