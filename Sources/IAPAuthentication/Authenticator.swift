/// The accessory's side of authentication: what it answers to
/// RequestAuthenticationCertificate (0xAA00) and
/// RequestAuthenticationChallengeResponse (0xAA02).
public protocol Authenticator: Sendable, CustomStringConvertible {
    /// The bytes for AuthenticationCertificate (0xAA01), parameter 0.
    func certificate() async throws -> [UInt8]
    /// The bytes for AuthenticationResponse (0xAA03), parameter 0.
    func respond(to challenge: [UInt8]) async throws -> [UInt8]
}
