import ArgumentParser
import Foundation
import IAPAuthentication
import IAPEndpoint
import IAPSession
import Synchronization

/// How each end authenticates: the phone verifies, the head unit signs.
struct AuthenticationOptions: ParsableArguments {
    enum Setting: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    @Option(help: ArgumentHelp("on: the phone has the accessory authenticate before identification; off: skip it for peers that cannot authenticate (said in the log).",
                               valueName: "on|off"))
    var auth: Setting = .on

    @Option(help: ArgumentHelp("Phone: check the accessory certificate's chain against these CA certificates. Without it a valid signature from an unknown issuer is accepted and reported as an untrusted issuer.",
                               valueName: "file.pem"))
    var trustAnchors: String?

    @Option(help: ArgumentHelp("Head unit: `software` (a P-256 test key and certificate from a local test authority, created on first use in --authentication-dir) or the Apple authentication coprocessor on Linux I2C, e.g. i2c:/dev/i2c-1@0x10.",
                               valueName: "software|i2c:PATH@ADDRESS"))
    var authenticator = "software"

    @Option(help: ArgumentHelp("Where the software authenticator keeps its keys and certificates (default $XDG_DATA_HOME/iap-devkit/authentication, else ~/.local/share/iap-devkit/authentication).",
                               valueName: "directory"))
    var authenticationDir: String?

    /// What an end of `kind` needs: the phone a verifier, the head unit an
    /// authenticator. Read once per process and kept: every connection a
    /// listener serves uses the same key, and a command that serves (a head
    /// unit with its screen) asks before it accepts anything, so connections
    /// that use up its descriptors cannot make the key unreadable later.
    func endpointAuthentication(for kind: EndKind) throws -> EndpointAuthentication {
        let key = ReadAuthentication.Key(end: kind.linkRole == .device ? "device" : "accessory", auth: auth.rawValue, trustAnchors: trustAnchors,
                                         authenticator: authenticator, authenticationDir: authenticationDir)
        if let kept = ReadAuthentication.kept.withLock({ $0[key] }) { return kept }
        let read = try readEndpointAuthentication(for: kind)
        ReadAuthentication.kept.withLock { $0[key] = read }
        return read
    }

    private func readEndpointAuthentication(for kind: EndKind) throws -> EndpointAuthentication {
        let policy: AuthenticationPolicy = auth == .on ? .required : .off
        switch kind.linkRole {
        case .device:
            guard policy == .required else { return .off }
            var anchors: TrustAnchors?
            if let trustAnchors {
                do {
                    anchors = try TrustAnchors(contentsOfFile: trustAnchors)
                } catch {
                    throw CommandFailure(message: "--trust-anchors \(trustAnchors): \(error)")
                }
            }
            let verifier = DeviceVerifier(anchors: anchors)
            return EndpointAuthentication(policy: .required, verifier: { await verifier.answer($0) })
        case .accessory:
            let authenticator = try makeAuthenticator()
            return EndpointAuthentication(policy: policy, authenticator: { await authenticator.answer($0) })
        }
    }

    private func makeAuthenticator() throws -> any Authenticator {
        if authenticator == "software" {
            let directory = authenticationDir ?? SoftwareAuthenticator.defaultDirectory(environment: ProcessInfo.processInfo.environment)
            guard let directory else {
                throw CommandFailure(message: "no place for the software authenticator's keys: set HOME or XDG_DATA_HOME, or give --authentication-dir")
            }
            do {
                return try SoftwareAuthenticator.openOrCreate(directory: directory)
            } catch {
                throw CommandFailure(message: "the software authenticator in \(directory): \(error)")
            }
        }
        if authenticator.hasPrefix("i2c:") {
            do {
                return try CoprocessorAuthenticator(spec: try I2CDeviceSpec(parsing: authenticator))
            } catch {
                throw CommandFailure(message: "--authenticator \(authenticator): \(error)")
            }
        }
        throw CommandFailure(message: "--authenticator '\(authenticator)': write software, or i2c:/dev/i2c-N@0xADDRESS for the coprocessor")
    }
}

/// The authentications `AuthenticationOptions` has read in this process, by
/// the options they were read with.
private enum ReadAuthentication {
    struct Key: Hashable {
        var end: String
        var auth: String
        var trustAnchors: String?
        var authenticator: String
        var authenticationDir: String?
    }
    static let kept = Mutex<[Key: EndpointAuthentication]>([:])
}
