import Testing
import IAPLink
import IAPRoles
import IAPWire

/// The head unit asks for a page; the phone sends that page, whatever its
/// data source hands back.
@Suite struct PageBoundTests {
    static func items(_ count: Int) -> [ContentItem] {
        (0..<count).map { ContentItem(id: "track:\($0)", kind: .playable, text: "Track \($0)") }
    }

    /// An app that returns more items than the page asked for (its whole
    /// list, say) gets only the page sent: the head unit sized its request
    /// to what it can show and hold.
    @Test func theBrowsePageIsCutToTheCountAskedFor() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        let outputs = phone.receive(try wire(.browseRequest(requestID: 4, containerID: "library", offset: 10, count: 3)), now: t0)
        let (token, load) = try #require(loads(outputs).first)
        #expect(load == .children(containerID: "library", offset: 10, count: 3))
        let answer = sent(phone.complete(token: token, with: .page(items: Self.items(5), sections: [], totalCount: 20), now: at(1)))
        guard case .browseResponse(let response) = try wire(try #require(answer.first)) else {
            Issue.record("no browse response: \(answer)")
            return
        }
        #expect(response.status == .success)
        #expect(response.items.map(\.id) == ["track:0", "track:1", "track:2"])
        #expect(response.offset == 10 && response.totalCount == 20)
    }

    /// The same for a page of the queue.
    @Test func theQueuePageIsCutToTheCountAskedFor() throws {
        var phone = makePhone()
        _ = phone.connect(now: t0)
        let outputs = phone.receive(try wire(.queueRequest(requestID: 5, offset: 0, count: 2)), now: t0)
        let (token, _) = try #require(loads(outputs).first)
        let answer = sent(phone.complete(token: token, with: .queue(items: Self.items(4), totalCount: 4, currentIndex: 1), now: at(1)))
        guard case .queueResponse(let response) = try wire(try #require(answer.first)) else {
            Issue.record("no queue response: \(answer)")
            return
        }
        #expect(response.status == .success)
        #expect(response.items.map(\.id) == ["track:0", "track:1"])
        #expect(response.totalCount == 4)
    }
}
