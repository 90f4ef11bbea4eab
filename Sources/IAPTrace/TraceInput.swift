import IAPWire

/// An input the decoder cannot read at all (as opposed to garbage inside a
/// readable input, which is reported as skipped bytes).
public struct TraceInputError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Reads a whole trace input, in chunks, in any of the supported forms and
/// drives a `TraceDecoder` with it.
///
/// - hex text: whitespace and `#` comments ignored; a line may start with `>`
///   or `<` to mark its direction (see `MarkerConvention`); tokens may carry a
///   `0x` prefix and may hold several bytes (`ff5a001a`).
/// - raw binary: one stream, direction unknown.
/// - pcap / pcapng of Linux usbmon (link types 189 and 220): each bulk
///   endpoint's data is reassembled per direction (OUT data at submission, IN
///   data at completion); endpoints that never carry iAP traffic are ignored.
///   With `hid`, interrupt transfers and SET_REPORT control transfers are
///   taken as HID reports instead.
public struct TraceInputDecoder {
    public enum Format: String, CaseIterable, Sendable {
        case auto, hex, raw, pcap
    }

    /// Which direction the `>` and `<` line markers mean.
    public enum MarkerConvention: String, CaseIterable, Sendable {
        /// `>` is sent by the accessory / USB host (out), `<` by the device
        /// (in): the sense of wiomoc/iap2's logs and of this project's fixtures.
        case host
        /// `>` is written by the device, `<` read by it: the sense of traces
        /// written by oandrew/ipod, which plays the iPod.
        case device
    }

    public struct Options: Sendable {
        public var format: Format
        public var hid: Bool
        public var markers: MarkerConvention
        public var maximumPacketLength: Int
        /// See `TraceDecoder.Options.annotate`.
        public var annotate: (@Sendable (_ messageID: UInt16, _ parameter: InterpretedParameter) -> String?)?
        /// See `TraceDecoder.Options.decodesParameters`.
        public var decodesParameters: Bool

        public init(format: Format = .auto, hid: Bool = false, markers: MarkerConvention = .host,
                    maximumPacketLength: Int = LinkPacket.maximumLength,
                    annotate: (@Sendable (_ messageID: UInt16, _ parameter: InterpretedParameter) -> String?)? = nil,
                    decodesParameters: Bool = true) {
            self.format = format
            self.hid = hid
            self.markers = markers
            self.maximumPacketLength = maximumPacketLength
            self.annotate = annotate
            self.decodesParameters = decodesParameters
        }
    }

    /// Longest hex line accepted (a 64 KiB packet written as hex fits).
    public static let maximumLineLength = 1 << 20

    public let options: Options
    public private(set) var detectedFormat: Format?
    /// Capture records of link types other than usbmon, which are ignored.
    public private(set) var foreignRecords = 0
    public private(set) var usbmonRecords = 0
    public private(set) var bytesRead = 0
    public var decoder: TraceDecoder

    private var pending: [UInt8] = []
    private var lineBuffer: [UInt8] = []
    private var lineNumber = 0
    private var lineTooLong = false
    private var capture = CaptureReader()
    /// The timestamp that capture times count from.
    private var firstRecordTime: Int64?

    public init(options: Options = Options()) {
        self.options = options
        self.decoder = TraceDecoder(options: TraceDecoder.Options(hid: options.hid, maximumPacketLength: options.maximumPacketLength,
                                                                  annotate: options.annotate, decodesParameters: options.decodesParameters))
    }

    /// Detects a format from the first bytes of an input.
    public static func detectFormat(_ prefix: some Collection<UInt8>) -> Format {
        if CaptureReader.format(ofPrefix: prefix) != nil { return .pcap }
        let isText = prefix.prefix(4096).allSatisfy { byte in
            (byte >= 0x20 && byte < 0x7F) || byte == 0x09 || byte == 0x0A || byte == 0x0D
        }
        return isText ? .hex : .raw
    }

    public mutating func feed(_ chunk: UnsafeRawBufferPointer, emit: (TraceEvent) -> Void) throws {
        bytesRead += chunk.count
        if detectedFormat == nil {
            if options.format != .auto {
                begin(options.format)
            } else {
                pending.append(contentsOf: chunk.bindMemory(to: UInt8.self))
                guard pending.count >= 4096 else { return }
                begin(Self.detectFormat(pending))
            }
            if !pending.isEmpty {
                let held = pending
                pending = []
                try held.withUnsafeBytes { (raw) in try dispatch(raw, emit: emit) }
                return
            }
        }
        try dispatch(chunk, emit: emit)
    }

    public mutating func finish(emit: (TraceEvent) -> Void) throws {
        guard bytesRead > 0 else { throw TraceInputError("the input is empty; there is nothing to decode") }
        if detectedFormat == nil {
            begin(options.format == .auto ? Self.detectFormat(pending) : options.format)
            let held = pending
            pending = []
            try held.withUnsafeBytes { (raw) in try dispatch(raw, emit: emit) }
        }
        switch detectedFormat {
        case .hex:
            if !lineBuffer.isEmpty || lineTooLong { endLine(emit: emit) }
        case .pcap:
            if capture.pendingByteCount > 0 {
                if capture.recordsRead == 0 && capture.offset == 0 {
                    throw TraceInputError("input is too short to be a capture file (\(capture.pendingByteCount) bytes)")
                }
                // The file ends inside a record: say so, keep what was decoded.
                emit(TraceEvent(body: .skipped(SkippedInfo(count: capture.pendingByteCount, reason: "truncated",
                                                           detail: "the capture file ends inside a record")),
                                direction: nil, offset: capture.offset, frame: capture.recordsRead + 1, offsetBase: .file))
            }
            if usbmonRecords == 0 && foreignRecords > 0 {
                throw TraceInputError("the capture holds \(foreignRecords) records but none of Linux usbmon (link types 189 or 220); capture with `tcpdump -i usbmonN` or Wireshark on a usbmon interface")
            }
        default:
            break
        }
        decoder.finish(emit: emit)
    }

    private mutating func begin(_ format: Format) {
        detectedFormat = format
        if format == .pcap {
            decoder = TraceDecoder(options: TraceDecoder.Options(hid: options.hid, maximumPacketLength: options.maximumPacketLength,
                                                                 requireIdentification: true, annotate: options.annotate,
                                                                 decodesParameters: options.decodesParameters))
        }
    }

    private mutating func dispatch(_ chunk: UnsafeRawBufferPointer, emit: (TraceEvent) -> Void) throws {
        switch detectedFormat {
        case .hex:
            feedText(chunk.bindMemory(to: UInt8.self), emit: emit)
        case .raw:
            decoder.ingest(chunk.bindMemory(to: UInt8.self), stream: TraceDecoder.StreamKey(link: .init(), direction: nil), emit: emit)
        case .pcap:
            capture.append(chunk)
            do {
                while let item = try capture.nextItem() {
                    switch item {
                    case .record(let record):
                        handle(record, emit: emit)
                    case .malformed(let block):
                        // The block's bounds are known: say what was wrong with it and read on.
                        emit(TraceEvent(body: .skipped(SkippedInfo(count: block.length, reason: "malformed_block",
                                                                   detail: "capture \(block.description)")),
                                        direction: nil, offset: block.offset, offsetBase: .file))
                    }
                }
            } catch {
                throw TraceInputError("unreadable capture \(error)")
            }
        case .auto, nil:
            break
        }
    }

    // MARK: Hex text

    private mutating func feedText(_ bytes: UnsafeBufferPointer<UInt8>, emit: (TraceEvent) -> Void) {
        var lineStart = 0
        for index in 0..<bytes.count where bytes[index] == 0x0A {
            appendToLine(UnsafeBufferPointer(rebasing: bytes[lineStart..<index]))
            endLine(emit: emit)
            lineStart = index + 1
        }
        appendToLine(UnsafeBufferPointer(rebasing: bytes[lineStart..<bytes.count]))
    }

    private mutating func appendToLine(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard !lineTooLong else { return }
        if lineBuffer.count + bytes.count > Self.maximumLineLength {
            lineTooLong = true
            lineBuffer.removeAll()
            return
        }
        lineBuffer.append(contentsOf: bytes)
    }

    private mutating func endLine(emit: (TraceEvent) -> Void) {
        lineNumber += 1
        defer {
            lineBuffer.removeAll(keepingCapacity: true)
            lineTooLong = false
        }
        let line = lineNumber
        if lineTooLong {
            emit(TraceEvent(body: .skipped(SkippedInfo(count: 0, reason: "invalid_hex", detail: "line \(line) is longer than \(Self.maximumLineLength) characters")),
                            direction: nil, offset: 0, line: line, offsetBase: .none))
            return
        }
        switch HexLine.parse(lineBuffer) {
        case .empty:
            return
        case .invalid(let problem):
            emit(TraceEvent(body: .skipped(SkippedInfo(count: 0, reason: "invalid_hex", detail: "line \(line): \(problem)")),
                            direction: nil, offset: 0, line: line, offsetBase: .none))
        case .bytes(let marker, let bytes):
            var direction: TraceDirection?
            if let marker {
                let hostSense = marker == UInt8(ascii: ">")
                direction = (hostSense == (options.markers == .host)) ? .out : .in
            }
            decoder.ingest(bytes, stream: TraceDecoder.StreamKey(link: .init(), direction: direction), line: line, emit: emit)
        }
    }

    // MARK: Captures

    private mutating func handle(_ record: CaptureRecord, emit: (TraceEvent) -> Void) {
        let first = firstRecordTime ?? record.timestampNanoseconds
        firstRecordTime = first
        guard UsbmonEvent.headerLength(linkType: record.linkType) != nil else {
            foreignRecords += 1
            return
        }
        usbmonRecords += 1
        guard let event = UsbmonEvent(record: record) else { return }
        let data: ArraySlice<UInt8>
        if options.hid {
            switch event.transferType {
            case .interrupt:
                guard let moved = event.transferredData else { return }
                data = moved
            case .control:
                // SET_REPORT (class request 0x09 to an interface): the report is the OUT data stage.
                guard event.eventType == .submit, let setup = event.setup, setup[0] == 0x21, setup[1] == 0x09, !event.data.isEmpty else { return }
                data = event.data
            default:
                return
            }
        } else {
            guard event.transferType == .bulk, let moved = event.transferredData else { return }
            data = moved
        }
        let endpoint = CaptureEndpoint(bus: event.bus, device: event.device, endpoint: event.endpoint)
        let key = TraceDecoder.StreamKey(link: .init(bus: event.bus, device: event.device),
                                         direction: event.isIn ? .in : .out, endpoint: endpoint)
        let time = record.timestampNanoseconds &- first
        decoder.ingest(data, stream: key, frame: record.frame, time: time, emit: emit)
        let expected = event.dataLength
        if data.count < expected && !options.hid {
            decoder.gap(expected - data.count, stream: key, frame: record.frame, time: time, emit: emit)
        }
    }
}

/// One line of hex text.
enum HexLine: Equatable {
    case empty
    case invalid(String)
    case bytes(marker: UInt8?, [UInt8])

    static func parse(_ line: [UInt8]) -> HexLine {
        var end = line.firstIndex(of: UInt8(ascii: "#")) ?? line.count
        while end > 0, isSpace(line[end - 1]) { end -= 1 }
        var index = 0
        while index < end, isSpace(line[index]) { index += 1 }
        guard index < end else { return .empty }
        var marker: UInt8?
        if line[index] == UInt8(ascii: ">") || line[index] == UInt8(ascii: "<") {
            marker = line[index]
            index += 1
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((end - index) / 2)
        while index < end {
            while index < end, isSpace(line[index]) || line[index] == UInt8(ascii: ",") || line[index] == UInt8(ascii: ":") { index += 1 }
            guard index < end else { break }
            var tokenStart = index
            while index < end, !isSpace(line[index]), line[index] != UInt8(ascii: ","), line[index] != UInt8(ascii: ":") { index += 1 }
            if index - tokenStart >= 2, line[tokenStart] == UInt8(ascii: "0"), line[tokenStart + 1] | 0x20 == UInt8(ascii: "x") {
                tokenStart += 2
            }
            let count = index - tokenStart
            guard count > 0, count % 2 == 0 else {
                return .invalid("token \"\(printable(line[tokenStart..<index]))\" is not a whole number of hex bytes")
            }
            var position = tokenStart
            while position < index {
                guard let high = hexValue(line[position]), let low = hexValue(line[position + 1]) else {
                    return .invalid("\"\(printable(line[tokenStart..<index]))\" is not hex")
                }
                bytes.append(high << 4 | low)
                position += 2
            }
        }
        if bytes.isEmpty { return marker == nil ? .empty : .invalid("a direction marker with no bytes") }
        return .bytes(marker: marker, bytes)
    }

    /// A token as text for an error message, with control characters
    /// replaced so that a hostile line cannot reach the terminal.
    private static func printable(_ bytes: ArraySlice<UInt8>) -> String {
        String(decoding: bytes.prefix(40).map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
    }

    private static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
