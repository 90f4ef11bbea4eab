import ArgumentParser
import IAPScreen
import Logging

/// Where `--ui` serves the head unit's screen.
struct ScreenAddress: Sendable {
    var host: String
    var port: UInt16
}

/// `--ui HOST:PORT` (an IPv6 host in brackets): a value that does not parse says what is wrong.
func parseScreenAddress(_ text: String) throws -> ScreenAddress {
    guard let colon = text.lastIndex(of: ":") else { throw ValidationError("'\(text)' has no port: write HOST:PORT, e.g. 127.0.0.1:8080") }
    var host = String(text[..<colon])
    if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
    guard !host.isEmpty else { throw ValidationError("'\(text)' has no host: write HOST:PORT, e.g. 127.0.0.1:8080 or localhost:8080") }
    guard let port = UInt16(text[text.index(after: colon)...]) else { throw ValidationError("'\(text)': the port must be a number from 0 to 65535") }
    return ScreenAddress(host: host, port: port)
}

/// Starts the screen's server and says where it is; fails at once when it cannot listen
/// (the address in use, a name that does not resolve, a non-loopback address without `allowRemote`).
func startScreen(at address: ScreenAddress, allowRemote: Bool) async throws -> HeadUnitScreen {
    let host = address.host.contains(":") ? "[\(address.host)]" : address.host
    let screen = try HeadUnitScreen(host: address.host, port: address.port, allowRemote: allowRemote, logger: Logger(label: "screen"))
    let server = Task { try await screen.run() }
    let port: UInt16
    do {
        port = try await screen.listeningPort()
    } catch ScreenError.notLoopback(let name, let resolved) {
        server.cancel()
        throw CommandFailure(message: "--ui \(host):\(address.port): \(name) is \(resolved), not a loopback address: anyone who reaches it could drive the head unit. Give --ui-allow-remote to serve there anyway, or use 127.0.0.1 or localhost")
    } catch {
        server.cancel()
        throw CommandFailure(message: "--ui \(host):\(address.port): \(error)")
    }
    if allowRemote {
        Log()("screen", "--ui-allow-remote: anyone who can reach \(host):\(port) can drive the head unit", level: .warning)
    }
    Log()("screen", "the head unit's screen: http://\(host):\(port)/")
    return screen
}
