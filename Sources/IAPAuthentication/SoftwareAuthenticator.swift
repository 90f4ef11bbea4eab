#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
import SwiftASN1
import X509

/// An accessory authenticator in software: a P-256 key and a certificate
/// issued by a local `TestAuthority`, kept as PEM files in a directory.
/// Devices that only trust Apple's authority will refuse it; the devkit's
/// own device end accepts it when given the authority's certificate
/// (`authority-certificate.pem`) as a trust anchor.
///
/// The certificate is presented as Apple's coprocessors present theirs: a
/// CMS SignedData "certs only" holding the DER accessory certificate (and
/// the authority's, as an intermediate would be), unless `.der` is asked for.
public struct SoftwareAuthenticator: Authenticator {
    /// How the certificate is presented.
    public enum Presentation: Hashable, Sendable {
        /// CMS SignedData certs-only holding the accessory certificate.
        case signedData
        /// The DER X.509 certificate alone.
        case der
    }

    /// File names inside the directory.
    public enum FileName {
        public static let accessoryKey = "accessory-key.pem"
        public static let accessoryCertificate = "accessory-certificate.pem"
        public static let authorityKey = "authority-key.pem"
        public static let authorityCertificate = "authority-certificate.pem"
    }

    /// Key and certificate files are read up to this length.
    static let maximumFileLength = 64 * 1024

    public let key: P256.Signing.PrivateKey
    public let accessoryCertificate: Certificate
    /// The authority that issued the certificate, when known.
    public let authorityCertificate: Certificate?
    public let presentation: Presentation
    public let digest: ChallengeDigest
    /// Where the files are, for the description.
    public let location: String
    private let presented: [UInt8]

    /// $XDG_DATA_HOME/iap-devkit/authentication, or
    /// ~/.local/share/iap-devkit/authentication; nil without either variable.
    public static func defaultDirectory(environment: [String: String]) -> String? {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") {
            return data + "/iap-devkit/authentication"
        }
        if let home = environment["HOME"], !home.isEmpty {
            return home + "/.local/share/iap-devkit/authentication"
        }
        return nil
    }

    /// Loads the key and certificate kept in `directory`, creating them on
    /// first use: the directory (mode 0700), a test authority and an
    /// accessory key (PEM, mode 0600) and their certificates (PEM, 0644).
    /// A directory others can write to (or another user's) is refused; an
    /// existing key is never replaced (a missing certificate is issued
    /// again for it).
    public static func openOrCreate(
        directory: String, presentation: Presentation = .signedData, digest: ChallengeDigest = .default,
        now: Date = Date()
    ) throws(AuthenticationError) -> SoftwareAuthenticator {
        try FileStore.makeDirectory(directory, mode: 0o700)
        let keyPath = directory + "/" + FileName.accessoryKey
        let certificatePath = directory + "/" + FileName.accessoryCertificate
        let authorityKeyPath = directory + "/" + FileName.authorityKey
        let authorityPath = directory + "/" + FileName.authorityCertificate

        try FileStore.checkPrivate(directory: directory)

        if !(FileStore.exists(keyPath) && FileStore.exists(certificatePath)) {
            let authority: TestAuthority
            if FileStore.exists(authorityKeyPath) && FileStore.exists(authorityPath) {
                authority = TestAuthority(
                    key: try readKey(authorityKeyPath), certificate: try readCertificate(authorityPath))
            } else {
                authority = try TestAuthority.create(now: now)
                try FileStore.write(authorityKeyPath, Array(authority.key.pemRepresentation.utf8), mode: 0o600)
                try FileStore.write(authorityPath, Array(authority.certificatePEM.utf8), mode: 0o644)
            }
            // An existing key is never replaced: a missing certificate is
            // issued again for it (a key may be registered elsewhere).
            let key: P256.Signing.PrivateKey
            if FileStore.exists(keyPath) {
                key = try readKey(keyPath)
            } else {
                key = P256.Signing.PrivateKey()
                try FileStore.write(keyPath, Array(key.pemRepresentation.utf8), mode: 0o600)
            }
            let certificate = try authority.issue(publicKey: Certificate.PublicKey(key.publicKey), now: now)
            try FileStore.write(certificatePath, Array(try pem(certificate).utf8), mode: 0o644)
        }
        let authority = FileStore.exists(authorityPath) ? try readCertificate(authorityPath) : nil
        return try SoftwareAuthenticator(
            key: try readKey(keyPath), certificate: try readCertificate(certificatePath), authority: authority,
            presentation: presentation, digest: digest, location: directory)
    }

    /// Loads a key and certificate from the given PEM files (the authority's
    /// certificate optional: it is added to the SignedData when given).
    public init(
        keyFile: String, certificateFile: String, authorityCertificateFile: String? = nil,
        presentation: Presentation = .signedData, digest: ChallengeDigest = .default
    ) throws(AuthenticationError) {
        try self.init(
            key: try Self.readKey(keyFile), certificate: try Self.readCertificate(certificateFile),
            authority: try authorityCertificateFile.map { (path) throws(AuthenticationError) in try Self.readCertificate(path) },
            presentation: presentation, digest: digest, location: keyFile)
    }

    /// A fresh test authority and accessory key in memory, kept nowhere:
    /// for runs in one process (simulations, the in-process pair).
    public static func ephemeral(now: Date = Date()) throws(AuthenticationError) -> SoftwareAuthenticator {
        let authority = try TestAuthority.create(now: now)
        let key = P256.Signing.PrivateKey()
        let certificate = try authority.issue(publicKey: Certificate.PublicKey(key.publicKey), now: now)
        return try SoftwareAuthenticator(key: key, certificate: certificate, authority: authority.certificate)
    }

    /// From values in memory.
    public init(
        key: P256.Signing.PrivateKey, certificate: Certificate, authority: Certificate? = nil,
        presentation: Presentation = .signedData, digest: ChallengeDigest = .default, location: String = "memory"
    ) throws(AuthenticationError) {
        guard let certified = P256.Signing.PublicKey(certificate.publicKey),
            certified.rawRepresentation == key.publicKey.rawRepresentation
        else {
            throw AuthenticationError(
                .storage, "the accessory certificate (\(certificate.subject)) does not hold the accessory key's public key")
        }
        self.key = key
        self.accessoryCertificate = certificate
        self.authorityCertificate = authority
        self.presentation = presentation
        self.digest = digest
        self.location = location
        switch presentation {
        case .signedData:
            presented = try CMSCertsOnly.encode([certificate] + (authority.map { [$0] } ?? []))
        case .der:
            presented = certificate.derBytes
        }
    }

    /// The authority's certificate as PEM, for a device's trust anchors.
    public var authorityPEM: String? { authorityCertificate.flatMap { try? Self.pem($0) } }

    public func certificate() async throws -> [UInt8] { presented }

    /// The certificate as presented to the device (`certificate()` without the async wrapper).
    public var presentedCertificate: [UInt8] { presented }

    /// ECDSA P-256 over the challenge, read as `digest` says (the same
    /// switch the verifier uses): 64 bytes, r then s.
    public func respond(to challenge: [UInt8]) async throws -> [UInt8] {
        try sign(challenge)
    }

    /// `respond(to:)` without the async wrapper.
    public func sign(_ challenge: [UInt8]) throws(AuthenticationError) -> [UInt8] {
        Array(try digest.signature(for: challenge, with: key).rawRepresentation)
    }

    public var description: String {
        "software authenticator (P-256, \(accessoryCertificate.subject), \(location))"
    }

    // MARK: Files

    static func readKey(_ path: String) throws(AuthenticationError) -> P256.Signing.PrivateKey {
        let mode = try FileStore.mode(path)
        guard mode & 0o077 == 0 else {
            throw AuthenticationError(
                .storage,
                "\(path) is readable by others (mode \(String(mode, radix: 8))); it holds a private key: chmod 600 it")
        }
        let text = String(decoding: try FileStore.read(path, limit: maximumFileLength), as: UTF8.self)
        do {
            return try P256.Signing.PrivateKey(pemRepresentation: text)
        } catch {
            throw AuthenticationError(.storage, "\(path) does not hold a PEM P-256 private key: \(error)")
        }
    }

    static func readCertificate(_ path: String) throws(AuthenticationError) -> Certificate {
        let bytes = try FileStore.read(path, limit: maximumFileLength)
        do {
            if bytes.first == 0x30 { return try Certificate(derEncoded: bytes) }
            return try Certificate(pemEncoded: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw AuthenticationError(.storage, "\(path) does not hold a certificate (PEM or DER): \(error)")
        }
    }

    static func pem(_ certificate: Certificate) throws(AuthenticationError) -> String {
        do {
            return try certificate.serializeAsPEM().pemString
        } catch {
            throw AuthenticationError(.storage, "cannot write the certificate as PEM: \(error)")
        }
    }
}
