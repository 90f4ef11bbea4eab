#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import SystemPackage

// The one place where what a C call reports becomes a `TransportError`:
// swift-system's `Errno` gives the words, and the kind is read from it.

extension TransportError.Kind {
    /// What a C error number means to a transport.
    public init(errno code: Int32) {
        switch Errno(rawValue: code) {
        case .connectionRefused: self = .refused
        case .networkUnreachable, .noRouteToHost, .networkDown, .hostIsDown: self = .unreachable
        case .noSuchFileOrDirectory, .operationNotSupportedByDevice, .noSuchAddressOrDevice: self = .notFound
        case .permissionDenied, .notPermitted: self = .permission
        case .resourceBusy, .addressInUse: self = .busy
        case .timedOut: self = .timedOut
        case .brokenPipe, .connectionReset, .connectionAbort, .socketShutdown, .socketNotConnected: self = .closed
        default: self = .other
        }
    }

    /// What a `getaddrinfo` status means: a name that does not exist is not
    /// found; a name service that cannot be asked leaves the host unreachable.
    public init(addressInfoStatus status: Int32, errno code: Int32) {
        switch status {
        case EAI_NONAME, Self.noAddressForName: self = .notFound
        case EAI_AGAIN, EAI_FAIL: self = .unreachable
        case EAI_SYSTEM: self.init(errno: code)
        default: self = .other
        }
    }

    /// glibc's EAI_NODATA (a name with no address), which the Glibc module
    /// does not export.
    private static let noAddressForName: Int32 = -5
}

extension TransportError {
    /// `what` failed with the C error `code`: the system's words for it
    /// follow, then `hint`, and the kind is the one `code` means.
    public init(_ what: String, errno code: Int32, hint: String = "") {
        self.init(Kind(errno: code), "\(what): \(Errno(rawValue: code).description)\(hint)")
    }

    /// `what` (resolving a host name) failed with a `getaddrinfo` status:
    /// its words follow (the error number's, for EAI_SYSTEM).
    init(_ what: String, addressInfoStatus status: Int32, errno code: Int32) {
        let words = status == EAI_SYSTEM ? Errno(rawValue: code).description : String(cString: gai_strerror(status))
        self.init(Kind(addressInfoStatus: status, errno: code), "\(what): \(words)")
    }

    /// Opens `path` through swift-system (retried when a signal interrupts
    /// it); a failure says `what` could not be done, with `hint` for the
    /// error numbers a person can fix.
    static func open(_ path: String, _ mode: FileDescriptor.AccessMode, options: FileDescriptor.OpenOptions, what: String,
                     hint: (Errno) -> String = { _ in "" }) throws(TransportError) -> Int32 {
        do {
            return try FileDescriptor.open(FilePath(path), mode, options: options.union(.closeOnExec)).rawValue
        } catch let failure as Errno {
            throw TransportError(what, errno: failure.rawValue, hint: hint(failure))
        } catch {
            throw TransportError(.other, "\(what): \(error)")
        }
    }
}
