#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A plain TCP client for the screen's server, speaking HTTP and WebSocket
/// by hand so a test can send exactly what an attacker would. Every read
/// gives up after `timeoutSeconds` (so a broken server fails the test
/// instead of hanging it); nothing here measures time.
final class RawClient {
    let descriptor: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:port, or to [::1]:port when nothing listens there (a name that resolved to ::1).
    init(port: UInt16, timeoutSeconds: Int = 10) throws {
        if let descriptor = Self.connect(family: AF_INET, port: port, timeoutSeconds: timeoutSeconds)
            ?? Self.connect(family: AF_INET6, port: port, timeoutSeconds: timeoutSeconds) {
            self.descriptor = descriptor
        } else {
            throw Failure("connect to 127.0.0.1:\(port) and [::1]:\(port): errno \(errno)")
        }
    }

    private static func connect(family: Int32, port: UInt16, timeoutSeconds: Int) -> Int32? {
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let result: Int32
        if family == AF_INET {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        } else {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_loopback
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        }
        guard result == 0 else {
            close(descriptor)
            return nil
        }
        return descriptor
    }

    deinit { close(descriptor) }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// Sends all of `bytes`; false when the server closed the connection first.
    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    /// More bytes from the server: nil when it closed the connection (or the read timed out).
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }

    /// Waits until the server closes the connection (true) or the read times out (false); what came is dropped.
    func closedByServer() -> Bool {
        while true {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
    }

    /// An HTTP response's status code and headers (lowercased names) and body; nil when the server closed first.
    func response() -> (status: Int, headers: [String: String], body: [UInt8])? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var end: Int?
        while end == nil {
            end = buffer.indices.dropLast(3).first { Array(buffer[$0..<$0 + 4]) == separator }
            if end == nil && !fill() { return nil }
        }
        let head = String(decoding: buffer[..<end!], as: UTF8.self).components(separatedBy: "\r\n")
        buffer.removeFirst(end! + 4)
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = Int(headers["content-length"] ?? "0") ?? 0
        while buffer.count < length { if !fill() { return nil } }
        let body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return (status, headers, body)
    }

    /// `GET path` with these headers (Host first); the response.
    func get(_ path: String, host: String?, headers: [(String, String)] = []) -> (status: Int, headers: [String: String], body: [UInt8])? {
        var request = "GET \(path) HTTP/1.1\r\n"
        if let host { request += "Host: \(host)\r\n" }
        for (name, value) in headers { request += "\(name): \(value)\r\n" }
        guard send(request + "\r\n") else { return nil }
        return response()
    }

    /// The headers of a WebSocket upgrade request for `/ws`.
    static func upgradeHeaders(origin: String?) -> [(String, String)] {
        var headers = [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
                       ("Sec-WebSocket-Version", "13")]
        if let origin { headers.append(("Origin", origin)) }
        return headers
    }

    /// A masked client frame (opcode 1 text, 8 close, …) declaring `declaredLength` (the payload's own by default).
    static func frame(opcode: UInt8, payload: [UInt8], declaredLength: UInt64? = nil) -> [UInt8] {
        let length = declaredLength ?? UInt64(payload.count)
        var frame: [UInt8] = [0x80 | opcode]
        if length < 126 {
            frame.append(0x80 | UInt8(length))
        } else if length <= 0xFFFF {
            frame += [0x80 | 126, UInt8(length >> 8), UInt8(length & 0xFF)]
        } else {
            frame.append(0x80 | 127)
            frame += (0..<8).reversed().map { UInt8((length >> (8 * UInt64($0))) & 0xFF) }
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    /// The next frame from the server (unmasked): its opcode and payload; nil when it closed first.
    func frame() -> (opcode: UInt8, payload: [UInt8])? {
        while buffer.count < 2 { if !fill() { return nil } }
        var length = Int(buffer[1] & 0x7F)
        var headerLength = 2
        if length == 126 {
            while buffer.count < 4 { if !fill() { return nil } }
            length = Int(buffer[2]) << 8 | Int(buffer[3])
            headerLength = 4
        } else if length == 127 {
            while buffer.count < 10 { if !fill() { return nil } }
            length = buffer[2..<10].reduce(0) { $0 << 8 | Int($1) }
            headerLength = 10
        }
        while buffer.count < headerLength + length { if !fill() { return nil } }
        let opcode = buffer[0] & 0x0F
        let payload = Array(buffer[headerLength..<headerLength + length])
        buffer.removeFirst(headerLength + length)
        return (opcode, payload)
    }

    /// Frames until a close frame: its status code (nil when the connection ended without one).
    func closeCode() -> UInt16? {
        while let frame = frame() {
            if frame.opcode == 8 { return frame.payload.count >= 2 ? UInt16(frame.payload[0]) << 8 | UInt16(frame.payload[1]) : nil }
        }
        return nil
    }
}
