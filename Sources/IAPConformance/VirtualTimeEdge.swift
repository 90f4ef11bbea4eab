import IAPDemo
import IAPAuthentication
import IAPLink
import IAPRoles
import IAPSession

/// The edge of connection cores run in virtual time (the simulator behind
/// `demo` and `conformance`, the in-process pair behind the benchmarks):
/// authentication answered at once with a software key from an in-memory
/// test authority, the sample app's content and playback. What the real-time
/// endpoint does at its edge, without waiting: chain trust, which
/// swift-certificates checks asynchronously, is not checked here.
public struct VirtualTimeEdge: Sendable {
    /// How the accessory's authenticator misbehaves, for conformance cases.
    public enum AuthenticatorFault: Hashable, Sendable {
        case none
        /// Every response has a bit flipped.
        case tamperedSignature
        /// The certificate is replaced with bytes that are no certificate.
        case garbageCertificate
        /// It never answers.
        case silent
    }

    public let authenticator: SoftwareAuthenticator
    public var verifier = DeviceVerifier()
    public var fault = AuthenticatorFault.none
    public let app: SampleApp

    /// One key for every run in this process: making one costs a few milliseconds.
    static let sharedAuthenticator: SoftwareAuthenticator? = try? SoftwareAuthenticator.ephemeral()

    public init(app: SampleApp) {
        guard let authenticator = Self.sharedAuthenticator else {
            preconditionFailure("swift-crypto could not make a P-256 test key in memory")
        }
        self.authenticator = authenticator
        self.app = app
    }

    /// Hands a core's outputs on: bytes to `send`, events to `event`, and
    /// answers the edge's requests (authenticator, verifier, the app) back
    /// into the core until nothing is left to answer.
    public func serve(_ outputs: [Connection.Output], _ connection: inout Connection, now: LinkInstant,
                      send: (UInt8, [UInt8]) -> Void, event: (Connection.Event) -> Void) {
        var pending = outputs[...]
        while let output = pending.popFirst() {
            switch output {
            case .send(let session, let bytes): send(session, bytes)
            case .event(let happened): event(happened)
            case .authenticator(let request):
                guard let answer = authenticatorAnswer(request) else { continue }
                pending += connection.authenticatorAnswered(answer, now: now)
            case .verify(let request):
                pending += connection.verified(verifier.answerWithoutChain(request), now: now)
            case .load(let token, let request):
                app.setTime(now)
                let (result, delay) = app.load(request, now: now)
                pending += connection.complete(token: token, with: result, at: now + delay, now: now)
            case .pausePlayback:
                app.pause(at: now)
            }
        }
    }

    private func authenticatorAnswer(_ request: AuthenticatorRequest) -> AuthenticatorAnswer? {
        switch (fault, request) {
        case (.silent, _): return nil
        case (.garbageCertificate, .certificate): return .certificate(Array("not a certificate".utf8))
        case (.tamperedSignature, .response):
            guard case .response(var signature) = authenticator.answerNow(request), !signature.isEmpty else { return authenticator.answerNow(request) }
            signature[signature.count / 2] ^= 0x01
            return .response(signature)
        default: return authenticator.answerNow(request)
        }
    }

    /// A phone core serving the sample app, its now playing read from it.
    public func phoneConnection(_ configuration: Connection.Configuration = .init(role: .phone), feedback: Bool = false) -> Connection {
        var commands = app.commandCenter()
        if feedback { app.registerFeedback(&commands) }
        let app = self.app
        return Connection(configuration, phone: PhoneMediaRole(appName: app.appName, commands: commands, offersContent: true),
                          nowPlaying: { now in app.nowPlaying(at: now) })
    }
}
