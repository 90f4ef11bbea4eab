#if canImport(Glibc)
import Dispatch
import Glibc
import SystemPackage

/// /dev/i2c-N through the kernel's i2c-dev interface: open, then
/// ioctl(I2C_SLAVE) and plain read/write per transfer.
///
/// The blocking calls run on the bus's own serial dispatch queue, whose
/// work is done on a thread of its own (a serial queue overcommits), never
/// on a thread of Swift concurrency's cooperative pool; callers await them.
public final class LinuxI2CBus: I2CBus {
    /// ioctl request from <linux/i2c-dev.h>: use this slave address.
    static let requestSlave: UInt = 0x0703

    public let path: String
    private let fd: Int32
    private let queue: DispatchQueue

    /// Opens the bus device (open(2) on a character device does not block).
    public init(path: String) throws(I2CError) {
        switch Sys.open(path) {
        case .success(let fd): self.fd = fd
        case .failure(let error):
            var hint = ""
            if error.code == ENOENT { hint = " (is the i2c-dev module loaded? modprobe i2c-dev; i2cdetect -l lists buses)" }
            if error.code == EACCES { hint = " (is the user in the i2c group?)" }
            throw I2CError(.io, "cannot open \(path): \(error)\(hint)", errno: error.code)
        }
        self.path = path
        self.queue = DispatchQueue(label: "iap-devkit.i2c \(path)")
    }

    deinit { _ = Glibc.close(fd) }

    public func write(_ bytes: [UInt8], to address: UInt8) async throws(I2CError) {
        let result: Result<Void, I2CError> = await run { [fd, path] in
            if case .failure(let error) = Sys.selectSlave(fd, address) {
                return .failure(Self.error(error, "selecting address 0x\(String(address, radix: 16)) on \(path)"))
            }
            switch Sys.write(fd, bytes) {
            case .success(let n) where n == bytes.count: return .success(())
            case .success(let n): return .failure(I2CError(.io, "short write to \(path): \(n) of \(bytes.count) bytes"))
            case .failure(let error): return .failure(Self.error(error, "writing to 0x\(String(address, radix: 16)) on \(path)"))
            }
        }
        try result.get()
    }

    public func read(count: Int, from address: UInt8) async throws(I2CError) -> [UInt8] {
        let result: Result<[UInt8], I2CError> = await run { [fd, path] in
            if case .failure(let error) = Sys.selectSlave(fd, address) {
                return .failure(Self.error(error, "selecting address 0x\(String(address, radix: 16)) on \(path)"))
            }
            switch Sys.read(fd, count) {
            case .success(let bytes) where bytes.count == count: return .success(bytes)
            case .success(let bytes): return .failure(I2CError(.io, "short read from \(path): \(bytes.count) of \(count) bytes"))
            case .failure(let error): return .failure(Self.error(error, "reading from 0x\(String(address, radix: 16)) on \(path)"))
            }
        }
        return try result.get()
    }

    /// Runs a blocking call on the bus's queue; `self` stays alive (and the
    /// descriptor open) until it has run.
    private func run<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { withExtendedLifetime(self) { continuation.resume(returning: body()) } }
        }
    }

    /// ENXIO and EREMOTEIO are what i2c adapters report for a missing
    /// acknowledge, EAGAIN for a lost arbitration: all worth a retry.
    static func error(_ error: Sys.Errno, _ doing: String) -> I2CError {
        let nack = error.code == ENXIO || error.code == EREMOTEIO || error.code == EAGAIN
        return I2CError(nack ? .nack : .io, "\(doing): \(error)", errno: error.code)
    }
}

/// The one thin wrapper over the C calls: each returns its result or the
/// error number. Open, read and write go through swift-system's
/// `FileDescriptor`, which retries a call a signal interrupted.
enum Sys {
    struct Errno: Error, CustomStringConvertible {
        let code: Int32
        var description: String { SystemPackage.Errno(rawValue: code).description }
    }

    static func open(_ path: String) -> Result<Int32, Errno> {
        call { try FileDescriptor.open(path, .readWrite, options: .closeOnExec).rawValue }
    }

    static func selectSlave(_ fd: Int32, _ address: UInt8) -> Result<Void, Errno> {
        ioctl(fd, LinuxI2CBus.requestSlave, CInt(address)) == 0 ? .success(()) : .failure(Errno(code: errno))
    }

    static func write(_ fd: Int32, _ bytes: [UInt8]) -> Result<Int, Errno> {
        call { try bytes.withUnsafeBytes { try FileDescriptor(rawValue: fd).write($0) } }
    }

    static func read(_ fd: Int32, _ count: Int) -> Result<[UInt8], Errno> {
        var bytes = [UInt8](repeating: 0, count: count)
        return call { try bytes.withUnsafeMutableBytes { try FileDescriptor(rawValue: fd).read(into: $0) } }.map { Array(bytes[..<$0]) }
    }

    /// swift-system throws only its `Errno` (its calls are not typed yet).
    private static func call<T>(_ body: () throws -> T) -> Result<T, Errno> {
        do {
            return .success(try body())
        } catch {
            return .failure(Errno(code: (error as? SystemPackage.Errno)?.rawValue ?? EIO))
        }
    }
}
#endif
