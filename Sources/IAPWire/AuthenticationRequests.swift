// What the session's authentication asks of the edge and what the edge
// answers: certificates and signatures are cryptography, which no sans-IO
// state machine does itself. Here, below the session, so that the iAP1
// phone (IAPLegacy) and the cryptography (IAPAuthentication) speak them
// without depending on the session layer.

/// What the device end asks the edge to check: certificates and signatures
/// are cryptography, which the sans-IO core does not do itself.
public enum VerificationRequest: Hashable, Sendable {
    /// Read this accessory certificate, report it, and make a fresh
    /// challenge sized for its key.
    case certificate([UInt8])
    /// Check `response` as the signature of `challenge` by the key of `certificate`.
    case response([UInt8], challenge: [UInt8], certificate: [UInt8])
}

/// The edge's answer to a `VerificationRequest`.
public enum VerificationAnswer: Hashable, Sendable {
    /// The certificate can be used: what to report of it (subject, issuer,
    /// serial, key type, trust) and the challenge to send.
    case certificateAccepted(summary: String, challenge: [UInt8])
    case certificateRejected(String)
    case responseValid
    /// Valid under a reading the protocol leaves open (a 2.0C RSA challenge
    /// signed as the digest or hashed first): `reading` says which held, and
    /// the connection logs it.
    case responseVerified(reading: String)
    case responseInvalid(String)
}

/// What the accessory end asks of its authenticator (software key or
/// coprocessor), at the edge.
public enum AuthenticatorRequest: Hashable, Sendable {
    case certificate
    case response(challenge: [UInt8])

    /// What is asked for, in words, without the challenge's bytes.
    package var kind: String {
        switch self {
        case .certificate: "the certificate"
        case .response: "a challenge response"
        }
    }
}

/// The authenticator's answer to an `AuthenticatorRequest`.
public enum AuthenticatorAnswer: Hashable, Sendable {
    case certificate([UInt8])
    case response([UInt8])
    case failed(String)
}
