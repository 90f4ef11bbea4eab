import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// A peer that repeats a mistake without end must not fill the log: found by
/// a hostile TCP peer that sent 12,000 StartNowPlayingUpdates before
/// identifying, which made `iapctl phone` write 12,239 warning lines.
@Suite struct ProblemBudgetTests {
    func linked(_ role: LinkRole) throws -> Connection {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        var connection = Connection(.init(role: role, authentication: .off))
        _ = connection.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
        return connection
    }

    func problems(_ outputs: [Connection.Output]) -> [String] {
        outputs.compactMap { if case .event(.problem(let problem)) = $0 { problem } else { nil } }
    }

    @Test func aFloodBeforeIdentificationIsReportedOneByOneOnlyAtFirst() throws {
        var phone = try linked(.device)
        let early = try ControlMessage(id: MessageID.startNowPlayingUpdates).encoded()
        var reported: [String] = []
        for index in 0..<1000 {
            let outputs = phone.received(session: 1, early, now: .milliseconds(Int64(index)))
            #expect(outputs.allSatisfy { if case .send = $0 { false } else { true } }, "answered a message sent before identification")
            reported += problems(outputs)
        }
        let limit = Connection.problemsReportedPerLink
        #expect(Array(reported.prefix(limit)) == Array(repeating: "the accessory sent StartNowPlayingUpdates before identification finished; ignored", count: limit))
        // Then the count as it doubles: 64, 128, 256, 512.
        #expect(Array(reported.dropFirst(limit)) == [64, 128, 256, 512].map {
            "\($0) problems on this link so far; past the first \(limit) they are counted, not reported one by one"
        })
        let down = problems(phone.linkDown(now: .milliseconds(2_000)))
        #expect(down == ["1000 problems on this link, the last \(1000 - limit) of them not reported one by one"])
    }

    @Test func theBudgetIsPerLink() throws {
        var headUnit = try linked(.accessory)
        let early = try ControlMessage(id: MessageID.nowPlayingUpdate).encoded()
        for _ in 0..<40 { _ = headUnit.received(session: 1, early, now: .zero) }
        #expect(problems(headUnit.linkDown(now: .zero)).count == 1)
        headUnit = try linked(.accessory)
        let again = problems(headUnit.received(session: 1, early, now: .zero))
        #expect(again == ["the device sent NowPlayingUpdate before identification was accepted; ignored"])
        // Under the budget, going down adds nothing.
        #expect(problems(headUnit.linkDown(now: .zero)).isEmpty)
    }
}
