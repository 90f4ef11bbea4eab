import Dispatch
import Foundation
import IAPEndpoint
import IAPRoles
import ArgumentParser
import Logging

/// Where `iapctl head-unit` keeps the phone libraries it synced, one JSON
/// file per library (its identifier names one phone's library): read when
/// the head unit starts, so a returning phone is asked for what changed
/// since the revision kept; written whenever a library reaches 100 %.
struct MediaLibraryCache: Sendable {
    let directory: String
    private static let writer = DispatchQueue(label: "iap.library-cache")

    /// $XDG_CACHE_HOME/iap-devkit/media-libraries, else ~/.cache/iap-devkit/media-libraries.
    static func defaultDirectory(environment: [String: String]) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], !cache.isEmpty { return cache + "/iap-devkit/media-libraries" }
        if let home = environment["HOME"], !home.isEmpty { return home + "/.cache/iap-devkit/media-libraries" }
        return nil
    }

    /// Every library kept; a file that does not read is skipped and said.
    func load(logger: Logger) -> [MediaLibraryMirror] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var mirrors: [MediaLibraryMirror] = []
        for name in names.sorted() where name.hasSuffix(".json") {
            let path = directory + "/" + name
            do {
                mirrors.append(try JSONDecoder().decode(MediaLibraryMirror.self, from: Data(contentsOf: URL(fileURLWithPath: path))))
            } catch {
                logger.warning("media library cache \(path) does not read (\(error)); the library will be synced whole")
            }
        }
        if !mirrors.isEmpty {
            logger.info("media library cache: \(mirrors.map { "\($0.description.name) at revision \($0.revision ?? "none")" }.joined(separator: ", "))")
        }
        return mirrors
    }

    /// Writes a library off the caller's thread (whole files: a temporary then a rename).
    func save(_ mirror: MediaLibraryMirror, logger: Logger) {
        let path = directory + "/" + Self.fileName(mirror.description.uniqueIdentifier)
        let directory = self.directory
        Self.writer.async {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                let data = try JSONEncoder().encode(mirror)
                try data.write(to: URL(fileURLWithPath: path), options: .atomic)
                logger.debug("media library \(mirror.description.uniqueIdentifier) kept in \(path)")
            } catch {
                logger.warning("media library \(mirror.description.uniqueIdentifier) not kept in \(path): \(error)")
            }
        }
    }

    /// Waits for the writes asked for so far.
    static func flush() { writer.sync {} }

    /// A file name for any identifier: its characters that are safe, and a digest of the whole.
    static func fileName(_ identifier: String) -> String {
        let safe = String(identifier.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-") }.prefix(40))
        return safe + "-" + String(ContentIdentifier.of("cache", [identifier]), radix: 16) + ".json"
    }
}

/// How `head-unit` keeps phone libraries between runs.
struct MediaLibraryCacheOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Where to keep the phone libraries synced (Media Library Access), so a phone that comes back sends only what changed; `off` keeps none. Default $XDG_CACHE_HOME/iap-devkit/media-libraries, else ~/.cache/iap-devkit/media-libraries.",
                               valueName: "directory|off"))
    var libraryCache: String?

    /// The cache, or nil when it is off or has no place.
    var cache: MediaLibraryCache? {
        if libraryCache == "off" { return nil }
        guard let directory = libraryCache ?? MediaLibraryCache.defaultDirectory(environment: ProcessInfo.processInfo.environment) else { return nil }
        return MediaLibraryCache(directory: directory)
    }
}
