import Foundation
import Testing
@testable import IAPScreen
import IAPLink
import IAPRoles
import IAPWire

/// Taps from the page: each JSON action decodes to the role action it names,
/// with its value; anything else is refused, never guessed.
@Suite struct ScreenActionTests {
    func decode(_ json: String) throws -> ScreenAction {
        try JSONDecoder().decode(ScreenAction.self, from: Data(json.utf8))
    }

    @Test func actionsDecodeWithTheirValues() throws {
        #expect(try decode(#"{"action":"open","id":"album:1"}"#) == .open("album:1"))
        #expect(try decode(#"{"action":"play","id":"covers","entry":"cover:2"}"#) == .play("covers", entry: "cover:2"))
        #expect(try decode(#"{"action":"command","name":"change_shuffle_mode","value":"songs"}"#) == .command(.changeShuffleMode(.items)))
        #expect(try decode(#"{"action":"command","name":"change_shuffle_mode","value":"albums"}"#) == .command(.changeShuffleMode(.collections)))
        #expect(try decode(#"{"action":"command","name":"change_repeat_mode","value":"one"}"#) == .command(.changeRepeatMode(.one)))
        #expect(try decode(#"{"action":"command","name":"change_playback_position","value":61000}"#) == .command(.changePlaybackPosition(milliseconds: 61_000)))
        #expect(try decode(#"{"action":"command","name":"skip_backward","value":15000}"#) == .command(.skipBackward(milliseconds: 15_000)))
        #expect(try decode(#"{"action":"command","name":"like"}"#) == .command(.like(true)))
        #expect(try decode(#"{"action":"press","button":"play/pause"}"#) == .press(.playPause))
        #expect(try decode(#"{"action":"image","id":"art:blue-train"}"#) == .image("art:blue-train"))
        #expect(try decode(#"{"action":"queue"}"#) == .queue)
        #expect(try decode(#"{"action":"queue_more"}"#) == .queueMore)
    }

    @Test func unknownActionsAndValuesAreRefused() {
        for json in [#"{"action":"format-disk"}"#, #"{"action":"command","name":"self_destruct"}"#,
                     #"{"action":"command","name":"change_repeat_mode","value":"sometimes"}"#, #"{"action":"press","button":"eject"}"#,
                     #"{"action":"open"}"#, #"not json"#] {
            #expect(throws: (any Error).self, "\(json)") { try decode(json) }
        }
    }

    @Test func actionsBecomeTheRoleRequests() throws {
        var role = HeadUnitMediaRole()
        let now = LinkInstant.milliseconds(1)
        // A phone that speaks the dev-kit extension (commands go as RemoteCommand).
        _ = role.receive(.appInformation(name: "App", hasContentTree: true), now: now)
        let outputs = try decode(#"{"action":"command","name":"change_shuffle_mode","value":"songs"}"#).perform(on: &role, now: now)
        guard case .send(.remoteCommand(_, let command))? = outputs.first else {
            Issue.record("no remote command sent: \(outputs)")
            return
        }
        #expect(command == .changeShuffleMode(.items))
        let opened = try decode(#"{"action":"open","id":"radio"}"#).perform(on: &role, now: now)
        guard case .send(.browseRequest(_, let container, let offset, _))? = opened.first else {
            Issue.record("no browse request: \(opened)")
            return
        }
        #expect(container == "radio" && offset == 0)
        // Up next's later page follows its first.
        guard case .send(.queueRequest(let id, 0, _))? = try decode(#"{"action":"queue"}"#).perform(on: &role, now: now).first else {
            Issue.record("no queue request")
            return
        }
        _ = role.receive(.queueResponse(QueueResponse(requestID: id, status: .success, totalCount: 60,
                                                      items: (0..<50).map { ContentItem(id: "q\($0)", kind: .playable, text: "\($0)") })), now: now)
        guard case .send(.queueRequest(_, 50, _))? = try decode(#"{"action":"queue_more"}"#).perform(on: &role, now: now).first else {
            Issue.record("no request for the queue's next page")
            return
        }
    }
}
