import Testing
@testable import IAPWire

/// Inputs that made a fuzz entry point in Fuzz/ fail, minimised, kept so the
/// fixes stay fixed. See Docs/Fuzzing.md.
@Suite struct FuzzRegressionTests {
    /// Found by FuzzControlMessage: `Parameter.integer(as: Int8.self)` trapped
    /// ("Not enough bits to represent the passed value") on a one-byte
    /// parameter of 0x80 or more, because each byte was converted with `T(byte)`.
    /// Minimised from a 49-byte NowPlayingUpdate: one message 0x5001 holding
    /// parameter 0 with the single byte 0x81.
    @Test func signedIntegerAccessorDoesNotTrapOnHighBytes() throws {
        let input: [UInt8] = [0x40, 0x40, 0x00, 0x0B, 0x50, 0x01, 0x00, 0x05, 0x00, 0x00, 0x81]
        let message = try ControlMessage(decoding: input)
        let parameter = try #require(message.parameters.first)
        #expect(try parameter.integer(as: Int8.self) == -127)
        #expect(try parameter.integer(as: UInt8.self) == 0x81)
        #expect(Parameter.integer(parameter.id, Int8(-127)).data == parameter.data)
        // Wider signed types read the same bit pattern.
        #expect(try Parameter(id: 1, data: [0xFF, 0xFE]).integer(as: Int16.self) == -2)
        #expect(try Parameter(id: 1, data: [0x80, 0x00, 0x00, 0x00]).integer(as: Int32.self) == Int32.min)
        #expect(try Parameter(id: 1, data: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]).integer(as: Int64.self) == -1)
        // The catalog's reading of the same message does not trap either.
        _ = MessageCatalog.interpret(message)
    }
}
