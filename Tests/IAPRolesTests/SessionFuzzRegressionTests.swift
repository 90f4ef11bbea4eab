import Testing
import IAPLink
import IAPRoles
import IAPWire

/// Findings of the FuzzSession fuzz target (Fuzz/, Docs/Fuzzing.md), each
/// with its minimised input. Replay one with
/// `Fuzz/.build-fuzz/release/FuzzSession <file with the bytes>`.
@Suite struct SessionFuzzRegressionTests {
    /// Link up, identification and media connection exchanged, the head unit
    /// selects an item, the phone asks the app to play it, and the app
    /// answers with a page of 252 items instead of "done". The phone's
    /// RequestStatus said "the app answered <the whole page> to <the
    /// request>": over 64 KiB of text, a message that does not encode, so the
    /// head unit never got an answer. Found as "the phone sent message 0xb103
    /// that does not encode".
    static let wrongAnswerTooLongToSay: [UInt8] = [0x0A, 0x0E, 0x07, 0x04, 0x05, 0x0E, 0x09, 0x9D, 0xFF, 0xFC]

    func connectedPhone() -> PhoneMediaRole {
        var phone = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(supportedRates: [1]), offersContent: true)
        _ = phone.connect(now: .zero)
        return phone
    }

    func load(_ outputs: [PhoneMediaRole.Output]) -> UInt32? {
        outputs.lazy.compactMap { if case .load(let token, _) = $0 { token } else { nil } }.first
    }

    @Test func aWrongAnswerFromTheAppIsReportedInAMessageThatEncodes() throws {
        var phone = connectedPhone()
        let token = try #require(load(phone.receive(.playItem(requestID: 7, itemID: String(repeating: "x", count: 60_000), imageRowEntryID: nil), now: .zero)))
        let items = (0..<252).map { ContentItem(id: "i\($0)", kind: .playable, text: "") }
        let answers = sent(phone.complete(token: token, with: .page(items: items, sections: [], totalCount: 252), now: .zero))
        #expect(answers.count == 1)
        for answer in answers {
            guard case .requestStatus(7, .commandFailed, let error?) = answer else {
                Issue.record("expected a failed RequestStatus for request 7, got \(answer)")
                continue
            }
            #expect(error.contains("a page") && error.contains("play"), "\(error)")
            #expect(throws: Never.self) { try answer.controlMessage.encoded() }
        }
    }

    @Test func anAppErrorTooLongForOneMessageIsCut() throws {
        var phone = connectedPhone()
        let token = try #require(load(phone.receive(.queueRequest(requestID: 3, offset: 0, count: 10), now: .zero)))
        let answers = sent(phone.complete(token: token, with: .failed(.commandFailed, String(repeating: "é", count: 40_000)), now: .zero))
        #expect(answers.count == 1)
        for answer in answers { #expect(throws: Never.self) { try answer.controlMessage.encoded() } }
    }
}
