import Testing
import IAPLink
import IAPRoles
import IAPWire

/// The head unit's pages of a container: rows in order, sections kept by id.
@Suite struct PagingTests {
    static func items(_ range: Range<Int>, section: UInt16) -> [ContentItem] {
        range.map { ContentItem(id: "t\($0)", kind: .playable, text: "Track \($0)", section: section) }
    }

    /// The request id of the one browse request in `outputs`.
    static func browseID(_ outputs: [HeadUnitMediaRole.Output]) -> UInt32? {
        for message in sent(outputs) { if case .browseRequest(let id, _, _, _) = message { return id } }
        Issue.record("no browse request in \(outputs)")
        return nil
    }

    static func connected() -> HeadUnitMediaRole {
        var headUnit = HeadUnitMediaRole()
        _ = headUnit.connect(now: t0)
        return headUnit
    }

    @Test func sectionsOfEarlierPagesAreKept() throws {
        var headUnit = Self.connected()
        let first = try #require(Self.browseID(headUnit.open("album", now: t0)))
        _ = headUnit.receive(.browseResponse(BrowseResponse(
            requestID: first, status: .success, totalCount: 4, offset: 0, items: Self.items(0..<2, section: 0),
            sections: [ContentSection(id: 0, kind: .playAll(itemCount: 4)), ContentSection(id: 1, kind: .plain(title: "Side A"))])), now: t0)
        let second = try #require(Self.browseID(headUnit.loadMore("album", now: t0)))
        _ = headUnit.receive(.browseResponse(BrowseResponse(
            requestID: second, status: .success, totalCount: 4, offset: 2, items: Self.items(2..<4, section: 1),
            sections: [ContentSection(id: 1, kind: .plain(title: "Side B"))])), now: t0)
        let state = try #require(headUnit.containers["album"])
        #expect(state.items.map(\.id) == ["t0", "t1", "t2", "t3"])
        #expect(state.sections == [ContentSection(id: 0, kind: .playAll(itemCount: 4)), ContentSection(id: 1, kind: .plain(title: "Side B"))])
        #expect(state.isComplete)
    }

    @Test func aPageAskedForBeforeTheContainerWasOpenedAgainIsNotShown() throws {
        var headUnit = Self.connected()
        let first = try #require(Self.browseID(headUnit.open("album", now: t0)))
        _ = headUnit.receive(.browseResponse(BrowseResponse(requestID: first, status: .success, totalCount: 4, offset: 0,
                                                            items: Self.items(0..<2, section: 0))), now: t0)
        let stale = try #require(Self.browseID(headUnit.loadMore("album", now: t0)))
        let reopened = try #require(Self.browseID(headUnit.open("album", now: t0)))
        // The second page of the first opening arrives first.
        let staleOutputs = headUnit.receive(.browseResponse(BrowseResponse(requestID: stale, status: .success, totalCount: 4, offset: 2,
                                                                           items: Self.items(2..<4, section: 0))), now: t0)
        #expect(staleOutputs.isEmpty)
        #expect(headUnit.containers["album"]?.items.isEmpty == true)
        #expect(headUnit.containers["album"]?.loading == true, "the reopening's load is still in progress")
        _ = headUnit.receive(.browseResponse(BrowseResponse(requestID: reopened, status: .success, totalCount: 4, offset: 0,
                                                            items: Self.items(0..<2, section: 0))), now: t0)
        #expect(headUnit.containers["album"]?.items.map(\.id) == ["t0", "t1"])
    }
}
