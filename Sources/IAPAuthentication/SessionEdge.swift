import IAPWire

/// The device end's checks for the connection core: the certificate read
/// and reported, a fresh challenge made for its key, the response verified
/// with its public key, and (with trust anchors) its chain checked.
///
/// Without anchors a valid signature from an unknown issuer is accepted and
/// reported as an untrusted issuer: a test tool must work with test
/// certificates. With anchors, a certificate that does not chain to one is
/// refused.
public struct DeviceVerifier: Sendable {
    public let anchors: TrustAnchors?
    public let digest: ChallengeDigest

    public init(anchors: TrustAnchors? = nil, digest: ChallengeDigest = .default) {
        self.anchors = anchors
        self.digest = digest
    }

    /// The answer to the core's request, chain trust included.
    public func answer(_ request: VerificationRequest) async -> VerificationAnswer {
        guard case .certificate(let bytes) = request else { return answerWithoutChain(request) }
        let certificate: AccessoryCertificate
        do {
            certificate = try AccessoryCertificate(bytes: bytes)
        } catch {
            return .certificateRejected(error.description)
        }
        let trust: String
        if let anchors {
            switch await anchors.evaluate(certificate) {
            case .trusted(let anchor): trust = "trusted (chains to \(anchor))"
            case .untrustedIssuer(let issuer): return .certificateRejected("its issuer \(issuer) is not among the trust anchors")
            case .invalid(let reason): return .certificateRejected(reason)
            }
        } else {
            trust = "untrusted issuer (no trust anchors given)"
        }
        return examined(certificate, trust: trust)
    }

    /// The answer without chain trust (which swift-certificates checks
    /// asynchronously), for runners in virtual time.
    public func answerWithoutChain(_ request: VerificationRequest) -> VerificationAnswer {
        switch request {
        case .certificate(let bytes):
            do {
                return examined(try AccessoryCertificate(bytes: bytes), trust: "issuer not checked")
            } catch {
                return .certificateRejected(error.description)
            }
        case .response(let response, let challenge, let bytes):
            guard let certificate = try? AccessoryCertificate(bytes: bytes) else {
                return .responseInvalid("the certificate no longer parses")
            }
            let verification = AuthenticationChallenge.verify(response: response, challenge: challenge, certificate: certificate, digest: digest)
            guard verification.isValid else { return .responseInvalid(verification.description) }
            // 2.0C leaves open how the challenge is read: say which reading held.
            if case .rsa(let key) = certificate.publicKey, let reading = ChallengeDigest.rsaReading(of: response, for: challenge, with: key) {
                return .responseVerified(reading: reading.description)
            }
            return .responseValid
        }
    }

    private func examined(_ certificate: AccessoryCertificate, trust: String) -> VerificationAnswer {
        do {
            let challenge = try AuthenticationChallenge.generate(for: certificate.keyType)
            return .certificateAccepted(summary: Self.summary(certificate, trust: trust), challenge: challenge.bytes)
        } catch {
            return .certificateRejected(error.description)
        }
    }

    /// Subject, issuer, serial, key type and trust, in one line.
    public static func summary(_ certificate: AccessoryCertificate, trust: String) -> String {
        "subject \(certificate.subject), issuer \(certificate.issuer), serial \(certificate.serialHex), \(certificate.keyType) key, \(trust)"
    }
}

extension Authenticator {
    /// The answer to the connection core's request.
    public func answer(_ request: AuthenticatorRequest) async -> AuthenticatorAnswer {
        do {
            switch request {
            case .certificate: return .certificate(try await certificate())
            case .response(let challenge): return .response(try await respond(to: challenge))
            }
        } catch {
            return .failed("\(self): \(error)")
        }
    }
}

extension SoftwareAuthenticator {
    /// The answer at once, for runners in virtual time (signing with a
    /// software key does not wait for anything).
    public func answerNow(_ request: AuthenticatorRequest) -> AuthenticatorAnswer {
        switch request {
        case .certificate: return .certificate(presentedCertificate)
        case .response(let challenge):
            do {
                return .response(try sign(challenge))
            } catch {
                return .failed("\(self): \(error)")
            }
        }
    }
}
