import Synchronization
import Testing
import IAPEndpoint
import IAPLink
import IAPTransport
import IAPWire

/// A transport whose peer's bytes are already waiting when it opens: its
/// reader hands them over before `start` returns (a head unit's detect in a
/// listener's queue, a serial port's buffer), on the thread that starts it.
private final class WaitingBytesTransport: Transport {
    let waiting: [UInt8]
    let written = Mutex<[[UInt8]]>([])
    var name: String { "waiting bytes" }

    init(waiting: [UInt8]) { self.waiting = waiting }

    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError) {
        handler(.received(waiting))
    }
    func write(_ bytes: [UInt8]) { written.withLock { $0.append(bytes) } }
    func close() {}
}

@Suite struct EarlyBytesTests {
    /// The link end starts before bytes the transport had waiting are
    /// handled: the detect is echoed, not dropped by a link end not yet
    /// started. (Under load, `iapctl phone --transport tcp-listen:` lost a
    /// waiting peer's detect this way and closed the connection as idle.)
    @Test func bytesWaitingWhenTheTransportOpensReachAStartedLinkEnd() throws {
        let transport = WaitingBytesTransport(waiting: DetectSequence.bytes)
        let endpoint = MediaEndpoint(kind: .responder, transport: transport, logger: .discarding("test"))
        try endpoint.start()
        let written = Array(transport.written.withLock { $0 }.joined())
        #expect(written.starts(with: DetectSequence.bytes), "the device end wrote \(written) for a waiting detect")
    }
}
