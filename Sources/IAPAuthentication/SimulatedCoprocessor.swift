import Crypto
import X509
import _CryptoExtras

/// An authentication coprocessor in memory, as an `I2CBus`: the register
/// protocol `CoprocessorAuthenticator` speaks, for tests and demos. It can
/// be 2.0C (signing RSA-1024 PKCS#1 v1.5 SHA-1 with the challenge as the
/// digest, `ChallengeDigest.rsaSignature`) or 3.0 (ECDSA P-256 over the challenge read as `digest` says),
/// NACK the first `nacksPerTransaction` tries of every transaction as a
/// busy chip does, stay busy for some status polls, and fail signing with
/// an error code.
public actor SimulatedCoprocessor: I2CBus {
    /// The key the chip signs with.
    public enum Signer: Sendable {
        case p256(P256.Signing.PrivateKey)
        case rsa(_RSA.Signing.PrivateKey)
    }

    public nonisolated let version: CoprocessorAuthenticator.Version
    public nonisolated let address: UInt8
    public nonisolated let certificate: [UInt8]
    public nonisolated let signer: Signer
    public nonisolated let digest: ChallengeDigest
    /// Tries of every transaction that are NACKed before one succeeds.
    public var nacksPerTransaction: Int
    /// Status polls that read "busy" (0x00) after signing starts.
    public var busyPolls: Int
    /// When set, signing fails: the status reads 0x80 and register 0x05 this.
    public var signingError: UInt8?

    /// Counters for tests.
    public private(set) var transactions = 0
    public private(set) var nacks = 0

    private var registers: [UInt8: [UInt8]] = [:]
    private var pointer: UInt8 = 0
    private var nacksLeft = 0
    private var transactionOpen = false
    private var pollsLeft = 0

    public init(
        version: CoprocessorAuthenticator.Version, certificate: [UInt8], signer: Signer,
        address: UInt8 = I2CDeviceSpec.defaultAddress, digest: ChallengeDigest = .default,
        nacksPerTransaction: Int = 0, busyPolls: Int = 1, signingError: UInt8? = nil
    ) {
        self.version = version
        self.certificate = certificate
        self.signer = signer
        self.address = address
        self.digest = digest
        self.nacksPerTransaction = nacksPerTransaction
        self.busyPolls = busyPolls
        self.signingError = signingError
        registers[0x00] = [version == .v3_0 ? 0x07 : 0x05]
        registers[0x01] = [0x01]
        registers[0x02] = [version == .v3_0 ? 3 : 2]
        registers[0x03] = [0]
        registers[0x05] = [0]
        registers[0x10] = [0]
        registers[0x30] = bigEndian(UInt16(certificate.count))
        switch version {
        case .v3_0:
            registers[0x31] = certificate
        case .v2_0C:
            var page: UInt8 = 0
            var offset = 0
            while offset < certificate.count {
                let end = min(offset + CoprocessorAuthenticator.pageSize, certificate.count)
                registers[0x31 + page] = Array(certificate[offset..<end])
                offset = end
                page += 1
            }
        }
    }

    /// A chip with a fresh key and a certificate from `authority`: P-256 for
    /// 3.0, RSA-1024 for 2.0C (its certificate signed by the P-256 authority),
    /// the certificate presented in a CMS SignedData as real chips do.
    public static func make(
        version: CoprocessorAuthenticator.Version, authority: TestAuthority,
        digest: ChallengeDigest = .default, nacksPerTransaction: Int = 0
    ) throws(AuthenticationError) -> SimulatedCoprocessor {
        let signer: Signer
        let publicKey: Certificate.PublicKey
        switch version {
        case .v3_0:
            let key = P256.Signing.PrivateKey()
            signer = .p256(key)
            publicKey = Certificate.PublicKey(key.publicKey)
        case .v2_0C:
            do {
                // 1024 bits needs the "unsafe" generator; the plain one starts at 2048.
                let key = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
                signer = .rsa(key)
                publicKey = Certificate.PublicKey(key.publicKey)
            } catch {
                throw AuthenticationError(.unsupportedKey, "cannot make an RSA-1024 key: \(error)")
            }
        }
        let certificate = try authority.issue(publicKey: publicKey, commonName: "simulated coprocessor \(version)")
        return SimulatedCoprocessor(
            version: version, certificate: try CMSCertsOnly.encode([certificate]), signer: signer, digest: digest,
            nacksPerTransaction: nacksPerTransaction)
    }

    public func setNacksPerTransaction(_ count: Int) { nacksPerTransaction = count }
    public func setBusyPolls(_ count: Int) { busyPolls = count }
    public func setSigningError(_ code: UInt8?) { signingError = code }

    public func write(_ bytes: [UInt8], to address: UInt8) async throws(I2CError) {
        guard address == self.address else { throw I2CError(.nack, "simulated: no device at 0x\(String(address, radix: 16))") }
        guard let register = bytes.first else { throw I2CError(.io, "simulated: an empty write") }
        if !transactionOpen {
            transactionOpen = true
            transactions += 1
            nacksLeft = nacksPerTransaction
        }
        if nacksLeft > 0 {
            nacksLeft -= 1
            nacks += 1
            throw I2CError(.nack, "simulated: busy (NACK)")
        }
        pointer = register
        let data = Array(bytes.dropFirst())
        guard !data.isEmpty else { return }  // an address write: the read completes the transaction
        transactionOpen = false
        switch register {
        case 0x10:
            guard data == [1] else { throw I2CError(.io, "simulated: control accepts only 1 (start)") }
            startSigning()
        case 0x20:
            guard data.count == 2 else { throw I2CError(.io, "simulated: the challenge length is 2 bytes") }
            registers[0x20] = data
        case 0x21:
            registers[0x21] = data
        default:
            throw I2CError(.io, "simulated: register 0x\(String(register, radix: 16)) is read-only")
        }
    }

    public func read(count: Int, from address: UInt8) async throws(I2CError) -> [UInt8] {
        guard address == self.address else { throw I2CError(.nack, "simulated: no device at 0x\(String(address, radix: 16))") }
        transactionOpen = false
        if pointer == 0x10 && pollsLeft > 0 {
            pollsLeft -= 1
            return [0x00]
        }
        guard let value = registers[pointer] else {
            throw I2CError(.io, "simulated: register 0x\(String(pointer, radix: 16)) is not readable")
        }
        guard count <= value.count else {
            throw I2CError(.io, "simulated: \(count) bytes read from register 0x\(String(pointer, radix: 16)), which holds \(value.count)")
        }
        return Array(value.prefix(count))
    }

    private func startSigning() {
        pollsLeft = busyPolls
        let challenge = registers[0x21] ?? []
        let declared = registers[0x20].map { Int($0[0]) << 8 | Int($0[1]) } ?? -1
        func fail(_ code: UInt8) {
            registers[0x10] = [0x80]
            registers[0x05] = [code]
        }
        if let signingError { return fail(signingError) }
        guard declared == challenge.count else { return fail(0x06) }
        let response: [UInt8]
        switch signer {
        case .p256(let key):
            guard let signature = try? digest.signature(for: challenge, with: key) else { return fail(0x07) }
            response = Array(signature.rawRepresentation)
        case .rsa(let key):
            guard let signature = try? ChallengeDigest.rsaSignature(for: challenge, with: key) else { return fail(0x07) }
            response = signature
        }
        registers[0x11] = bigEndian(UInt16(response.count))
        registers[0x12] = response
        registers[0x10] = [0x10]
        registers[0x05] = [0]
    }
}
