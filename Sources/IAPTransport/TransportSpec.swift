/// A transport as named on the command line, the one way every command
/// names them:
///
/// - `loopback`: both link ends in this process over an in-memory wire;
/// - `tcp:HOST:PORT`: connect to a peer;
/// - `tcp-listen:HOST:PORT`: wait for one peer to connect;
/// - `serial:PATH@BAUD`: a serial port in raw mode, e.g. `serial:/dev/ttyUSB0@115200`;
/// - `usb:VID:PID` (hex, PID optional) or `usb:auto`: the iAP interface of a
///   USB device, this machine being the USB host.
public enum TransportSpec: Hashable, Sendable, CustomStringConvertible {
    case loopback
    case tcp(host: String, port: UInt16)
    case tcpListen(host: String, port: UInt16)
    case serial(path: String, baud: Int)
    /// nil vendor: the first device with an iAP interface.
    case usb(vendor: UInt16?, product: UInt16?)

    public static let forms = "loopback, tcp:HOST:PORT, tcp-listen:HOST:PORT, serial:/dev/ttyUSB0@115200, usb:VID:PID, usb:auto"

    public init(parsing text: String) throws(TransportError) {
        if text == "loopback" {
            self = .loopback
            return
        }
        if text.hasPrefix("tcp-listen:") || text.hasPrefix("tcp:") {
            let listen = text.hasPrefix("tcp-listen:")
            let rest = text.dropFirst(listen ? "tcp-listen:".count : "tcp:".count)
            // The port follows the last colon, so IPv6 hosts may be written in brackets.
            guard let colon = rest.lastIndex(of: ":") else {
                throw TransportError(.invalidSpec, "'\(text)' has no port: write \(listen ? "tcp-listen" : "tcp"):HOST:PORT")
            }
            var host = String(rest[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty else { throw TransportError(.invalidSpec, "'\(text)' has no host") }
            guard let port = UInt16(rest[rest.index(after: colon)...]), port > 0 else {
                throw TransportError(.invalidSpec, "'\(text)': the port must be a number from 1 to 65535")
            }
            self = listen ? .tcpListen(host: host, port: port) : .tcp(host: host, port: port)
            return
        }
        if text.hasPrefix("serial:") {
            let rest = text.dropFirst("serial:".count)
            let parts = rest.split(separator: "@", maxSplits: 1, omittingEmptySubsequences: false)
            let path = String(parts[0])
            guard path.hasPrefix("/") else { throw TransportError(.invalidSpec, "'\(text)': the serial device must be an absolute path such as /dev/ttyUSB0") }
            var baud = 115_200
            if parts.count == 2 {
                guard let value = Int(parts[1]), SerialTransport.supportedBaudRates.contains(value) else {
                    throw TransportError(.invalidSpec, "'\(text)': baud rate must be one of \(SerialTransport.supportedBaudRates.map(String.init).joined(separator: ", "))")
                }
                baud = value
            }
            self = .serial(path: path, baud: baud)
            return
        }
        if text.hasPrefix("usb:") {
            let rest = text.dropFirst("usb:".count)
            if rest == "auto" {
                self = .usb(vendor: nil, product: nil)
                return
            }
            let parts = rest.split(separator: ":", omittingEmptySubsequences: false)
            guard parts.count <= 2, let vendor = UInt16(parts[0], radix: 16),
                  parts.count == 1 || UInt16(parts[1], radix: 16) != nil else {
                throw TransportError(.invalidSpec, "'\(text)': write usb:VID:PID in hex (usb:05ac:12a8), usb:VID, or usb:auto")
            }
            self = .usb(vendor: vendor, product: parts.count == 2 ? UInt16(parts[1], radix: 16) : nil)
            return
        }
        throw TransportError(.invalidSpec, "unknown transport '\(text)'; use one of: \(Self.forms)")
    }

    public var description: String {
        switch self {
        case .loopback: "loopback"
        case .tcp(let host, let port): "tcp:\(host.contains(":") ? "[\(host)]" : host):\(port)"
        case .tcpListen(let host, let port): "tcp-listen:\(host.contains(":") ? "[\(host)]" : host):\(port)"
        case .serial(let path, let baud): "serial:\(path)@\(baud)"
        case .usb(nil, _): "usb:auto"
        case .usb(let vendor?, let product):
            "usb:" + String(vendor, radix: 16) + (product.map { ":" + String($0, radix: 16) } ?? "")
        }
    }
}
