import IAPRoles
@testable import IAPScreen
import Testing

/// The header's status line reads as words, never as ids or wire names.
@Suite struct ScreenStatusTests {
    @Test func statusesNameWhatHappened() {
        #expect(ScreenStatus.selection(title: "Blue in Green", id: "kind-of-blue:3", .success) == "Playing “Blue in Green”")
        #expect(ScreenStatus.selection(title: nil, id: "x:1", .noSuchContent) == "Could not play “x:1”: \(RequestStatus.noSuchContent)")
        #expect(ScreenStatus.command(.changeShuffleMode(.items), .success) == "Shuffle: songs")
        #expect(ScreenStatus.command(.changeShuffleMode(.collections), .success) == "Shuffle: albums")
        #expect(ScreenStatus.command(.changeRepeatMode(.one), .success) == "Repeat: one")
        #expect(ScreenStatus.command(.skipBackward(milliseconds: 15_000), .success) == "Back 15 s")
        #expect(ScreenStatus.command(.changePlaybackPosition(milliseconds: 61_000), .success) == "Position 1:01")
        #expect(ScreenStatus.command(.nextTrack, .commandFailed) == "Next track: \(RequestStatus.commandFailed)")
        #expect(ScreenStatus.browseFailed(title: "Radio", id: "radio", .timedOut, reason: "the phone did not answer") == "Could not open “Radio”: the phone did not answer")
        #expect(ScreenStatus.browseFailed(title: nil, id: "", .timedOut, reason: "") == "Could not open the tabs: \(RequestStatus.timedOut)")
    }
}
