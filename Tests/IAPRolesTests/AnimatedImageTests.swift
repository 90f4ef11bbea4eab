import Testing
import IAPRoles
import IAPWire

/// No animated image reaches the head unit (DOMAIN.md: GIF crashed the
/// platform), whatever its format; still images go through.
@Suite struct AnimatedImageTests {
    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let count = UInt32(data.count)
        return [UInt8(count >> 24), UInt8(count >> 16 & 0xFF), UInt8(count >> 8 & 0xFF), UInt8(count & 0xFF)]
            + Array(type.utf8) + data + [0, 0, 0, 0]  // the CRC is not read
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    static let header = chunk("IHDR", [0, 0, 0, 60, 0, 0, 0, 60, 8, 2, 0, 0, 0])
    static let animatedPNG = signature + header + chunk("acTL", [0, 0, 0, 2, 0, 0, 0, 0]) + chunk("IDAT", [1, 2, 3]) + chunk("IEND", [])
    static let stillPNG = signature + header + chunk("IDAT", [1, 2, 3]) + chunk("IEND", [])
    /// acTL after the image data is not an animation (APNG wants it before).
    static let lateAnimationChunk = signature + header + chunk("IDAT", [1, 2, 3]) + chunk("acTL", [0, 0, 0, 2, 0, 0, 0, 0])
    /// A chunk claiming more bytes than there are.
    static let truncatedPNG = signature + [0x7F, 0xFF, 0xFF, 0xFF] + Array("IHDR".utf8) + [0, 0]

    static func webP(_ kind: String, flags: UInt8) -> [UInt8] {
        Array("RIFF".utf8) + [30, 0, 0, 0] + Array("WEBP".utf8) + Array(kind.utf8) + [10, 0, 0, 0, flags] + [UInt8](repeating: 0, count: 9)
    }

    /// What the phone answers when the app gives `bytes` for an image.
    static func answer(_ bytes: [UInt8]) -> MediaMessage? {
        var phone = PhoneMediaRole(appName: "Test", commands: RemoteCommandCenter(supportedRates: [1]), offersContent: true)
        _ = phone.connect(now: t0)
        guard let token = loads(phone.receive(.imageRequest(requestID: 9, imageID: "art", scale: 2), now: t0)).first?.0 else {
            Issue.record("the phone did not ask the app for the image")
            return nil
        }
        return sent(phone.complete(token: token, with: .image(bytes), now: t0)).first
    }

    @Test(arguments: [("animated PNG", animatedPNG), ("animated WebP", webP("VP8X", flags: 0x02)),
                      ("animated WebP", webP("VP8X", flags: 0x12))])
    func animatedImagesAreRefusedNamingTheFormat(format: String, bytes: [UInt8]) {
        #expect(Self.answer(bytes) == .imageResponse(requestID: 9, .commandFailed, transferID: nil,
                                                     error: "animated images (\(format)) are not allowed"))
    }

    @Test(arguments: [stillPNG, lateAnimationChunk, truncatedPNG, webP("VP8X", flags: 0x10), webP("VP8 ", flags: 0x02)])
    func stillImagesGoThrough(bytes: [UInt8]) {
        guard case .imageResponse(9, .success, _?, nil)? = Self.answer(bytes) else {
            Issue.record("a still image was refused: \(String(describing: Self.answer(bytes)))")
            return
        }
    }
}
