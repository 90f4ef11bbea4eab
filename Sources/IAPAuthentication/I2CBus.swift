/// An I2C bus as the coprocessor authenticator needs it: plain writes and
/// reads at a 7-bit address. A register read is a one-byte write of the
/// register address followed by a read.
public protocol I2CBus: Sendable {
    /// Writes `bytes` to the device at `address` (7-bit) in one transfer.
    func write(_ bytes: [UInt8], to address: UInt8) async throws(I2CError)
    /// Reads `count` bytes from the device at `address` in one transfer.
    func read(count: Int, from address: UInt8) async throws(I2CError) -> [UInt8]
}

/// An I2C failure: a NACK (the chip is busy or absent: worth retrying)
/// or any other I/O error (not worth retrying).
public struct I2CError: Error, Hashable, Sendable, CustomStringConvertible {
    public enum Kind: String, Hashable, Sendable {
        /// The device did not acknowledge: busy (Apple's coprocessor NACKs
        /// while it works) or not there.
        case nack
        /// Anything else: no such bus, permission, a driver error.
        case io
    }

    public let kind: Kind
    /// The errno behind it, when it came from the kernel.
    public let errno: Int32?
    public let detail: String

    public init(_ kind: Kind, _ detail: String, errno: Int32? = nil) {
        self.kind = kind
        self.detail = detail
        self.errno = errno
    }

    public var description: String { detail }
}

/// Where a coprocessor is: `i2c:/dev/i2c-1@0x10` (the address optional,
/// 0x10 by default; hex with 0x, or decimal).
public struct I2CDeviceSpec: Hashable, Sendable, CustomStringConvertible {
    public static let defaultAddress: UInt8 = 0x10
    /// The 7-bit addresses outside the reserved ones (i2cdetect's range).
    public static let validAddresses: ClosedRange<UInt8> = 0x03...0x77

    public let path: String
    public let address: UInt8

    public init(path: String, address: UInt8 = Self.defaultAddress) {
        self.path = path
        self.address = address
    }

    /// Parses a spec string; a bad one gives a sentence naming what is wrong.
    public init(parsing spec: String) throws(AuthenticationError) {
        let scheme = "i2c:"
        guard spec.hasPrefix(scheme) else {
            throw AuthenticationError(
                .badSpec, "\"\(spec)\" does not start with \"i2c:\" (expected i2c:/dev/i2c-N or i2c:/dev/i2c-N@0xAA)")
        }
        let rest = spec.dropFirst(scheme.count)
        let parts = rest.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
        let path = String(parts[0])
        guard !path.isEmpty else {
            throw AuthenticationError(.badSpec, "\"\(spec)\" names no device path after \"i2c:\" (e.g. i2c:/dev/i2c-1)")
        }
        guard path.hasPrefix("/") else {
            throw AuthenticationError(.badSpec, "the device path \"\(path)\" in \"\(spec)\" is not absolute (e.g. /dev/i2c-1)")
        }
        var address = Self.defaultAddress
        if parts.count == 2 {
            let text = parts[1]
            let value: Int?
            if text.hasPrefix("0x") || text.hasPrefix("0X") {
                value = Int(text.dropFirst(2), radix: 16)
            } else {
                value = Int(text, radix: 10)
            }
            guard let value, !text.isEmpty else {
                throw AuthenticationError(
                    .badSpec, "the address \"\(text)\" in \"\(spec)\" is not a number (e.g. 0x10 or 16)")
            }
            guard value >= Int(Self.validAddresses.lowerBound), value <= Int(Self.validAddresses.upperBound) else {
                throw AuthenticationError(
                    .badSpec,
                    "the address \(text) in \"\(spec)\" is not a usable 7-bit I2C address (0x03 to 0x77)")
            }
            address = UInt8(value)
        }
        self.init(path: path, address: address)
    }

    public var description: String {
        "i2c:\(path)@0x" + String(address, radix: 16, uppercase: false)
    }
}
