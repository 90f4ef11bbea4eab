import Crypto
import Glibc
import X509
import _CryptoExtras

@testable import IAPAuthentication

/// SplitMix64: a seeded generator so challenges are reproducible.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A fresh directory under /tmp, removed with its files by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        var template = Array("/tmp/iap-auth-test-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Removes the directory and what is in it (nothing to do once it is gone).
    func remove() {
        if let dir = opendir(path) { removeEntries(dir) }
        rmdir(path)
    }

    private func removeEntries(_ dir: OpaquePointer) {
        var subdirectories: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(cString: $0.bindMemory(to: CChar.self).baseAddress!) }
            if name == "." || name == ".." { continue }
            let full = path + "/" + name
            if entry.pointee.d_type == UInt8(DT_DIR) { subdirectories.append(full) } else { unlink(full) }
        }
        closedir(dir)
        for sub in subdirectories { TemporaryDirectory(existing: sub).remove() }
    }

    private init(existing: String) { path = existing }
}

func fileMode(_ path: String) -> mode_t {
    var info = stat()
    precondition(stat(path, &info) == 0, "stat \(path)")
    return info.st_mode & 0o777
}

func writeFile(_ path: String, _ text: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    _ = Array(text.utf8).withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

func flipBit(_ bytes: [UInt8], at index: Int, bit: Int = 0) -> [UInt8] {
    var copy = bytes
    copy[index] ^= UInt8(1 << bit)
    return copy
}

/// Shared fixtures, made once per test process (keys are generated, never committed).
enum Fixtures {
    static let authority = try! TestAuthority.create(name: "iap-devkit test authority (tests)")
    static let accessoryKey = P256.Signing.PrivateKey()
    static let accessory = try! authority.issue(publicKey: Certificate.PublicKey(accessoryKey.publicKey))
    static let rsa1024 = try! _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
    static let rsa1024Certificate = try! authority.issue(
        publicKey: Certificate.PublicKey(rsa1024.publicKey), commonName: "2.0C accessory")

    static let fast = CoprocessorAuthenticator.Configuration(
        attempts: 5, retryDelay: .zero, statusPolls: 10, pollInterval: .zero)
}
