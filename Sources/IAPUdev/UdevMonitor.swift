#if canImport(Glibc)
import Glibc
#endif
import CLibUDev
import IAPHotplug
import IAPTransport
import Synchronization
import SystemPackage

/// Watches USB devices come and go through a udev monitor (subsystem usb,
/// device type usb_device) on its own thread, without busy polling: the
/// thread sleeps in poll() on the monitor socket and a wake-up pipe.
///
/// The monitor is listening before the devices present are enumerated, so a
/// device plugged in during start-up is neither missed nor reported twice.
/// Only add and remove reach the handler; bind, unbind and change do not.
public final class UdevMonitor: Sendable {
    public enum Event: Hashable, Sendable {
        /// Plugged in before the monitor started (found by enumeration).
        case present(UdevUSBDevice)
        case added(UdevUSBDevice)
        case removed(UdevUSBDevice)
        /// The monitor stopped on an error; no more events follow.
        case failed(String)

        /// The event as the device supervisor takes it.
        public var hotplug: HotplugEvent? {
            switch self {
            case .present(let device), .added(let device): .added(device.info)
            case .removed(let device): .removed(device.info)
            case .failed: nil
            }
        }
    }

    private let wake: (read: Int32, write: Int32)
    private let stopped = Mutex(false)

    public init() throws(UdevError) {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw UdevError("cannot create a wake-up pipe: \(Errno(rawValue: errno).description)") }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        wake = (fds[0], fds[1])
    }

    /// Starts listening, reports the devices present, then live events, each
    /// on the monitor's thread, until `stop()`.
    public func start(_ handler: @escaping @Sendable (Event) -> Void) throws(UdevError) {
        guard let udev = udev_new() else { throw UdevError("udev_new failed: \(Errno(rawValue: errno).description)") }
        guard let monitor = udev_monitor_new_from_netlink(udev, "udev") else {
            udev_unref(udev)
            throw UdevError("cannot open a udev monitor (is systemd-udevd running? in a container /run/udev may be missing)")
        }
        udev_monitor_filter_add_match_subsystem_devtype(monitor, "usb", "usb_device")
        let status = udev_monitor_enable_receiving(monitor)
        guard status >= 0 else {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw UdevError("cannot listen for udev events: \(Errno(rawValue: -status).description)")
        }
        let handles = Handles(udev: udev, monitor: monitor)
        do {
            try DedicatedThread.start("udev monitor") { [self] in run(handles, handler) }
        } catch {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            throw UdevError(error.description)
        }
    }

    /// Stops the monitor promptly; no event is delivered after the thread
    /// notices. Safe to call more than once.
    public func stop() {
        let first = stopped.withLock { wasStopped in
            defer { wasStopped = true }
            return !wasStopped
        }
        if first { _ = write(wake.write, [UInt8(1)], 1) }
    }

    deinit {
        close(wake.read)
        close(wake.write)
    }

    /// libudev handles owned by the monitor thread alone.
    ///
    /// `@unchecked Sendable`: made before the thread starts and handed to
    /// it; from then on only that thread uses them, and it frees them.
    private struct Handles: @unchecked Sendable {
        let udev: OpaquePointer
        let monitor: OpaquePointer
    }

    private func run(_ handles: Handles, _ handler: @escaping @Sendable (Event) -> Void) {
        defer {
            udev_monitor_unref(handles.monitor)
            udev_unref(handles.udev)
        }
        // Syspaths known present: an add already seen by enumeration is not
        // repeated, and only known devices are reported as removed once.
        var present = Set<String>()
        do {
            for handle in try UdevUSB.presentDevices(handles.udev) {
                guard let (_, device) = UdevUSB.describe(handle, action: "add") else { continue }
                present.insert(device.info.syspath)
                handler(.present(device))
            }
        } catch {
            handler(.failed(error.description))
            return
        }
        var fds = [pollfd(fd: udev_monitor_get_fd(handles.monitor), events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0)]
        while !stopped.withLock({ $0 }) {
            if case .failure(let error) = SystemCall.poll(&fds) {
                handler(.failed("poll on the udev monitor failed: \(error)"))
                return
            }
            if fds[1].revents != 0 { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else {
                if fds[0].revents != 0 { handler(.failed("the udev monitor socket closed")); return }
                continue
            }
            // Drain what is queued; receive_device does not block on the monitor's socket.
            while let raw = udev_monitor_receive_device(handles.monitor) {
                guard let (added, device) = UdevUSB.describe(raw, action: "") else { continue }
                if stopped.withLock({ $0 }) { return }
                if added {
                    guard present.insert(device.info.syspath).inserted else { continue }
                    handler(.added(device))
                } else if present.remove(device.info.syspath) != nil {
                    handler(.removed(device))
                }
            }
        }
    }
}
