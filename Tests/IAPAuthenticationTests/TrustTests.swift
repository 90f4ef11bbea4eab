import Crypto
import Foundation
import Testing
import X509

@testable import IAPAuthentication

@Suite struct TrustTests {
    @Test func chainsToItsAuthority() async throws {
        let certificate = try AccessoryCertificate(bytes: Fixtures.accessory.derBytes)
        let result = await Fixtures.authority.anchors.evaluate(certificate)
        #expect(result == .trusted(anchor: Fixtures.authority.certificate.subject.description))
    }

    @Test func anUnknownIssuerIsUntrustedNotInvalid() async throws {
        let certificate = try AccessoryCertificate(bytes: try CMSCertsOnly.encode([Fixtures.accessory]))
        let issuer = Fixtures.authority.certificate.subject.description
        #expect(await TrustAnchors.none.evaluate(certificate) == .untrustedIssuer(issuer: issuer))
        let stranger = try TestAuthority.create(name: "another authority")
        #expect(await stranger.anchors.evaluate(certificate) == .untrustedIssuer(issuer: issuer))
        // A self-signed certificate with no anchors: its own signature checks out.
        let own = try AccessoryCertificate(bytes: stranger.certificate.derBytes)
        #expect(await TrustAnchors.none.evaluate(own) == .untrustedIssuer(issuer: stranger.certificate.subject.description))
    }

    @Test func theSignedDataCarriesIntermediates() async throws {
        // The authority's certificate inside the SignedData does not make it trusted.
        let certificate = try AccessoryCertificate(
            bytes: try CMSCertsOnly.encode([Fixtures.accessory, Fixtures.authority.certificate]))
        let result = await TrustAnchors.none.evaluate(certificate)
        #expect(result == .untrustedIssuer(issuer: Fixtures.authority.certificate.subject.description))
    }

    @Test func anImpostorIssuerIsInvalid() async throws {
        // Same name as the trusted authority, different key.
        let impostor = try TestAuthority.create(name: "iap-devkit test authority (tests)")
        let forged = try impostor.issue(publicKey: Certificate.PublicKey(P256.Signing.PrivateKey().publicKey))
        let certificate = try AccessoryCertificate(bytes: forged.derBytes)
        let result = await Fixtures.authority.anchors.evaluate(certificate)
        guard case .invalid(let why) = result else {
            Issue.record("a forged certificate gave \(result)")
            return
        }
        #expect(why.contains("does not verify"))
    }

    @Test func anExpiredCertificateIsInvalid() async throws {
        let longAgo = Date() - 10 * 365 * 86400
        let expired = try Fixtures.authority.issue(
            publicKey: Certificate.PublicKey(P256.Signing.PrivateKey().publicKey), now: longAgo, years: 1)
        let certificate = try AccessoryCertificate(bytes: expired.derBytes)
        let result = await Fixtures.authority.anchors.evaluate(certificate)
        guard case .invalid = result else {
            Issue.record("an expired certificate gave \(result)")
            return
        }
    }

    @Test func rsa1024CannotBeCheckedAndSaysWhy() async throws {
        let certificate = try AccessoryCertificate(bytes: Fixtures.rsa1024Certificate.derBytes)
        let result = await Fixtures.authority.anchors.evaluate(certificate)
        guard case .invalid(let why) = result else {
            Issue.record("RSA-1024 gave \(result)")
            return
        }
        #expect(why.contains("2048"))
    }

    @Test func anchorsLoadFromAPEMFile() throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let second = try TestAuthority.create(name: "second authority")
        let path = directory.path + "/anchors.pem"
        writeFile(path, Fixtures.authority.certificatePEM + second.certificatePEM)
        let anchors = try TrustAnchors(contentsOfFile: path)
        #expect(anchors.certificates == [Fixtures.authority.certificate, second.certificate])

        writeFile(path, "not pem at all")
        #expect(throws: AuthenticationError.self) { try TrustAnchors(contentsOfFile: path) }
        do {
            _ = try TrustAnchors(contentsOfFile: directory.path + "/missing.pem")
            Issue.record("a missing file loaded")
        } catch {
            #expect(error.kind == .storage)
            #expect(error.detail.contains("missing.pem"))
        }
    }
}
