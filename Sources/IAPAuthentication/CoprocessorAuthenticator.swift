/// Apple's authentication coprocessor over I2C (2.0C or 3.0), answering
/// for the accessory. Registers (HomeKit ADK's HAPMFiHWAuth comments,
/// wiomoc's mfi_auth_coprocessor.py; Docs/Authentication.md):
///
/// | register | use here |
/// |---|---|
/// | 0x00-0x03 | device version, authentication revision, protocol major, minor |
/// | 0x05 | error code, read when signing fails |
/// | 0x10 | write 1 to start signing; reads 0x10 when the response is ready |
/// | 0x11, 0x12 | response length (u16 big-endian), response data |
/// | 0x20, 0x21 | challenge length (u16), challenge data |
/// | 0x30, 0x31 | certificate length (u16), data (2.0C: 128-byte pages 0x31-0x3A) |
///
/// Every transaction (register write, or register-address write and read)
/// is retried when the chip NACKs, up to `Configuration.attempts` tries.
/// Operations on one authenticator run one at a time.
public struct CoprocessorAuthenticator: Authenticator {
    public struct Configuration: Hashable, Sendable {
        /// Tries per transaction while the chip NACKs.
        public var attempts = 5
        /// Wait between tries.
        public var retryDelay: Duration = .microseconds(500)
        /// Status reads while waiting for a response.
        public var statusPolls = 10
        /// Wait between status reads.
        public var pollInterval: Duration = .milliseconds(100)

        public init() {}

        public init(attempts: Int, retryDelay: Duration, statusPolls: Int, pollInterval: Duration) {
            self.attempts = max(1, attempts)
            self.retryDelay = retryDelay
            self.statusPolls = max(1, statusPolls)
            self.pollInterval = pollInterval
        }
    }

    /// The protocol the chip speaks, from register 0x02.
    public enum Version: Hashable, Sendable, CustomStringConvertible {
        /// RSA-1024, 20-byte challenges, 128-byte responses.
        case v2_0C
        /// ECDSA P-256, 32-byte challenges, 64-byte responses.
        case v3_0

        public var description: String {
            switch self {
            case .v2_0C: "2.0C"
            case .v3_0: "3.0"
            }
        }
    }

    /// What registers 0x00-0x03 say.
    public struct Identity: Hashable, Sendable {
        public var deviceVersion: UInt8
        public var authenticationRevision: UInt8
        public var protocolMajor: UInt8
        public var protocolMinor: UInt8
        public var version: Version
    }

    enum Register {
        static let deviceVersion: UInt8 = 0x00
        static let authenticationRevision: UInt8 = 0x01
        static let protocolMajor: UInt8 = 0x02
        static let protocolMinor: UInt8 = 0x03
        static let errorCode: UInt8 = 0x05
        static let control: UInt8 = 0x10
        static let responseLength: UInt8 = 0x11
        static let responseData: UInt8 = 0x12
        static let challengeLength: UInt8 = 0x20
        static let challengeData: UInt8 = 0x21
        static let certificateLength: UInt8 = 0x30
        static let certificateData: UInt8 = 0x31
    }

    /// Control register values.
    enum Control {
        static let start: UInt8 = 1
        /// Bits 4-6 of the status: 1 = the response is ready.
        static let responseReady: UInt8 = 0x10
        static let resultMask: UInt8 = 0x70
        /// Bit 7: the last operation failed (read 0x05).
        static let error: UInt8 = 0x80
    }

    /// A 2.0C certificate page.
    static let pageSize = 128
    /// 2.0C has ten pages (0x31-0x3A).
    static let maximumCertificateLength = 1280
    static let maximumResponseLength = 128

    public let address: UInt8
    public let configuration: Configuration
    private let bus: any I2CBus
    private let name: String
    private let lock = AsyncLock()

    public init(
        bus: any I2CBus, address: UInt8 = I2CDeviceSpec.defaultAddress, configuration: Configuration = .init(),
        name: String = "I2C"
    ) {
        self.bus = bus
        self.address = address
        self.configuration = configuration
        self.name = name
    }

    /// Over /dev/i2c-N as the spec string names it.
    public init(spec: I2CDeviceSpec, configuration: Configuration = .init()) throws(I2CError) {
        self.init(
            bus: try LinuxI2CBus(path: spec.path), address: spec.address, configuration: configuration,
            name: spec.description)
    }

    public var description: String {
        "authentication coprocessor at 0x\(String(address, radix: 16)) on \(name)"
    }

    /// Reads registers 0x00-0x03.
    public func identify() async throws(AuthenticationError) -> Identity {
        try await lock.run { () async throws(AuthenticationError) -> Identity in try await readIdentity() }
    }

    /// The certificate as the chip holds it (a CMS SignedData).
    public func certificate() async throws -> [UInt8] {
        try await lock.run { () async throws(AuthenticationError) -> [UInt8] in
            let identity = try await readIdentity()
            let length = Int(try await readUInt16(Register.certificateLength))
            guard length > 0, length <= Self.maximumCertificateLength else {
                throw AuthenticationError(
                    .coprocessor,
                    "the coprocessor reports a certificate of \(length) bytes (register 0x30); expected 1 to \(Self.maximumCertificateLength)"
                )
            }
            switch identity.version {
            case .v3_0:
                return try await readRegister(Register.certificateData, count: length)
            case .v2_0C:
                var bytes: [UInt8] = []
                bytes.reserveCapacity(length)
                var page: UInt8 = 0
                while bytes.count < length {
                    let count = min(Self.pageSize, length - bytes.count)
                    bytes += try await readRegister(Register.certificateData + page, count: count)
                    page += 1
                }
                return bytes
            }
        }
    }

    /// Has the chip sign `challenge`: the length and data written, signing
    /// started, the status polled, the response read.
    public func respond(to challenge: [UInt8]) async throws -> [UInt8] {
        try await lock.run { () async throws(AuthenticationError) -> [UInt8] in
            let identity = try await readIdentity()
            switch identity.version {
            case .v3_0:
                guard challenge.count == 32 else {
                    throw AuthenticationError(.badValue, "a 3.0 coprocessor signs 32-byte challenges, not \(challenge.count)")
                }
            case .v2_0C:
                guard (1...128).contains(challenge.count) else {
                    throw AuthenticationError(
                        .badValue, "a 2.0C coprocessor takes challenges of 1 to 128 bytes, not \(challenge.count)")
                }
            }
            try await writeRegister(Register.challengeLength, bigEndian(UInt16(challenge.count)))
            try await writeRegister(Register.challengeData, challenge)
            try await writeRegister(Register.control, [Control.start])
            var status: UInt8? = nil
            var polls = 0
            while polls < configuration.statusPolls {
                polls += 1
                do throws(AuthenticationError) {
                    let value = try await readRegister(Register.control, count: 1)[0]
                    status = value
                    if value & Control.error != 0 || value & Control.resultMask == Control.responseReady { break }
                } catch where error.kind == .busy {
                    // Still NACKing after the retries: the chip is working; poll again.
                }
                if polls < configuration.statusPolls { try await sleep(configuration.pollInterval) }
            }
            guard let status, status & Control.error == 0, status & Control.resultMask == Control.responseReady else {
                let code = (try? await readRegister(Register.errorCode, count: 1))?.first
                let codeText = code.map { "error code 0x\(String($0, radix: 16)) (register 0x05)" } ?? "error code unreadable"
                let statusText = status.map { "status 0x\(String($0, radix: 16))" } ?? "no status read"
                throw AuthenticationError(
                    .coprocessor,
                    "the coprocessor did not produce a response after \(polls) status polls: \(statusText), \(codeText)")
            }
            let length = Int(try await readUInt16(Register.responseLength))
            let expected = identity.version == .v3_0 ? 64 : nil
            guard length > 0, length <= Self.maximumResponseLength, expected.map({ $0 == length }) ?? true else {
                throw AuthenticationError(
                    .coprocessor,
                    "the coprocessor reports a response of \(length) bytes (register 0x11); expected \(expected.map(String.init) ?? "1 to \(Self.maximumResponseLength)")"
                )
            }
            return try await readRegister(Register.responseData, count: length)
        }
    }

    // MARK: Transactions

    private func readIdentity() async throws(AuthenticationError) -> Identity {
        let device = try await readRegister(Register.deviceVersion, count: 1)[0]
        let revision = try await readRegister(Register.authenticationRevision, count: 1)[0]
        let major = try await readRegister(Register.protocolMajor, count: 1)[0]
        let minor = try await readRegister(Register.protocolMinor, count: 1)[0]
        let version: Version
        switch major {
        case 2: version = .v2_0C
        case 3: version = .v3_0
        default:
            throw AuthenticationError(
                .coprocessor, "the coprocessor reports protocol major version \(major) (register 0x02); 2 (2.0C) or 3 (3.0) expected")
        }
        return Identity(
            deviceVersion: device, authenticationRevision: revision, protocolMajor: major, protocolMinor: minor,
            version: version)
    }

    private func readUInt16(_ register: UInt8) async throws(AuthenticationError) -> UInt16 {
        let bytes = try await readRegister(register, count: 2)
        return UInt16(bytes[0]) << 8 | UInt16(bytes[1])
    }

    private func readRegister(_ register: UInt8, count: Int) async throws(AuthenticationError) -> [UInt8] {
        try await transaction("reading register 0x\(String(register, radix: 16))") { () async throws(I2CError) -> [UInt8] in
            try await bus.write([register], to: address)
            return try await bus.read(count: count, from: address)
        }
    }

    private func writeRegister(_ register: UInt8, _ data: [UInt8]) async throws(AuthenticationError) {
        try await transaction("writing register 0x\(String(register, radix: 16))") { () async throws(I2CError) in
            try await bus.write([register] + data, to: address)
        }
    }

    /// One transaction, tried again while the chip NACKs.
    private func transaction<T>(_ what: String, _ body: () async throws(I2CError) -> T) async throws(AuthenticationError) -> T {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await body()
            } catch where error.kind == .nack {
                guard attempt < configuration.attempts else {
                    throw AuthenticationError(
                        .busy, "\(what): the coprocessor at 0x\(String(address, radix: 16)) did not acknowledge in \(attempt) tries (\(error))")
                }
                try await sleep(configuration.retryDelay)
            } catch {
                throw AuthenticationError(.bus, "\(what): \(error)")
            }
        }
    }

    private func sleep(_ duration: Duration) async throws(AuthenticationError) {
        guard duration > .zero else { return }
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw AuthenticationError(.bus, "cancelled while waiting for the coprocessor")
        }
    }
}

func bigEndian(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }

/// Runs async operations one at a time, in arrival order.
final class AsyncLock: Sendable {
    private let state = AsyncLockState()

    func run<T: Sendable>(_ body: () async throws(AuthenticationError) -> T) async throws(AuthenticationError) -> T {
        await state.acquire()
        do {
            let value = try await body()
            await state.release()
            return value
        } catch {
            await state.release()
            throw error
        }
    }
}

actor AsyncLockState {
    private var held = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        if !held {
            held = true
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }

    func release() {
        if waiters.isEmpty {
            held = false
        } else {
            waiters.removeFirst().resume()  // ownership passes to the next waiter
        }
    }
}
