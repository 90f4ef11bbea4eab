import IAPDemo
import IAPLink
import IAPRoles
import IAPSession
import IAPTransport
import IAPWire

/// A phone and a head-unit connection core joined by two link ends with
/// nothing in between: every write is handed straight to the other end, at
/// one instant. The shortest path a message can take through the whole
/// stack (session, roles, message layer, control channel, link layer, wire
/// codec), for measuring its cost. The session runs as everywhere else:
/// authentication, identification, then media.
public struct InProcessMediaPair: Sendable {
    public private(set) var phone: Connection
    public private(set) var headUnit: Connection
    public let app: SampleApp
    private let edge: VirtualTimeEdge
    private var accessory: LinkEnd
    private var device: LinkEnd
    private var now = LinkInstant.milliseconds(1)
    private var wire: [(LinkRole, [UInt8])] = []
    private var pumping = false

    public init() {
        app = SampleApp()
        edge = VirtualTimeEdge(app: app)
        phone = edge.phoneConnection()
        headUnit = Connection(.init(role: .headUnit))
        var parameters = LinkParameters(maximumOutstandingPackets: 16, maximumPacketLength: 4096)
        parameters.maximumCumulativeAcks = 16
        accessory = LinkEnd(configuration: LinkConfiguration(role: .accessory, parameters: parameters, skipDetect: true, keepAliveInterval: nil, silenceLimit: nil))
        device = LinkEnd(configuration: LinkConfiguration(role: .device, parameters: parameters, keepAliveInterval: nil, silenceLimit: nil))
        pump(device.start(now: now), from: .device)
        pump(accessory.start(now: now), from: .accessory)
    }

    public var isConnected: Bool { phone.isMediaConnected && headUnit.isMediaConnected && headUnit.headUnit.appName != nil }

    /// The head unit opens a container; returns when its page has arrived.
    public mutating func browse(_ containerID: String) -> Int {
        serve(headUnit.headUnitDoes(now: now) { role, now in role.open(containerID, now: now) }, from: .accessory)
        return headUnit.headUnit.containers[containerID]?.items.count ?? 0
    }

    /// Lets the link's delayed acknowledgements go out, as time would.
    public mutating func settle() {
        now = now + .milliseconds(100)
        pump(accessory.tick(now: now), from: .accessory)
        pump(device.tick(now: now), from: .device)
    }

    /// Handles a link end's actions. Writes are queued and handed over in
    /// order by one loop (not by recursion, which a long exchange would turn
    /// into a deep stack).
    private mutating func pump(_ actions: [LinkAction], from role: LinkRole) {
        handle(actions, from: role)
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while !wire.isEmpty {
            let (target, bytes) = wire.removeFirst()
            if target == .device { handle(device.receive(bytes, now: now), from: .device) } else { handle(accessory.receive(bytes, now: now), from: .accessory) }
        }
    }

    private mutating func handle(_ actions: [LinkAction], from role: LinkRole) {
        for action in actions {
            switch action {
            case .send(let bytes):
                wire.append((role == .accessory ? .device : .accessory, bytes))
            case .deliver(let session, let bytes):
                if role == .device {
                    serve(phone.received(session: session, bytes, now: now), from: .device)
                    handle(device.consumed(bytes.count, now: now), from: .device)
                } else {
                    serve(headUnit.received(session: session, bytes, now: now), from: .accessory)
                    handle(accessory.consumed(bytes.count, now: now), from: .accessory)
                }
            case .event(.up(let link)):
                serve(role == .device ? phone.linkUp(link, now: now) : headUnit.linkUp(link, now: now), from: role)
            case .event(.down), .event(.failed):
                serve(role == .device ? phone.linkDown(now: now) : headUnit.linkDown(now: now), from: role)
            case .event:
                break
            }
        }
    }

    /// A core's outputs: bytes onto its link end, the edge's answers back in.
    private mutating func serve(_ outputs: [Connection.Output], from role: LinkRole) {
        var sends: [(UInt8, [UInt8])] = []
        if role == .device {
            edge.serve(outputs, &phone, now: now, send: { sends.append(($0, $1)) }, event: { _ in })
        } else {
            edge.serve(outputs, &headUnit, now: now, send: { sends.append(($0, $1)) }, event: { _ in })
        }
        for (session, bytes) in sends {
            let actions = (try? (role == .device ? device.send(bytes, session: session, now: now) : accessory.send(bytes, session: session, now: now))) ?? []
            pump(actions, from: role)
        }
    }
}
