import IAPWire

/// What a transport reports.
public enum TransportEvent: Sendable {
    /// Bytes arrived (a read of a stream, or one packet of a packet transport).
    case received([UInt8])
    /// The transport is closed and will report nothing more: of kind
    /// `.closed` when either side ended it in order, of the kind that ended
    /// it otherwise (a connect refused, a device unplugged, a peer that
    /// stopped reading).
    case closed(TransportError)
}

/// Moves bytes between this program and a peer: a byte stream (TCP, a
/// serial port) or a packet transport (USB bulk endpoints, the in-memory
/// loopback). The link layer above does its own framing, so both kinds look
/// the same to it: chunks of bytes in, chunks of bytes out.
///
/// A transport reads on its own thread (or its own callbacks) and never
/// blocks the caller's: `write` queues and returns.
public protocol Transport: AnyObject, Sendable {
    /// Starts reading; every event goes to `handler`, one call at a time
    /// and in order, from the transport's own thread (the in-memory
    /// loopback calls it on the writing end's thread, inside `write`).
    /// Called once.
    func start(_ handler: @escaping @Sendable (TransportEvent) -> Void) throws(TransportError)
    /// Sends bytes, whole and in order.
    func write(_ bytes: [UInt8])
    /// Closes; the handler then gets `.closed` once, if it has not already.
    func close()
    /// How the transport was named on the command line, for logs.
    var name: String { get }
    /// Whether one write may carry several link packets back to back. True
    /// (the default) for byte streams, whose reader finds packet boundaries
    /// itself (TCP, serial, USB bulk); false where each write must be one
    /// packet (iAP over HID: one report sequence per packet). Read when the
    /// transport has started: a USB device's interface is known only then.
    var acceptsCoalescedWrites: Bool { get }
    /// Bytes handed to `write` that the transport has not yet passed on
    /// (a peer that does not read leaves them queued): what bounds a
    /// phone's iAP1 answers (the endpoint passes it to `LinkEnd.sendLegacy`
    /// as `queued`), iAP1 having no window of its own.
    /// 0 (the default) for a transport that cannot tell.
    var queuedWriteBytes: Int { get }
    /// The link packets that suit this transport, which the link end over
    /// it proposes to receive (its SYN or SYN+ACK); nil (the default) keeps
    /// the link's defaults. Read when the transport has started, as
    /// `acceptsCoalescedWrites` is.
    var linkPacketSizing: LinkPacketSizing? { get }
}

extension Transport {
    public var acceptsCoalescedWrites: Bool { true }
    public var queuedWriteBytes: Int { 0 }
    public var linkPacketSizing: LinkPacketSizing? { nil }
}

/// The largest link packet an end takes and how many it takes unacknowledged:
/// its own receive limits, which it proposes in the link's SYN (an
/// accessory) or SYN+ACK (a device) and the peer sends within.
public struct LinkPacketSizing: Hashable, Sendable, CustomStringConvertible {
    /// Bytes of the largest link packet, header and checksums included
    /// (`allowedPacketLengths`).
    public var maximumPacketLength: Int
    /// Packets sent and not yet acknowledged, at most (`allowedOutstandingPackets`).
    public var maximumOutstandingPackets: Int

    /// What a SYN can say: a packet must carry a byte of data, and the
    /// length field is 16 bits.
    public static let allowedPacketLengths = LinkSynchronization.minimumPacketLength...LinkPacket.maximumLength
    /// What a SYN can say: at most 127 outstanding packets.
    public static let allowedOutstandingPackets = LinkSynchronization.maximumOutstandingRange

    /// Values outside the allowed ranges are clamped into them.
    public init(maximumPacketLength: Int, maximumOutstandingPackets: Int) {
        self.maximumPacketLength = maximumPacketLength.clamped(to: Self.allowedPacketLengths)
        self.maximumOutstandingPackets = maximumOutstandingPackets.clamped(to: Self.allowedOutstandingPackets)
    }

    public var description: String { "\(maximumPacketLength)-byte packets, \(maximumOutstandingPackets) outstanding" }

    /// The largest packets a SYN can propose, 5 outstanding (what ADIT's
    /// head-unit stack proposes over USB): what a socket and USB, bulk or
    /// HID, propose. A message of up to 64 KB is one packet, so each costs
    /// one header, one acknowledgement and one pass through the link end
    /// instead of one per 4 KB. Over TCP between two processes a 60,000-byte
    /// ping took about a third less time than with 4,096-byte packets
    /// (Docs/Performance.md, "Link packets"). A serial port keeps the link's
    /// 4,096 bytes: a damaged packet is sent again whole, and at 115,200 baud
    /// 64 KB takes six seconds.
    public static let large = LinkPacketSizing(maximumPacketLength: LinkPacket.maximumLength, maximumOutstandingPackets: 5)
}

extension Int {
    fileprivate func clamped(to range: ClosedRange<Int>) -> Int { Swift.min(Swift.max(self, range.lowerBound), range.upperBound) }
}

/// Why a transport could not be opened, or why it ended: a kind a caller
/// can act on (retry later, ask for permission, give up) and the words for
/// a person, which name what failed and how.
public struct TransportError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong, whatever the transport.
    public enum Kind: Hashable, Sendable {
        /// The peer's host answered that nothing takes connections there
        /// (ECONNREFUSED).
        case refused
        /// No route to the peer: the network or host is down or unreachable,
        /// or the name service could not be asked.
        case unreachable
        /// No such device, file or host name: not plugged in, gone, or
        /// misspelled (ENOENT, ENODEV, ENXIO, a name that does not resolve,
        /// LIBUSB_ERROR_NO_DEVICE, a USB device unplugged).
        case notFound
        /// Not allowed: a device node's permissions, a privileged port, a
        /// missing udev rule (EACCES, EPERM, LIBUSB_ERROR_ACCESS).
        case permission
        /// In use by someone else: a port already bound, a claimed
        /// interface, a device held open (EBUSY, EADDRINUSE).
        case busy
        /// Nothing happened in time: a connect that got no answer, or a peer
        /// that stopped reading what is written to it.
        case timedOut
        /// Ended in order by either side (closed here, the peer closed or
        /// reset the connection, the USB host disabled the gadget).
        case closed
        /// The transport's name does not parse (see `TransportSpec`), or
        /// names one that cannot be opened on its own (`loopback`).
        case invalidSpec
        /// Anything else; the description says what.
        case other
    }

    public let kind: Kind
    /// What failed and why, in words.
    public let description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }
}
