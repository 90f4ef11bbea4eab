import IAPDemo
import IAPEndpointCore
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// A phone and a head-unit endpoint core joined with nothing in between:
/// every write is handed straight to the other end, at one instant. The
/// shortest path a message can take through the whole stack (endpoint core,
/// session, roles, message layer, control channel, link layer, wire codec),
/// for measuring its cost. The session runs as everywhere else:
/// authentication, identification, then media.
public struct InProcessMediaPair: Sendable {
    public private(set) var phoneCore: EndpointCore
    public private(set) var headUnitCore: EndpointCore
    public let app: SampleApp
    private let edge: VirtualTimeEdge
    private var now = LinkInstant.milliseconds(1)
    /// Writes not yet handed over, oldest first, with the end they go to.
    private var wire: [(LinkRole, [UInt8])] = []
    private var pumping = false

    /// Bytes the phone has written towards the head unit, and the head unit towards the phone.
    public private(set) var bytesWritten: (phone: Int, headUnit: Int) = (0, 0)

    /// - Parameter app: what the phone serves (its content tree and media library).
    public init(app: SampleApp = SampleApp()) {
        self.app = app
        edge = VirtualTimeEdge(app: app)
        var parameters = LinkParameters(maximumOutstandingPackets: 16, maximumPacketLength: 4096)
        parameters.maximumCumulativeAcks = 16
        phoneCore = edge.phoneCore(link: LinkConfiguration(role: .device, parameters: parameters, keepAliveInterval: nil, silenceLimit: nil))
        headUnitCore = EndpointCore(
            configuration: EndpointCore.Configuration(link: LinkConfiguration(role: .accessory, parameters: parameters, skipDetect: true,
                                                                              keepAliveInterval: nil, silenceLimit: nil)),
            connection: Connection(.init(role: .accessory)), app: nil)
        serve(phoneCore.handle(.start, now: now), from: .device)
        serve(headUnitCore.handle(.start, now: now), from: .accessory)
    }

    public var phone: Connection { phoneCore.connection }
    public var headUnit: Connection { headUnitCore.connection }
    public var isConnected: Bool { phone.isMediaConnected && headUnit.isMediaConnected && headUnit.headUnit.appName != nil }

    /// The head unit opens a container; returns when its page has arrived.
    public mutating func browse(_ containerID: String) -> Int {
        serve(headUnitCore.act(now: now) { connection, now in connection.headUnitDoes(now: now) { role, now in role.open(containerID, now: now) } },
              from: .accessory)
        return headUnit.headUnit.containers[containerID]?.items.count ?? 0
    }

    /// Lets time pass until `done` holds (at most `limit`): the head unit's
    /// media library sync, say, which the link's window paces.
    @discardableResult
    public mutating func run(until done: (Self) -> Bool, limit: Duration = .seconds(3600)) -> Bool {
        let end = now + limit
        while !done(self) {
            guard now < end else { return false }
            settle()
        }
        return true
    }

    /// Lets the link's delayed acknowledgements go out, as time would.
    public mutating func settle() {
        now = now + .milliseconds(100)
        serve(headUnitCore.handle(.tick, now: now), from: .accessory)
        serve(phoneCore.handle(.tick, now: now), from: .device)
    }

    /// Carries out a core's outputs: the edge's answers back in, writes
    /// onto the wire. Writes are handed over in order by one loop (not by
    /// recursion, which a long exchange would turn into a deep stack).
    private mutating func serve(_ outputs: [EndpointCore.Output], from role: LinkRole) {
        let target: LinkRole = role == .accessory ? .device : .accessory
        if role == .device {
            edge.serve(outputs, &phoneCore, now: now) { if case .write(let bytes) = $0 { wire.append((target, bytes)); bytesWritten.phone += bytes.count } }
        } else {
            edge.serve(outputs, &headUnitCore, now: now) { if case .write(let bytes) = $0 { wire.append((target, bytes)); bytesWritten.headUnit += bytes.count } }
        }
        guard !pumping else { return }
        pumping = true
        defer { pumping = false }
        while !wire.isEmpty {
            let (target, bytes) = wire.removeFirst()
            if target == .device {
                serve(phoneCore.handle(.received(bytes), now: now), from: .device)
            } else {
                serve(headUnitCore.handle(.received(bytes), now: now), from: .accessory)
            }
        }
    }
}
