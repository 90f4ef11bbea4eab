import ArgumentParser
import IAPAuthentication
import IAPSession
import IAPTrace
import IAPWire

extension TraceInputDecoder.Format: ExpressibleByArgument {}
extension TraceInputDecoder.MarkerConvention: ExpressibleByArgument {}

struct Decode: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Decode a packet trace: iAP2 link packets, control messages, iAP1 frames.",
        discussion: """
        Inputs are recognised by their content (or chosen with --format):
          hex     text with hex bytes; '#' starts a comment; a line may start with
                  '>' (sent by the accessory / USB host: out) or '<' (sent by the
                  device: in). Use --markers device for traces whose '>' means
                  "written by the device" (oandrew/ipod).
          raw     a binary byte stream in one direction.
          pcap    a Linux usbmon capture, pcap or pcapng (link type 189 or 220),
                  e.g. from `tcpdump -i usbmon1 -w trace.pcapng`. Each bulk
                  endpoint is reassembled per direction; endpoints that carry no
                  iAP traffic are ignored.

        With no FILE, a built-in sample trace is decoded. FILE may be '-' for
        standard input.

        Each text line starts with, for captures, the seconds since the first
        record; the direction; where the bytes are (#frame and bus.device epXX
        in a capture, Lline in hex text); and @STREAM+N, byte N of a stream:
        out or in (stream when the input has no directions) for the bytes of a
        direction (in a capture, of an endpoint), out.s1 for session 1's
        messages in that direction, file for the capture file itself.

        Examples:
          iapctl decode                         # the built-in sample
          iapctl decode capture.pcapng --stats  # counts per message and problem
          iapctl decode trace.hex --json | jq 'select(.kind == "message") | .name'
          iapctl decode --hid reports.hex       # iAP1 over USB HID, one report a line

        The exit status is 0 when the input could be read, even if it held
        garbage (reported as 'skipped' with a reason) or no iAP traffic at all
        (said on standard error); it is 1, with the reason, when it cannot be
        read: a missing or empty file, a directory, a capture that is cut short
        in its header, of another link type than usbmon, or with a block length
        that cannot be right.
        """
    )

    @Argument(help: "The trace to decode ('-' for standard input; omitted: the built-in sample).", completion: .file())
    var file: String?

    @Option(help: "Input format: auto, hex, raw or pcap (pcap covers pcapng).")
    var format: TraceInputDecoder.Format = .auto

    @Flag(help: "Treat each hex line, or each interrupt / SET_REPORT transfer of a capture, as one USB HID report carrying iAP1.")
    var hid = false

    @Option(help: "What '>' and '<' mean in hex text: host ('>' is out, from the accessory/USB host) or device ('>' is in, written by the device).")
    var markers: TraceInputDecoder.MarkerConvention = .host

    @Flag(help: "Write JSON lines (schema in Docs/Tracing.md) instead of text.")
    var json = false

    @Flag(help: "Print counts per message and per problem instead of every packet (one JSON object with --json).")
    var stats = false

    @Option(parsing: .unconditional, help: ArgumentHelp("Refuse link packets longer than this many bytes (9...65535).", valueName: "bytes"))
    var maxPacketLength: Int = LinkPacket.maximumLength

    func validate() throws {
        guard (LinkPacket.headerLength...LinkPacket.maximumLength).contains(maxPacketLength) else {
            throw ValidationError("--max-packet-length must be between \(LinkPacket.headerLength) and \(LinkPacket.maximumLength), got \(maxPacketLength)")
        }
    }

    func run() throws {
        let options = TraceInputDecoder.Options(format: format, hid: hid, markers: markers, maximumPacketLength: maxPacketLength,
                                                annotate: CertificateNotes.annotate, decodesParameters: !stats)
        var input = TraceInputDecoder(options: options)
        var output = OutputBuffer()
        var statistics = TraceStatistics()
        let name = file.map { $0 == "-" ? "standard input" : $0 } ?? SampleTrace.name
        // iAP traffic found (events other than skipped bytes), and the events that skipped bytes.
        var found = 0
        var skipped = 0
        // Plain copies: reading the flags' property wrappers for every event costs.
        let stats = self.stats, json = self.json
        let emit: (TraceEvent) -> Void = { event in
            if case .skipped = event.body { skipped += 1 } else { found += 1 }
            if stats {
                statistics.record(event)
            } else if json {
                output.line { TraceJSON.write(event, into: &$0) }
            } else {
                for line in TraceText.lines(for: event) { output.line(line) }
            }
        }

        do {
            if let file {
                let source = try InputFile(path: file)
                var progress = ProgressLine(totalBytes: source.size)
                try source.forEachChunk { chunk in
                    try input.feed(chunk, emit: emit)
                    progress.update(bytes: input.bytesRead, total: source.size, label: "decoding \(name)")
                }
                progress.finish()
            } else {
                if !json && !stats { output.line("# \(SampleTrace.name); give a FILE to decode your own (see --help)") }
                var sample = Array(SampleTrace.text.utf8)
                try sample.withUnsafeMutableBytes { try input.feed(UnsafeRawBufferPointer($0), emit: emit) }
            }
            try input.finish(emit: emit)
        } catch let error as InputFile.OpenError {
            output.flush()
            throw CommandFailure(message: error.description)
        } catch let error as TraceInputError {
            output.flush()
            throw CommandFailure(message: "\(name): \(error.description)")
        }

        if stats {
            if json {
                output.line(statistics.json)
            } else {
                output.line("input: \(name) (\(input.detectedFormat?.rawValue ?? "empty"), \(TraceText.counted(input.bytesRead, "byte")))")
                for line in statistics.text { output.line(line) }
                if input.decoder.unidentifiedBytes > 0 {
                    output.line("ignored: \(TraceText.counted(input.decoder.unidentifiedBytes, "byte")) on USB endpoints that carried no iAP traffic")
                }
            }
        }
        output.flush()
        if input.decoder.droppedStreams > 0 {
            printError("warning: more than \(TraceDecoder.maximumStreams) USB endpoints in the capture; "
                       + "\(TraceText.counted(input.decoder.droppedStreams, "stream")) not decoded")
        }
        if hid && input.decoder.hidReports == 0 {
            printError(input.detectedFormat == .pcap
                       ? "warning: \(name) holds no HID reports (no interrupt transfers, no SET_REPORT requests): nothing to decode with --hid; without it, bulk transfers are decoded"
                       : "warning: \(name) holds no HID reports: no line of hex bytes")
        } else if found == 0 {
            let ignored = input.decoder.unidentifiedBytes
            printError("warning: no iAP traffic in \(name)"
                       + (ignored > 0 ? " (\(TraceText.counted(ignored, "byte")) on USB endpoints that carried none)" : "")
                       + (skipped > 0 ? ": only input skipped, at \(TraceText.counted(skipped, "place")) (the reasons are on standard output)" : ""))
        }
    }
}

/// A command that could not do its job: the message says why; the exit
/// status is 1 (usage errors are ArgumentParser's, with status 64).
struct CommandFailure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// What an AuthenticationCertificate in a trace says: subject, issuer,
/// serial and key type, read with IAPAuthentication (the trace decoder
/// itself stays standard-library only).
enum CertificateNotes {
    @Sendable static func annotate(_ messageID: UInt16, _ parameter: InterpretedParameter) -> String? {
        guard messageID == MessageID.authenticationCertificate, parameter.id == ParameterID.AuthenticationCertificate.certificate,
              case .blob(let bytes) = parameter.value else { return nil }
        do {
            return "certificate: " + DeviceVerifier.summary(try AccessoryCertificate(bytes: bytes), trust: "issuer not checked")
        } catch {
            return "not a usable certificate: \(error)"
        }
    }
}
