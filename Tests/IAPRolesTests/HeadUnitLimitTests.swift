import Testing
import IAPSampleApp
import IAPLink
import IAPRoles
import IAPWire

/// The head unit states its limits up front and refuses what exceeds them
/// with a clear error; rows shown disabled cannot be selected.
@Suite struct HeadUnitLimitTests {
    static let limits = HeadUnitLimits(maximumTabs: 4, maximumPageSize: 3, maximumImageRowImages: 2, imageScale: 2)

    static func failures(_ outputs: [HeadUnitMediaRole.Output]) -> [(String, RequestStatus, String)] {
        outputs.compactMap { if case .event(.browseFailed(let id, let status, let reason)) = $0 { (id, status, reason) } else { nil } }
    }

    /// A head unit that opened `library` and was answered with `items`.
    static func answered(_ items: [ContentItem]) throws -> (HeadUnitMediaRole, [HeadUnitMediaRole.Output]) {
        var headUnit = HeadUnitMediaRole(limits: limits)
        _ = headUnit.connect(now: t0)
        guard case .browseRequest(let id, _, _, let count) = try #require(sent(headUnit.open("library", now: t0)).first) else {
            Issue.record("opening a container sent no browse request")
            return (headUnit, [])
        }
        #expect(count == 3)
        let response = BrowseResponse(requestID: id, status: .success, totalCount: UInt32(items.count), offset: 0, items: items, sections: [])
        let outputs = headUnit.receive(try wire(.browseResponse(response)), now: at(1))
        return (headUnit, outputs)
    }

    @Test func aPageLongerThanAskedForIsRefused() throws {
        let rows = (0..<4).map { ContentItem(id: "t\($0)", kind: .playable, text: "Track \($0)") }
        let (headUnit, outputs) = try Self.answered(rows)
        let failure = try #require(Self.failures(outputs).first)
        #expect(failure.0 == "library" && failure.1 == .exceedsLimits)
        #expect(failure.2.contains("4 rows") && failure.2.contains("at most 3"), "\(failure.2)")
        #expect(headUnit.containers["library"]?.items.isEmpty == true)
        #expect(headUnit.containers["library"]?.failure != nil)
        // A page of the size asked for is shown.
        let (shown, fine) = try Self.answered(Array(rows.prefix(3)))
        #expect(Self.failures(fine).isEmpty)
        #expect(shown.containers["library"]?.items.count == 3)
    }

    @Test func anImageRowWithMoreImagesThanShownIsRefused() throws {
        let entries = (0..<3).map { ContentItem.ImageRow.Entry(id: "e\($0)", imageID: "img:\($0)") }
        let row = ContentItem(id: "row", kind: .playable, text: "Covers", imageRow: ContentItem.ImageRow(title: "Covers", entries: entries))
        let (_, outputs) = try Self.answered([row])
        let failure = try #require(Self.failures(outputs).first)
        #expect(failure.1 == .exceedsLimits)
        #expect(failure.2.contains("3 images") && failure.2.contains("at most 2"), "\(failure.2)")
        var fitting = row
        fitting.imageRow?.entries.removeLast()
        #expect(Self.failures(try Self.answered([fitting]).1).isEmpty)
    }

    @Test func aDisabledRowOrAnUnselectableImageCannotBeSelected() throws {
        let entries = [ContentItem.ImageRow.Entry(id: "open", imageID: "img:1"), ContentItem.ImageRow.Entry(id: "closed", imageID: "img:2", selectable: false)]
        let rows = [ContentItem(id: "loading", kind: .playable, text: "Loading…", isEnabled: false),
                    ContentItem(id: "covers", kind: .playable, text: "Covers", imageRow: ContentItem.ImageRow(title: "Covers", entries: entries)),
                    ContentItem(id: "track", kind: .playable, text: "Track")]
        var (headUnit, _) = try Self.answered(rows)

        let disabled = headUnit.select("loading", now: at(2))
        #expect(sent(disabled).isEmpty)
        #expect(disabled == [.event(.selection(itemID: "loading", .commandFailed))])
        #expect(headUnit.selecting == nil)

        let closed = headUnit.select("covers", imageRowEntryID: "closed", now: at(2))
        #expect(sent(closed).isEmpty)
        #expect(closed == [.event(.selection(itemID: "covers", .commandFailed))])

        // Enabled rows, selectable images and items never shown (up next) go to the phone.
        #expect(sent(headUnit.select("covers", imageRowEntryID: "open", now: at(3))).count == 1)
        #expect(sent(headUnit.select("track", now: at(3))).count == 1)
        #expect(sent(headUnit.select("interlude", now: at(3))).count == 1)
        #expect(headUnit.selecting == "interlude")
    }

    @Test func theSampleAppDoesNotOfferSeekingItCannotDo() {
        let app = SampleApp()
        let advertised = Set(app.commandCenter().advertised.map(\.kind))
        #expect(!advertised.contains(.seekForward) && !advertised.contains(.seekBackward))
        _ = app.load(.play(itemID: "kind-of-blue:1", imageRowEntryID: nil), now: t0)
        #expect(app.perform(.seekForward(begin: true)) == .commandFailed)
        #expect(advertised.contains(.skipForward) && advertised.contains(.skipBackward))
    }
}
