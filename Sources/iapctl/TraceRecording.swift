#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import IAPEndpoint
import IAPLink
import IAPTrace
import IAPTransport
import Synchronization
import SystemPackage

/// Writes live traffic to a usbmon pcapng file as it happens, so that
/// `iapctl decode` and Wireshark read it and a killed program leaves every
/// transfer recorded so far. Directions follow the protocol roles, whatever
/// side of a USB cable each sits on: the head unit's bytes are OUT (endpoint
/// 0x01), the phone's IN (0x81). Each connection is a USB device number.
final class TraceFile: Sendable {
    private struct State {
        var writer = UsbmonPcapngWriter()
        var fd: Int32
        var problem: String?
    }
    private let state: Mutex<State>
    let path: String

    init(path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw CommandFailure(message: "cannot create the trace \(path): \(Errno(rawValue: errno).description)") }
        self.path = path
        state = Mutex(State(fd: fd))
        state.withLock { Self.flush(&$0) }
    }

    deinit { state.withLock { _ = close($0.fd) } }

    /// Wraps `transport` so that what `kind` sends and receives is recorded
    /// as connection `connection`.
    func recording(_ transport: Transport, as kind: EndKind, connection: Int = 1) -> Transport {
        RecordingTransport(inner: transport, file: self, kind: kind, device: UInt8(truncatingIfNeeded: max(1, connection % 128)))
    }

    fileprivate func record(device: UInt8, endpoint: UInt8, _ bytes: [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let microseconds = Int64(now.tv_sec) * 1_000_000 + Int64(now.tv_nsec) / 1000
        state.withLock { state in
            guard state.problem == nil else { return }
            state.writer.bulkTransfer(device: device, endpoint: endpoint, data: bytes, timestampMicroseconds: microseconds)
            Self.flush(&state)
        }
    }

    /// Why recording stopped, if it did (a full disk, say); traffic goes on.
    var problem: String? { state.withLock { $0.problem } }

    private static func flush(_ state: inout State) {
        let bytes = state.writer.drain()
        if case .failure(let error) = SystemCall.writeAll(state.fd, bytes) {
            state.problem = "writing failed: \(error)"
        }
    }
}

private final class RecordingTransport: Transport {
    let inner: Transport
    let file: TraceFile
    let device: UInt8
    let sent: UInt8
    let received: UInt8

    init(inner: Transport, file: TraceFile, kind: EndKind, device: UInt8) {
        self.inner = inner
        self.file = file
        self.device = device
        (sent, received) = kind.linkRole == .device ? (0x81, 0x01) : (0x01, 0x81)
    }

    var name: String { inner.name }
    var acceptsCoalescedWrites: Bool { inner.acceptsCoalescedWrites }
    var linkPacketSizing: LinkPacketSizing? { inner.linkPacketSizing }
    var queuedWriteBytes: Int { inner.queuedWriteBytes }
    /// Records and writes in order, off the caller's thread (a file write may block).
    private let writer = DispatchQueue(label: "iap.trace.record")

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        try inner.start { [file, device, received] event in
            if case .received(let bytes) = event { file.record(device: device, endpoint: received, bytes) }
            handler(event)
        }
    }

    func write(_ bytes: [UInt8]) {
        writer.async { [file, device, sent, inner] in
            file.record(device: device, endpoint: sent, bytes)
            inner.write(bytes)
        }
    }

    /// After the writes queued before it.
    func close() { writer.sync { inner.close() } }
}
