import Foundation
import IAPSampleApp
import Testing

/// The sample library's artwork is what the head-unit screen shows in a
/// browser: it must be a PNG any decoder takes, so the bytes are checked
/// against files written by Python's zlib (Fixtures/artwork/README.md).
@Suite struct SampleArtworkTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/artwork")

    @Test(arguments: [1, 2, 3])
    func artworkIsThePNGZlibWrites(scale: Int) throws {
        let expected = try [UInt8](Data(contentsOf: Self.fixtures.appendingPathComponent("kind-of-blue-\(scale)x.png")))
        let image = try #require(SampleLibrary.standard.image("art:kind-of-blue", scale: scale))
        #expect(image.count == expected.count)
        if image != expected {
            let at = zip(image, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(image.count, expected.count)
            Issue.record("scale \(scale): first difference at byte \(at) of \(expected.count)")
        }
    }

    @Test func scalesOutsideOneToThreeAreClamped() throws {
        let small = try #require(SampleLibrary.standard.image("art:kind-of-blue", scale: 0))
        let large = try #require(SampleLibrary.standard.image("art:kind-of-blue", scale: 9))
        #expect(small == SampleLibrary.standard.image("art:kind-of-blue", scale: 1))
        #expect(large == SampleLibrary.standard.image("art:kind-of-blue", scale: 3))
    }
}
