#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SystemPackage

/// The blocking C calls of the edge (transports, udev, the CLI), each
/// called again when a signal interrupts it (EINTR) and answering with its
/// result or swift-system's `Errno`: the one place EINTR is handled. Files
/// that swift-system's `FileDescriptor` serves whole (the key store, I²C)
/// use it directly; it retries the same way.
public enum SystemCall {
    /// poll(2) on `descriptors`, waiting at most `timeout` milliseconds
    /// (-1: without limit). The number of descriptors with events.
    public static func poll(_ descriptors: inout [pollfd], timeout: Int32 = -1) -> Result<Int, Errno> {
        retrying { Int(Glibc.poll(&descriptors, nfds_t(descriptors.count), timeout)) }
    }

    /// read(2) into `buffer`: the number of bytes read, 0 at the end.
    public static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        retrying { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
    }

    /// write(2) of `bytes`: the number of bytes written (possibly fewer).
    public static func write(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Int, Errno> {
        retrying { Glibc.write(descriptor, bytes.baseAddress, bytes.count) }
    }

    /// Writes all of `bytes`, as many write(2) calls as it takes.
    public static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Result<Void, Errno> {
        var offset = 0
        while offset < bytes.count {
            switch write(descriptor, UnsafeRawBufferPointer(rebasing: bytes[offset...])) {
            case .success(let count): offset += count
            case .failure(let error): return .failure(error)
            }
        }
        return .success(())
    }

    /// Writes all of `bytes`, as many write(2) calls as it takes.
    public static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) -> Result<Void, Errno> {
        bytes.withUnsafeBytes { writeAll(descriptor, $0) }
    }

    /// send(2) with MSG_NOSIGNAL and `flags` (a closed peer is an EPIPE,
    /// never a SIGPIPE); on a descriptor that is not a socket (a serial
    /// port, a pipe), write(2).
    static func send(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32 = 0) -> Result<Int, Errno> {
        switch retrying({ Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | flags) }) {
        case .failure(.notSocket): write(descriptor, bytes)
        case let other: other
        }
    }

    /// accept(2) on `listener`: the new connection's descriptor.
    static func accept(_ listener: Int32) -> Result<Int32, Errno> {
        retrying { Int(Glibc.accept(listener, nil, nil)) }.map { Int32($0) }
    }

    /// Calls `call` until a signal no longer interrupts it; a negative
    /// result is the `errno` it left.
    private static func retrying(_ call: () -> Int) -> Result<Int, Errno> {
        while true {
            let result = call()
            if result >= 0 { return .success(result) }
            let code = errno
            if code != EINTR { return .failure(Errno(rawValue: code)) }
        }
    }
}
