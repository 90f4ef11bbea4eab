import IAPWire

/// The authentication control messages (MessageCatalog's 0xAA00-0xAA06)
/// built and read, so the connection core need not know their layout.
public enum AuthenticationMessages {
    public static let requestCertificateID: UInt16 = 0xAA00
    public static let certificateID: UInt16 = 0xAA01
    public static let requestChallengeResponseID: UInt16 = 0xAA02
    public static let responseID: UInt16 = 0xAA03
    public static let failedID: UInt16 = 0xAA04
    public static let succeededID: UInt16 = 0xAA05

    /// AuthenticationCertificate: parameter 0 = the certificate bytes.
    public static func certificate(_ bytes: [UInt8]) -> ControlMessage {
        ControlMessage(id: certificateID, parameters: [.blob(0, bytes)])
    }

    /// RequestAuthenticationChallengeResponse: parameter 0 = the challenge.
    public static func challenge(_ challenge: AuthenticationChallenge) -> ControlMessage {
        ControlMessage(id: requestChallengeResponseID, parameters: [.blob(0, challenge.bytes)])
    }

    /// AuthenticationResponse: parameter 0 = the signature.
    public static func response(_ bytes: [UInt8]) -> ControlMessage {
        ControlMessage(id: responseID, parameters: [.blob(0, bytes)])
    }

    /// Parameter 0 of `message`, which must have the id `expected`; the
    /// length is checked against `limit` (the certificate bound by default).
    public static func payload(
        of message: ControlMessage, expected: UInt16, limit: Int = AccessoryCertificate.maximumLength
    ) throws(AuthenticationError) -> [UInt8] {
        guard message.id == expected else {
            throw AuthenticationError(
                .badValue, "expected message 0x\(String(expected, radix: 16)), got 0x\(String(message.id, radix: 16))")
        }
        guard let parameter = message.parameter(0) else {
            throw AuthenticationError(.badValue, "message 0x\(String(expected, radix: 16)) has no parameter 0")
        }
        guard parameter.data.count <= limit else {
            throw AuthenticationError(
                .tooLong, "parameter 0 of message 0x\(String(expected, radix: 16)) is \(parameter.data.count) bytes; at most \(limit) are accepted")
        }
        return parameter.data
    }
}
