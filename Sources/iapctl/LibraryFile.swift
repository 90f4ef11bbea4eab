import Foundation
import IAPDemo
import IAPRoles

/// A library for `iapctl phone --library`: the JSON form of SampleLibrary
/// (Docs/Messages.md shows an example).
enum LibraryFile {
    static func load(_ path: String) throws -> SampleLibrary {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CommandFailure(message: "cannot read the library \(path): \(error.localizedDescription)")
        }
        let library: SampleLibrary
        do {
            library = try JSONDecoder().decode(SampleLibrary.self, from: data)
        } catch let DecodingError.keyNotFound(key, context) {
            throw CommandFailure(message: "\(path): missing \"\(key.stringValue)\" at \(where_(context))")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            throw CommandFailure(message: "\(path): wrong type at \(where_(context)): \(context.debugDescription)")
        } catch let DecodingError.dataCorrupted(context) {
            throw CommandFailure(message: "\(path): not valid JSON at \(where_(context)): \(context.debugDescription)")
        }
        let problems = library.problems
        guard problems.isEmpty else { throw CommandFailure(message: "\(path): " + problems.joined(separator: "; ")) }
        return library
    }

    private static func where_(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "the top level" : path
    }

    /// The built-in library as JSON: a starting point for your own.
    static func example() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return String(decoding: try encoder.encode(SampleLibrary.standard), as: UTF8.self)
    }
}
