import Testing
import IAPHotplug
import IAPLink

@Suite struct RetryBackoffTests {
    /// udev can take a while to fix permissions: the supervisor keeps
    /// retrying, doubling the delay up to `maximumRetry` and staying there,
    /// never waiting longer however many attempts fail.
    @Test func theRetryDelayStaysAtItsCap() {
        var supervisor = DeviceSupervisor(configuration: .init(firstRetry: .milliseconds(100), maximumRetry: .seconds(2), maximumAttempts: 10))
        _ = supervisor.hotplug(.added(iPhone), now: ms(0))
        var delays: [Int64] = []
        var now = ms(0)
        for attempt in 1..<10 {
            #expect(supervisor.openFailed(iPhone.syspath, reason: "permission denied", retryable: true, now: now).isEmpty, "attempt \(attempt)")
            guard let due = supervisor.nextDeadline else {
                Issue.record("no retry scheduled after attempt \(attempt)")
                break
            }
            delays.append((due.nanoseconds - now.nanoseconds) / 1_000_000)
            now = due
            #expect(supervisor.tick(now: now) == [.open(iPhone, attempt: attempt + 1)])
        }
        #expect(delays == [100, 200, 400, 800, 1600, 2000, 2000, 2000, 2000])
        #expect(supervisor.openFailed(iPhone.syspath, reason: "permission denied", retryable: true, now: now)
            == [.gaveUp(iPhone, reason: "permission denied (after 10 attempts)")])
    }
}

@Suite struct EndpointDescriptorTests {
    /// wMaxPacketSize carries the packet size in bits 0-10 and, on
    /// high-speed periodic endpoints, extra transactions per microframe in
    /// bits 11-12: 0x1400 is 1024 bytes, three times a microframe. The size
    /// is reported without those bits.
    @Test func highBandwidthBitsAreNotPartOfThePacketSize() {
        let device: [UInt8] = [18, 1, 0x00, 0x02, 0, 0, 0, 64, 0xAC, 0x05, 0xA8, 0x12, 0x07, 0x11, 1, 2, 3, 1]
        let configuration: [UInt8] = [9, 2, 39, 0, 1, 1, 0, 0xC0, 250, 9, 4, 0, 0, 3, 0xFF, 0xF0, 0x00, 0,
                                      7, 5, 0x83, 3, 0x00, 0x14, 1,     // interrupt IN, 1024 bytes x 3
                                      7, 5, 0x81, 2, 0x00, 0x02, 0,     // bulk IN, 512
                                      7, 5, 0x01, 2, 0x00, 0x02, 0]     // bulk OUT, 512
        let descriptors = USBDescriptors(device + configuration)
        #expect(descriptors.problem == nil)
        let endpoints = descriptors.configurations.first?.interfaces.first?.endpoints ?? []
        #expect(endpoints.map(\.address) == [0x83, 0x81, 0x01])
        #expect(endpoints.map(\.maxPacketSize) == [1024, 512, 512])
        #expect(descriptors.iapInterface?.interface.bulkIn?.maxPacketSize == 512)
    }
}
