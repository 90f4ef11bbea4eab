import Testing
import IAPLink
import IAPRoles
import IAPWire

/// A control message that is started and never finished must not hold the
/// control session silently: it is reported (id, bytes held, bytes expected),
/// dropped, and the channel resynchronises.
@Suite struct IncompleteControlMessageTests {
    static func at(_ seconds: Double) -> LinkInstant { LinkInstant(nanoseconds: Int64((seconds * 1e9).rounded())) }

    /// The start of message 0x5001 declaring 100 bytes, 22 of them sent.
    static func partial() -> [UInt8] {
        [0x40, 0x40, 0x00, 0x64, 0x50, 0x01] + [UInt8](repeating: 0x00, count: 16)
    }

    static func messages(_ inputs: [ControlChannel.Input]) -> [ControlMessage] {
        inputs.compactMap { if case .message(let message) = $0 { message } else { nil } }
    }

    @Test func partialHeldPastTheSilenceBoundIsReportedAndDropped() throws {
        var channel = ControlChannel()
        #expect(channel.silenceBound == .seconds(10))
        let first = channel.receive(Self.partial(), now: Self.at(0))
        #expect(first.inputs.isEmpty && first.incomplete.isEmpty)
        #expect(channel.deadline == Self.at(10))
        // A complete message sent after it is taken as its continuation.
        let next = try ControlMessage(id: 0x1D02).encoded()
        let second = channel.receive(next, now: Self.at(5))
        #expect(second.inputs.isEmpty)
        #expect(channel.pendingMessage?.held == 28)
        #expect(channel.expire(now: Self.at(9.999)).incomplete.isEmpty, "given up before the bound")
        // Given up at its deadline: a caller that ticks at `deadline` sees it go.
        let expired = channel.expire(now: Self.at(10.001))
        let incomplete = try #require(expired.incomplete.first)
        #expect(expired.incomplete.count == 1)
        #expect(incomplete.id == 0x5001)
        #expect(incomplete.held == 28)
        #expect(incomplete.expected == 100)
        #expect(incomplete.reason == .waited(.milliseconds(10_001)))
        #expect(incomplete.description.contains("0x5001") && incomplete.description.contains("28 of 100 bytes"))
        // Reported to callers that only read inputs, and the swallowed message is delivered.
        #expect(expired.inputs.contains(.problem(incomplete.description)))
        #expect(Self.messages(expired.inputs) == [ControlMessage(id: 0x1D02)])
        #expect(channel.pendingMessage == nil)
        #expect(channel.deadline == nil)
        // The session works afterwards.
        let after = channel.receive(try ControlMessage(id: 0x1D03).encoded(), now: Self.at(11))
        #expect(Self.messages(after.inputs) == [ControlMessage(id: 0x1D03)])
    }

    @Test func receivingPastTheBoundAlsoGivesUp() throws {
        var channel = ControlChannel(silenceBound: .seconds(2))
        _ = channel.receive(Self.partial(), now: Self.at(0))
        // Bytes keep arriving, but the message started 3 s ago.
        let later = channel.receive(try ControlMessage(id: 0x1D02).encoded(), now: Self.at(3))
        #expect(later.incomplete.map(\.id) == [0x5001])
        #expect(Self.messages(later.inputs) == [ControlMessage(id: 0x1D02)])
    }

    @Test func headerWithoutIdIsReportedWithoutOne() throws {
        var channel = ControlChannel()
        _ = channel.receive([0x40, 0x40, 0x00], now: Self.at(1))
        let expired = channel.expire(now: Self.at(12))
        let incomplete = try #require(expired.incomplete.first)
        #expect(incomplete.id == nil)
        #expect(incomplete.held == 3)
        #expect(incomplete.expected == nil)
    }

    @Test func declaredLengthOverTheBoundIsReportedAtOnce() throws {
        var channel = ControlChannel(maximumMessageLength: 64)
        let header: [UInt8] = [0x40, 0x40, 0x00, 0xC8, 0x50, 0x01, 0x00, 0x00]
        let next = try ControlMessage(id: 0x1D02).encoded()
        let output = channel.receive(header + next, now: Self.at(0))
        let incomplete = try #require(output.incomplete.first)
        #expect(incomplete.id == 0x5001)
        #expect(incomplete.expected == 200)
        #expect(incomplete.held == 14)
        #expect(incomplete.reason == .overBound(maximum: 64))
        #expect(Self.messages(output.inputs) == [ControlMessage(id: 0x1D02)])
        #expect(channel.pendingMessage == nil)
        // The time-less receive reports it too.
        var plain = ControlChannel(maximumMessageLength: 64)
        let inputs = plain.receive(header + next).inputs
        #expect(inputs.contains(.problem(incomplete.description)))
        #expect(Self.messages(inputs) == [ControlMessage(id: 0x1D02)])
    }

    /// A partial message inside the dropped bytes is timed from when the
    /// dropped one was, not given a fresh bound.
    @Test func nestedPartialKeepsTheOriginalStart() throws {
        var channel = ControlChannel()
        _ = channel.receive(Self.partial(), now: Self.at(0))
        _ = channel.receive([0x40, 0x40, 0x00, 0x20, 0x1D, 0x02, 0x00], now: Self.at(1))
        let expired = channel.expire(now: Self.at(10.5))
        #expect(expired.incomplete.map(\.id) == [0x5001, 0x1D02])
        #expect(channel.pendingMessage == nil)
    }
}
