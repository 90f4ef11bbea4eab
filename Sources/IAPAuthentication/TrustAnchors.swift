import SwiftASN1
import X509

/// The certificate authorities an accessory certificate may chain to,
/// loaded from PEM (one or more CERTIFICATE blocks).
public struct TrustAnchors: Sendable {
    /// The most bytes read from an anchors file.
    public static let maximumFileLength = 1 << 20

    public let certificates: [Certificate]

    public init(certificates: [Certificate]) { self.certificates = certificates }

    /// No anchors: every issuer is untrusted.
    public static let none = TrustAnchors(certificates: [])

    /// Every CERTIFICATE block in `pem`; other blocks are ignored.
    public init(pem: String) throws(AuthenticationError) {
        let documents: [PEMDocument]
        do {
            documents = try PEMDocument.parseMultiple(pemString: pem)
        } catch {
            throw AuthenticationError(.storage, "the trust anchors are not PEM: \(error)")
        }
        var certificates: [Certificate] = []
        for (index, document) in documents.enumerated() where document.discriminator == "CERTIFICATE" {
            do {
                certificates.append(try Certificate(derEncoded: document.derBytes))
            } catch {
                throw AuthenticationError(.storage, "trust anchor \(index + 1) is not a certificate: \(error)")
            }
        }
        guard !certificates.isEmpty else {
            throw AuthenticationError(.storage, "the PEM holds no CERTIFICATE block")
        }
        self.certificates = certificates
    }

    /// The anchors in a PEM file.
    public init(contentsOfFile path: String) throws(AuthenticationError) {
        let bytes = try FileStore.read(path, limit: Self.maximumFileLength)
        do throws(AuthenticationError) {
            try self.init(pem: String(decoding: bytes, as: UTF8.self))
        } catch {
            throw AuthenticationError(error.kind, "\(path): \(error.detail)")
        }
    }

    /// Whether `certificate` chains to one of these anchors now, with
    /// swift-certificates' RFC 5280 verifier (signatures, validity periods,
    /// basic constraints). The SignedData's other certificates serve as
    /// intermediates. (A fixed validation time would need swift-certificates'
    /// @_spi(FixedExpiryValidationTime); tests make expired certificates instead.)
    public func evaluate(_ certificate: AccessoryCertificate) async -> ChainTrust {
        guard let leaf = certificate.x509 else {
            return .invalid(
                "swift-certificates cannot check a certificate with an \(certificate.keyType) key (it reads RSA keys of 2048 bits and up)"
            )
        }
        var verifier = Verifier(rootCertificates: CertificateStore(certificates)) {
            RFC5280Policy()
        }
        let result = await verifier.validate(
            leaf: leaf, intermediates: CertificateStore(certificate.otherCertificates))
        switch result {
        case .validCertificate(let chain):
            return .trusted(anchor: chain.root.subject.description)
        case .couldNotValidate(let failures):
            if let failure = failures.first {
                return .invalid("the chain fails verification: \(failure.policyFailureReason)")
            }
        }
        // No chain reached an anchor. Follow the issuers as far as the
        // SignedData's own certificates go, checking each signature.
        var tip = leaf
        var seen = 0
        while seen < AccessoryCertificate.maximumCertificates {
            if tip.issuer == tip.subject {
                return tip.publicKey.isValidSignature(tip.signature, for: tip)
                    ? .untrustedIssuer(issuer: tip.issuer.description)
                    : .invalid("the self-signed certificate \(tip.subject) has a signature that does not verify")
            }
            if certificates.contains(where: { $0.subject == tip.issuer }) {
                return .invalid(
                    "an anchor is named \(tip.issuer), the issuer of \(tip.subject), but the chain does not verify with it (wrong signature, or a critical extension the verifier does not handle)"
                )
            }
            guard let parent = certificate.otherCertificates.first(where: { $0.subject == tip.issuer }) else { break }
            guard parent.publicKey.isValidSignature(tip.signature, for: tip) else {
                return .invalid("\(tip.subject) does not carry a valid signature of its issuer \(parent.subject)")
            }
            tip = parent
            seen += 1
        }
        return .untrustedIssuer(issuer: tip.issuer.description)
    }
}

/// Whether an accessory certificate chains to a trust anchor.
public enum ChainTrust: Hashable, Sendable, CustomStringConvertible {
    /// It chains to the anchor with this subject.
    case trusted(anchor: String)
    /// Its signatures are sound as far as they can be checked, but its
    /// issuer is not among the anchors (always so with no anchors).
    case untrustedIssuer(issuer: String)
    /// Something is wrong with it: a signature that does not verify, an
    /// expired certificate, a key that cannot be checked.
    case invalid(String)

    public var description: String {
        switch self {
        case .trusted(let anchor): "trusted: chains to \(anchor)"
        case .untrustedIssuer(let issuer): "untrusted issuer: \(issuer)"
        case .invalid(let why): "invalid: \(why)"
        }
    }
}
