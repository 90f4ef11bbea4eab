import Testing
import IAPRoles
import IAPWire

/// A command or section of a kind this end does not know (a newer phone's)
/// is left out; the rest of the message still counts.
@Suite struct UnknownKindTests {
    static func decode(_ message: ControlMessage) throws -> MediaMessage? {
        try MediaMessage(try ControlMessage(decoding: message.encoded()))
    }

    @Test func anUnknownCommandLeavesTheRestOfTheSet() throws {
        func command(_ value: UInt8, enabled: Bool) throws -> Parameter {
            try .group(ParameterID.AdvertisedCommands.command, [
                .integer(ParameterID.AdvertisedCommand.command, value),
                .integer(ParameterID.AdvertisedCommand.enabled, UInt8(enabled ? 1 : 0)),
            ])
        }
        let pause = RemoteCommand.pause.kind.rawValue, next = RemoteCommand.nextTrack.kind.rawValue
        let message = ControlMessage(id: MessageID.advertisedCommands,
                                     parameters: [try command(pause, enabled: true), try command(250, enabled: true), try command(next, enabled: false)])
        #expect(try Self.decode(message) == .advertisedCommands([AdvertisedCommand(.pause, enabled: true), AdvertisedCommand(.nextTrack, enabled: false)]))
    }

    @Test func anUnknownSectionLeavesTheRestOfThePage() throws {
        let sections = [
            try Parameter.group(ParameterID.BrowseResponse.section, [.integer(ParameterID.Section.sectionIdentifier, UInt16(0)),
                                                                     .integer(ParameterID.Section.sectionKind, UInt8(1))]),
            try Parameter.group(ParameterID.BrowseResponse.section, [.integer(ParameterID.Section.sectionIdentifier, UInt16(1)),
                                                                     .integer(ParameterID.Section.sectionKind, UInt8(77))]),
        ]
        let message = ControlMessage(id: MessageID.browseResponse, parameters: [
            .integer(ParameterID.BrowseResponse.requestIdentifier, UInt32(5)), .integer(ParameterID.BrowseResponse.status, UInt8(0)),
            .integer(ParameterID.BrowseResponse.totalCount, UInt32(0)), .integer(ParameterID.BrowseResponse.offset, UInt32(0)),
        ] + sections)
        guard case .browseResponse(let response)? = try Self.decode(message) else {
            Issue.record("not decoded as a BrowseResponse")
            return
        }
        #expect(response.status == .success)
        #expect(response.sections == [ContentSection(id: 0, kind: .loading)])
    }
}
