import IAPTransport
import IAPUSB
import IAPWire

extension TransportSpec {
    /// Opens the transport this spec names, as every `iapctl` command does:
    /// `tcp:HOST:PORT`, `tcp-listen:HOST:PORT`, `serial:PATH@BAUD`,
    /// `usb:VID:PID` or `usb:auto`. Nothing is read or written until the
    /// transport is started. `loopback` has two ends: use `openPair()`.
    public func open() throws(TransportError) -> any Transport {
        if case .loopback = self {
            throw TransportError(.invalidSpec, "loopback has two ends in one process: open it with openPair() and give one to each role")
        }
        return openPair().0
    }

    /// Opens the transport; for `loopback`, both ends of an in-memory wire
    /// (the second for the other role), otherwise the one transport and nil.
    /// `hidReportLength`: for a phone reached over USB HID, how many bytes
    /// each SET_REPORT carries (`IAPHIDReportWriter.LengthForm`).
    public func openPair(hidReportLength: IAPHIDReportWriter.LengthForm = .full) -> (any Transport, (any Transport)?) {
        switch self {
        case .loopback:
            let instant = WireFaults(delay: .zero)
            let (first, second) = LoopbackTransport.pair(towardsSecond: instant, towardsFirst: instant)
            return (first, second)
        case .tcp(let host, let port):
            return (TCPTransport.connect(host: host, port: port), nil)
        case .tcpListen(let host, let port):
            return (TCPTransport.listen(host: host, port: port), nil)
        case .serial(let path, let baud):
            return (SerialTransport.open(path: path, baud: baud), nil)
        case .usb(let vendor, let product):
            return (USBHostTransport(selector: USBDeviceSelector(vendorID: vendor, productID: product), hidLengthForm: hidReportLength), nil)
        }
    }
}
