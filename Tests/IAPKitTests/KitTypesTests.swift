@testable import IAPKit
import IAPRoles
import IAPSession
import Testing

/// IAPKit's own names for what an app meets: each stands for exactly the
/// value of the layer below it names.
@Suite struct KitTypesTests {
    @Test func eachButtonPressesTheRemoteButtonOfItsName() {
        let pressed = HeadUnit.Button.allCases.map(\.hidButton)
        #expect(Set(pressed) == Set(HIDRemote.Button.allCases), "every remote button, each once")
        for button in HeadUnit.Button.allCases {
            // "next track" for nextTrack, "play/pause" for playPause.
            #expect(button.hidButton.description.filter(\.isLetter) == button.rawValue.lowercased(), "\(button)")
        }
    }

    @Test func eachStageIsTheSessionStageOfItsName() {
        let stages: [(Connection.Stage, HeadUnit.Stage)] = [
            (.disconnected, .disconnected), (.authenticating, .authenticating), (.identifying, .identifying),
            (.identified("Dev Kit"), .identified("Dev Kit")), (.failed("authentication failed: no"), .failed("authentication failed: no")),
        ]
        for (session, kit) in stages {
            #expect(HeadUnit.Stage(session) == kit)
            #expect(kit.description == session.description)
        }
    }

    @Test func aContainerIsWhatTheRoleLoadedWithoutItsLoadingState() {
        let items = [ContentItem(id: "a", kind: .playable, text: "A"), ContentItem(id: "b", kind: .playable, text: "B")]
        let loaded = HeadUnit.Container(HeadUnitMediaRole.ContainerState(items: items, totalCount: 3, loading: true))
        #expect(loaded.items == items && loaded.totalCount == 3 && !loaded.isComplete)
        #expect(HeadUnit.Container(items: items, totalCount: 2).isComplete)
    }
}
