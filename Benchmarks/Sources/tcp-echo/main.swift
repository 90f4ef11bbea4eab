// The baseline for ping-vs-echo.sh: round trips of N bytes over a TCP
// connection on 127.0.0.1 between two threads of one process, with no
// protocol at all. One thread echoes every byte it reads; the main thread
// writes N bytes, reads N bytes back, and times it.
//
//   tcp-echo SIZE COUNT [--processes]   prints one JSON object like `iapctl ping --json`
//
// --processes: the echo runs in a child process (fork) instead of a thread,
// so each round trip crosses a process boundary as `iapctl ping` to
// `iapctl phone` does (context, not the baseline the targets are set on).
//
// Both sockets have TCP_NODELAY, as the project's TCP transport does, so
// neither side waits for Nagle's algorithm.

#if canImport(Glibc)
import Glibc
#endif
import Foundation

func fail(_ what: String) -> Never {
    FileHandle.standardError.write(Data("tcp-echo: \(what): \(String(cString: strerror(errno)))\n".utf8))
    exit(1)
}

func noDelay(_ socket: Int32) {
    var one: Int32 = 1
    guard setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0 else { fail("TCP_NODELAY") }
}

func writeAll(_ socket: Int32, _ buffer: UnsafeRawBufferPointer) {
    var offset = 0
    while offset < buffer.count {
        let written = write(socket, buffer.baseAddress! + offset, buffer.count - offset)
        guard written > 0 else { fail("write") }
        offset += written
    }
}

func readExactly(_ socket: Int32, _ buffer: UnsafeMutableRawBufferPointer) -> Bool {
    var offset = 0
    while offset < buffer.count {
        let got = read(socket, buffer.baseAddress! + offset, buffer.count - offset)
        if got == 0 { return false }
        guard got > 0 else { fail("read") }
        offset += got
    }
    return true
}

let arguments = CommandLine.arguments
let processes = arguments.count == 4 && arguments[3] == "--processes"
guard arguments.count == 3 || processes, let size = Int(arguments[1]), let count = Int(arguments[2]), size > 0, count > 0 else {
    FileHandle.standardError.write(Data("usage: tcp-echo SIZE COUNT [--processes]\n".utf8))
    exit(2)
}

// Listen on an ephemeral port of 127.0.0.1.
let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
guard listener >= 0 else { fail("socket") }
var address = sockaddr_in()
address.sin_family = sa_family_t(AF_INET)
address.sin_addr.s_addr = inet_addr("127.0.0.1")
address.sin_port = 0
var length = socklen_t(MemoryLayout<sockaddr_in>.size)
let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
guard bound == 0, listen(listener, 1) == 0 else { fail("bind/listen") }
_ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }

// The echo: reads whatever arrives and writes it straight back.
@Sendable func echo() {
    let peer = accept(listener, nil, nil)
    guard peer >= 0 else { fail("accept") }
    noDelay(peer)
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)
    while true {
        let got = read(peer, buffer.baseAddress!, buffer.count)
        if got <= 0 { break }
        writeAll(peer, UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
    }
    close(peer)
}
var child: pid_t = 0
if processes {
    child = fork()
    guard child >= 0 else { fail("fork") }
    if child == 0 {
        echo()
        _exit(0)
    }
} else {
    Thread { echo() }.start()
}

let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
guard client >= 0 else { fail("socket") }
let connected = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, length) } }
guard connected == 0 else { fail("connect") }
noDelay(client)

let outgoing = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
for index in 0..<size { outgoing[index] = UInt8(truncatingIfNeeded: index) }
let incoming = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
var milliseconds: [Double] = []
milliseconds.reserveCapacity(count)
for _ in 0..<count {
    var start = timespec()
    clock_gettime(CLOCK_MONOTONIC, &start)
    writeAll(client, UnsafeRawBufferPointer(outgoing))
    guard readExactly(client, incoming) else { fail("the echo closed early") }
    var end = timespec()
    clock_gettime(CLOCK_MONOTONIC, &end)
    milliseconds.append(Double(end.tv_sec - start.tv_sec) * 1e3 + Double(end.tv_nsec - start.tv_nsec) / 1e6)
}
close(client)
if processes { waitpid(child, nil, 0) }

// Percentiles as `iapctl ping` computes them.
let sorted = milliseconds.sorted()
func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count - 1)).rounded(.up)))] }
func text(_ value: Double) -> String { String(format: "%.3f", value) }
print("{\"transport\":\"\(processes ? "tcp-echo-processes" : "tcp-echo")\",\"sent\":\(count),\"received\":\(count),\"size\":\(size),\"min_ms\":\(text(sorted[0])),"
    + "\"median_ms\":\(text(percentile(0.5))),\"p99_ms\":\(text(percentile(0.99))),\"max_ms\":\(text(sorted[sorted.count - 1]))}")
