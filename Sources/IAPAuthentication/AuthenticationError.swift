/// An error from the authentication layer. `kind` says what went wrong in a
/// form a program can match; `detail` says it in words a person can act on.
public struct AuthenticationError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable, CustomStringConvertible {
        /// No bytes where a certificate was expected.
        case empty
        /// More bytes than the structure may have (checked before parsing).
        case tooLong
        /// The bytes are not a DER (or BER) encoding.
        case notDER
        /// DER, but neither an X.509 certificate nor a CMS SignedData holding one.
        case notCertificate
        /// A CMS SignedData without a certificate inside.
        case noCertificate
        /// A key algorithm or size this layer cannot use.
        case unsupportedKey
        /// A challenge or response of the wrong length, or a malformed value.
        case badValue
        /// Key or certificate files: missing, unreadable, wrong permissions, bad PEM.
        case storage
        /// The I2C bus: open, ioctl, read or write failed (not a busy NACK).
        case bus
        /// The coprocessor kept NACKing (busy) beyond the retry bound.
        case busy
        /// The coprocessor reported a failure or an unexpected value.
        case coprocessor
        /// A malformed `i2c:` spec string.
        case badSpec

        public var description: String { rawValue }
    }

    public let kind: Kind
    /// What was being done and what was found, in words.
    public let detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { detail }
}
