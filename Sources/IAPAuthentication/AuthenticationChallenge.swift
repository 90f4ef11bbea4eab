import Crypto
import _CryptoExtras

/// How a P-256 challenge becomes the digest that is signed: the one switch
/// for the open question in Docs/Authentication.md. Signing (the software
/// authenticator, the simulated coprocessor) and verification both go
/// through `signature(for:with:)` and `isValid(_:for:with:)` here.
public enum ChallengeDigest: Hashable, Sendable {
    /// The 32-byte challenge is the digest, signed unchanged. Public iAP2
    /// accessory code writes the device's challenge to register 0x21 as it
    /// came, so this is the default.
    case asIs
    /// SHA-256 of the challenge is the digest (HomeKit's use of the same chip).
    case sha256

    /// The reading used when none is given.
    public static let `default`: ChallengeDigest = .asIs

    /// ECDSA P-256 over the challenge, read as this case says.
    public func signature(for challenge: [UInt8], with key: P256.Signing.PrivateKey) throws(AuthenticationError)
        -> P256.Signing.ECDSASignature
    {
        do {
            switch self {
            case .asIs:
                guard challenge.count == PrehashedChallenge.byteCount else {
                    throw AuthenticationError(
                        .badValue, "a P-256 challenge is 32 bytes, not \(challenge.count)")
                }
                return try key.signature(for: PrehashedChallenge(challenge))
            case .sha256:
                return try key.signature(for: SHA256.hash(data: challenge))
            }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw AuthenticationError(.badValue, "P-256 signing failed: \(error)")
        }
    }

    /// Whether `signature` is valid for the challenge under `key`.
    public func isValid(
        _ signature: P256.Signing.ECDSASignature, for challenge: [UInt8], with key: P256.Signing.PublicKey
    ) -> Bool {
        switch self {
        case .asIs:
            guard challenge.count == PrehashedChallenge.byteCount else { return false }
            return key.isValidSignature(signature, for: PrehashedChallenge(challenge))
        case .sha256:
            return key.isValidSignature(signature, for: SHA256.hash(data: challenge))
        }
    }

    // RSA (2.0C): PKCS#1 v1.5 needs a digest of a type _CryptoExtras knows
    // (SHA-1, SHA-256, SHA-384, SHA-512: it looks the algorithm up by the
    // digest's Swift type, and a caller-made Digest type makes its
    // verification trap on a `try!`). So the 20-byte challenge is put into an
    // `Insecure.SHA1Digest` value (`challengeAsSHA1Digest`), read back and
    // compared, and signed as the digest, as P-256 signs it (`.asIs`). Public
    // sources leave open whether a 2.0C device reads it so or hashes it
    // first, so verification accepts either reading and says which held.
    // Docs/Authentication.md.

    /// RSA PKCS#1 v1.5 with the 20-byte challenge as the SHA-1 digest.
    public static func rsaSignature(for challenge: [UInt8], with key: _RSA.Signing.PrivateKey)
        throws(AuthenticationError) -> [UInt8]
    {
        let digest = try challengeAsSHA1Digest(challenge)
        do {
            let signature = try key.signature(for: digest, padding: .insecurePKCS1v1_5)
            return Array(signature.rawRepresentation)
        } catch {
            throw AuthenticationError(.badValue, "RSA signing failed: \(error)")
        }
    }

    /// Whether an RSA PKCS#1 v1.5 SHA-1 signature is valid for the challenge
    /// under either reading (`rsaReading(of:for:with:)`).
    public static func rsaIsValid(_ signature: [UInt8], for challenge: [UInt8], with key: _RSA.Signing.PublicKey) -> Bool {
        rsaReading(of: signature, for: challenge, with: key) != nil
    }

    /// The reading of the challenge under which an RSA PKCS#1 v1.5 SHA-1
    /// signature verifies: first the challenge as the digest (20 bytes only),
    /// then SHA-1 of the challenge; nil when neither does.
    public static func rsaReading(of signature: [UInt8], for challenge: [UInt8], with key: _RSA.Signing.PublicKey)
        -> RSAChallengeReading?
    {
        let signature = _RSA.Signing.RSASignature(rawRepresentation: signature)
        if let digest = try? challengeAsSHA1Digest(challenge),
            key.isValidSignature(signature, for: digest, padding: .insecurePKCS1v1_5)
        {
            return .challengeAsDigest
        }
        if key.isValidSignature(signature, for: Insecure.SHA1.hash(data: challenge), padding: .insecurePKCS1v1_5) {
            return .sha1OfChallenge
        }
        return nil
    }

    /// The 20-byte challenge as a SHA-1 digest value, for _CryptoExtras. The
    /// bytes are written over a hash's and read back: a layout that does not
    /// give them back is an error, never a signature over other bytes.
    static func challengeAsSHA1Digest(_ challenge: [UInt8]) throws(AuthenticationError) -> Insecure.SHA1Digest {
        guard challenge.count == Insecure.SHA1.byteCount else {
            throw AuthenticationError(
                .badValue, "an RSA (2.0C) challenge read as the SHA-1 digest is 20 bytes, not \(challenge.count)")
        }
        var digest = Insecure.SHA1.hash(data: [UInt8]())
        withUnsafeMutableBytes(of: &digest) { raw in
            if raw.count >= challenge.count { raw.copyBytes(from: challenge) }
        }
        guard Array(digest) == challenge else {
            throw AuthenticationError(
                .unsupportedKey, "this swift-crypto's SHA1Digest does not hold its bytes inline; cannot sign the challenge as the digest")
        }
        return digest
    }
}

/// How a 2.0C (RSA) challenge was read by the signature that verified.
public enum RSAChallengeReading: Hashable, Sendable, CustomStringConvertible {
    /// The 20-byte challenge is the SHA-1 digest, signed unchanged (as this
    /// stack signs, and as P-256 `.asIs` reads a 3.0 challenge).
    case challengeAsDigest
    /// SHA-1 of the challenge is the digest.
    case sha1OfChallenge

    public var description: String {
        switch self {
        case .challengeAsDigest: "the challenge as the SHA-1 digest"
        case .sha1OfChallenge: "SHA-1 of the challenge"
        }
    }
}

/// A 32-byte challenge presented to swift-crypto's P-256 as an already
/// computed digest. swift-crypto's `Digest` protocol is public and its
/// ECDSA signs and verifies the bytes a `Digest` hands over, so no signature
/// code of our own is needed. Only ever passed to P256.Signing (never to
/// _RSA, which accepts only its own digest types).
struct PrehashedChallenge: Digest {
    static var byteCount: Int { 32 }
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        precondition(bytes.count == Self.byteCount)
        self.bytes = bytes
    }

    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes(body)
    }

    func makeIterator() -> IndexingIterator<[UInt8]> { bytes.makeIterator() }

    var description: String { "prehashed challenge: \(hex(bytes))" }
}

/// A challenge the device sends in RequestAuthenticationChallengeResponse
/// (0xAA02), sized for the accessory's key.
public struct AuthenticationChallenge: Hashable, Sendable {
    public let bytes: [UInt8]

    public init(bytes: [UInt8]) { self.bytes = bytes }

    /// The challenge size for a key: 32 bytes for EC P-256 (authentication
    /// 3.0), 20 for RSA (2.0C); nil for other keys.
    public static func size(for keyType: AccessoryCertificate.KeyType) -> Int? {
        switch keyType {
        case .p256: 32
        case .rsa: 20
        case .other: nil
        }
    }

    /// A fresh challenge for the key, from `generator` (seed it in tests).
    public static func generate(
        for keyType: AccessoryCertificate.KeyType, using generator: inout some RandomNumberGenerator
    ) throws(AuthenticationError) -> AuthenticationChallenge {
        guard let size = size(for: keyType) else {
            throw AuthenticationError(.unsupportedKey, "no challenge size is known for a \(keyType) key")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(size)
        while bytes.count < size {
            var word = generator.next()
            for _ in 0..<min(8, size - bytes.count) {
                bytes.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return AuthenticationChallenge(bytes: bytes)
    }

    /// A fresh challenge for the key from the system's generator.
    public static func generate(for keyType: AccessoryCertificate.KeyType) throws(AuthenticationError)
        -> AuthenticationChallenge
    {
        var generator = SystemRandomNumberGenerator()
        return try generate(for: keyType, using: &generator)
    }

    /// Checks an accessory's AuthenticationResponse (0xAA03) against the
    /// challenge and the public key of the certificate it presented.
    /// P-256: a raw 64-byte r||s ECDSA signature over the challenge read as
    /// `digest` says. RSA: PKCS#1 v1.5 SHA-1, the signature as long as the
    /// modulus, with the challenge as the digest or SHA-1 of it
    /// (`ChallengeDigest.rsaReading(of:for:with:)` says which held).
    public static func verify(
        response: [UInt8], challenge: [UInt8], certificate: AccessoryCertificate,
        digest: ChallengeDigest = .default
    ) -> ChallengeVerification {
        guard let expected = size(for: certificate.keyType) else {
            return .unsupportedKey("cannot verify with a \(certificate.keyType) key")
        }
        guard challenge.count == expected else {
            return .badLength("the challenge is \(challenge.count) bytes; a \(certificate.keyType) key takes \(expected)")
        }
        switch certificate.publicKey {
        case .p256(let key):
            guard response.count == 64 else {
                return .badLength("a P-256 response is 64 bytes (r then s), not \(response.count)")
            }
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: response) else {
                return .badSignature("the response is not a P-256 signature")
            }
            return digest.isValid(signature, for: challenge, with: key)
                ? .valid : .badSignature("the P-256 signature does not verify for this challenge and key")
        case .rsa(let key):
            let length = key.keySizeInBits / 8
            guard response.count == length else {
                return .badLength("an RSA-\(key.keySizeInBits) response is \(length) bytes, not \(response.count)")
            }
            return ChallengeDigest.rsaIsValid(response, for: challenge, with: key)
                ? .valid : .badSignature("the RSA signature does not verify for this challenge and key")
        case .unsupported:
            return .unsupportedKey("cannot verify with a \(certificate.keyType) key")
        }
    }
}

/// The outcome of checking an AuthenticationResponse.
public enum ChallengeVerification: Hashable, Sendable, CustomStringConvertible {
    case valid
    /// The challenge or response has the wrong length for the key.
    case badLength(String)
    /// The right shape, but the signature does not verify.
    case badSignature(String)
    /// The certificate's key is not one this layer verifies with.
    case unsupportedKey(String)

    public var isValid: Bool { self == .valid }

    public var description: String {
        switch self {
        case .valid: "valid"
        case .badLength(let why), .badSignature(let why), .unsupportedKey(let why): why
        }
    }
}
