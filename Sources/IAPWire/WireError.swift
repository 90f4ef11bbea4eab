/// An error from one of the wire codecs. `kind` says what went wrong in a form
/// a program can match; `description` says it in words a person can act on.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case truncated
            case badStartOfPacket
            case badLength
            case badHeaderChecksum
            case badPayloadChecksum
            case tooLarge
            case badValue
            case nestingTooDeep
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Fewer bytes than the structure needs.
        public static let truncated = Kind(.truncated)
        /// The bytes do not start with the expected marker.
        public static let badStartOfPacket = Kind(.badStartOfPacket)
        /// A length field is outside the range the format allows.
        public static let badLength = Kind(.badLength)
        public static let badHeaderChecksum = Kind(.badHeaderChecksum)
        public static let badPayloadChecksum = Kind(.badPayloadChecksum)
        /// A value is too large to encode in its field.
        public static let tooLarge = Kind(.tooLarge)
        /// A field holds a value the format does not allow.
        public static let badValue = Kind(.badValue)
        /// Parameter groups nest deeper than the configured limit.
        public static let nestingTooDeep = Kind(.nestingTooDeep)

        public var description: String { base.rawValue }
    }

    public let kind: Kind
    /// What was being read or written and what was found, in words.
    public let detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind): \(detail)" }
}
