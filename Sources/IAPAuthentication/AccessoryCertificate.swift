import Crypto
import SwiftASN1
import X509
import _CryptoExtras

/// The certificate an accessory presents in AuthenticationCertificate
/// (0xAA01, parameter 0): either a DER X.509 certificate or, as Apple's
/// coprocessors return it, a CMS SignedData "certs only" holding it.
///
/// Parsing never trusts its input: the length is checked before anything is
/// parsed, SwiftASN1 bounds the nesting depth, and every failure is an
/// `AuthenticationError` naming the problem.
public struct AccessoryCertificate: Sendable {
    /// The most bytes accepted. A 2.0C coprocessor certificate is at most
    /// 1280 bytes, a 3.0 one about 609.
    public static let maximumLength = 4096
    /// The most certificates read from one SignedData.
    public static let maximumCertificates = 8

    /// How the certificate arrived.
    public enum Container: Hashable, Sendable {
        case x509
        /// A CMS SignedData holding `certificateCount` certificates.
        case signedData(certificateCount: Int)
    }

    /// The kind of key the certificate holds.
    public enum KeyType: Hashable, Sendable, CustomStringConvertible {
        /// ECDSA P-256: authentication 3.0 coprocessors.
        case p256
        /// RSA of the given size: 2.0C coprocessors use 1024 bits.
        case rsa(bits: Int)
        /// Anything else, named.
        case other(String)

        public var description: String {
            switch self {
            case .p256: "EC P-256"
            case .rsa(let bits): "RSA-\(bits)"
            case .other(let name): name
            }
        }
    }

    /// The public key, in the form swift-crypto verifies with.
    public enum PublicKey: Sendable {
        case p256(P256.Signing.PublicKey)
        case rsa(_RSA.Signing.PublicKey)
        /// A key this layer does not verify with; `keyType` names it.
        case unsupported
    }

    /// The X.509 accessory certificate, DER.
    public let certificateDER: [UInt8]
    public let container: Container
    public let subject: DistinguishedName
    public let issuer: DistinguishedName
    /// The serial number's bytes as encoded (big-endian, two's complement).
    public let serialNumber: [UInt8]
    public let keyType: KeyType
    public let publicKey: PublicKey
    /// The certificate as swift-certificates parsed it; nil only for RSA
    /// keys under 2048 bits (2.0C), which swift-certificates 1.21.1 refuses
    /// to parse (its `Certificate.PublicKey` insists on 2048 bits). Such a
    /// certificate's fields are read with SwiftASN1 instead, and chain trust
    /// reports it as invalid with that reason.
    public let x509: Certificate?
    /// The other certificates in the SignedData (intermediates), parsed.
    public let otherCertificates: [Certificate]

    /// The serial number in lower-case hex, two digits a byte.
    public var serialHex: String { hex(serialNumber) }

    /// Parses the bytes of an AuthenticationCertificate parameter.
    public init(bytes: [UInt8]) throws(AuthenticationError) {
        guard !bytes.isEmpty else {
            throw AuthenticationError(.empty, "the certificate is empty")
        }
        guard bytes.count <= Self.maximumLength else {
            throw AuthenticationError(
                .tooLong, "the certificate is \(bytes.count) bytes; at most \(Self.maximumLength) are accepted")
        }
        let root: ASN1Node
        do {
            // BER accepts DER and the indefinite lengths some CMS encoders use.
            root = try BER.parse(bytes)
        } catch {
            throw AuthenticationError(.notDER, "the certificate bytes are not DER: \(error)")
        }
        guard root.identifier == .sequence, case .constructed(let children) = root.content,
            let first = children.first(where: { _ in true })
        else {
            throw AuthenticationError(
                .notCertificate, "the certificate is DER but not a SEQUENCE (found \(root.identifier))")
        }
        if first.identifier == .objectIdentifier {
            let nodes = try Self.signedDataCertificates(root)
            guard !nodes.isEmpty else {
                throw AuthenticationError(.noCertificate, "the SignedData holds no certificate")
            }
            guard nodes.count <= Self.maximumCertificates else {
                throw AuthenticationError(
                    .tooLong,
                    "the SignedData holds \(nodes.count) certificates; at most \(Self.maximumCertificates) are read")
            }
            var parsed: [Parsed] = []
            for (index, node) in nodes.enumerated() {
                do throws(AuthenticationError) {
                    parsed.append(try Self.parseCertificate(Array(node.encodedBytes)))
                } catch {
                    throw AuthenticationError(
                        error.kind, "certificate \(index + 1) of \(nodes.count) in the SignedData: \(error.detail)")
                }
            }
            // The accessory certificate is the one that issued none of the others.
            let leafIndex =
                parsed.indices.first { i in
                    !parsed.indices.contains { j in j != i && parsed[j].issuer == parsed[i].subject }
                } ?? 0
            self.init(
                parsed[leafIndex], container: .signedData(certificateCount: nodes.count),
                others: parsed.indices.filter { $0 != leafIndex }.compactMap { parsed[$0].x509 })
        } else if first.identifier == .sequence {
            self.init(try Self.parseCertificate(bytes), container: .x509, others: [])
        } else {
            throw AuthenticationError(
                .notCertificate,
                "the DER SEQUENCE starts with \(first.identifier): neither a certificate nor a CMS ContentInfo")
        }
    }

    private init(_ parsed: Parsed, container: Container, others: [Certificate]) {
        certificateDER = parsed.der
        self.container = container
        subject = parsed.subject
        issuer = parsed.issuer
        serialNumber = parsed.serial
        keyType = parsed.keyType
        publicKey = parsed.key
        x509 = parsed.x509
        otherCertificates = others
    }

    private struct Parsed {
        var der: [UInt8]
        var subject: DistinguishedName
        var issuer: DistinguishedName
        var serial: [UInt8]
        var keyType: KeyType
        var key: PublicKey
        var x509: Certificate?
    }

    // MARK: CMS SignedData, read with SwiftASN1

    /// The certificate nodes of a ContentInfo holding SignedData (RFC 5652):
    /// ContentInfo ::= SEQUENCE { contentType OID, [0] EXPLICIT SignedData };
    /// SignedData ::= SEQUENCE { version, digestAlgorithms SET, encapContentInfo,
    /// certificates [0] IMPLICIT SET OF Certificate OPTIONAL, crls [1] OPTIONAL,
    /// signerInfos SET }. swift-certificates 1.21.1 keeps its CMS types
    /// internal (its @_spi(CMS) API signs and verifies detached signatures
    /// but does not hand out a SignedData's certificates), so this reads the
    /// structure with SwiftASN1's node API and leaves each certificate to X509.
    private static func signedDataCertificates(_ root: ASN1Node) throws(AuthenticationError) -> [ASN1Node] {
        do {
            return try DER.sequence(root, identifier: .sequence) { nodes in
                let contentType = try ASN1ObjectIdentifier(derEncoded: &nodes)
                guard contentType == CMSCertsOnly.signedDataOID else {
                    throw AuthenticationError(
                        .notCertificate, "the CMS content type is \(contentType), not SignedData (1.2.840.113549.1.7.2)")
                }
                return try DER.explicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) { signedData in
                    try DER.sequence(signedData, identifier: .sequence) { fields in
                        _ = try Int(derEncoded: &fields)  // version
                        guard let digestAlgorithms = fields.next(), digestAlgorithms.identifier == .set,
                            let encapsulated = fields.next(), encapsulated.identifier == .sequence
                        else {
                            throw AuthenticationError(.notCertificate, "the SignedData is missing its first fields")
                        }
                        var certificates: [ASN1Node] = []
                        if let next = fields.next() {
                            if next.identifier == CMSCertsOnly.certificatesTag,
                                case .constructed(let set) = next.content
                            {
                                for node in set {
                                    // Other certificate choices (attribute certificates) are tagged; skip them.
                                    if node.identifier == .sequence { certificates.append(node) }
                                }
                            }
                        }
                        while fields.next() != nil {}  // crls and signerInfos: not needed here
                        return certificates
                    }
                }
            }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            throw AuthenticationError(.notCertificate, "the CMS SignedData is malformed: \(error)")
        }
    }

    // MARK: One X.509 certificate

    private static func parseCertificate(_ der: [UInt8]) throws(AuthenticationError) -> Parsed {
        let certificate: Certificate
        do {
            certificate = try Certificate(derEncoded: der)
        } catch {
            // swift-certificates refuses RSA keys under 2048 bits; read those
            // (2.0C coprocessors use 1024) with SwiftASN1 instead.
            if let parsed = try smallRSACertificate(der) { return parsed }
            throw AuthenticationError(.notCertificate, "not an X.509 certificate: \(error)")
        }
        let keyType: KeyType
        let key: PublicKey
        if let p256 = P256.Signing.PublicKey(certificate.publicKey) {
            keyType = .p256
            key = .p256(p256)
        } else if let rsa = _RSA.Signing.PublicKey(certificate.publicKey) {
            keyType = .rsa(bits: rsa.keySizeInBits)
            key = .rsa(rsa)
        } else {
            keyType = .other(String(describing: certificate.publicKey))
            key = .unsupported
        }
        return Parsed(
            der: der, subject: certificate.subject, issuer: certificate.issuer,
            serial: Array(certificate.serialNumber.bytes), keyType: keyType, key: key, x509: certificate)
    }

    private static let rsaEncryptionOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 1, 1]

    /// Certificate ::= SEQUENCE { tbsCertificate, signatureAlgorithm, signature };
    /// TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
    /// issuer, validity, subject, subjectPublicKeyInfo, ... }.
    /// Nil when the key is not RSA (the caller reports swift-certificates' error).
    private static func smallRSACertificate(_ der: [UInt8]) throws(AuthenticationError) -> Parsed? {
        struct NotRSA: Error {}
        do {
            let root = try DER.parse(der)
            return try DER.sequence(root, identifier: .sequence) { outer in
                guard let tbs = outer.next() else { throw NotRSA() }
                while outer.next() != nil {}
                return try DER.sequence(tbs, identifier: .sequence) { nodes in
                    _ = try DER.optionalExplicitlyTagged(&nodes, tagNumber: 0, tagClass: .contextSpecific) {
                        try Int(derEncoded: $0)
                    }
                    let serial = try ArraySlice<UInt8>(derEncoded: &nodes)
                    _ = nodes.next()  // signature algorithm
                    guard let issuerNode = nodes.next(), nodes.next() != nil, let subjectNode = nodes.next() else {
                        throw NotRSA()
                    }  // issuer, validity, subject
                    let issuer = try DistinguishedName(derEncoded: issuerNode)
                    let subject = try DistinguishedName(derEncoded: subjectNode)
                    guard let spki = nodes.next() else { throw NotRSA() }
                    while nodes.next() != nil {}
                    let keyBytes: ArraySlice<UInt8> = try DER.sequence(spki, identifier: .sequence) { parts in
                        guard let algorithm = parts.next() else { throw NotRSA() }
                        let oid = try DER.sequence(algorithm, identifier: .sequence) { a in
                            let oid = try ASN1ObjectIdentifier(derEncoded: &a)
                            while a.next() != nil {}
                            return oid
                        }
                        guard oid == rsaEncryptionOID else { throw NotRSA() }
                        let bits = try ASN1BitString(derEncoded: &parts)
                        return bits.bytes
                    }
                    let key: _RSA.Signing.PublicKey
                    do {
                        // 1024-bit keys need the "unsafe" initialiser: it accepts
                        // 1024 bits and up, the plain one 2048 and up.
                        key = try _RSA.Signing.PublicKey(unsafeDERRepresentation: keyBytes)
                    } catch {
                        throw AuthenticationError(
                            .unsupportedKey, "the RSA key cannot be read (swift-crypto accepts 1024 bits and up): \(error)")
                    }
                    return Parsed(
                        der: der, subject: subject, issuer: issuer, serial: Array(serial),
                        keyType: .rsa(bits: key.keySizeInBits), key: .rsa(key), x509: nil)
                }
            }
        } catch let error as AuthenticationError {
            throw error
        } catch {
            return nil
        }
    }
}

/// Writes a CMS SignedData "certs only" (RFC 5652 section 5, degenerate
/// case: no content, no signers), the form Apple's coprocessors return
/// their certificate in, with SwiftASN1's serializer.
public enum CMSCertsOnly {
    static let signedDataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 2]
    static let dataOID: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 7, 1]
    static let certificatesTag = ASN1Identifier(tagWithNumber: 0, tagClass: .contextSpecific)

    /// The DER ContentInfo holding a SignedData with these certificates.
    public static func encode(_ certificates: [Certificate]) throws(AuthenticationError) -> [UInt8] {
        var coder = DER.Serializer()
        do {
            try coder.appendConstructedNode(identifier: .sequence) { coder in
                try coder.serialize(signedDataOID)
                try coder.serialize(explicitlyTaggedWithTagNumber: 0, tagClass: .contextSpecific) { coder in
                    try coder.appendConstructedNode(identifier: .sequence) { coder in
                        try coder.serialize(1)  // CMSVersion v1
                        coder.appendConstructedNode(identifier: .set) { _ in }  // digestAlgorithms
                        try coder.appendConstructedNode(identifier: .sequence) { coder in
                            try coder.serialize(dataOID)  // encapContentInfo without eContent
                        }
                        try coder.serializeSetOf(certificates, identifier: certificatesTag)
                        coder.appendConstructedNode(identifier: .set) { _ in }  // signerInfos
                    }
                }
            }
        } catch {
            throw AuthenticationError(.badValue, "cannot encode the SignedData: \(error)")
        }
        return coder.serializedBytes
    }
}

func hex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef")
    var text = ""
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return text
}
