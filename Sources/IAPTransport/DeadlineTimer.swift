import Dispatch
import Synchronization
import IAPWire

/// A timer that fires at a deadline, set from any thread.
///
/// For the sans-IO state machines' deadlines (a link end's retransmission
/// and keep-alive, the connection core's): rearming costs a system call
/// (libdispatch wakes its timer thread) and those deadlines move on with
/// every input, so the timer is only brought forward, never pushed back.
/// Firing before the deadline is harmless, since a machine's `tick` acts
/// only on what is due, and its owner arms the timer at the deadline then.
///
/// `@unchecked Sendable`: Dispatch on Linux does not mark its timer source
/// Sendable, but libdispatch makes `schedule` and `cancel` safe to call from
/// any thread, and they are all this class does with it once `start` has
/// run (in its owner's initialiser, before it is shared).
public final class DeadlineTimer: @unchecked Sendable {
    private let source: any DispatchSourceTimer
    private let armed = Mutex<LinkInstant?>(nil)

    public init(label: String) {
        source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: label))
    }

    /// Sets what firing does and starts the timer, unscheduled.
    public func start(_ fire: @escaping @Sendable () -> Void) {
        source.setEventHandler { [weak self] in
            self?.armed.withLock { $0 = nil }
            fire()
        }
        source.resume()
    }

    /// Fires at `deadline` or earlier; nil leaves an earlier firing armed.
    public func schedule(at deadline: LinkInstant?) {
        guard let deadline else { return }
        // The source is set under the lock: set after it, two callers could
        // leave the later of their deadlines armed and the earlier one lost.
        armed.withLock { armed in
            if let current = armed, current <= deadline { return }
            armed = deadline
            let delay = max(0, deadline.nanoseconds - MonotonicClock.now().nanoseconds)
            source.schedule(deadline: .now() + .nanoseconds(Int(delay)), leeway: .microseconds(200))
        }
    }

    public func cancel() { source.cancel() }
}
