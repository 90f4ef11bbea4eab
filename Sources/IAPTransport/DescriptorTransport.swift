#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Synchronization

/// A transport over a file descriptor (a TCP socket or a serial port). One
/// thread reads: on a socket it waits in a blocking `recv`, which `close`
/// ends with `shutdown` (one system call per read, as a plain echo makes);
/// on a serial port, where `shutdown` does nothing, it waits in `poll` on
/// the descriptor and on a wake-up pipe. A write is tried at once on the
/// caller's thread (non-blocking) when nothing is queued; what the
/// descriptor does not take goes out on a serial queue, so the caller
/// never blocks.
///
/// Writes never block (`MSG_DONTWAIT` on a socket, `O_NONBLOCK` on a serial
/// port): a peer that stops reading cannot hold a write forever. A write
/// that makes no progress for `writeStallLimit` ends the transport with a
/// reason saying so, and `close` waits for queued writes at most
/// `closeLinger`.
final class DescriptorTransport: Transport {
    let name: String
    private let opener: @Sendable (_ closeRequested: Int32) throws(TransportError) -> Int32
    private let state = Mutex(State())
    /// A struct, not a tuple: a closure inside a tuple (or an optional) held
    /// in a generic container like `Mutex` is re-wrapped in two more
    /// reabstraction thunks at every `withLock`, so a connection's handler
    /// grew by a few calls with every read and write, until it overflowed
    /// the stack. A struct's closure is stored as it is.
    private struct State {
        var descriptor: Int32 = -1
        /// Read with a blocking `recv`, ended by `shutdown` (not `poll`).
        var isSocket = false
        var closed = false
        var handler: (@Sendable (TransportEvent) -> Void)?
    }
    /// Why writing failed (set by the writer, reported by the reader), and
    /// until when queued writes may still try after `close`.
    private let writeState = Mutex<(failure: TransportError?, giveUpAt: ContinuousClock.Instant?)>((nil, nil))
    private let writeStallLimit: Duration
    static let closeLinger: Duration = .seconds(1)
    /// The wake-up pipe, or -1 and why `pipe` failed.
    private let wake: (read: Int32, write: Int32, failure: Int32)
    private let writer = DispatchQueue(label: "iap.transport.write")
    /// Writes handed to `writer` and not yet done: while there are any, new
    /// writes queue behind them (order), otherwise the caller tries first.
    private let queuedWrites = Mutex(0)
    /// Bytes of those writes not yet written.
    private let queuedBytes = Mutex(0)
    private let started = Mutex(false)

    /// Given by the kind of descriptor at construction (known before it
    /// opens, which happens on the transport's thread): `.large` for a TCP
    /// socket, which loses nothing, so the largest packets cost no
    /// resending; nil for a serial port (the link's default).
    let linkPacketSizing: LinkPacketSizing?

    /// Bytes one read takes at most.
    static let readSize = 64 * 1024
    /// Reads of at least this many bytes are handed over in their own
    /// buffer; shorter ones are copied out of it into an array of their
    /// size, so a short read never holds 64 KB.
    static let handedOverRead = 16 * 1024

    /// A buffer for one read; its bytes are what `read` writes (not zeroed first).
    private static func readBuffer() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: readSize) { _, count in count = readSize }
    }

    /// `opener` runs on the transport's thread (it may block, e.g. in
    /// accept). A wait it makes should also poll `closeRequested`, which
    /// becomes readable when `close` is called, and then give up.
    init(name: String, writeStallLimit: Duration = .seconds(10), linkPacketSizing: LinkPacketSizing? = nil,
         opener: @escaping @Sendable (_ closeRequested: Int32) throws(TransportError) -> Int32) {
        self.name = name
        self.linkPacketSizing = linkPacketSizing
        self.writeStallLimit = writeStallLimit
        self.opener = opener
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
            wake = (fds[0], fds[1], 0)
        } else {
            wake = (-1, -1, errno)
        }
        // Writes wait until the descriptor is open (a connect or accept may
        // take a while); `run` resumes the queue then.
        writer.suspend()
    }

    deinit {
        if !started.withLock({ $0 }) { writer.resume() }
        let descriptor = state.withLock { $0.descriptor }
        if descriptor >= 0 { Glibc.close(descriptor) }
        if wake.read >= 0 { Glibc.close(wake.read) }
        if wake.write >= 0 { Glibc.close(wake.write) }
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        guard wake.read >= 0 else { throw TransportError("\(name): cannot create a wake-up pipe", errno: wake.failure) }
        state.withLock { $0.handler = handler }
        started.withLock { $0 = true }
        do {
            try DedicatedThread.start("\(name) reads") { [self] in run() }
        } catch {
            started.withLock { $0 = false }
            throw error
        }
    }

    private func run() {
        let descriptor: Int32
        do {
            descriptor = try opener(wake.read)
        } catch {
            writer.resume()
            finish(error)
            return
        }
        var status = stat()
        let isSocket = fstat(descriptor, &status) == 0 && status.st_mode & S_IFMT == S_IFSOCK
        // A socket blocks in `recv` (its writes pass MSG_DONTWAIT, and an
        // accepted one may have come non-blocking); a serial port is polled.
        let flags = fcntl(descriptor, F_GETFL)
        if flags >= 0 { _ = fcntl(descriptor, F_SETFL, isSocket ? flags & ~O_NONBLOCK : flags | O_NONBLOCK) }
        let (alreadyClosed, handler) = state.withLock { current in
            current.descriptor = descriptor
            current.isSocket = isSocket
            return (current.closed, current.handler)
        }
        writer.resume()
        if alreadyClosed {
            finish(TransportError(.closed, "closed by this end"))
            return
        }
        var buffer = Self.readBuffer()
        var fds = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0), pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        while true {
            if !isSocket {
                fds[0].revents = 0
                fds[1].revents = 0
                if case .failure(let error) = SystemCall.poll(&fds) {
                    return finish(TransportError("poll failed", errno: error.rawValue))
                }
                if fds[1].revents != 0 { return finish(closedByThisEnd) }
                if fds[0].revents & Int16(POLLIN | POLLHUP | POLLERR | POLLNVAL) == 0 { continue }
            }
            switch buffer.withUnsafeMutableBytes({ SystemCall.read(descriptor, into: $0) }) {
            case .success(0):
                // A socket's read also ends so when `close` or a failed
                // write shut it down.
                let ended = state.withLock { $0.closed } || writeState.withLock({ $0.failure }) != nil
                return finish(ended ? closedByThisEnd : TransportError(.closed, "the peer closed the connection"))
            case .success(let count) where count >= Self.handedOverRead:
                // A long read is handed over in the buffer it was read into
                // (copying up to 64 KB out of it was one more copy of every
                // long message); the next read gets a new buffer.
                buffer.removeLast(buffer.count - count)
                handler?(.received(buffer))
                buffer = Self.readBuffer()
            case .success(let count):
                handler?(.received(Array(buffer[0..<count])))
            case .failure(.resourceTemporarilyUnavailable):
                continue
            case .failure(let error):
                return finish(TransportError("read failed", errno: error.rawValue))
            }
        }
    }

    /// Why the reader stops when this end ended the transport: a failed
    /// write's reason, or `close`.
    private var closedByThisEnd: TransportError {
        writeState.withLock { $0.failure } ?? TransportError(.closed, "closed by this end")
    }

    /// Ends the reader's wait: `shutdown` for a socket's `recv`, the wake-up
    /// pipe for a `poll`. Called with the state locked, so the descriptor
    /// cannot be released (and its number reused) meanwhile.
    private func wakeReader(_ current: State) {
        if current.isSocket && current.descriptor >= 0 {
            _ = shutdown(current.descriptor, Int32(SHUT_RD))
        }
        var byte: UInt8 = 1
        _ = Glibc.write(wake.write, &byte, 1)
    }

    func write(_ bytes: [UInt8]) {
        guard !bytes.isEmpty else { return }
        // With nothing queued, the caller's thread tries first: a
        // non-blocking send that the socket takes whole (the usual case)
        // needs no hand-off to the writer. What it does not take is queued.
        let start = queuedWrites.withLock { queued -> Int? in
            if queued == 0 {
                let descriptor = state.withLock { $0.descriptor }
                if descriptor >= 0, writeState.withLock({ $0.failure }) == nil {
                    switch bytes.withUnsafeBytes({ SystemCall.send(descriptor, $0, flags: Int32(MSG_DONTWAIT)) }) {
                    case .success(bytes.count): return nil
                    case .success(let written):
                        queued += 1
                        return written
                    case .failure(.resourceTemporarilyUnavailable):
                        queued += 1
                        return 0
                    case .failure:
                        // A broken descriptor: the reader sees it and reports it.
                        return nil
                    }
                }
            }
            queued += 1
            return 0
        }
        guard let start else { return }
        let pending = bytes.count - start
        queuedBytes.withLock { $0 += pending }
        writer.async { [self] in
            defer {
                queuedBytes.withLock { $0 -= pending }
                queuedWrites.withLock { $0 -= 1 }
            }
            // Writes queued before `close` still go out (an RST, say): only a
            // released descriptor or a failed write stops them.
            let descriptor = state.withLock { $0.descriptor }
            guard descriptor >= 0, writeState.withLock({ $0.failure }) == nil else { return }
            var offset = start
            var lastProgress = ContinuousClock.now
            while offset < bytes.count {
                switch bytes.withUnsafeBytes({ SystemCall.send(descriptor, UnsafeRawBufferPointer(rebasing: $0[offset...]), flags: Int32(MSG_DONTWAIT)) }) {
                case .success(let written) where written > 0:
                    offset += written
                    lastProgress = .now
                    continue
                case .success, .failure(.resourceTemporarilyUnavailable):
                    break
                case .failure:
                    // The reader sees the broken descriptor and reports it.
                    return
                }
                // The peer is not reading: wait for room, but not forever.
                let now = ContinuousClock.now
                if let giveUpAt = writeState.withLock({ $0.giveUpAt }), now >= giveUpAt { return }
                if now - lastProgress >= writeStallLimit {
                    failWrites(TransportError(.timedOut, "the peer stopped reading: a write of \(bytes.count) bytes made no progress for \(writeStallLimit)"))
                    return
                }
                var room = [pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)]
                _ = SystemCall.poll(&room, timeout: 100)
            }
        }
    }

    /// Ends the transport from the writer's side: later writes are dropped
    /// and the reader reports `reason` as the transport closing.
    private func failWrites(_ reason: TransportError) {
        writeState.withLock { if $0.failure == nil { $0.failure = reason } }
        state.withLock { wakeReader($0) }
    }

    var queuedWriteBytes: Int { queuedBytes.withLock { $0 } }

    func close() {
        // Let writes already queued (an RST, say) reach the peer first, but
        // give up on a peer that does not read them.
        writeState.withLock { $0.giveUpAt = .now + Self.closeLinger }
        // Until the descriptor is open (a connect or accept still waiting)
        // the writer is suspended: waiting for it would wait for ever.
        let opened = state.withLock { $0.descriptor >= 0 }
        if started.withLock({ $0 }) && opened { writer.sync {} }
        state.withLock { current in
            guard !current.closed else { return }
            current.closed = true
            wakeReader(current)
        }
    }

    /// Reports `.closed` once and releases the descriptor.
    private func finish(_ reason: TransportError) {
        writer.sync {}
        let (descriptor, handler) = state.withLock { current -> (Int32, (@Sendable (TransportEvent) -> Void)?) in
            let result = (current.descriptor, current.handler)
            current.descriptor = -1
            current.closed = true
            current.handler = nil
            return result
        }
        if descriptor >= 0 { Glibc.close(descriptor) }
        handler?(.closed(reason))
    }
}
