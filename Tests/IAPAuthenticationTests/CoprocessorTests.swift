import Glibc
import Testing

@testable import IAPAuthentication

@Suite struct CoprocessorTests {
    func roundTrip(_ chip: SimulatedCoprocessor, configuration: CoprocessorAuthenticator.Configuration = Fixtures.fast)
        async throws -> (AccessoryCertificate, ChallengeVerification)
    {
        let authenticator = CoprocessorAuthenticator(bus: chip, configuration: configuration)
        let certificate = try AccessoryCertificate(bytes: try await authenticator.certificate())
        var generator = SplitMix(seed: 5)
        let challenge = try AuthenticationChallenge.generate(for: certificate.keyType, using: &generator).bytes
        let response = try await authenticator.respond(to: challenge)
        return (
            certificate,
            AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate)
        )
    }

    @Test func version3RoundTrip() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority)
        let identity = try await CoprocessorAuthenticator(bus: chip, configuration: Fixtures.fast).identify()
        #expect(identity.version == .v3_0)
        #expect(identity.protocolMajor == 3)
        let (certificate, result) = try await roundTrip(chip)
        #expect(certificate.keyType == .p256)
        #expect(result == .valid)
        guard case .trusted = await Fixtures.authority.anchors.evaluate(certificate) else {
            Issue.record("the simulated chip's certificate does not chain")
            return
        }
    }

    @Test func version2CRoundTripWithPages() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v2_0C, authority: Fixtures.authority)
        #expect(chip.certificate.count > CoprocessorAuthenticator.pageSize)
        let (certificate, result) = try await roundTrip(chip)
        #expect(certificate.keyType == .rsa(bits: 1024))
        #expect(result == .valid)
    }

    @Test func busyNacksWithinTheBoundSucceed() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority, nacksPerTransaction: 4)
        let (_, result) = try await roundTrip(chip)
        #expect(result == .valid)
        #expect(await chip.nacks == 4 * (await chip.transactions))
    }

    @Test func busyNacksBeyondTheBoundFailClearly() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority, nacksPerTransaction: 5)
        let authenticator = CoprocessorAuthenticator(bus: chip, configuration: Fixtures.fast)
        do {
            _ = try await authenticator.certificate()
            Issue.record("succeeded through 5 NACKs with 5 tries")
        } catch let error as AuthenticationError {
            #expect(error.kind == .busy)
            #expect(error.detail.contains("did not acknowledge in 5 tries"))
        }
        #expect(await chip.nacks == 5)
    }

    @Test func theRetryDelayIsHonoured() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority, nacksPerTransaction: 2)
        var configuration = Fixtures.fast
        configuration.retryDelay = .milliseconds(5)
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await CoprocessorAuthenticator(bus: chip, configuration: configuration).identify()
        // Four register reads, two retries each, 5 ms apart.
        #expect(clock.now - start >= .milliseconds(40))
    }

    @Test func slowSigningIsPolledWithinTheBound() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority)
        await chip.setBusyPolls(9)
        let (_, result) = try await roundTrip(chip)
        #expect(result == .valid)

        await chip.setBusyPolls(10)
        do {
            _ = try await roundTrip(chip)
            Issue.record("succeeded with the status busy for all 10 polls")
        } catch let error as AuthenticationError {
            #expect(error.kind == .coprocessor)
            #expect(error.detail.contains("10 status polls"))
        }
    }

    @Test func aSigningErrorReportsTheErrorCode() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority)
        await chip.setSigningError(0x08)
        do {
            _ = try await roundTrip(chip)
            Issue.record("succeeded despite a signing error")
        } catch let error as AuthenticationError {
            #expect(error.kind == .coprocessor)
            #expect(error.detail.contains("status 0x80"))
            #expect(error.detail.contains("error code 0x8"))
        }
    }

    @Test func challengeLengthsAreChecked() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority)
        let authenticator = CoprocessorAuthenticator(bus: chip, configuration: Fixtures.fast)
        await #expect(throws: AuthenticationError.self) { try await authenticator.respond(to: [1, 2, 3]) }
    }

    @Test func aDeviceAtAnotherAddressNacks() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority)
        let authenticator = CoprocessorAuthenticator(bus: chip, address: 0x11, configuration: Fixtures.fast)
        await #expect(throws: AuthenticationError.self) { try await authenticator.identify() }
    }

    @Test func concurrentOperationsDoNotInterleave() async throws {
        let chip = try SimulatedCoprocessor.make(version: .v3_0, authority: Fixtures.authority, nacksPerTransaction: 1)
        let authenticator = CoprocessorAuthenticator(bus: chip, configuration: Fixtures.fast)
        let certificate = try AccessoryCertificate(bytes: try await authenticator.certificate())
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for seed in 0..<4 {
                group.addTask {
                    var generator = SplitMix(seed: UInt64(seed))
                    let challenge = try AuthenticationChallenge.generate(for: .p256, using: &generator).bytes
                    let response = try await authenticator.respond(to: challenge)
                    return AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate)
                        .isValid
                }
            }
            for try await valid in group { #expect(valid) }
        }
    }
}

@Suite struct I2CSpecTests {
    @Test func parsesSpecs() throws {
        #expect(try I2CDeviceSpec(parsing: "i2c:/dev/i2c-1@0x10") == I2CDeviceSpec(path: "/dev/i2c-1", address: 0x10))
        #expect(try I2CDeviceSpec(parsing: "i2c:/dev/i2c-1") == I2CDeviceSpec(path: "/dev/i2c-1", address: 0x10))
        #expect(try I2CDeviceSpec(parsing: "i2c:/dev/i2c-3@0x11").address == 0x11)
        #expect(try I2CDeviceSpec(parsing: "i2c:/dev/i2c-3@17").address == 17)
        #expect(I2CDeviceSpec(path: "/dev/i2c-1", address: 0x10).description == "i2c:/dev/i2c-1@0x10")
    }

    @Test(arguments: [
        ("/dev/i2c-1", "does not start with \"i2c:\""),
        ("i2c:", "names no device path"),
        ("i2c:@0x10", "names no device path"),
        ("i2c:dev/i2c-1", "is not absolute"),
        ("i2c:/dev/i2c-1@", "is not a number"),
        ("i2c:/dev/i2c-1@zz", "is not a number"),
        ("i2c:/dev/i2c-1@0x", "is not a number"),
        ("i2c:/dev/i2c-1@0x80", "not a usable 7-bit I2C address"),
        ("i2c:/dev/i2c-1@0x01", "not a usable 7-bit I2C address"),
    ])
    func badSpecsSayWhatIsWrong(spec: String, expected: String) {
        do {
            _ = try I2CDeviceSpec(parsing: spec)
            Issue.record("\(spec) parsed")
        } catch {
            #expect(error.kind == .badSpec)
            #expect(error.detail.contains(expected), "\(error.detail)")
        }
    }

    @Test func openingAMissingBusSaysSo() {
        do {
            _ = try LinuxI2CBus(path: "/dev/i2c-iap-devkit-missing")
            Issue.record("opened a missing bus")
        } catch {
            #expect(error.kind == .io)
            #expect(error.errno == ENOENT)
            #expect(error.detail.contains("/dev/i2c-iap-devkit-missing"))
            #expect(error.detail.contains("No such file"))
        }
        #expect(throws: I2CError.self) {
            try CoprocessorAuthenticator(spec: I2CDeviceSpec(path: "/dev/i2c-iap-devkit-missing"))
        }
    }
}
