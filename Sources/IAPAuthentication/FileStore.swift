#if canImport(Glibc)
import Glibc
#endif
import SystemPackage

/// Files with the permissions the key store needs, through POSIX calls
/// (the modes are set at creation, never widened afterwards).
enum FileStore {
    static func errnoText(_ code: Int32 = errno) -> String { Errno(rawValue: code).description }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// The file's bytes; refuses files longer than `limit`.
    static func read(_ path: String, limit: Int) throws(AuthenticationError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw AuthenticationError(.storage, "cannot open \(path): \(errnoText())")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            throw AuthenticationError(.storage, "cannot stat \(path): \(errnoText())")
        }
        guard Int(info.st_size) <= limit else {
            throw AuthenticationError(.storage, "\(path) is \(info.st_size) bytes; at most \(limit) are read")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AuthenticationError(.storage, "cannot read \(path): \(errnoText())")
            }
            if n == 0 { break }
            filled += n
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
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, $0.count - written) }
            if n < 0 {
                if errno == EINTR { continue }
                let text = errnoText()
                close(fd)
                throw AuthenticationError(.storage, "cannot write \(temporary): \(text)")
            }
            written += n
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard synced else { throw AuthenticationError(.storage, "cannot sync \(temporary): \(errnoText())") }
        guard rename(temporary, path) == 0 else {
            throw AuthenticationError(.storage, "cannot rename \(temporary) to \(path): \(errnoText())")
        }
        ok = true
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
