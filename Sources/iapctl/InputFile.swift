#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import IAPTrace
import IAPTransport
import SystemPackage

/// A file (or standard input) read in fixed-size chunks, so that memory stays
/// constant whatever the file's size.
struct InputFile: ~Copyable {
    struct OpenError: Error, CustomStringConvertible {
        let description: String
    }

    static let chunkSize = 1 << 20

    let path: String
    let size: Int?
    private let descriptor: Int32
    private let ownsDescriptor: Bool

    init(path: String) throws(OpenError) {
        self.path = path
        if path == "-" {
            descriptor = 0
            ownsDescriptor = false
            size = nil
            return
        }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw OpenError(description: "cannot open \(path): \(Errno(rawValue: errno).description)")
        }
        var info = stat()
        if fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFDIR {
            close(fd)
            throw OpenError(description: "\(path) is a directory, not a trace file")
        }
        descriptor = fd
        ownsDescriptor = true
        size = (info.st_mode & S_IFMT) == S_IFREG ? Int(info.st_size) : nil
    }

    deinit {
        if ownsDescriptor { close(descriptor) }
    }

    /// Calls `body` with each chunk until the end of the file.
    func forEachChunk(_ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let count: Int
            switch SystemCall.read(descriptor, into: buffer) {
            case .success(0): return
            case .success(let read): count = read
            case .failure(let error): throw OpenError(description: "cannot read \(path): \(error)")
            }
            try body(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
        }
    }
}

/// Standard output with a buffer, flushed in large writes.
struct OutputBuffer: ~Copyable {
    private var pending = OutputBytes(capacity: Self.flushThreshold * 2)
    static let flushThreshold = 1 << 16

    mutating func line(_ text: String) {
        pending.append(utf8: text)
        pending.append(0x0A)
        if pending.count >= Self.flushThreshold { flush() }
    }

    /// A line that `write` appends to the buffer itself (the line break follows).
    mutating func line(_ write: (inout OutputBytes) -> Void) {
        write(&pending)
        pending.append(0x0A)
        if pending.count >= Self.flushThreshold { flush() }
    }

    mutating func flush() {
        Self.write(pending)
        pending.removeAll()
    }

    private static func write(_ bytes: borrowing OutputBytes) {
        if case .failure = bytes.withUnsafeBytes({ SystemCall.writeAll(1, $0) }) {
            // The reader went away (a closed pipe): stop quietly.
            exit(0)
        }
    }

    deinit {
        Self.write(pending)
    }
}

/// A progress line on standard error, only when it is a terminal.
struct ProgressLine {
    let enabled: Bool
    private var lastUpdate: Double = 0

    init(totalBytes: Int?) {
        enabled = isatty(2) == 1 && (totalBytes ?? 0) >= 8 << 20
    }

    mutating func update(bytes: Int, total: Int?, label: String) {
        guard enabled, let total, total > 0 else { return }
        let now = Self.seconds()
        guard now - lastUpdate >= 0.25 else { return }
        lastUpdate = now
        let percent = bytes * 100 / total
        let text = "\r\(label): \(percent)% (\(bytes >> 20) of \(total >> 20) MiB)"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }

    func finish() {
        guard enabled else { return }
        let clear = "\r\u{1B}[K"
        _ = clear.withCString { write(2, $0, strlen($0)) }
    }

    static func seconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

func printError(_ text: String) {
    let line = text + "\n"
    _ = line.withCString { write(2, $0, strlen($0)) }
}
