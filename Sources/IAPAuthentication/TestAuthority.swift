#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto
import SwiftASN1
import X509
import _CryptoExtras

/// A local certificate authority for tests and the software authenticator:
/// a P-256 CA key and its self-signed certificate, which issues accessory
/// certificates. Its certificate, exported as PEM, is a trust anchor.
/// Not Apple's authority: a device only trusts it if told to.
public struct TestAuthority: Sendable {
    public let key: P256.Signing.PrivateKey
    public let certificate: Certificate

    public init(key: P256.Signing.PrivateKey, certificate: Certificate) {
        self.key = key
        self.certificate = certificate
    }

    /// A new authority named `name`, valid from an hour before `now` for
    /// `years` years.
    public static func create(
        name: String = "iap-devkit test authority", now: Date = Date(), years: Int = 20
    ) throws(AuthenticationError) -> TestAuthority {
        let key = P256.Signing.PrivateKey()
        do {
            let subject = try DistinguishedName {
                OrganizationName("iap-devkit")
                CommonName(name)
            }
            let publicKey = Certificate.PublicKey(key.publicKey)
            let certificate = try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: publicKey,
                notValidBefore: now - 3600,
                notValidAfter: now + Double(years) * 365.25 * 86400,
                issuer: subject,
                subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    SubjectKeyIdentifier(hash: publicKey)
                },
                issuerPrivateKey: Certificate.PrivateKey(key)
            )
            return TestAuthority(key: key, certificate: certificate)
        } catch {
            throw AuthenticationError(.badValue, "cannot create the test authority: \(error)")
        }
    }

    /// An accessory certificate for `publicKey`, signed by this authority.
    public func issue(
        publicKey: Certificate.PublicKey, commonName: String = "iap-devkit accessory", now: Date = Date(),
        years: Int = 20
    ) throws(AuthenticationError) -> Certificate {
        do {
            let subject = try DistinguishedName {
                OrganizationName("iap-devkit")
                CommonName(commonName)
            }
            return try Certificate(
                version: .v3,
                serialNumber: Certificate.SerialNumber(),
                publicKey: publicKey,
                notValidBefore: now - 3600,
                notValidAfter: min(now + Double(years) * 365.25 * 86400, certificate.notValidAfter),
                issuer: certificate.subject,
                subject: subject,
                signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.notCertificateAuthority)
                    Critical(KeyUsage(digitalSignature: true))
                },
                issuerPrivateKey: Certificate.PrivateKey(key)
            )
        } catch {
            throw AuthenticationError(.badValue, "cannot issue an accessory certificate: \(error)")
        }
    }

    /// The authority's certificate as PEM, for use as a trust anchor.
    public var certificatePEM: String {
        // Serialising a certificate that parsed or was built cannot fail.
        (try? certificate.serializeAsPEM().pemString) ?? ""
    }

    /// The anchors holding just this authority.
    public var anchors: TrustAnchors { TrustAnchors(certificates: [certificate]) }
}

extension Certificate {
    /// The certificate's DER bytes.
    var derBytes: [UInt8] {
        var serializer = DER.Serializer()
        // A Certificate value always serialises (it holds its own encoded parts).
        try? serializer.serialize(self)
        return serializer.serializedBytes
    }
}
