@testable import IAPKit
import IAPRoles
import IAPLink
import IAPSession
import IAPWire
import Testing

/// A phone may send the artwork's file before the now-playing update that
/// names it; the head unit still shows it as the artwork.
@Suite struct ArtworkOrderTests {
    /// A head-unit core identified with a phone that sends what the test gives it.
    static func identifiedHeadUnit() throws -> Connection {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        var headUnit = Connection(.init(role: .accessory))
        _ = headUnit.linkUp(try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get(), now: .zero)
        _ = headUnit.received(session: 1, try ControlMessage(id: MessageID.startIdentification).encoded(), now: .milliseconds(1))
        _ = headUnit.received(session: 1, try ControlMessage(id: MessageID.identificationAccepted).encoded(), now: .milliseconds(2))
        return headUnit
    }

    @Test func aFileBeforeTheUpdateThatNamesItBecomesTheArtwork() throws {
        var headUnit = try Self.identifiedHeadUnit()
        var waiters = Waiters()
        let (_, feed) = AsyncStream<HeadUnit.Event>.makeStream()
        let cover: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 1, 2, 3]
        waiters.handle(.fileReceived(transferID: 9, bytes: cover), connection: headUnit, transportError: nil, feed: feed)
        #expect(waiters.artwork == nil)

        let update = MediaMessage.nowPlayingUpdate(NowPlayingUpdate(full: NowPlayingInfo(title: "So What", artworkTransferID: 9, state: .playing)))
        for case .event(let event) in headUnit.received(session: 1, try update.controlMessage.encoded(), now: .milliseconds(3)) {
            waiters.handle(event, connection: headUnit, transportError: nil, feed: feed)
        }
        #expect(waiters.nowPlaying.info.artworkTransferID == 9)
        #expect(waiters.artwork?.id == 9 && waiters.artwork?.bytes == cover)
        #expect(waiters.files.isEmpty)
    }
}
