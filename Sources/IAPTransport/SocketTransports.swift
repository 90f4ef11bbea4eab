#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SystemPackage

/// TCP transports: for networked test rigs and for other implementations
/// of the protocol at the other end of a socket.
public enum TCPTransport {
    /// Connects to `host:port` when started. A peer that stops reading for
    /// `writeStallLimit` ends the transport.
    public static func connect(host: String, port: UInt16, writeStallLimit: Duration = .seconds(10)) -> Transport {
        let name = TransportSpec.tcp(host: host, port: port).description
        return DescriptorTransport(name: name, writeStallLimit: writeStallLimit, linkPacketSizing: .large) { _ throws(TransportError) -> Int32 in
            try withAddresses(host: host, port: port, passive: false, name: name, failure: "cannot connect") { address in
                let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
                guard fd >= 0 else { return .failure(Errno(rawValue: errno)) }
                if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                    setNoDelay(fd)
                    return .success(fd)
                }
                let failure = Errno(rawValue: errno)
                Glibc.close(fd)
                return .failure(failure)
            }
        }
    }

    /// Listens on `host:port` and takes the first peer that connects.
    /// `ready` is called once the socket listens (with the bound port, useful
    /// when `port` is 0).
    public static func listen(host: String, port: UInt16, ready: (@Sendable (UInt16) -> Void)? = nil) -> Transport {
        let name = TransportSpec.tcpListen(host: host, port: port).description
        return DescriptorTransport(name: name, linkPacketSizing: .large) { closeRequested throws(TransportError) -> Int32 in
            let listener = try bindListening(host: host, port: port, backlog: 1, name: name)
            defer { Glibc.close(listener) }
            ready?(boundPort(listener))
            return try accept(on: listener, name: name, unlessReadable: closeRequested)
        }
    }

    /// Binds and listens on `host:port` now (so a port in use is an error at
    /// once), for a server that takes one peer after another.
    public static func listener(host: String, port: UInt16) throws(TransportError) -> TCPListener {
        let name = TransportSpec.tcpListen(host: host, port: port).description
        let bound = try bindListening(host: host, port: port, backlog: 4, name: name)
        return TCPListener(name: name, descriptor: bound, port: boundPort(bound))
    }

    /// A socket bound to `host:port` and listening.
    private static func bindListening(host: String, port: UInt16, backlog: Int32, name: String) throws(TransportError) -> Int32 {
        try withAddresses(host: host, port: port, passive: true, name: name, failure: "cannot listen") { address in
            let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            guard fd >= 0 else { return .failure(Errno(rawValue: errno)) }
            var yes: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            if bind(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 && Glibc.listen(fd, backlog) == 0 {
                // Non-blocking: accept waits in poll, where a close can end the wait.
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                return .success(fd)
            }
            let failure = Errno(rawValue: errno)
            Glibc.close(fd)
            return .failure(failure)
        }
    }

    /// Waits for the next peer on a (non-blocking) listening socket, or
    /// until `closeRequested` is readable: the transport was closed while
    /// it waited, which ends the wait as `.closed`.
    static func accept(on listener: Int32, name: String, unlessReadable closeRequested: Int32) throws(TransportError) -> Int32 {
        while true {
            var fds = [pollfd(fd: listener, events: Int16(POLLIN), revents: 0), pollfd(fd: closeRequested, events: Int16(POLLIN), revents: 0)]
            if case .failure(let error) = SystemCall.poll(&fds) {
                throw TransportError("\(name): poll failed while waiting for a peer", errno: error.rawValue)
            }
            if fds[1].revents != 0 { throw TransportError(.closed, "\(name): closed by this end while waiting for a peer") }
            switch SystemCall.accept(listener) {
            case .success(let fd):
                // The accepted socket does not inherit the listener's O_NONBLOCK on Linux.
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                setNoDelay(fd)
                return fd
            case .failure(.resourceTemporarilyUnavailable), .failure(.connectionAbort):
                // The peer went before it was taken (poll said ready).
                continue
            case .failure(let error):
                throw TransportError("\(name): accept failed", errno: error.rawValue)
            }
        }
    }

    /// Tries `body` on each address `host` resolves to, until one gives a
    /// descriptor; when none does, the last address's error number is the
    /// reason `failure` reports. Errors begin with the transport's `name`.
    private static func withAddresses(host: String, port: UInt16, passive: Bool, name: String, failure: String,
                                      _ body: (UnsafeMutablePointer<addrinfo>) -> Result<Int32, Errno>) throws(TransportError) -> Int32 {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        if passive { hints.ai_flags = AI_PASSIVE }
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw TransportError("\(name): cannot resolve \(host)", addressInfoStatus: status, errno: errno)
        }
        defer { freeaddrinfo(first) }
        var lastError = Errno.addressNotAvailable
        var current: UnsafeMutablePointer<addrinfo>? = first
        while let address = current {
            switch body(address) {
            case .success(let fd): return fd
            case .failure(let error): lastError = error
            }
            current = address.pointee.ai_next
        }
        throw TransportError("\(name): \(failure)", errno: lastError.rawValue)
    }

    private static func setNoDelay(_ fd: Int32) {
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
    }

    private static func boundPort(_ fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        guard ok else { return 0 }
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            }
        }
    }
}

/// A listening TCP socket that hands out one transport per peer, in turn:
/// what a test fixture left running needs to serve connection after
/// connection on the same port.
public final class TCPListener: Sendable {
    public let name: String
    /// The port actually bound (useful when 0 was asked for).
    public let port: UInt16
    private let descriptor: Int32

    init(name: String, descriptor: Int32, port: UInt16) {
        self.name = name
        self.descriptor = descriptor
        self.port = port
    }

    deinit { Glibc.close(descriptor) }

    /// A transport for the next peer to connect; it waits in accept when
    /// started. `accepted` is called on the transport's thread once a peer
    /// has connected.
    public func nextConnection(accepted: (@Sendable () -> Void)? = nil) -> Transport {
        let name = self.name
        let descriptor = self.descriptor
        // The transport keeps the listener alive while it waits in accept.
        return DescriptorTransport(name: name, linkPacketSizing: .large) { [self] closeRequested throws(TransportError) -> Int32 in
            withExtendedLifetime(self) {}
            let connection = try TCPTransport.accept(on: descriptor, name: name, unlessReadable: closeRequested)
            accepted?()
            return connection
        }
    }
}

/// A serial port in raw mode (8N1, no flow control) for UART-attached test
/// hardware.
public enum SerialTransport {
    public static let supportedBaudRates = [9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 921_600]

    public static func open(path: String, baud: Int) -> Transport {
        let name = TransportSpec.serial(path: path, baud: baud).description
        return DescriptorTransport(name: name) { _ throws(TransportError) -> Int32 in
            let fd = try TransportError.open(path, .readWrite, options: FileDescriptor.OpenOptions(rawValue: O_NOCTTY),
                                             what: "\(name): cannot open \(path)") { failure in
                failure == .permissionDenied ? " (add yourself to the dialout group, then log in again)" : ""
            }
            var options = termios()
            guard tcgetattr(fd, &options) == 0 else {
                let failure = errno
                Glibc.close(fd)
                throw TransportError("\(name): \(path) is not a serial port", errno: failure)
            }
            cfmakeraw(&options)
            options.c_cflag |= tcflag_t(CLOCAL) | tcflag_t(CREAD)
            options.c_cflag &= ~(tcflag_t(CRTSCTS) | tcflag_t(CSTOPB))
            withUnsafeMutableBytes(of: &options.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            let speed = speedConstant(baud)
            cfsetispeed(&options, speed)
            cfsetospeed(&options, speed)
            guard tcsetattr(fd, TCSANOW, &options) == 0 else {
                let failure = errno
                Glibc.close(fd)
                throw TransportError("\(name): cannot configure \(path)", errno: failure)
            }
            tcflush(fd, TCIOFLUSH)
            return fd
        }
    }

    static func speedConstant(_ baud: Int) -> speed_t {
        switch baud {
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 230_400: speed_t(B230400)
        case 460_800: speed_t(B460800)
        case 921_600: speed_t(B921600)
        default: speed_t(B115200)
        }
    }
}
