import IAPDemo
import IAPEndpointCore
import IAPAuthentication
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

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

    /// Answers a core's requests at once (authenticator, verifier, the
    /// app's content, commands, now playing and pause) back into the core
    /// until nothing is left to answer; every other output (writes, events,
    /// logs) goes to `pass`, in order.
    public func serve(_ outputs: [EndpointCore.Output], _ core: inout EndpointCore, now: LinkInstant,
                      pass: (EndpointCore.Output) -> Void) {
        let app = core.servesApp ? self.app : nil
        var pending = core.answer(outputs, now: now, for: app)[...]
        while let output = pending.popFirst() {
            switch output {
            case .authenticator(let request, let link):
                guard let answer = authenticatorAnswer(request) else { continue }
                pending += core.handle(.authenticatorAnswered(answer, link: link), now: now, answeringFor: app)
            case .verify(let request, let link):
                pending += core.handle(.verified(verifier.answerWithoutChain(request), link: link), now: now, answeringFor: app)
            case .legacyVerify(let id, let request, let link):
                pending += core.handle(.legacyVerified(id: id, verifier.answerWithoutChain(request), link: link), now: now, answeringFor: app)
            case .load(let token, let request):
                let (result, delay) = self.app.load(request, now: now)
                pending += core.handle(.loaded(token: token, result, readyAt: now + delay), now: now, answeringFor: app)
            case .legacyLoad(let token, let request):
                let (result, delay) = self.app.load(request, now: now)
                pending += core.handle(.legacyLoaded(token: token, result, readyAt: now + delay), now: now, answeringFor: app)
            case .pausePlayback:
                self.app.pause(at: now)
            case .write, .link, .event, .legacyEvent, .sentMessage, .log, .sessionData, .perform, .legacyPerform, .readNowPlaying:
                // (the app's commands and now playing were answered in `handle`)
                pass(output)
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

    /// A phone's endpoint core over `link` serving the sample app, its now
    /// playing read from it (and to an iAP1 head unit when `link` answers iAP1).
    public func phoneCore(link: LinkConfiguration, _ configuration: Connection.Configuration = .init(role: .device), feedback: Bool = false,
                          coalescesWrites: Bool = true) -> EndpointCore {
        var commands = app.commandCenter()
        if feedback { app.registerFeedback(&commands) }
        let app = self.app
        let connection = Connection(configuration, phone: PhoneMediaRole(appName: app.appName, commands: commands, offersContent: true, library: app.mediaLibrary),
                                    readsNowPlaying: true)
        return EndpointCore(configuration: EndpointCore.Configuration(link: link, coalescesWrites: coalescesWrites), connection: connection, app: app,
                            verifiesLegacy: configuration.authentication == .required)
    }
}
