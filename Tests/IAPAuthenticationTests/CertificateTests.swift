import Crypto
import SwiftASN1
import Testing
import X509
import _CryptoExtras

@testable import IAPAuthentication

@Suite struct CertificateTests {
    @Test func parsesADERCertificate() throws {
        let parsed = try AccessoryCertificate(bytes: Fixtures.accessory.derBytes)
        #expect(parsed.container == .x509)
        #expect(parsed.keyType == .p256)
        #expect(parsed.subject == Fixtures.accessory.subject)
        #expect(parsed.issuer == Fixtures.authority.certificate.subject)
        #expect(parsed.serialNumber == Array(Fixtures.accessory.serialNumber.bytes))
        #expect(parsed.serialHex.count == parsed.serialNumber.count * 2)
        #expect(parsed.x509 == Fixtures.accessory)
        #expect(parsed.certificateDER == Fixtures.accessory.derBytes)
        guard case .p256(let key) = parsed.publicKey else {
            Issue.record("expected a P-256 key")
            return
        }
        #expect(key.rawRepresentation == Fixtures.accessoryKey.publicKey.rawRepresentation)
    }

    @Test func parsesASignedDataAndFindsTheLeaf() throws {
        // The authority first: the leaf is found by issuer, not position.
        let bytes = try CMSCertsOnly.encode([Fixtures.authority.certificate, Fixtures.accessory])
        let parsed = try AccessoryCertificate(bytes: bytes)
        #expect(parsed.container == .signedData(certificateCount: 2))
        #expect(parsed.subject == Fixtures.accessory.subject)
        #expect(parsed.otherCertificates == [Fixtures.authority.certificate])
        #expect(parsed.certificateDER == Fixtures.accessory.derBytes)
    }

    @Test func signedDataStructureIsCertsOnly() throws {
        let bytes = try CMSCertsOnly.encode([Fixtures.accessory])
        let root = try DER.parse(bytes)
        guard case .constructed(let children) = root.content else {
            Issue.record("not constructed")
            return
        }
        let oid = try ASN1ObjectIdentifier(derEncoded: children.first { _ in true }!)
        #expect(oid == [1, 2, 840, 113549, 1, 7, 2])
    }

    @Test func rejectsEmptyGarbageTruncatedAndOversized() throws {
        func kind(_ bytes: [UInt8]) -> AuthenticationError.Kind? {
            do {
                _ = try AccessoryCertificate(bytes: bytes)
                return nil
            } catch {
                return error.kind
            }
        }
        #expect(kind([]) == .empty)
        #expect(kind([0x01, 0x02, 0x03]) == .notDER)
        var generator = SplitMix(seed: 7)
        let noise = (0..<300).map { _ in UInt8.random(in: 0...255, using: &generator) }
        #expect(kind(noise) == .notDER)
        let der = Fixtures.accessory.derBytes
        #expect(kind(Array(der.dropLast())) == .notDER)
        #expect(kind(Array(der.prefix(40))) == .notDER)
        #expect(kind(der + [0]) == .notDER)  // trailing bytes
        #expect(kind([UInt8](repeating: 0x30, count: AccessoryCertificate.maximumLength + 1)) == .tooLong)
        #expect(kind([0x02, 0x01, 0x05]) == .notCertificate)  // an INTEGER
        #expect(kind([0x30, 0x03, 0x02, 0x01, 0x05]) == .notCertificate)  // SEQUENCE { INTEGER }
        // A SEQUENCE of SEQUENCEs that is not a certificate.
        #expect(kind([0x30, 0x04, 0x30, 0x02, 0x05, 0x00]) == .notCertificate)
    }

    @Test func signedDataWithoutCertificateOrOfAnotherType() throws {
        let empty = try CMSCertsOnly.encode([])
        #expect(throws: AuthenticationError.self) { try AccessoryCertificate(bytes: empty) }
        do {
            _ = try AccessoryCertificate(bytes: empty)
        } catch {
            #expect(error.kind == .noCertificate)
            #expect(error.detail.contains("no certificate"))
        }
        // ContentInfo of type data (1.2.840.113549.1.7.1), not SignedData.
        var coder = DER.Serializer()
        try coder.appendConstructedNode(identifier: .sequence) { coder in
            let data: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
            try coder.serialize(data)
            try coder.serialize(ASN1OctetString(contentBytes: [1, 2, 3][...]), explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific)
        }
        do {
            _ = try AccessoryCertificate(bytes: coder.serializedBytes)
            Issue.record("accepted a data ContentInfo")
        } catch {
            #expect(error.kind == .notCertificate)
            #expect(error.detail.contains("not SignedData"))
        }
    }

    @Test func readsRSA1024CertificatesThatSwiftCertificatesRefuses() throws {
        let der = Fixtures.rsa1024Certificate.derBytes
        #expect(throws: (any Error).self) { try Certificate(derEncoded: der) }
        let parsed = try AccessoryCertificate(bytes: try CMSCertsOnly.encode([Fixtures.rsa1024Certificate]))
        #expect(parsed.keyType == .rsa(bits: 1024))
        #expect(parsed.x509 == nil)
        #expect(parsed.subject == Fixtures.rsa1024Certificate.subject)
        #expect(parsed.issuer == Fixtures.authority.certificate.subject)
        #expect(parsed.serialNumber == Array(Fixtures.rsa1024Certificate.serialNumber.bytes))
    }

    @Test func otherKeysParseButAreUnsupported() throws {
        let key = P384.Signing.PrivateKey()
        let certificate = try Fixtures.authority.issue(publicKey: Certificate.PublicKey(key.publicKey))
        let parsed = try AccessoryCertificate(bytes: certificate.derBytes)
        guard case .other = parsed.keyType, case .unsupported = parsed.publicKey else {
            Issue.record("expected an unsupported key, got \(parsed.keyType)")
            return
        }
        #expect(AuthenticationChallenge.size(for: parsed.keyType) == nil)
        let result = AuthenticationChallenge.verify(
            response: [UInt8](repeating: 0, count: 96), challenge: [UInt8](repeating: 0, count: 32),
            certificate: parsed)
        guard case .unsupportedKey = result else {
            Issue.record("expected unsupportedKey, got \(result)")
            return
        }
    }
}
