import IAPLink
import IAPRoles
import IAPWire

/// How the device end treats authentication.
public enum AuthenticationPolicy: Hashable, Sendable {
    /// Ask for the certificate and a signed challenge before identification.
    case required
    /// Skip it, for peers that cannot authenticate (said in the log).
    case off
}

/// Where authentication stands, as either end sees it.
public enum AuthenticationState: Hashable, Sendable {
    case notStarted
    case inProgress
    case succeeded
    case skipped
    case failed(String)
}

/// The device end of authentication: RequestAuthenticationCertificate,
/// the certificate checked at the edge, a challenge, the response checked at
/// the edge, then AuthenticationSucceeded or AuthenticationFailed. Each step
/// waits at most `stepTimeout`.
struct DeviceAuthentication: Sendable {
    enum Step: Hashable, Sendable {
        case idle
        case awaitingCertificate
        case examining(certificate: [UInt8])
        case awaitingResponse(certificate: [UInt8], challenge: [UInt8])
        case verifying
        case done
    }

    enum Output: Hashable, Sendable {
        case send(ControlMessage)
        case verify(VerificationRequest)
        case certificate(summary: String)
        /// Authentication is over: identification may start. `reading`: how
        /// the response was read, where that was open.
        case succeeded(reading: String?)
        case failed(String)
    }

    let stepTimeout: Duration
    private(set) var step = Step.idle
    private(set) var deadline: LinkInstant?

    init(stepTimeout: Duration) { self.stepTimeout = stepTimeout }

    mutating func start(now: LinkInstant) -> [Output] {
        step = .awaitingCertificate
        deadline = now + stepTimeout
        return [.send(ControlMessage(id: MessageID.requestAuthenticationCertificate))]
    }

    mutating func reset() {
        step = .idle
        deadline = nil
    }

    var isActive: Bool {
        switch step {
        case .idle, .done: false
        default: true
        }
    }

    mutating func received(_ message: ControlMessage, now: LinkInstant) -> [Output] {
        switch (step, message.id) {
        case (.awaitingCertificate, MessageID.authenticationCertificate):
            guard let certificate = message.parameter(ParameterID.AuthenticationCertificate.certificate)?.data, !certificate.isEmpty else {
                return fail("the AuthenticationCertificate message carries no certificate (parameter \(ParameterID.AuthenticationCertificate.certificate))")
            }
            step = .examining(certificate: certificate)
            deadline = now + stepTimeout
            return [.verify(.certificate(certificate))]
        case (.awaitingResponse(let certificate, let challenge), MessageID.authenticationResponse):
            guard let response = message.parameter(ParameterID.AuthenticationResponse.response)?.data, !response.isEmpty else {
                return fail("the AuthenticationResponse message carries no response (parameter \(ParameterID.AuthenticationResponse.response))")
            }
            step = .verifying
            deadline = now + stepTimeout
            return [.verify(.response(response, challenge: challenge, certificate: certificate))]
        default:
            let name = MessageCatalog.name(of: message.id) ?? "message 0x\(String(message.id, radix: 16, uppercase: true))"
            return fail("the accessory sent \(name) while \(waitingFor)")
        }
    }

    mutating func verified(_ answer: VerificationAnswer, now: LinkInstant) -> [Output] {
        switch (step, answer) {
        case (.examining(let certificate), .certificateAccepted(let summary, let challenge)):
            step = .awaitingResponse(certificate: certificate, challenge: challenge)
            deadline = now + stepTimeout
            return [.certificate(summary: summary),
                    .send(ControlMessage(id: MessageID.requestAuthenticationChallengeResponse, parameters: [
                        .blob(ParameterID.RequestAuthenticationChallengeResponse.challenge, challenge),
                    ]))]
        case (.examining, .certificateRejected(let reason)):
            return fail("the accessory certificate cannot be used: \(reason)")
        case (.verifying, .responseValid):
            return succeeded(reading: nil)
        case (.verifying, .responseVerified(let reading)):
            return succeeded(reading: reading)
        case (.verifying, .responseInvalid(let reason)):
            return fail("the challenge response does not verify: \(reason)")
        default:
            // An answer for a step that is over (the link went down meanwhile).
            return []
        }
    }

    private mutating func succeeded(reading: String?) -> [Output] {
        step = .done
        deadline = nil
        return [.send(ControlMessage(id: MessageID.authenticationSucceeded)), .succeeded(reading: reading)]
    }

    mutating func tick(now: LinkInstant) -> [Output] {
        guard let deadline, now >= deadline, isActive else { return [] }
        return fail("no answer within \(stepTimeout) while \(waitingFor)")
    }

    private var waitingFor: String {
        switch step {
        case .idle, .done: "not authenticating"
        case .awaitingCertificate: "waiting for AuthenticationCertificate"
        case .examining: "checking the certificate"
        case .awaitingResponse: "waiting for AuthenticationResponse"
        case .verifying: "checking the response"
        }
    }

    private mutating func fail(_ reason: String) -> [Output] {
        step = .done
        deadline = nil
        return [.send(ControlMessage(id: MessageID.authenticationFailed)), .failed(reason)]
    }
}

/// The accessory end of authentication: answers the device's requests with
/// what its authenticator (at the edge) produces.
struct AccessoryAuthentication: Sendable {
    enum Output: Hashable, Sendable {
        case send(ControlMessage)
        case authenticator(AuthenticatorRequest)
        case succeeded
        case failed(String)
        case problem(String)
    }

    private(set) var state = AuthenticationState.notStarted
    /// What the authenticator is working on: one request at a time, so a
    /// device repeating its requests cannot queue signatures without end
    /// (a coprocessor takes hundreds of milliseconds for one).
    private var inFlight: AuthenticatorRequest?
    /// The device's latest request while one is in flight; it replaces any
    /// earlier one still waiting.
    private var waiting: AuthenticatorRequest?

    mutating func reset() {
        state = .notStarted
        inFlight = nil
        waiting = nil
    }

    mutating func received(_ message: ControlMessage) -> [Output] {
        switch message.id {
        case MessageID.requestAuthenticationCertificate:
            state = .inProgress
            return ask(.certificate)
        case MessageID.requestAuthenticationChallengeResponse:
            guard let challenge = message.parameter(ParameterID.RequestAuthenticationChallengeResponse.challenge)?.data, !challenge.isEmpty else {
                return [.problem("RequestAuthenticationChallengeResponse carries no challenge (parameter \(ParameterID.RequestAuthenticationChallengeResponse.challenge))")]
            }
            state = .inProgress
            return ask(.response(challenge: challenge))
        case MessageID.authenticationSucceeded:
            state = .succeeded
            return [.succeeded]
        case MessageID.authenticationFailed:
            state = .failed("the device sent AuthenticationFailed")
            return [.failed("the device sent AuthenticationFailed")]
        default:
            return []
        }
    }

    private mutating func ask(_ request: AuthenticatorRequest) -> [Output] {
        guard inFlight == nil else {
            let replaced = waiting != nil
            waiting = request
            return [.problem("the device asked for \(request.kind) before the authenticator had answered its request for \(inFlight?.kind ?? "?")"
                             + (replaced ? "; its earlier waiting request is dropped" : "; it waits for that answer"))]
        }
        inFlight = request
        return [.authenticator(request)]
    }

    mutating func answered(_ answer: AuthenticatorAnswer) -> [Output] {
        guard let request = inFlight else { return [] }
        inFlight = nil
        var outputs: [Output] = []
        if let next = waiting {
            waiting = nil
            inFlight = next
            // The device asked the same again: it wants the answer to its
            // latest request (a new challenge), not to the one it replaced.
            if next.kind != request.kind { outputs += reply(answer, to: request) }
            outputs.append(.authenticator(next))
        } else {
            outputs += reply(answer, to: request)
        }
        return outputs
    }

    private func reply(_ answer: AuthenticatorAnswer, to request: AuthenticatorRequest) -> [Output] {
        switch (request, answer) {
        case (.certificate, .certificate(let bytes)):
            return [.send(ControlMessage(id: MessageID.authenticationCertificate, parameters: [.blob(ParameterID.AuthenticationCertificate.certificate, bytes)]))]
        case (.response, .response(let bytes)):
            return [.send(ControlMessage(id: MessageID.authenticationResponse, parameters: [.blob(ParameterID.AuthenticationResponse.response, bytes)]))]
        case (_, .failed(let reason)):
            return [.problem("the authenticator failed: \(reason)")]
        default:
            return [.problem("the authenticator answered \(answer) to \(request)")]
        }
    }
}
