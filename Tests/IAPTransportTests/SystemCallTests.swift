#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import SystemPackage
import Testing
@testable import IAPTransport

/// The one EINTR layer: a call a signal interrupts is made again, and a
/// write the descriptor takes in parts is finished.
@Suite(.serialized) struct SystemCallTests {
    /// How many times the test's signal handler ran.
    static let signals = Atomic(0)

    /// A pipe, closed by the caller.
    static func pipe() -> (read: Int32, write: Int32) {
        var fds: [Int32] = [-1, -1]
        #expect(Glibc.pipe(&fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func aReadASignalInterruptsIsMadeAgain() async throws {
        // A handler installed without SA_RESTART: the kernel ends a blocked
        // read with EINTR instead of restarting it.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in SystemCallTests.signals.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        var previous = sigaction()
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { sigaction(SIGUSR1, &previous, nil) }

        let (readEnd, writeEnd) = Self.pipe()
        defer { close(readEnd); close(writeEnd) }
        let reader = Mutex<pthread_t?>(nil)
        let result = Mutex<Result<[UInt8], Errno>?>(nil)
        try DedicatedThread.start("system call test read") {
            // A thread started from a pool thread inherits its blocked signals.
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            reader.withLock { $0 = pthread_self() }
            var buffer = [UInt8](repeating: 0, count: 4)
            let read = buffer.withUnsafeMutableBytes { SystemCall.read(readEnd, into: $0) }
            result.withLock { $0 = read.map { Array(buffer[..<$0]) } }
        }
        while reader.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        let thread = reader.withLock { $0! }
        let before = Self.signals.load(ordering: .relaxed)
        // Signals while the reader waits in read(2), then the byte it waits for.
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(5))
            #expect(pthread_kill(thread, SIGUSR1) == 0)
        }
        #expect(result.withLock { $0 } == nil, "the read ended before any byte was written")
        var byte: UInt8 = 0x5A
        #expect(Glibc.write(writeEnd, &byte, 1) == 1)
        for _ in 0..<400 where result.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        #expect(Self.signals.load(ordering: .relaxed) > before, "no signal reached the reader")
        #expect(result.withLock { $0 } == .success([0x5A]))
    }

    @Test func writeAllFinishesAWriteThePipeTakesInParts() async throws {
        // A pipe holds 64 KiB, so a megabyte blocks in write(2) while it is
        // read; a signal (its handler installed without SA_RESTART) then
        // ends that write with the part written so far, and writeAll must
        // go on from there.
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in SystemCallTests.signals.add(1, ordering: .relaxed) }
        action.sa_flags = 0
        var previous = sigaction()
        #expect(sigaction(SIGUSR1, &action, &previous) == 0)
        defer { sigaction(SIGUSR1, &previous, nil) }

        let (readEnd, writeEnd) = Self.pipe()
        defer { close(readEnd) }
        let bytes = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        let writer = Mutex<pthread_t?>(nil)
        let written = Mutex<Result<Void, Errno>?>(nil)
        let done = Mutex(false)
        try DedicatedThread.start("system call test write") {
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, SIGUSR1)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            writer.withLock { $0 = pthread_self() }
            let result = SystemCall.writeAll(writeEnd, bytes)
            written.withLock { $0 = result }
            close(writeEnd)
            // Alive until the test is done signalling it.
            while !done.withLock({ $0 }) { usleep(1000) }
        }
        defer { done.withLock { $0 = true } }
        while writer.withLock({ $0 }) == nil { try await Task.sleep(for: .milliseconds(5)) }
        let thread = writer.withLock { $0! }
        let before = Self.signals.load(ordering: .relaxed)
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 8192)
        while true {
            // Interrupt the writer while it waits for room (it has not
            // finished: the end of the pipe is not reached yet).
            if written.withLock({ $0 }) == nil { pthread_kill(thread, SIGUSR1) }
            try await Task.sleep(for: .microseconds(200))
            let read = chunk.withUnsafeMutableBytes { SystemCall.read(readEnd, into: $0) }
            guard case .success(let count) = read, count > 0 else {
                #expect(read == .success(0), "the read ended with \(read)")
                break
            }
            received += chunk[..<count]
        }
        #expect(Self.signals.load(ordering: .relaxed) > before, "no signal reached the writer")
        #expect(received.count == bytes.count, "\(received.count) of \(bytes.count) bytes arrived")
        // Compared here, not by #expect: a failing #expect would diff two
        // megabytes, which takes minutes.
        let same = received == bytes
        #expect(same, "the bytes that arrived differ from those written")
        #expect(written.withLock { $0 }.map { (try? $0.get()) != nil } == true)
    }

    @Test func sendOnAPipeWritesAndAClosedReaderIsAnError() {
        // send(2) on a descriptor that is not a socket is a write(2); a
        // closed reader is EPIPE (SIGPIPE is ignored by the test runner's
        // process or blocked by MSG_NOSIGNAL on sockets).
        signal(SIGPIPE, SIG_IGN)
        let (readEnd, writeEnd) = Self.pipe()
        defer { close(writeEnd) }
        let sent = [UInt8]([1, 2, 3]).withUnsafeBytes { SystemCall.send(writeEnd, $0) }
        #expect(sent == .success(3))
        var back = [UInt8](repeating: 0, count: 3)
        #expect(back.withUnsafeMutableBytes { SystemCall.read(readEnd, into: $0) } == .success(3))
        #expect(back == [1, 2, 3])
        close(readEnd)
        let broken = [UInt8]([4]).withUnsafeBytes { SystemCall.send(writeEnd, $0) }
        #expect(broken == .failure(.brokenPipe))
    }
}
