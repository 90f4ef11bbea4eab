import Testing
import IAPTrace
import IAPWire

@Suite struct AnnotationTests {
    /// A caller's note on a parameter (an accessory certificate's summary,
    /// say) reaches both the text and the JSON output, and only that parameter's.
    @Test func notesOnParametersAreRendered() throws {
        let message = ControlMessage(id: MessageID.authenticationCertificate, parameters: [
            .blob(ParameterID.AuthenticationCertificate.certificate, [0x30, 0x03, 0x02, 0x01, 0x07]),
        ])
        let packet = try LinkPacket(control: .ack, sequence: 1, acknowledgement: 0, session: 1, payload: message.encoded()).encoded()
        let hex = "> " + packet.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined(separator: " ") + "\n"
        let options = TraceInputDecoder.Options(annotate: { id, parameter in
            id == MessageID.authenticationCertificate && parameter.id == ParameterID.AuthenticationCertificate.certificate ? "certificate: test note" : nil
        })
        let events = try decodeTrace(Array(hex.utf8), options: options).events
        let messages = events.filter { if case .message = $0.body { true } else { false } }
        let event = try #require(messages.first)
        #expect(TraceText.lines(for: event).contains { $0.hasSuffix("certificate: test note") })
        let json = try parseJSON(TraceJSON.line(for: event))
        let parameters = try #require(json["params"] as? [[String: Any]])
        #expect(parameters.first?["summary"] as? String == "certificate: test note")
        // Without a note, no summary key.
        let plain = try decodeTrace(Array(hex.utf8)).events.filter { if case .message = $0.body { true } else { false } }
        let plainJSON = try parseJSON(TraceJSON.line(for: try #require(plain.first)))
        #expect((plainJSON["params"] as? [[String: Any]])?.first?["summary"] == nil)
    }
}
