/// Recognises animated images, which the phone never sends (DOMAIN.md:
/// animated images crashed head units). Reads only what it needs, within
/// the bytes given.
enum AnimatedImage {
    /// The format's name when `bytes` hold an animated image: any GIF, a PNG
    /// with an animation control chunk (APNG), an animated WebP.
    static func format(of bytes: [UInt8]) -> String? {
        if bytes.starts(with: Array("GIF8".utf8)) { return "GIF" }
        if isAnimatedPNG(bytes) { return "animated PNG" }
        if isAnimatedWebP(bytes) { return "animated WebP" }
        return nil
    }

    static let pngSignature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// APNG declares itself with an `acTL` chunk before the first `IDAT`.
    static func isAnimatedPNG(_ bytes: [UInt8]) -> Bool {
        guard bytes.starts(with: pngSignature) else { return false }
        var offset = pngSignature.count
        while offset + 8 <= bytes.count {
            let length = bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
            let type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if type == "acTL" { return true }
            if type == "IDAT" || type == "IEND" { return false }
            // Length, type, data and CRC; a length past the end stops the walk.
            guard length <= bytes.count - offset - 12 else { return false }
            offset += 12 + length
        }
        return false
    }

    /// An extended WebP (`VP8X`) says in its flags whether it is animated.
    static func isAnimatedWebP(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 21, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8),
              Array(bytes[12..<16]) == Array("VP8X".utf8) else { return false }
        return bytes[20] & 0x02 != 0
    }
}
