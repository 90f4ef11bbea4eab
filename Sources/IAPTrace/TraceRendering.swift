import IAPWire

/// Renders trace events as JSON lines: the stable interface documented in
/// Docs/Tracing.md. Keys are snake_case; one object per line.
public enum TraceJSON {
    public static func line(for event: TraceEvent) -> String {
        var bytes = OutputBytes()
        write(event, into: &bytes)
        return bytes.string
    }

    /// Appends the event's JSON object (without a line break) to `buffer`,
    /// building no string on the way.
    public static func write(_ event: TraceEvent, into buffer: inout OutputBytes) {
        var json = JSONObjectWriter(appendingTo: &buffer)
        json.string("kind", event.kind)
        json.stringOrNull("dir", event.direction?.rawValue)
        json.integer("offset", event.offset)
        if let frame = event.frame { json.integer("frame", frame) }
        if let line = event.line { json.integer("line", line) }
        if let endpoint = event.endpoint {
            json.integer("bus", Int(endpoint.bus))
            json.integer("device", Int(endpoint.device))
            json.integer("endpoint", Int(endpoint.endpoint))
        }
        switch event.body {
        case .detect:
            break
        case .link(let info):
            json.integer("seq", Int(info.header.sequence))
            json.integer("ack", Int(info.header.acknowledgement))
            json.integer("session", Int(info.header.session))
            json.rawBytes("control", controlNames[Int(info.header.control.rawValue)])
            json.integer("length", info.header.length)
            json.integer("payload_length", info.header.payloadLength)
            json.bool("checksums_ok", info.checksumsOK)
            json.bool("retransmission", info.retransmission)
            if let sync = info.sync { json.object("sync") { writeSync(sync, into: &$0) } }
            if let error = info.syncError { json.string("sync_error", error) }
            if let eak = info.eak {
                json.array("eak") { array in
                    for sequence in eak { array.integer(Int(sequence)) }
                }
            }
            if let datagram = info.datagram { json.object("datagram") { writeDatagram(datagram, into: &$0) } }
        case .message(let info):
            json.integer("session", Int(info.session))
            json.integer("id", Int(info.id))
            json.stringOrNull("name", info.name)
            json.integer("length", info.length)
            json.array("params") { writeParameters(info.parameters, annotations: info.annotations, into: &$0) }
        case .iap1(let info):
            json.integer("lingo", Int(info.lingo))
            json.integer("command", Int(info.command))
            json.stringOrNull("name", info.name)
            json.stringOrNull("lingo_name", IAP1Catalog.lingoNames[info.lingo])
            if let transaction = info.transaction { json.integer("transaction", Int(transaction)) } else { json.null("transaction") }
            json.bool("checksum_ok", info.checksumOK)
            json.hex("data", info.data)
            if let error = info.error { json.string("error", error) }
        case .skipped(let info):
            json.integer("bytes", info.count)
            json.string("reason", info.reason)
            if let detail = info.detail { json.string("detail", detail) }
        }
        // Added keys go last, so that the existing keys keep their neighbours.
        if let time = event.time { json.seconds("t", nanoseconds: time) }
        json.finish(into: &buffer)
    }

    /// The `control` array for each value of the control byte, encoded once:
    /// `["SYN","ACK"]`.
    private static let controlNames: [[UInt8]] = (0...255).map { value in
        var bytes = OutputBytes()
        var array = JSONArrayWriter(appendingTo: &bytes)
        for name in LinkControl(rawValue: UInt8(value)).names { array.string(name) }
        array.finish(into: &bytes)
        return bytes.withUnsafeBytes { Array($0) }
    }

    static func writeSync(_ sync: LinkSynchronization, into json: inout JSONObjectWriter) {
        json.integer("version", Int(sync.version))
        json.integer("max_outstanding", Int(sync.maximumOutstandingPackets))
        json.integer("max_packet_length", Int(sync.maximumPacketLength))
        json.integer("retransmit_timeout_ms", Int(sync.retransmitTimeoutMilliseconds))
        json.integer("cumulative_ack_timeout_ms", Int(sync.cumulativeAckTimeoutMilliseconds))
        json.integer("max_retransmissions", Int(sync.maximumRetransmissions))
        json.integer("max_cumulative_acks", Int(sync.maximumCumulativeAcks))
        json.bool("zero_ack", sync.isZeroAck)
        json.array("sessions") { array in
            for session in sync.sessions {
                array.object { entry in
                    entry.integer("id", Int(session.id))
                    entry.integer("type", Int(session.type.rawValue))
                    entry.string("type_name", session.type.name)
                    entry.integer("version", Int(session.version))
                }
            }
        }
        let violations = sync.violations
        if !violations.isEmpty {
            json.array("violations") { array in
                for violation in violations { array.string(violation) }
            }
        }
    }

    static func writeDatagram(_ datagram: DatagramInfo, into json: inout JSONObjectWriter) {
        json.string("session_type", datagram.sessionType.name)
        json.integer("length", datagram.length)
        if let transfer = datagram.fileTransfer {
            json.integer("transfer_id", Int(transfer.transferID))
            json.integer("opcode", Int(transfer.control.rawValue))
            json.string("opcode_name", transfer.control.name)
            if let size = transfer.fileSize { json.integer("file_size", size) }
            if transfer.control.carriesData { json.integer("data_length", transfer.body.count) }
        }
        if let session = datagram.externalAccessorySession { json.integer("ea_session", Int(session)) }
        if let error = datagram.error { json.string("error", error) }
    }

    static func writeParameters(_ parameters: [InterpretedParameter], annotations: [UInt16: String] = [:], into array: inout JSONArrayWriter) {
        for parameter in parameters {
            array.object { writeParameter(parameter, note: annotations.isEmpty ? nil : annotations[parameter.id], into: &$0) }
        }
    }

    static func writeParameter(_ parameter: InterpretedParameter, note: String?, into json: inout JSONObjectWriter) {
        json.integer("id", Int(parameter.id))
        json.stringOrNull("name", parameter.name)
        json.string("type", parameter.type.rawValue)
        switch parameter.value {
        case .none: json.null("value")
        case .bool(let value): json.bool("value", value)
        case .unsigned(let value): json.integer("value", value)
        case .signed(let value): json.integer("value", value)
        case .enumeration(let value, let name):
            json.integer("value", Int(value))
            if let name { json.string("value_name", name) }
        case .string(let value): json.string("value", value)
        case .blob(let bytes): json.hex("value", bytes)
        case .messageIDs(let ids):
            json.array("value") { array in
                for id in ids { array.integer(Int(id)) }
            }
        case .uint64s(let ids):
            json.array("value") { array in
                for id in ids { array.integer(id) }
            }
        case .group(let members):
            json.array("params") { writeParameters(members, into: &$0) }
        case .invalid(let bytes, let reason):
            json.hex("value", bytes)
            json.string("error", reason)
        }
        if let note { json.string("summary", note) }
    }
}

/// A growable byte buffer written through a pointer, for output built a few
/// bytes at a time (JSON lines): appending a byte is a capacity check and a
/// store, without the uniqueness check an array's append makes.
public struct OutputBytes: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>?
    public private(set) var count = 0
    private var capacity = 0

    public init(capacity: Int = 0) {
        if capacity > 0 { grow(toAtLeast: capacity) }
    }

    deinit { base?.deallocate() }

    public mutating func append(_ byte: UInt8) {
        if count == capacity { grow(toAtLeast: count + 1) }
        base.unsafelyUnwrapped[count] = byte
        count += 1
    }

    public mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        if count + bytes.count > capacity { grow(toAtLeast: count + bytes.count) }
        (base.unsafelyUnwrapped + count).update(from: source, count: bytes.count)
        count += bytes.count
    }

    public mutating func append(contentsOf bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { append($0) }
    }

    /// The string's UTF-8 bytes, copied in one piece when it is stored as
    /// UTF-8 (literals and native strings are).
    public mutating func append(utf8 string: String) {
        if string.utf8.withContiguousStorageIfAvailable({ append($0) }) == nil {
            for byte in string.utf8 { append(byte) }
        }
    }

    /// Empties the buffer, keeping its memory.
    public mutating func removeAll() { count = 0 }

    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: base, count: count))
    }

    public var string: String {
        withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
    }

    /// Makes room for `extra` more bytes and lets `write` fill them through a
    /// pointer; it returns how many it wrote (at most `extra`).
    mutating func append(upTo extra: Int, _ write: (UnsafeMutablePointer<UInt8>) -> Int) {
        if count + extra > capacity { grow(toAtLeast: count + extra) }
        count += write(base.unsafelyUnwrapped + count)
    }

    private mutating func grow(toAtLeast minimum: Int) {
        let newCapacity = max(minimum, capacity * 2, 256)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        if let base {
            grown.initialize(from: base, count: count)
            base.deallocate()
        }
        base = grown
        capacity = newCapacity
    }
}

/// Builds one JSON object as UTF-8 bytes, in key order (the CLI's JSON
/// outputs share it, so that escaping is done one way everywhere). Made with
/// `init(appendingTo:)` it writes at the end of the caller's buffer, which
/// it holds until `finish(into:)` hands it back: no string is built.
public struct JSONObjectWriter: ~Copyable {
    private var bytes = OutputBytes()
    private var first = true

    public init() { bytes.append(UInt8(ascii: "{")) }

    /// Starts an object at the end of `buffer`. The writer holds the buffer
    /// (leaving an empty one in its place) until `finish(into:)`.
    public init(appendingTo buffer: inout OutputBytes) {
        swap(&bytes, &buffer)
        bytes.append(UInt8(ascii: "{"))
    }

    private mutating func key(_ key: String) {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
        bytes.append(UInt8(ascii: "\""))
        bytes.append(utf8: key)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    public mutating func string(_ name: String, _ value: String) {
        key(name)
        bytes.appendQuoted(value)
    }
    public mutating func stringOrNull(_ name: String, _ value: String?) {
        key(name)
        if let value { bytes.appendQuoted(value) } else { bytes.appendNull() }
    }
    public mutating func null(_ name: String) {
        key(name)
        bytes.appendNull()
    }
    public mutating func integer(_ name: String, _ value: some FixedWidthInteger) {
        key(name)
        bytes.appendDecimal(value)
    }
    public mutating func bool(_ name: String, _ value: Bool) {
        key(name)
        bytes.append(utf8: value ? "true" : "false")
    }
    /// Bytes as one string of lowercase hex digits.
    public mutating func hex(_ name: String, _ value: [UInt8]) {
        key(name)
        bytes.appendHexString(value)
    }
    /// Seconds with six decimals, as a number (`TraceText.seconds`).
    public mutating func seconds(_ name: String, nanoseconds: Int64) {
        key(name)
        bytes.appendSeconds(nanoseconds: nanoseconds)
    }
    public mutating func raw(_ name: String, _ json: String) {
        key(name)
        bytes.append(utf8: json)
    }
    mutating func rawBytes(_ name: String, _ json: [UInt8]) {
        key(name)
        bytes.append(contentsOf: json)
    }
    public mutating func object(_ name: String, _ members: (inout JSONObjectWriter) -> Void) {
        key(name)
        var object = JSONObjectWriter(appendingTo: &bytes)
        members(&object)
        object.finish(into: &bytes)
    }
    public mutating func array(_ name: String, _ elements: (inout JSONArrayWriter) -> Void) {
        key(name)
        var array = JSONArrayWriter(appendingTo: &bytes)
        elements(&array)
        array.finish(into: &bytes)
    }

    public func finish() -> String {
        bytes.string + "}"
    }

    /// Closes the object and hands the buffer back to `buffer`.
    public mutating func finish(into buffer: inout OutputBytes) {
        bytes.append(UInt8(ascii: "}"))
        swap(&bytes, &buffer)
    }

    public static func quoted(_ value: String) -> String {
        var bytes = OutputBytes()
        bytes.appendQuoted(value)
        return bytes.string
    }
}

/// Builds one JSON array as UTF-8 bytes at the end of a buffer it holds
/// until `finish(into:)`, as `JSONObjectWriter` does.
public struct JSONArrayWriter: ~Copyable {
    private var bytes = OutputBytes()
    private var first = true

    public init(appendingTo buffer: inout OutputBytes) {
        swap(&bytes, &buffer)
        bytes.append(UInt8(ascii: "["))
    }

    private mutating func separate() {
        if !first { bytes.append(UInt8(ascii: ",")) }
        first = false
    }

    public mutating func string(_ value: String) {
        separate()
        bytes.appendQuoted(value)
    }
    public mutating func integer(_ value: some FixedWidthInteger) {
        separate()
        bytes.appendDecimal(value)
    }
    public mutating func object(_ members: (inout JSONObjectWriter) -> Void) {
        separate()
        var object = JSONObjectWriter(appendingTo: &bytes)
        members(&object)
        object.finish(into: &bytes)
    }

    /// Closes the array and hands the buffer back to `buffer`.
    public mutating func finish(into buffer: inout OutputBytes) {
        bytes.append(UInt8(ascii: "]"))
        swap(&bytes, &buffer)
    }
}

/// JSON's spelling of values.
extension OutputBytes {
    private static func hexDigit(_ value: UInt8) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
    }

    mutating func appendNull() { append(utf8: "null") }

    /// A string in quotes with `"`, `\\` and control characters escaped.
    /// Bytes of 0x80 and up belong to multi-byte UTF-8 sequences and are
    /// copied as they are, so working on bytes escapes what working on
    /// Unicode scalars would.
    mutating func appendQuoted(_ value: String) {
        append(UInt8(ascii: "\""))
        if value.utf8.allSatisfy({ $0 >= 0x20 && $0 != 0x7F && $0 != UInt8(ascii: "\"") && $0 != UInt8(ascii: "\\") }) {
            // Nothing to escape (nearly always): copied in one piece.
            append(utf8: value)
            append(UInt8(ascii: "\""))
            return
        }
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): append(UInt8(ascii: "\\")); append(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): append(UInt8(ascii: "\\")); append(UInt8(ascii: "\\"))
            case 0x0A: append(UInt8(ascii: "\\")); append(UInt8(ascii: "n"))
            case 0x0D: append(UInt8(ascii: "\\")); append(UInt8(ascii: "r"))
            case 0x09: append(UInt8(ascii: "\\")); append(UInt8(ascii: "t"))
            case 0..<0x20, 0x7F:
                append(utf8: "\\u00")
                append(Self.hexDigit(byte >> 4))
                append(Self.hexDigit(byte & 0x0F))
            default:
                append(byte)
            }
        }
        append(UInt8(ascii: "\""))
    }

    mutating func appendDecimal(_ value: some FixedWidthInteger) {
        if value < 0 { append(UInt8(ascii: "-")) }
        appendDigits(UInt64(value.magnitude))
    }

    /// The decimal digits of `value`, at least `minimumCount` of them (zeros in front).
    private mutating func appendDigits(_ value: UInt64, minimumCount: Int = 1) {
        if value < 10 && minimumCount == 1 {
            append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var count = 1
        var rest = value / 10
        while rest > 0 {
            count += 1
            rest /= 10
        }
        count = max(count, minimumCount)
        append(upTo: count) { digits in
            rest = value
            for index in stride(from: count - 1, through: 0, by: -1) {
                digits[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return count
        }
    }

    /// Seconds with six decimals: `0.000123`, `-1.500000` (as `TraceText.seconds` writes them).
    mutating func appendSeconds(nanoseconds: Int64) {
        let microseconds = (nanoseconds.magnitude + 500) / 1000
        if nanoseconds < 0 && microseconds > 0 { append(UInt8(ascii: "-")) }
        appendDigits(microseconds / 1_000_000)
        append(UInt8(ascii: "."))
        appendDigits(microseconds % 1_000_000, minimumCount: 6)
    }

    mutating func appendHexString(_ value: [UInt8]) {
        append(UInt8(ascii: "\""))
        append(upTo: value.count * 2) { digits in
            for (index, byte) in value.enumerated() {
                digits[2 * index] = Self.hexDigit(byte >> 4)
                digits[2 * index + 1] = Self.hexDigit(byte & 0x0F)
            }
            return value.count * 2
        }
        append(UInt8(ascii: "\""))
    }
}

/// Renders trace events as readable text: one line per packet, with messages
/// and their parameters indented below.
///
/// Each line starts with, for captures, the time in seconds from the first
/// record; then the direction; where the event is (`#frame` and
/// `bus.device epXX` for captures, `Lline` for hex text); and `@STREAM+N`,
/// byte N of the stream STREAM: `out` or `in` (`stream` for input without
/// directions) for the direction's (a capture endpoint's) byte stream,
/// `out.s1` for session 1's reassembled messages in that direction, `file`
/// for the capture file itself.
public enum TraceText {
    public static func lines(for event: TraceEvent) -> [String] {
        var prefix = ""
        let capture = event.frame != nil || event.endpoint != nil
        if let time = event.time {
            prefix += seconds(nanoseconds: time).padding(toLeft: 10) + " "
        } else if capture {
            prefix += String(repeating: " ", count: 11)
        }
        prefix += (event.direction?.rawValue ?? "-").padding(to: 3) + " "
        if let frame = event.frame { prefix += "#\(frame) " }
        if let line = event.line { prefix += "L\(line) " }
        if let endpoint = event.endpoint { prefix += "\(endpoint.bus).\(endpoint.device) ep\(hexByte(endpoint.endpoint)) " }
        if let stream = offsetLabel(event) { prefix += "@\(stream)+\(event.offset)" }
        prefix = prefix.padding(to: capture ? 40 : 24) + " "
        // Lines under the event line are indented from where its text starts.
        let column = prefix.count
        switch event.body {
        case .detect:
            return [prefix + "detect FF 55 02 00 EE 10"]
        case .link(let info):
            let header = info.header
            var line = prefix + "link \(header.control) seq=\(header.sequence) ack=\(header.acknowledgement) session=\(header.session) len=\(header.length)"
            if header.payloadLength > 0 { line += " payload=\(header.payloadLength)" }
            if !info.checksumsOK { line += "  ** payload checksum mismatch **" }
            if info.retransmission { line += "  (retransmission)" }
            var lines = [line]
            let indent = String(repeating: " ", count: column + 3)
            if let sync = info.sync {
                lines.append(indent + "sync v\(sync.version) max_outstanding=\(sync.maximumOutstandingPackets) max_packet_length=\(sync.maximumPacketLength)"
                             + (sync.isZeroAck ? " zero-ACK"
                                : " retransmit=\(sync.retransmitTimeoutMilliseconds)ms cumulative_ack=\(sync.cumulativeAckTimeoutMilliseconds)ms max_retransmissions=\(sync.maximumRetransmissions) max_cumulative_acks=\(sync.maximumCumulativeAcks)"))
                lines.append(indent + "sessions: " + (sync.sessions.isEmpty ? "none" : sync.sessions.map { "\($0.id) \($0.type.name) v\($0.version)" }.joined(separator: ", ")))
                for violation in sync.violations { lines.append(indent + "out of bounds: " + violation) }
            }
            if let error = info.syncError { lines.append(indent + "sync payload unreadable: " + error) }
            if let eak = info.eak { lines.append(indent + "EAK sequence numbers: " + eak.map { String($0) }.joined(separator: " ")) }
            if let datagram = info.datagram {
                var text = indent + "\(datagram.sessionType.name) datagram, \(counted(datagram.length, "byte"))"
                if let transfer = datagram.fileTransfer {
                    text += ": transfer \(transfer.transferID) \(transfer.control.name)"
                    if let size = transfer.fileSize { text += " size=\(size)" }
                    if transfer.control.carriesData { text += " data=\(transfer.body.count)" }
                }
                if let session = datagram.externalAccessorySession { text += ": EA session \(session)" }
                if let error = datagram.error { text += " (\(error))" }
                lines.append(text)
            }
            return lines
        case .message(let info):
            var lines = [prefix + "message session=\(info.session) \(info.name ?? "unknown") (0x\(hex16(info.id))) \(counted(info.length, "byte"))"]
            appendParameters(info.parameters, column: column, depth: 1, annotations: info.annotations, to: &lines)
            return lines
        case .iap1(let info):
            let lingo = IAP1Catalog.lingoNames[info.lingo] ?? "lingo 0x\(hexByte(info.lingo))"
            var line = prefix + "iap1 \(lingo) \(info.name ?? "command 0x\(String(info.command, radix: 16, uppercase: true))")"
            if let transaction = info.transaction { line += " transaction=\(transaction)" }
            if !info.data.isEmpty { line += " data=\(hexBytes(info.data.prefix(32), separator: " "))\(info.data.count > 32 ? " …(\(info.data.count) bytes)" : "")" }
            if !info.checksumOK { line += "  ** checksum mismatch **" }
            if let error = info.error { line += "  (\(error))" }
            return [line]
        case .skipped(let info):
            var line = prefix + "skipped \(counted(info.count, "byte")): \(info.reason)"
            if let detail = info.detail { line += " (\(detail))" }
            return [line]
        }
    }

    static func appendParameters(_ parameters: [InterpretedParameter], column: Int, depth: Int, annotations: [UInt16: String] = [:],
                                 to lines: inout [String]) {
        let indent = String(repeating: " ", count: column + 1 + depth * 4)
        for parameter in parameters {
            let name = parameter.name ?? "param"
            switch parameter.value {
            case .group(let members):
                lines.append(indent + "\(parameter.id) \(name):")
                appendParameters(members, column: column, depth: depth + 1, to: &lines)
            default:
                lines.append(indent + "\(parameter.id) \(name) = \(describe(parameter.value))")
            }
            if let note = annotations[parameter.id] { lines.append(indent + "    " + note) }
        }
    }

    static func describe(_ value: ParameterValue) -> String {
        switch value {
        case .none: return "(flag)"
        case .bool(let value): return value ? "true" : "false"
        case .unsigned(let value): return String(value)
        case .signed(let value): return String(value)
        case .enumeration(let value, let name): return name.map { "\(value) (\($0))" } ?? String(value)
        case .string(let value): return JSONObjectWriter.quoted(value)
        case .blob(let bytes): return "<\(hexBytes(bytes.prefix(48), separator: " "))\(bytes.count > 48 ? " …" : "")> (\(counted(bytes.count, "byte")))"
        case .messageIDs(let ids): return ids.map { id in MessageCatalog.name(of: id).map { "\($0)" } ?? "0x\(hex16(id))" }.joined(separator: ", ")
        case .uint64s(let ids): return ids.map { String($0) }.joined(separator: ", ")
        case .group: return "(group)"
        case .invalid(let bytes, let reason): return "<\(hexBytes(bytes.prefix(48), separator: " "))> ** \(reason) **"
        }
    }

    /// What `@STREAM+N` names, or nil when the event has no offset.
    static func offsetLabel(_ event: TraceEvent) -> String? {
        let direction = event.direction?.rawValue ?? "stream"
        switch event.offsetBase {
        case .stream: return direction
        case .session(let session): return "\(direction).s\(session)"
        case .file: return "file"
        case .none: return nil
        }
    }

    /// A count and its noun, singular or plural: `1 byte`, `2 bytes`, `0 bytes`.
    public static func counted(_ count: Int, _ noun: String) -> String {
        "\(count) \(noun)\(count == 1 ? "" : "s")"
    }

    /// Seconds with six decimals: `0.000123`, `-1.500000`.
    public static func seconds(nanoseconds: Int64) -> String {
        let microseconds = (nanoseconds.magnitude + 500) / 1000
        let fraction = String(microseconds % 1_000_000)
        return (nanoseconds < 0 && microseconds > 0 ? "-" : "") + "\(microseconds / 1_000_000)."
            + String(repeating: "0", count: 6 - fraction.count) + fraction
    }
}

/// Counts over a whole trace, for `--stats`.
public struct TraceStatistics: Sendable {
    /// Link packets by direction: `out`, `in` and `unknown`.
    public var linkPackets: [String: Int] { ["out": outPackets, "in": inPackets, "unknown": undirectedPackets] }
    // Counted apart, not in `linkPackets`: hashing a key for every packet costs.
    private var outPackets = 0
    private var inPackets = 0
    private var undirectedPackets = 0
    public var detects = 0
    public var messages: [UInt16: Int] = [:]
    public var iap1Packets = 0
    public var iap1Commands: [String: Int] = [:]
    public var skippedBytes = 0
    public var skippedByReason: [String: Int] = [:]
    public var checksumErrors = 0
    public var retransmissions = 0
    public var malformedMessages = 0
    /// Hex text lines that could not be read.
    public var invalidLines = 0

    public init() {}

    public mutating func record(_ event: TraceEvent) {
        switch event.body {
        case .detect:
            detects += 1
        case .link(let info):
            switch event.direction {
            case .out: outPackets += 1
            case .in: inPackets += 1
            case nil: undirectedPackets += 1
            }
            if !info.checksumsOK { checksumErrors += 1 }
            if info.retransmission { retransmissions += 1 }
        case .message(let info):
            messages[info.id, default: 0] += 1
        case .iap1(let info):
            iap1Packets += 1
            iap1Commands[info.name ?? "0x\(hexByte(info.lingo))/0x\(hex16(info.command))", default: 0] += 1
            if !info.checksumOK { checksumErrors += 1 }
        case .skipped(let info):
            skippedBytes += info.count
            skippedByReason[info.reason, default: 0] += info.count
            if info.reason == "bad_header_checksum" { checksumErrors += 1 }
            if info.reason == "malformed_message" { malformedMessages += 1 }
            if info.reason == "invalid_hex" { invalidLines += 1 }
        }
    }

    public var json: String {
        var json = JSONObjectWriter()
        var packets = JSONObjectWriter()
        packets.integer("out", outPackets)
        packets.integer("in", inPackets)
        packets.integer("unknown", undirectedPackets)
        json.raw("link_packets", packets.finish())
        var messageCounts = JSONObjectWriter()
        for (id, count) in messages.sorted(by: { $0.key < $1.key }) { messageCounts.integer("0x" + hex16(id), count) }
        json.raw("messages", messageCounts.finish())
        json.integer("iap1_packets", iap1Packets)
        json.integer("skipped_bytes", skippedBytes)
        json.integer("checksum_errors", checksumErrors)
        json.integer("detects", detects)
        json.integer("retransmissions", retransmissions)
        json.integer("malformed_messages", malformedMessages)
        json.integer("invalid_lines", invalidLines)
        var reasons = JSONObjectWriter()
        for (reason, count) in skippedByReason.sorted(by: { $0.key < $1.key }) { reasons.integer(reason, count) }
        json.raw("skipped", reasons.finish())
        return json.finish()
    }

    public var text: [String] {
        var lines = ["link packets: out \(outPackets), in \(inPackets)" + (undirectedPackets > 0 ? ", no direction \(undirectedPackets)" : "")]
        lines.append("detect sequences: \(detects)")
        lines.append("retransmissions: \(retransmissions)")
        lines.append("messages: \(messages.values.reduce(0, +))")
        for (id, count) in messages.sorted(by: { $0.key < $1.key }) {
            lines.append("  0x\(hex16(id)) \((MessageCatalog.name(of: id) ?? "unknown").padding(to: 40)) \(count)")
        }
        lines.append("iAP1 packets: \(iap1Packets)")
        for (name, count) in iap1Commands.sorted(by: { $0.key < $1.key }) {
            lines.append("  \(name.padding(to: 46)) \(count)")
        }
        lines.append("problems:")
        lines.append("  checksum errors: \(checksumErrors)")
        lines.append("  malformed messages: \(malformedMessages)")
        if invalidLines > 0 { lines.append("  unreadable hex lines: \(invalidLines)") }
        lines.append("  skipped bytes: \(skippedBytes)")
        for (reason, count) in skippedByReason.sorted(by: { $0.key < $1.key }) {
            lines.append("    \(reason.padding(to: 24)) \(count)")
        }
        return lines
    }
}

extension String {
    /// The string followed by spaces up to `width` characters (for tables).
    public func padding(to width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }

    /// The string preceded by spaces up to `width` characters.
    func padding(toLeft width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
