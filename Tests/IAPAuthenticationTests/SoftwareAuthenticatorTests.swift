import Crypto
import Glibc
import Testing
import X509

@testable import IAPAuthentication

@Suite struct SoftwareAuthenticatorTests {
    @Test func createsPersistsAndRoundTrips() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.path + "/nested/authentication"
        let first = try SoftwareAuthenticator.openOrCreate(directory: directory)
        #expect(fileMode(directory) == 0o700)
        #expect(fileMode(directory + "/accessory-key.pem") == 0o600)
        #expect(fileMode(directory + "/authority-key.pem") == 0o600)
        #expect(fileMode(directory + "/authority-certificate.pem") == 0o644)

        let second = try SoftwareAuthenticator.openOrCreate(directory: directory)
        #expect(second.key.rawRepresentation == first.key.rawRepresentation)
        #expect(try await second.certificate() == (try await first.certificate()))

        // The device end: parse, challenge, verify, trust.
        let presented = try await second.certificate()
        let certificate = try AccessoryCertificate(bytes: presented)
        #expect(certificate.container == .signedData(certificateCount: 2))
        var generator = SplitMix(seed: 11)
        let challenge = try AuthenticationChallenge.generate(for: certificate.keyType, using: &generator)
        let response = try await second.respond(to: challenge.bytes)
        #expect(
            AuthenticationChallenge.verify(response: response, challenge: challenge.bytes, certificate: certificate)
                == .valid)
        let anchors = try TrustAnchors(contentsOfFile: directory + "/authority-certificate.pem")
        guard case .trusted = await anchors.evaluate(certificate) else {
            Issue.record("the software certificate does not chain to its own authority")
            return
        }
        #expect(try TrustAnchors(pem: #require(second.authorityPEM)).certificates == anchors.certificates)
    }

    @Test func loadsGivenFilesAndPresentsDERWhenAsked() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let created = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
        let loaded = try SoftwareAuthenticator(
            keyFile: temporary.path + "/accessory-key.pem",
            certificateFile: temporary.path + "/accessory-certificate.pem", presentation: .der)
        #expect(loaded.key.rawRepresentation == created.key.rawRepresentation)
        let certificate = try AccessoryCertificate(bytes: try await loaded.certificate())
        #expect(certificate.container == .x509)
    }

    @Test func refusesAKeyOthersCanRead() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        _ = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
        chmod(temporary.path + "/accessory-key.pem", 0o644)
        do {
            _ = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
            Issue.record("loaded a world-readable key")
        } catch {
            #expect(error.kind == .storage)
            #expect(error.detail.contains("chmod 600"))
        }
    }

    @Test func refusesADirectoryOthersCanWrite() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        _ = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
        chmod(temporary.path, 0o777)
        do {
            _ = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
            Issue.record("used a directory anyone can write to")
        } catch {
            #expect(error.kind == .storage)
            #expect(error.detail.contains("writable by others (mode 777)") && error.detail.contains("chmod 700"), "\(error)")
        }
    }

    /// Deleting the certificate must not cost the key: it is issued again for the same key.
    @Test func aMissingCertificateIsIssuedAgainForTheSameKey() async throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let first = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
        unlink(temporary.path + "/accessory-certificate.pem")
        let second = try SoftwareAuthenticator.openOrCreate(directory: temporary.path)
        #expect(second.key.rawRepresentation == first.key.rawRepresentation)
        let certificate = try AccessoryCertificate(bytes: try await second.certificate())
        var generator = SplitMix(seed: 5)
        let challenge = try AuthenticationChallenge.generate(for: certificate.keyType, using: &generator)
        #expect(AuthenticationChallenge.verify(response: try await second.respond(to: challenge.bytes), challenge: challenge.bytes,
                                               certificate: certificate) == .valid)
    }

    /// A FIFO named as a key or as trust anchors is refused at once (it used to wait for a writer for ever).
    @Test func aFIFOIsRefusedNotWaitedOn() throws {
        let temporary = TemporaryDirectory()
        defer { temporary.remove() }
        let fifo = temporary.path + "/key.pem"
        #expect(mkfifo(fifo, 0o600) == 0)
        do {
            _ = try SoftwareAuthenticator(keyFile: fifo, certificateFile: fifo)
            Issue.record("a FIFO was read as a key")
        } catch {
            #expect(error.detail.contains("is not a regular file (a FIFO)"), "\(error)")
        }
        do {
            _ = try TrustAnchors(contentsOfFile: fifo)
            Issue.record("a FIFO was read as trust anchors")
        } catch {
            #expect("\(error)".contains("is not a regular file (a FIFO)"), "\(error)")
        }
    }

    @Test func refusesACertificateForAnotherKey() throws {
        #expect(throws: AuthenticationError.self) {
            try SoftwareAuthenticator(key: P256.Signing.PrivateKey(), certificate: Fixtures.accessory)
        }
    }

    @Test func defaultDirectory() {
        #expect(
            SoftwareAuthenticator.defaultDirectory(environment: ["XDG_DATA_HOME": "/data", "HOME": "/home/u"])
                == "/data/iap-devkit/authentication")
        #expect(
            SoftwareAuthenticator.defaultDirectory(environment: ["HOME": "/home/u"])
                == "/home/u/.local/share/iap-devkit/authentication")
        #expect(SoftwareAuthenticator.defaultDirectory(environment: [:]) == nil)
    }
}
