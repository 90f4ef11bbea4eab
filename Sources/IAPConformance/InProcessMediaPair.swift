import IAPLink
import IAPRoles
import IAPTransport
import IAPWire

/// The phone and head-unit roles joined by two link ends with nothing in
/// between: every write is handed straight to the other end, at one instant.
/// The shortest path a message can take through the whole stack (roles,
/// message layer, control channel, link layer, wire codec), for measuring
/// its cost.
public struct InProcessMediaPair: Sendable {
    public private(set) var headUnit = HeadUnitMediaRole()
    public private(set) var phone: PhoneMediaRole
    public let app: SampleApp
    private var accessory: LinkEnd
    private var device: LinkEnd
    private var channels: [LinkRole: ControlChannel] = [.accessory: ControlChannel(), .device: ControlChannel()]
    private var now = LinkInstant.milliseconds(1)
    private var wire: [(LinkRole, [UInt8])] = []
    private var pumping = false

    public init() {
        app = SampleApp()
        phone = PhoneMediaRole(appName: app.appName, commands: app.commandCenter(), offersContent: true)
        var parameters = LinkParameters(maximumOutstandingPackets: 16, maximumPacketLength: 4096)
        parameters.maximumCumulativeAcks = 16
        accessory = LinkEnd(configuration: LinkConfiguration(role: .accessory, parameters: parameters, skipDetect: true, keepAliveInterval: nil, silenceLimit: nil))
        device = LinkEnd(configuration: LinkConfiguration(role: .device, parameters: parameters, keepAliveInterval: nil, silenceLimit: nil))
        pump(device.start(now: now), from: .device)
        pump(accessory.start(now: now), from: .accessory)
        dispatchHeadUnit(headUnit.connect(now: now))
        dispatchPhone(phone.connect(now: now))
    }

    public var isConnected: Bool { accessory.isUp && device.isUp && headUnit.appName != nil }

    /// The head unit opens a container; returns when its page has arrived.
    public mutating func browse(_ containerID: String) -> Int {
        dispatchHeadUnit(headUnit.open(containerID, now: now))
        return headUnit.containers[containerID]?.items.count ?? 0
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
        var consumed = 0
        for action in actions {
            switch action {
            case .send(let bytes):
                wire.append((role == .accessory ? .device : .accessory, bytes))
            case .deliver(let session, let bytes) where session == 1:
                consumed += bytes.count
                let (inputs, _) = channels[role, default: ControlChannel()].receive(bytes)
                for case .message(let message) in inputs {
                    guard let typed = try? MediaMessage(message) else { continue }
                    if role == .device { dispatchPhone(phone.receive(typed, now: now)) } else { dispatchHeadUnit(headUnit.receive(typed, now: now)) }
                }
            default:
                break
            }
        }
        guard consumed > 0 else { return }
        if role == .device { handle(device.consumed(consumed, now: now), from: .device) } else { handle(accessory.consumed(consumed, now: now), from: .accessory) }
    }

    private mutating func dispatchPhone(_ outputs: [PhoneMediaRole.Output]) {
        for output in outputs {
            switch output {
            case .send(let message):
                if let bytes = try? message.controlMessage.encoded(), let actions = try? device.send(bytes, session: 1, now: now) {
                    pump(actions, from: .device)
                }
            case .load(let token, let request):
                dispatchPhone(phone.complete(token: token, with: app.load(request, now: now).0, now: now))
            default:
                break
            }
        }
    }

    private mutating func dispatchHeadUnit(_ outputs: [HeadUnitMediaRole.Output]) {
        for case .send(let message) in outputs {
            if let bytes = try? message.controlMessage.encoded(), let actions = try? accessory.send(bytes, session: 1, now: now) {
                pump(actions, from: .accessory)
            }
        }
    }
}
