#if canImport(Glibc)
import Glibc
#endif
import Testing
import IAPTransport

@Suite struct TransportErrorTests {
    @Test func errorNumbersMapToKinds() {
        let table: [(Int32, TransportError.Kind)] = [
            (ECONNREFUSED, .refused),
            (ENETUNREACH, .unreachable), (EHOSTUNREACH, .unreachable), (ENETDOWN, .unreachable), (EHOSTDOWN, .unreachable),
            (ENOENT, .notFound), (ENODEV, .notFound), (ENXIO, .notFound),
            (EACCES, .permission), (EPERM, .permission),
            (EBUSY, .busy), (EADDRINUSE, .busy),
            (ETIMEDOUT, .timedOut),
            (EPIPE, .closed), (ECONNRESET, .closed), (ECONNABORTED, .closed), (ESHUTDOWN, .closed), (ENOTCONN, .closed),
            (EIO, .other), (EINVAL, .other), (ENOTTY, .other),
        ]
        for (code, kind) in table {
            #expect(TransportError.Kind(errno: code) == kind, "errno \(code)")
        }
    }

    @Test func anErrorNamesWhatFailedAndTheSystemsWords() {
        let error = TransportError("tcp:127.0.0.1:9: cannot connect", errno: ECONNREFUSED)
        #expect(error.kind == .refused)
        #expect(error.description == "tcp:127.0.0.1:9: cannot connect: Connection refused")
        let hinted = TransportError("cannot open /dev/ttyUSB0", errno: EACCES, hint: " (join dialout)")
        #expect(hinted == TransportError(.permission, "cannot open /dev/ttyUSB0: Permission denied (join dialout)"))
    }

    @Test func nameResolutionFailuresMapToKinds() {
        #expect(TransportError.Kind(addressInfoStatus: EAI_NONAME, errno: 0) == .notFound)
        #expect(TransportError.Kind(addressInfoStatus: EAI_AGAIN, errno: 0) == .unreachable)
        #expect(TransportError.Kind(addressInfoStatus: EAI_FAIL, errno: 0) == .unreachable)
        #expect(TransportError.Kind(addressInfoStatus: EAI_SYSTEM, errno: ENETUNREACH) == .unreachable)
        #expect(TransportError.Kind(addressInfoStatus: EAI_MEMORY, errno: 0) == .other)
    }
}
