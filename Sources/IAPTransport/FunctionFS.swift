#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch
import Synchronization
import SystemPackage

/// The descriptors a Linux USB gadget writes to FunctionFS's ep0 to expose
/// the iAP interface: vendor class 0xFF, subclass 0xF0, protocol 0x00, one
/// bulk IN and one bulk OUT endpoint, at full, high and super speed.
///
/// Layout (linux/usb/functionfs.h): a v2 header (magic 3, total length,
/// flags: full/high/super speed descriptors present), the count of
/// descriptors per speed, then the descriptors of each speed. Strings are a
/// separate block (magic 2) with one language, US English.
public enum FunctionFSDescriptors {
    public static let interfaceClass: UInt8 = 0xFF
    public static let interfaceSubclass: UInt8 = 0xF0
    public static let interfaceProtocol: UInt8 = 0x00
    public static let interfaceName = "iAP Interface"

    enum Magic {
        static let descriptorsV2: UInt32 = 3
        static let strings: UInt32 = 2
    }

    enum Flag {
        static let fullSpeed: UInt32 = 1
        static let highSpeed: UInt32 = 2
        static let superSpeed: UInt32 = 4
    }

    /// Bulk max packet size per speed.
    static let packetSizes: (full: UInt16, high: UInt16, superSpeed: UInt16) = (64, 512, 1024)

    /// The descriptor block for ep0. Endpoint 1 is IN (the gadget writes),
    /// endpoint 2 is OUT (the gadget reads); FunctionFS names their files
    /// ep1 and ep2 in that order.
    public static var descriptors: [UInt8] {
        func interface() -> [UInt8] {
            [9, 4, 0, 0, 2, interfaceClass, interfaceSubclass, interfaceProtocol, 1]
        }
        func endpoint(_ address: UInt8, _ packet: UInt16) -> [UInt8] {
            [7, 5, address, 2, UInt8(packet & 0xFF), UInt8(packet >> 8), 0]
        }
        let companion: [UInt8] = [6, 0x30, 0, 0, 0, 0]
        let full = interface() + endpoint(0x81, packetSizes.full) + endpoint(0x02, packetSizes.full)
        let high = interface() + endpoint(0x81, packetSizes.high) + endpoint(0x02, packetSizes.high)
        let superSpeed = interface() + endpoint(0x81, packetSizes.superSpeed) + companion + endpoint(0x02, packetSizes.superSpeed) + companion
        var block: [UInt8] = []
        let body = full + high + superSpeed
        let total = 12 + 12 + body.count
        block.appendLE32(Magic.descriptorsV2)
        block.appendLE32(UInt32(total))
        block.appendLE32(Flag.fullSpeed | Flag.highSpeed | Flag.superSpeed)
        block.appendLE32(3)
        block.appendLE32(3)
        block.appendLE32(5)
        return block + body
    }

    /// The strings block: the interface's name in US English.
    public static var strings: [UInt8] {
        let text = Array(interfaceName.utf8) + [0]
        var block: [UInt8] = []
        block.appendLE32(Magic.strings)
        block.appendLE32(UInt32(16 + 2 + text.count))
        block.appendLE32(1)   // strings per language
        block.appendLE32(1)   // languages
        block += [0x09, 0x04] // en-US
        return block + text
    }
}

/// What the host did to the gadget, read from ep0.
public enum FunctionFSEvent: UInt8, Sendable, CustomStringConvertible {
    case bind = 0, unbind, enable, disable, setup, suspend, resume

    public var description: String {
        switch self {
        case .bind: "bind"
        case .unbind: "unbind"
        case .enable: "enable"
        case .disable: "disable"
        case .setup: "setup"
        case .suspend: "suspend"
        case .resume: "resume"
        }
    }

    /// Each event is 12 bytes: an 8-byte setup packet, the type, 3 bytes of padding.
    static let size = 12
}

/// A Linux board as USB test hardware: FunctionFS's ep0 gets the iAP
/// interface's descriptors, and each time the host enables the function
/// (plugged in and configured) a fresh connection — a `Transport` over the
/// bulk endpoint files — is handed to `onConnection`. Disable, unbind and
/// suspend end that connection, once; the next enable starts a new one.
public final class FunctionFSGadget: Sendable {
    public let mountPoint: String
    private let ep0: Int32
    private let current = Mutex<EndpointTransport?>(nil)

    /// Opens ep0 under the FunctionFS mount point and writes the descriptors
    /// and strings; the UDC may be bound once this returns.
    public init(mountPoint: String) throws(TransportError) {
        self.mountPoint = mountPoint
        let fd = try TransportError.open(mountPoint + "/ep0", .readWrite, options: [], what: "cannot open \(mountPoint)/ep0") { _ in
            " (is functionfs mounted there? see scripts/gadget-setup.sh)"
        }
        for (what, block) in [("descriptors", FunctionFSDescriptors.descriptors), ("strings", FunctionFSDescriptors.strings)] {
            let written = block.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == block.count else {
                let failure = written < 0 ? errno : EIO
                close(fd)
                throw TransportError("writing the \(what) to \(mountPoint)/ep0 failed", errno: failure)
            }
        }
        ep0 = fd
    }

    deinit { close(ep0) }

    /// Runs `run` on its own thread; `onEnd` gets the reason it stopped.
    public func start(onEvent: @escaping @Sendable (FunctionFSEvent) -> Void, onConnection: @escaping @Sendable (Transport) -> Void,
                      onEnd: @escaping @Sendable (TransportError) -> Void) throws(TransportError) {
        try DedicatedThread.start("gadget ep0") { [self] in onEnd(run(onEvent: onEvent, onConnection: onConnection)) }
    }

    /// Reads ep0 events until an error, calling `onEvent` for each and
    /// `onConnection` with a new transport at each enable. Blocks.
    public func run(onEvent: (FunctionFSEvent) -> Void, onConnection: (Transport) -> Void) -> TransportError {
        var buffer = [UInt8](repeating: 0, count: FunctionFSEvent.size * 4)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(ep0, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let failure = TransportError("reading \(mountPoint)/ep0 failed", errno: errno)
                endConnection(failure)
                return failure
            }
            var offset = 0
            while offset + FunctionFSEvent.size <= count {
                let type = buffer[offset + 8]
                let requestType = buffer[offset]
                offset += FunctionFSEvent.size
                guard let event = FunctionFSEvent(rawValue: type) else { continue }
                onEvent(event)
                switch event {
                case .enable:
                    endConnection(TransportError(.closed, "the host enabled the function again"))
                    let transport = EndpointTransport(input: mountPoint + "/ep2", output: mountPoint + "/ep1")
                    current.withLock { $0 = transport }
                    onConnection(transport)
                case .disable, .suspend:
                    endConnection(TransportError(.closed, "the host \(event == .disable ? "disabled the function" : "suspended the bus")"))
                case .unbind:
                    // The UDC may be bound again later: keep ep0 open.
                    endConnection(TransportError(.closed, "the gadget was unbound"))
                case .setup:
                    // No class or vendor requests are defined: stall, which
                    // FunctionFS does when ep0 is used in the wrong direction.
                    var none: UInt8 = 0
                    if requestType & 0x80 != 0 { _ = read(ep0, &none, 0) } else { _ = write(ep0, &none, 0) }
                case .bind, .resume:
                    break
                }
            }
        }
    }

    private func endConnection(_ reason: TransportError) {
        let transport = current.withLock { current -> EndpointTransport? in
            defer { current = nil }
            return current
        }
        transport?.end(reason)
    }
}

/// A connection over two FunctionFS endpoint files: bulk OUT read, bulk IN
/// written.
final class EndpointTransport: Transport {
    let name = "gadget"
    /// One link packet per bulk transfer: a host may read each transfer as
    /// one packet.
    var acceptsCoalescedWrites: Bool { false }
    /// Writes block until the host reads; they go out from here, in order.
    private let writer = DispatchQueue(label: "iap.gadget.write")
    private let input: String
    private let output: String
    private let state = Mutex<(inFD: Int32, outFD: Int32, handler: (@Sendable (TransportEvent) -> Void)?, closed: Bool)>((-1, -1, nil, false))

    init(input: String, output: String) {
        self.input = input
        self.output = output
    }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        let inFD = try TransportError.open(input, .readOnly, options: [], what: "cannot open the gadget's endpoint \(input)")
        let outFD: Int32
        do {
            outFD = try TransportError.open(output, .writeOnly, options: [], what: "cannot open the gadget's endpoint \(output)")
        } catch {
            Glibc.close(inFD)
            throw error
        }
        state.withLock { $0 = (inFD, outFD, handler, false) }
        try DedicatedThread.start("\(name) reads") { [self] in readLoop(inFD) }
    }

    private func readLoop(_ fd: Int32) {
        // FunctionFS completes a read when the buffer is full or a short
        // packet arrives; the host sends a zero-length packet after writes
        // that are a multiple of the packet size.
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                let handler = state.withLock { $0.closed ? nil : $0.handler }
                handler?(.received(Array(buffer[0..<count])))
            } else if count < 0 && errno == EINTR {
                continue
            } else if count == 0 {
                continue
            } else {
                end(TransportError("the host went away", errno: errno))
                return
            }
        }
    }

    func write(_ bytes: [UInt8]) {
        writer.async { [self] in writeNow(bytes) }
    }

    private func writeNow(_ bytes: [UInt8]) {
        let fd = state.withLock { $0.closed ? -1 : $0.outFD }
        guard fd >= 0 else { return }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0 {
                if errno == EINTR { continue }
                end(TransportError("writing to the host failed", errno: errno))
                return
            }
            offset += written
        }
        // A write of whole packets ends with a zero-length packet, or the
        // host's larger read waits for more. The packet size depends on the
        // speed the host chose (64, 512 or 1024): every one divides 1024 and
        // is divided by 64, so a count that is a multiple of 64 may need it;
        // an extra zero-length packet only completes an empty read.
        if bytes.count % 64 == 0 {
            while Glibc.write(fd, bytes, 0) < 0 && errno == EINTR {}
        }
    }

    /// After the writes queued before it (an RST, say).
    func close() { writer.sync { end(TransportError(.closed, "closed by this end")) } }

    /// Reports `.closed` once and releases the endpoint files.
    func end(_ reason: TransportError) {
        let (inFD, outFD, handler) = state.withLock { current -> (Int32, Int32, (@Sendable (TransportEvent) -> Void)?) in
            guard !current.closed else { return (-1, -1, nil) }
            current.closed = true
            defer { current.handler = nil }
            return (current.inFD, current.outFD, current.handler)
        }
        if inFD >= 0 { Glibc.close(inFD) }
        if outFD >= 0 { Glibc.close(outFD) }
        handler?(.closed(reason))
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE32(_ value: UInt32) {
        append(UInt8(value & 0xFF))
        append(UInt8(value >> 8 & 0xFF))
        append(UInt8(value >> 16 & 0xFF))
        append(UInt8(value >> 24))
    }
}
