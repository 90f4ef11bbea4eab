import Testing
import IAPLink
import IAPRoles
import IAPSession
import IAPWire

/// A head unit that asks for images and never takes the files cannot make
/// the phone hold more than `maximumOpenFileTransfers` of them.
@Suite struct FileTransferBoundTests {
    @Test func filesTheHeadUnitNeverTakesAreDroppedOldestFirst() throws {
        let proposal = LinkParameters().synchronization
        let answer = try LinkNegotiation.answer(to: proposal, limits: LinkParameters()).get()
        let link = try LinkNegotiation.accept(answer: answer.answer, proposal: proposal).get()
        let fileSession = try #require(link.sessions.first { $0.type == .fileTransfer }?.id)
        var phone = Connection(.init(role: .device, authentication: .off),
                               phone: PhoneMediaRole(appName: "App", commands: RemoteCommandCenter(), offersContent: true))
        _ = phone.linkUp(link, now: .zero)
        _ = phone.received(session: 1, try AccessoryIdentity.devKitHeadUnit.message.encoded(), now: .zero)

        let count = Connection.maximumOpenFileTransfers + 4
        var setups: [UInt8] = []
        var problems: [String] = []
        for request in 1...count {
            let ask = try MediaMessage.imageRequest(requestID: UInt32(request), imageID: "cover", scale: 2).controlMessage.encoded()
            let asked = phone.received(session: 1, ask, now: .milliseconds(Int64(request)))
            for case .load(let token, _) in asked {
                for output in phone.complete(token: token, with: .image([UInt8](repeating: 7, count: 100)), at: .milliseconds(Int64(request)),
                                             now: .milliseconds(Int64(request))) {
                    switch output {
                    case .send(fileSession, let bytes):
                        let datagram = try FileTransferDatagram(decoding: bytes)
                        if datagram.control == .setup { setups.append(datagram.transferID) }
                    case .event(.problem(let text)): problems.append(text)
                    default: break
                    }
                }
            }
        }
        #expect(setups.count == count)
        #expect(problems.count == 4, "\(problems)")
        #expect(problems.first?.contains("file transfer \(setups[0]) dropped") == true, "\(problems)")

        // The head unit starts the oldest, dropped: unknown. The newest is still there and sends its data.
        let late = phone.received(session: fileSession, FileTransferDatagram(transferID: setups[0], control: .start).encoded(), now: .milliseconds(1000))
        #expect(late.contains { if case .event(.problem(let text)) = $0 { text.contains("unknown transfer \(setups[0])") } else { false } })
        let newest = phone.received(session: fileSession, FileTransferDatagram(transferID: setups[count - 1], control: .start).encoded(), now: .milliseconds(1000))
        #expect(newest.contains { if case .send(fileSession, _) = $0 { true } else { false } })
    }
}
