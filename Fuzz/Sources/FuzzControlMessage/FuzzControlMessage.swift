// Fuzz entry point for the control-session path: ControlMessage(decoding:),
// Parameter.list and the typed accessors, MessageCatalog.interpret, and the
// streaming ControlMessageDecoder (whole vs byte-by-byte vs chunked).
import FuzzSupport
import IAPWire

/// Reads a parameter every way the API allows; whatever decodes must encode
/// back to the same bytes.
func touch(_ parameter: Parameter, depth: Int) {
    let data = parameter.data
    func integer<T: FixedWidthInteger>(_ type: T.Type) {
        if let value = try? parameter.integer(as: T.self) {
            require(Parameter.integer(parameter.id, value).data == data, "\(T.self) round trip of \(hexString(data))")
        }
    }
    integer(UInt8.self)
    integer(UInt16.self)
    integer(UInt32.self)
    integer(UInt64.self)
    integer(Int8.self)
    integer(Int16.self)
    integer(Int32.self)
    integer(Int64.self)
    if let value = try? parameter.bool() {
        require(Parameter.bool(parameter.id, value).data == data, "bool round trip of \(hexString(data))")
    }
    if let value = try? parameter.string() {
        require(Parameter.string(parameter.id, value).data == data, "string round trip of \(hexString(data))")
    }
    if let members = try? parameter.group() {
        require(Parameter.isParameterList(data), "group() and isParameterList disagree")
        let regrouped = try? Parameter.group(parameter.id, members)
        require(regrouped?.data == data, "group round trip of \(hexString(data.prefix(64)))")
        if depth < 16 {
            for member in members { touch(member, depth: depth + 1) }
        }
    } else {
        require(!Parameter.isParameterList(data), "group() and isParameterList disagree")
    }
    var encoded: [UInt8] = []
    if (try? parameter.encode(into: &encoded)) != nil {
        require(encoded.count == parameter.encodedLength, "parameter encodedLength")
    }
}

/// Walks an interpreted value so every case is built and read.
func walk(_ parameters: [InterpretedParameter], depth: Int) {
    require(depth <= 64, "interpretation nests \(depth) levels deep")
    for parameter in parameters {
        _ = parameter.name
        _ = parameter.type.rawValue
        switch parameter.value {
        case .group(let members):
            walk(members, depth: depth + 1)
        case .invalid(let bytes, let reason):
            _ = bytes.count
            _ = reason.utf8.count
        case .string(let text):
            _ = text.unicodeScalars.count
        default:
            break
        }
    }
}

func interpret(_ message: ControlMessage) {
    _ = MessageCatalog.name(of: message.id)
    if let spec = MessageCatalog.message(message.id) {
        for parameter in message.parameters { _ = spec.parameter(parameter.id)?.member(0) }
    }
    for depth in [Parameter.defaultMaximumDepth, 0, 1, 2, 40] {
        let interpreted = MessageCatalog.interpret(message, maximumDepth: depth)
        require(interpreted.count == message.parameters.count, "interpret changed the parameter count")
        walk(interpreted, depth: 0)
    }
    for parameter in message.parameters {
        touch(parameter, depth: 0)
        _ = message.parameter(parameter.id)
        _ = message.parameters(parameter.id)
    }
}

func decodeWhole(_ bytes: [UInt8]) {
    do {
        let message = try ControlMessage(decoding: bytes)
        let encoded = try message.encoded()
        require(encoded == bytes, "ControlMessage does not re-encode to its bytes: \(hexString(bytes.prefix(128)))")
        require(message.encodedLength == bytes.count, "encodedLength")
        interpret(message)
    } catch {
        _ = error.description
    }
}

// MARK: Streaming

typealias Event = ControlMessageDecoder.Event

func stream(_ input: [UInt8], maximum: Int, chunks: [Int]) -> [Event] {
    var decoder = ControlMessageDecoder(maximumMessageLength: maximum)
    var events: [Event] = []
    var position = 0
    for size in chunks {
        let end = min(input.count, position + size)
        decoder.append(input[position..<end])
        position = end
        while let event = decoder.next() { events.append(event) }
    }
    decoder.finish()
    while let event = decoder.next() { events.append(event) }
    require(decoder.next() == nil, "next() returned an event after reporting the end")
    require(decoder.bufferedByteCount == 0, "\(decoder.bufferedByteCount) bytes still buffered after finish")
    return events
}

func checkStream(_ events: [Event], input: [UInt8], maximum: Int) {
    var cursor = 0
    for event in events {
        switch event {
        case .message(let message, let offset):
            require(offset == cursor, "message at \(offset), expected \(cursor)")
            let length = message.encodedLength
            require(length <= maximum, "message of \(length) bytes over the \(maximum) maximum")
            require(offset + length <= input.count, "message runs past the input")
            let bytes = Array(input[offset..<offset + length])
            require((try? message.encoded()) == bytes, "streamed message does not re-encode to its bytes at \(offset)")
            require((try? ControlMessage(decoding: bytes)) == message, "ControlMessage(decoding:) disagrees with the stream decoder at \(offset)")
            cursor += length
        case .malformed(let id, let offset, let length, let error):
            require(offset == cursor, "malformed at \(offset), expected \(cursor)")
            require(offset + length <= input.count && length >= ControlMessage.headerLength && length <= maximum, "malformed span")
            let bytes = Array(input[offset..<offset + length])
            require(UInt16(bytes[4]) << 8 | UInt16(bytes[5]) == id, "malformed id")
            require((try? ControlMessage(decoding: bytes)) == nil, "ControlMessage(decoding:) accepts a message the stream decoder called malformed (\(error))")
            cursor += ControlMessage.headerLength
        case .oversized(let id, let offset, let length):
            // Reported at the header; its bytes follow as skipped, so the cursor stays.
            require(offset == cursor, "oversized at \(offset), expected \(cursor)")
            require(length > maximum && offset + ControlMessage.headerLength <= input.count, "oversized span")
            require(Int(input[offset + 2]) << 8 | Int(input[offset + 3]) == length, "oversized length")
            require(UInt16(input[offset + 4]) << 8 | UInt16(input[offset + 5]) == id, "oversized id")
        case .skipped(let skip):
            require(skip.offset == cursor, "skip at \(skip.offset), expected \(cursor)")
            require(skip.count > 0, "empty skip")
            cursor += skip.count
        }
    }
    require(cursor == input.count, "events cover \(cursor) bytes, input is \(input.count)")
}

func compare(_ a: [Event], _ b: [Event], _ what: String, input: [UInt8]) {
    guard a == b else {
        fatalError("""
            FUZZ INVARIANT BROKEN: ControlMessageDecoder whole vs \(what) differ
            input (\(input.count) bytes): \(hexString(input.prefix(256)))
            whole:
              \(a.map { "\($0)" }.joined(separator: "\n  "))
            \(what):
              \(b.map { "\($0)" }.joined(separator: "\n  "))
            """)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let input = Array(UnsafeRawBufferPointer(start: start, count: count))

    // 1. The input as one message.
    decodeWhole(input)

    // 2. The input after a valid header naming a catalogued message, so the
    //    parameter parser and the catalog's types are reached directly.
    if let first = input.first, input.count + ControlMessage.headerLength - 1 <= ControlMessage.maximumLength {
        let spec = MessageCatalog.messages[Int(first) % MessageCatalog.messages.count]
        let length = input.count - 1 + ControlMessage.headerLength
        var framed: [UInt8] = [0x40, 0x40, UInt8(length >> 8), UInt8(length & 0xFF), UInt8(spec.id >> 8), UInt8(spec.id & 0xFF)]
        framed += input.dropFirst()
        decodeWhole(framed)
    }

    // 3. The input as a bare parameter list.
    if let parameters = try? Parameter.list(decoding: input) {
        for parameter in parameters { touch(parameter, depth: 0) }
        interpret(ControlMessage(id: 0xFFFF, parameters: parameters))
    }

    // 4. The input as a session byte stream.
    let maxima = [ControlMessage.maximumLength, 6, 7, 10, 16, 64, 300]
    let maximum = max(ControlMessage.headerLength, maxima[Int(input.last ?? 0) % maxima.count])
    let whole = stream(input, maximum: maximum, chunks: [input.count])
    checkStream(whole, input: input, maximum: maximum)
    compare(whole, stream(input, maximum: maximum, chunks: Array(repeating: 1, count: input.count)), "byte-by-byte", input: input)
    compare(whole, stream(input, maximum: maximum, chunks: chunkSizes(for: input, total: input.count)), "chunked", input: input)
    return 0
}
