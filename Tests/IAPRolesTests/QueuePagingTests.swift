import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// "Up next" is fetched page by page, as a container is: a long queue is
/// not cut to its first page.
@Suite struct QueuePagingTests {
    static func items(_ range: Range<Int>) -> [ContentItem] {
        range.map { ContentItem(id: "q\($0)", kind: .playable, text: "Queued \($0)") }
    }

    static func queueRequest(_ outputs: [HeadUnitMediaRole.Output]) -> (id: UInt32, offset: UInt32, count: UInt16)? {
        for case .queueRequest(let id, let offset, let count) in sent(outputs) { return (id, offset, count) }
        return nil
    }

    static let limits = HeadUnitLimits(maximumPageSize: 2)

    @Test func laterPagesAreAppendedUntilTheWholeQueueIsHeld() throws {
        var headUnit = HeadUnitMediaRole(limits: Self.limits)
        _ = headUnit.connect(now: t0)
        #expect(headUnit.loadMoreQueue(now: t0).isEmpty, "no later page before the first")
        let first = try #require(Self.queueRequest(headUnit.requestQueue(now: t0)))
        #expect(first.offset == 0 && first.count == 2)
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: first.id, status: .success, totalCount: 5, offset: 0, currentIndex: 3,
                                                                     items: Self.items(0..<2)))), now: at(1))
        let second = try #require(Self.queueRequest(headUnit.loadMoreQueue(now: at(2))))
        #expect(second.offset == 2 && second.count == 2)
        #expect(headUnit.isLoadingQueue)
        #expect(headUnit.loadMoreQueue(now: at(2)).isEmpty, "one page at a time")
        let answered = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: second.id, status: .success, totalCount: 5, offset: 2,
                                                                                currentIndex: 3, items: Self.items(2..<4)))), now: at(3))
        #expect(headUnit.queue?.items.map(\.id) == ["q0", "q1", "q2", "q3"])
        #expect(answered == [.event(.queue(try #require(headUnit.queue)))])
        let third = try #require(Self.queueRequest(headUnit.loadMoreQueue(now: at(4))))
        #expect(third.offset == 4)
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: third.id, status: .success, totalCount: 5, offset: 4, currentIndex: 3,
                                                                     items: Self.items(4..<5)))), now: at(5))
        #expect(headUnit.queue?.items.count == 5 && headUnit.queue?.currentIndex == 3)
        #expect(headUnit.loadMoreQueue(now: at(6)).isEmpty, "the whole queue is held")
    }

    @Test func aFailedOrUnansweredLaterPageKeepsTheItemsHeld() throws {
        var headUnit = HeadUnitMediaRole(limits: Self.limits, requestTimeout: .seconds(8))
        _ = headUnit.connect(now: t0)
        let first = try #require(Self.queueRequest(headUnit.requestQueue(now: t0)))
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: first.id, status: .success, totalCount: 6, items: Self.items(0..<2)))), now: at(1))
        let second = try #require(Self.queueRequest(headUnit.loadMoreQueue(now: at(2))))
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: second.id, status: .commandFailed, error: "offline"))), now: at(3))
        #expect(headUnit.queue?.items.count == 2)
        #expect(headUnit.queue?.status == .commandFailed && headUnit.queue?.error == "offline")
        #expect(headUnit.loadMoreQueue(now: at(4)).isEmpty, "no retry loop after a failure")

        // Opened again, then a later page the phone never answers.
        let again = try #require(Self.queueRequest(headUnit.requestQueue(now: at(5))))
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: again.id, status: .success, totalCount: 6, items: Self.items(0..<2)))), now: at(6))
        #expect(Self.queueRequest(headUnit.loadMoreQueue(now: at(7))) != nil)
        let expired = headUnit.tick(now: at(7) + .seconds(8))
        #expect(headUnit.queue?.items.count == 2 && headUnit.queue?.status == .timedOut)
        #expect(expired.count == 1)
    }

    @Test func aPageLongerThanAskedForIsRefused() throws {
        var headUnit = HeadUnitMediaRole(limits: Self.limits)
        _ = headUnit.connect(now: t0)
        let first = try #require(Self.queueRequest(headUnit.requestQueue(now: t0)))
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: first.id, status: .success, totalCount: 3, items: Self.items(0..<3)))), now: at(1))
        #expect(headUnit.queue?.status == .exceedsLimits && headUnit.queue?.items.isEmpty == true)
        #expect(headUnit.queue?.error?.contains("3 items") == true, "\(String(describing: headUnit.queue?.error))")
    }

    @Test func aStalePageIsNotAppended() throws {
        var headUnit = HeadUnitMediaRole(limits: Self.limits)
        _ = headUnit.connect(now: t0)
        let first = try #require(Self.queueRequest(headUnit.requestQueue(now: t0)))
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: first.id, status: .success, totalCount: 6, items: Self.items(0..<2)))), now: at(1))
        let second = try #require(Self.queueRequest(headUnit.loadMoreQueue(now: at(2))))
        // Up next opened again before the second page came: its first page replaces the queue.
        let reopened = try #require(Self.queueRequest(headUnit.requestQueue(now: at(3))))
        _ = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: reopened.id, status: .success, totalCount: 3, items: Self.items(10..<12)))), now: at(4))
        let late = headUnit.receive(try wire(.queueResponse(QueueResponse(requestID: second.id, status: .success, totalCount: 6, offset: 2,
                                                                             items: Self.items(2..<4)))), now: at(5))
        #expect(late.isEmpty)
        #expect(headUnit.queue?.items.map(\.id) == ["q10", "q11"])
    }
}
