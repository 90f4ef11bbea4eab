import Crypto
import IAPSession
import IAPWire
import Testing
import X509
import _CryptoExtras

@testable import IAPAuthentication

@Suite struct ChallengeTests {
    let certificate = try! AccessoryCertificate(bytes: Fixtures.accessory.derBytes)
    let software = try! SoftwareAuthenticator(key: Fixtures.accessoryKey, certificate: Fixtures.accessory)

    @Test func sizesFollowTheKey() throws {
        #expect(AuthenticationChallenge.size(for: .p256) == 32)
        #expect(AuthenticationChallenge.size(for: .rsa(bits: 1024)) == 20)
        #expect(AuthenticationChallenge.size(for: .other("Ed25519")) == nil)
        #expect(try AuthenticationChallenge.generate(for: .p256).bytes.count == 32)
        #expect(try AuthenticationChallenge.generate(for: .rsa(bits: 1024)).bytes.count == 20)
        #expect(throws: AuthenticationError.self) { try AuthenticationChallenge.generate(for: .other("x")) }
    }

    @Test func seededGeneratorsGiveTheSameChallenge() throws {
        var a = SplitMix(seed: 42)
        var b = SplitMix(seed: 42)
        var c = SplitMix(seed: 43)
        let first = try AuthenticationChallenge.generate(for: .p256, using: &a)
        #expect(first == (try AuthenticationChallenge.generate(for: .p256, using: &b)))
        #expect(first != (try AuthenticationChallenge.generate(for: .p256, using: &c)))
    }

    @Test func verifiesAP256Response() throws {
        var generator = SplitMix(seed: 1)
        let challenge = try AuthenticationChallenge.generate(for: .p256, using: &generator).bytes
        let response = try software.sign(challenge)
        #expect(response.count == 64)
        #expect(AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate) == .valid)
    }

    @Test func flippedBitsAndWrongKeysFail() throws {
        var generator = SplitMix(seed: 2)
        let challenge = try AuthenticationChallenge.generate(for: .p256, using: &generator).bytes
        let response = try software.sign(challenge)
        for index in [0, 31, 32, 63] {
            let result = AuthenticationChallenge.verify(
                response: flipBit(response, at: index, bit: 3), challenge: challenge, certificate: certificate)
            guard case .badSignature = result else {
                Issue.record("a flipped response bit at \(index) gave \(result)")
                continue
            }
        }
        for index in [0, 17, 31] {
            let result = AuthenticationChallenge.verify(
                response: response, challenge: flipBit(challenge, at: index), certificate: certificate)
            guard case .badSignature = result else {
                Issue.record("a flipped challenge bit at \(index) gave \(result)")
                continue
            }
        }
    }

    @Test func aResponseFromAnotherKeyFails() throws {
        let otherKey = P256.Signing.PrivateKey()
        let challenge = [UInt8](repeating: 0x5A, count: 32)
        let response = Array(try ChallengeDigest.asIs.signature(for: challenge, with: otherKey).rawRepresentation)
        let result = AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate)
        guard case .badSignature = result else {
            Issue.record("another key's signature gave \(result)")
            return
        }
    }

    @Test func lengthsAreChecked() throws {
        let challenge = [UInt8](repeating: 1, count: 32)
        let response = try software.sign(challenge)
        guard
            case .badLength = AuthenticationChallenge.verify(
                response: Array(response.dropLast()), challenge: challenge, certificate: certificate),
            case .badLength = AuthenticationChallenge.verify(
                response: response, challenge: Array(challenge.prefix(20)), certificate: certificate)
        else {
            Issue.record("bad lengths were not reported as such")
            return
        }
        #expect(throws: AuthenticationError.self) { try software.sign([1, 2, 3]) }
    }

    @Test func theDigestSwitchIsHonouredOnBothEnds() throws {
        let challenge = [UInt8](repeating: 9, count: 32)
        let hashed = try SoftwareAuthenticator(
            key: Fixtures.accessoryKey, certificate: Fixtures.accessory, digest: .sha256)
        let response = try hashed.sign(challenge)
        #expect(
            AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate, digest: .sha256)
                == .valid)
        #expect(
            AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate, digest: .asIs)
                != .valid)
        // As-is really signs the challenge as the digest: it verifies
        // against swift-crypto's own SHA-256 type only when the challenge
        // happens to be that hash.
        let message: [UInt8] = Array("hello".utf8)
        let digest = Array(SHA256.hash(data: message))
        let asIs = try software.sign(digest)
        #expect(
            Fixtures.accessoryKey.publicKey.isValidSignature(
                try P256.Signing.ECDSASignature(rawRepresentation: asIs), for: SHA256.hash(data: message)))
    }

    @Test func verifiesRSA1024Responses() throws {
        let certificate = try AccessoryCertificate(bytes: Fixtures.rsa1024Certificate.derBytes)
        var generator = SplitMix(seed: 3)
        let challenge = try AuthenticationChallenge.generate(for: certificate.keyType, using: &generator).bytes
        #expect(challenge.count == 20)
        let response = try ChallengeDigest.rsaSignature(for: challenge, with: Fixtures.rsa1024)
        #expect(response.count == 128)
        #expect(AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate) == .valid)
        guard
            case .badSignature = AuthenticationChallenge.verify(
                response: flipBit(response, at: 100), challenge: challenge, certificate: certificate),
            case .badSignature = AuthenticationChallenge.verify(
                response: response, challenge: flipBit(challenge, at: 5), certificate: certificate),
            case .badLength = AuthenticationChallenge.verify(
                response: Array(response.prefix(64)), challenge: challenge, certificate: certificate)
        else {
            Issue.record("RSA failures were not reported as such")
            return
        }
    }

    @Test func signsRSAChallengesAsTheDigestAndVerifiesEitherReading() throws {
        // A challenge that happens to be SHA-1 of a message: signed as the
        // digest, it verifies as a plain PKCS#1 v1.5 SHA-1 signature over
        // that message (swift-crypto's own hashing, not our digest value).
        let message: [UInt8] = Array("2.0C".utf8)
        let challenge = Array(Insecure.SHA1.hash(data: message))
        let asDigest = try ChallengeDigest.rsaSignature(for: challenge, with: Fixtures.rsa1024)
        #expect(
            Fixtures.rsa1024.publicKey.isValidSignature(
                _RSA.Signing.RSASignature(rawRepresentation: asDigest), for: Insecure.SHA1.hash(data: message),
                padding: .insecurePKCS1v1_5))
        // The other reading: SHA-1 of the challenge is the digest.
        let hashed = Array(
            try Fixtures.rsa1024.signature(for: Insecure.SHA1.hash(data: challenge), padding: .insecurePKCS1v1_5)
                .rawRepresentation)
        #expect(hashed != asDigest)
        let key = Fixtures.rsa1024.publicKey
        #expect(ChallengeDigest.rsaReading(of: asDigest, for: challenge, with: key) == .challengeAsDigest)
        #expect(ChallengeDigest.rsaReading(of: hashed, for: challenge, with: key) == .sha1OfChallenge)
        #expect(ChallengeDigest.rsaReading(of: flipBit(asDigest, at: 9), for: challenge, with: key) == nil)
        #expect(ChallengeDigest.rsaReading(of: hashed, for: flipBit(challenge, at: 3), with: key) == nil)
        let certificate = try AccessoryCertificate(bytes: Fixtures.rsa1024Certificate.derBytes)
        #expect(AuthenticationChallenge.verify(response: asDigest, challenge: challenge, certificate: certificate) == .valid)
        #expect(AuthenticationChallenge.verify(response: hashed, challenge: challenge, certificate: certificate) == .valid)
        guard
            case .badSignature = AuthenticationChallenge.verify(
                response: flipBit(hashed, at: 50), challenge: challenge, certificate: certificate)
        else {
            Issue.record("a wrong RSA signature was not refused")
            return
        }
    }

    @Test func theVerifierSaysWhichRSAReadingHeld() throws {
        let challenge = [UInt8](0..<20)
        let certificate = Fixtures.rsa1024Certificate.derBytes
        let asDigest = try ChallengeDigest.rsaSignature(for: challenge, with: Fixtures.rsa1024)
        let hashed = Array(
            try Fixtures.rsa1024.signature(for: Insecure.SHA1.hash(data: challenge), padding: .insecurePKCS1v1_5)
                .rawRepresentation)
        let verifier = DeviceVerifier()
        #expect(verifier.answerWithoutChain(.response(asDigest, challenge: challenge, certificate: certificate))
                == .responseVerified(reading: "the challenge as the SHA-1 digest"))
        #expect(verifier.answerWithoutChain(.response(hashed, challenge: challenge, certificate: certificate))
                == .responseVerified(reading: "SHA-1 of the challenge"))
        guard case .responseInvalid = verifier.answerWithoutChain(.response(flipBit(hashed, at: 7), challenge: challenge, certificate: certificate)) else {
            Issue.record("a wrong RSA signature was not refused")
            return
        }
    }

    @Test func rsaChallengeOfAnotherLengthIsReadOnlyAsHashed() throws {
        let challenge = [UInt8](repeating: 0x5A, count: 32)
        #expect(throws: AuthenticationError.self) {
            try ChallengeDigest.rsaSignature(for: challenge, with: Fixtures.rsa1024)
        }
        let hashed = Array(
            try Fixtures.rsa1024.signature(for: Insecure.SHA1.hash(data: challenge), padding: .insecurePKCS1v1_5)
                .rawRepresentation)
        #expect(ChallengeDigest.rsaReading(of: hashed, for: challenge, with: Fixtures.rsa1024.publicKey) == .sha1OfChallenge)
    }
}
