#if canImport(Glibc)
import Glibc
#endif
import SystemPackage

/// Files with the permissions the key store needs, through POSIX calls
/// (the modes are set at creation, never widened afterwards); reads and
/// writes go through swift-system, which retries a call a signal
/// interrupted.
enum FileStore {
    static func errnoText(_ code: Int32 = errno) -> String { Errno(rawValue: code).description }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The file's bytes; refuses files longer than `limit` and anything but
    /// a regular file. It is opened without blocking, so a FIFO (or a
    /// device) named by mistake is refused at once instead of waiting for a
    /// writer for ever.
    static func read(_ path: String, limit: Int) throws(AuthenticationError) -> [UInt8] {
        let file: FileDescriptor
        do {
            file = try FileDescriptor.open(path, .readOnly, options: [.closeOnExec, .nonBlocking])
        } catch {
            throw AuthenticationError(.storage, "cannot open \(path): \(error)")
        }
        defer { try? file.close() }
        var info = stat()
        guard fstat(file.rawValue, &info) == 0 else {
            throw AuthenticationError(.storage, "cannot stat \(path): \(errnoText())")
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw AuthenticationError(.storage, "\(path) is not a regular file (\(kind(info.st_mode))): give the path of a PEM or DER file")
        }
        guard Int(info.st_size) <= limit else {
            throw AuthenticationError(.storage, "\(path) is \(info.st_size) bytes; at most \(limit) are read")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count: Int
            do {
                count = try bytes.withUnsafeMutableBytes { try file.read(into: UnsafeMutableRawBufferPointer(rebasing: $0[filled...])) }
            } catch {
                throw AuthenticationError(.storage, "cannot read \(path): \(error)")
            }
            if count == 0 { break }
            filled += count
        }
        return Array(bytes[..<filled])
    }

    /// The permission bits of a file.
    static func mode(_ path: String) throws(AuthenticationError) -> mode_t {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw AuthenticationError(.storage, "cannot stat \(path): \(errnoText())")
        }
        return info.st_mode & 0o7777
    }

    /// Writes the file atomically (a new file beside it, then rename) with `mode`.
    static func write(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(AuthenticationError) {
        let temporary = "\(path).tmp-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw AuthenticationError(.storage, "cannot create \(temporary): \(errnoText())")
        }
        var ok = false
        defer {
            if !ok { unlink(temporary) }
        }
        // open's mode is filtered by the umask; set it exactly.
        guard fchmod(fd, mode) == 0 else {
            let text = errnoText()
            close(fd)
            throw AuthenticationError(.storage, "cannot set the mode of \(temporary): \(text)")
        }
        do {
            _ = try FileDescriptor(rawValue: fd).writeAll(bytes)
        } catch {
            close(fd)
            throw AuthenticationError(.storage, "cannot write \(temporary): \(error)")
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced else { throw AuthenticationError(.storage, "cannot sync \(temporary): \(errnoText())") }
        guard rename(temporary, path) == 0 else {
            throw AuthenticationError(.storage, "cannot rename \(temporary) to \(path): \(errnoText())")
        }
        ok = true
    }

    /// What a file of this mode is, in words.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "not a regular file"
        }
    }

    /// Refuses a directory that holds private keys when another user could
    /// change what is in it (writable by its group or by anyone, or owned
    /// by someone else), as ssh refuses such a ~/.ssh: a key put there
    /// would sign as this accessory.
    static func checkPrivate(directory path: String) throws(AuthenticationError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw AuthenticationError(.storage, "cannot stat \(path): \(errnoText())")
        }
        let mode = info.st_mode & 0o7777
        guard mode & 0o022 == 0 else {
            throw AuthenticationError(
                .storage, "\(path) is writable by others (mode \(String(mode, radix: 8))); it holds private keys: chmod 700 it")
        }
        guard info.st_uid == geteuid() else {
            throw AuthenticationError(
                .storage, "\(path) belongs to user \(info.st_uid), not to this user (\(geteuid())); it holds private keys: use your own directory")
        }
    }

    /// Creates the directory and any missing parents with `mode`.
    static func makeDirectory(_ path: String, mode: mode_t) throws(AuthenticationError) {
        var prefix = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            prefix += "/" + component
            if mkdir(prefix, mode) != 0 && errno != EEXIST {
                throw AuthenticationError(.storage, "cannot create the directory \(prefix): \(errnoText())")
            }
        }
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw AuthenticationError(.storage, "\(path) is not a directory")
        }
    }
}
