import IAPLink

/// What a transport reports.
public enum TransportEvent: Sendable {
    /// Bytes arrived (a read of a stream, or one packet of a packet transport).
    case received([UInt8])
    /// The transport is closed and will report nothing more.
    case closed(String)
}

/// Moves bytes between this program and a peer: a byte stream (TCP, a
/// serial port) or a packet transport (USB bulk endpoints, the in-memory
/// loopback). The link layer above does its own framing, so both kinds look
/// the same to it: chunks of bytes in, chunks of bytes out.
///
/// A transport reads on its own thread (or its own callbacks) and never
/// blocks the caller's: `write` queues and returns.
public protocol Transport: AnyObject, Sendable {
    /// Starts reading; every event goes to `handler`, from the transport's
    /// own thread, in order. Called once.
    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError)
    /// Sends bytes, whole and in order.
    func write(_ bytes: [UInt8])
    /// Closes; the handler then gets `.closed` once, if it has not already.
    func close()
    /// How the transport was named on the command line, for logs.
    var name: String { get }
}

/// A transport that cannot be opened or used, with the reason in words.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
