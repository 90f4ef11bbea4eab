/// The phone's remote commands: one handler per command, and the set it
/// advertises to the head unit.
///
/// Advertising like, dislike or bookmark switches the head unit to radio
/// controls; disabling one keeps it advertised (and the radio controls), only
/// withdrawing it switches back.
public struct RemoteCommandCenter: Sendable {
    public typealias Handler = @Sendable (RemoteCommand) -> RequestStatus

    private var handlers: [RemoteCommand.Kind: Handler] = [:]
    private var enabled: [RemoteCommand.Kind: Bool] = [:]
    /// Rates the rate button steps through, slowest first.
    public private(set) var supportedRates: [Double]

    public init(supportedRates: [Double] = [1.0, 1.25, 1.5, 2.0]) {
        self.supportedRates = supportedRates.sorted()
    }

    /// Registers (and advertises) a handler.
    public mutating func register(_ kind: RemoteCommand.Kind, enabled: Bool = true, _ handler: @escaping Handler) {
        handlers[kind] = handler
        self.enabled[kind] = enabled
    }

    /// Keeps the command advertised but greyed out (or back on).
    public mutating func setEnabled(_ kind: RemoteCommand.Kind, _ isEnabled: Bool) {
        guard handlers[kind] != nil else { return }
        enabled[kind] = isEnabled
    }

    /// Removes the command from the advertised set.
    public mutating func withdraw(_ kind: RemoteCommand.Kind) {
        handlers[kind] = nil
        enabled[kind] = nil
    }

    public var advertised: [AdvertisedCommand] {
        enabled.keys.sorted().map { AdvertisedCommand($0, enabled: enabled[$0] ?? false) }
    }

    /// Runs the handler for a command, or says why it cannot run (none
    /// registered, or not enabled). The edge calls this when a role asks it
    /// to (`.perform`); the roles never do.
    public func perform(_ command: RemoteCommand) -> RequestStatus {
        guard let handler = handlers[command.kind] else { return .commandFailed }
        guard enabled[command.kind] == true else { return .commandFailed }
        return handler(command)
    }

    /// Runs the handler for a command whether or not it is enabled for the
    /// head unit; nil when there is none. For what the phone does on its own,
    /// such as pausing when the head unit goes away.
    public func performLocally(_ command: RemoteCommand) -> RequestStatus? {
        handlers[command.kind].map { $0(command) }
    }

    /// The rate after `current`: the next faster supported rate, wrapping
    /// from the fastest to the slowest.
    public func nextRate(after current: Double) -> Double {
        guard let slowest = supportedRates.first else { return current }
        return supportedRates.first { $0 > current + 0.001 } ?? slowest
    }
}
