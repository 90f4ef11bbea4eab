#!/usr/bin/env bash
# Builds the libFuzzer entry points in Fuzz/ and runs each for N seconds.
#
#   scripts/fuzz.sh [SECONDS] [TARGET]
#
# SECONDS  time per target (default 60; 0: no time limit, with FUZZ_RUNS)
# TARGET   link | control | trace | linkend | session | legacy | all (default),
#          or a full target name (FuzzLinkStream, FuzzControlMessage,
#          FuzzTraceInput, FuzzLinkEnd, FuzzSession, FuzzLegacyPhone, FuzzEndpoint)
#
# FUZZ_CONFIGURATION=release builds with optimisation (still with ASan and
# libFuzzer), several times faster than the default debug build; binaries
# go to Fuzz/.build-fuzz/release/. FUZZ_RUNS=N stops each target after N
# executions (libFuzzer's -runs) as well as after SECONDS.
#
# Corpora live in Fuzz/corpus/<Target>/ (kept between runs, git-ignored) and
# are seeded every run from Tests/IAPWireTests/Fixtures/public/*.hex plus a
# few generated packets, messages and usbmon captures. Crash, timeout and
# out-of-memory inputs go to Fuzz/crashes/<Target>-*. Logs go to
# Fuzz/.build-fuzz/logs/. Extra libFuzzer flags can be passed in
# FUZZ_FLAGS, e.g. FUZZ_FLAGS="-timeout=60".
#
# FUZZ_FORK=N runs one campaign in N worker processes (libFuzzer's -fork=N):
# short jobs on random parts of the corpus, their finds merged back into it,
# the executions of all jobs counted together against FUZZ_RUNS, and the
# first crash stopping the whole run. With N cores it gives about N times
# the executions an hour of a single process.
#
# FUZZ_ADDRESS_SANITIZER=0 fuzzes with a libFuzzer-only build (no ASan,
# Fuzz/.build-fuzz-plain/), about twice as fast on these allocation-heavy
# targets; Swift's own checks (bounds, overflow, preconditions), the
# targets' invariants and the memory limit still stop a run. ASan only adds
# checks on unsafe-pointer code (the wire decoder, checksums, capture
# reader), so after each such run the whole corpus, every input that
# reached new coverage, is replayed once under the ASan build, and a finding
# there fails the target (log: <Target>-asan-replay.log).
#
# Reproduce a crash:  Fuzz/.build-fuzz/debug/FuzzLinkStream Fuzz/crashes/FuzzLinkStream-crash-...
# Minimise it:        Fuzz/.build-fuzz/debug/FuzzLinkStream -minimize_crash=1 -runs=100000 <crash-file>
# (release/ instead of debug/ for a FUZZ_CONFIGURATION=release build)
set -euo pipefail
# The Swift runtime's backtracer fights ASan over the crashing thread; let
# libFuzzer and ASan report instead.
export SWIFT_BACKTRACE=enable=no
# ASan records a stack trace at every allocation and free by default; the
# targets allocate on every input, and that unwinding took a quarter of each
# run (perf: StackDepot::Put, UnwindFast). Without it the targets run about
# 1.5 times as fast and ASan still stops at the first bad access; a crash
# input replayed by hand (ASAN_OPTIONS unset) shows where the memory came
# from. Set ASAN_OPTIONS to override.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0}"

SECONDS_PER_TARGET="${1:-60}"
WHICH="${2:-all}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
FUZZ="$ROOT/Fuzz"
SCRATCH="$FUZZ/.build-fuzz"
CONFIGURATION="${FUZZ_CONFIGURATION:-debug}"
case "$CONFIGURATION" in
    debug|release) ;;
    *) echo "FUZZ_CONFIGURATION must be debug or release, not '$CONFIGURATION'" >&2; exit 2 ;;
esac
BIN="$SCRATCH/$CONFIGURATION"
ADDRESS_SANITIZER="${FUZZ_ADDRESS_SANITIZER:-1}"
case "$ADDRESS_SANITIZER" in
    0|1) ;;
    *) echo "FUZZ_ADDRESS_SANITIZER must be 0 or 1, not '$ADDRESS_SANITIZER'" >&2; exit 2 ;;
esac
PLAIN_SCRATCH="$FUZZ/.build-fuzz-plain"
FUZZ_BIN="$BIN"
[ "$ADDRESS_SANITIZER" = 0 ] && FUZZ_BIN="$PLAIN_SCRATCH/$CONFIGURATION"
LOGS="$SCRATCH/logs"
CRASHES="$FUZZ/crashes"
CORPUS="$FUZZ/corpus"

case "$WHICH" in
    all) TARGETS=(FuzzLinkStream FuzzControlMessage FuzzTraceInput FuzzLinkEnd FuzzSession FuzzLegacyPhone FuzzEndpoint) ;;
    link|FuzzLinkStream) TARGETS=(FuzzLinkStream) ;;
    control|FuzzControlMessage) TARGETS=(FuzzControlMessage) ;;
    trace|FuzzTraceInput) TARGETS=(FuzzTraceInput) ;;
    linkend|FuzzLinkEnd) TARGETS=(FuzzLinkEnd) ;;
    session|FuzzSession) TARGETS=(FuzzSession) ;;
    legacy|FuzzLegacyPhone) TARGETS=(FuzzLegacyPhone) ;;
    endpoint|FuzzEndpoint) TARGETS=(FuzzEndpoint) ;;
    *) echo "unknown target '$WHICH' (link, control, trace, linkend, session, legacy, endpoint or all)" >&2; exit 2 ;;
esac

echo "== building fuzz targets ($CONFIGURATION, -sanitize=fuzzer,address) in $SCRATCH"
# --disable-build-manifest-caching: the cached build plan of the parent
# package misses a source file added to it ("cannot find ... in scope").
(cd "$FUZZ" && swift build -c "$CONFIGURATION" --scratch-path "$SCRATCH" --disable-build-manifest-caching \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -use-ld=lld 2>&1 | tail -n 3)
if [ "$ADDRESS_SANITIZER" = 0 ]; then
    echo "== building fuzz targets ($CONFIGURATION, -sanitize=fuzzer) in $PLAIN_SCRATCH"
    (cd "$FUZZ" && swift build -c "$CONFIGURATION" --scratch-path "$PLAIN_SCRATCH" --disable-build-manifest-caching \
        -Xswiftc -sanitize=fuzzer -Xswiftc -parse-as-library -Xswiftc -use-ld=lld 2>&1 | tail -n 3)
fi

mkdir -p "$LOGS" "$CRASHES" "$CORPUS"

echo "== seeding corpora in $CORPUS"
python3 - "$ROOT/Tests/IAPWireTests/Fixtures/public" "$CORPUS" <<'PY'
import glob, os, struct, sys

fixtures, corpus = sys.argv[1], sys.argv[2]
dirs = {name: os.path.join(corpus, name) for name in ("FuzzLinkStream", "FuzzControlMessage", "FuzzTraceInput", "FuzzLinkEnd", "FuzzSession", "FuzzLegacyPhone", "FuzzEndpoint")}
for d in dirs.values():
    os.makedirs(d, exist_ok=True)

def write(target, name, data):
    with open(os.path.join(dirs[target], "seed-" + name), "wb") as f:
        f.write(data)

def checksum(data):
    return (-sum(data)) & 0xFF

def link_packet(control, seq, ack, session, payload=b""):
    length = 9 + (len(payload) + 1 if payload else 0)
    header = bytes([0xFF, 0x5A, length >> 8, length & 0xFF, control, seq, ack, session])
    out = header + bytes([checksum(header)])
    if payload:
        out += payload + bytes([checksum(payload)])
    return out

def parameter(pid, data):
    return struct.pack(">HH", 4 + len(data), pid) + data

def message(mid, params=b""):
    return b"\x40\x40" + struct.pack(">HH", 6 + len(params), mid) + params

def iap1(payload, sync=False):
    length = bytes([len(payload)]) if len(payload) <= 255 else b"\x00" + struct.pack(">H", len(payload))
    return (b"\xff\x55" if sync else b"\x55") + length + payload + bytes([checksum(length + payload)])

def parse_hex(path):
    """Lines of (marker, bytes) from a fixture."""
    lines = []
    for raw in open(path, encoding="utf-8", errors="replace"):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        marker = None
        if text[0] in "<>":
            marker, text = text[0], text[1:]
        data = bytearray()
        for token in text.replace(",", " ").replace(":", " ").split():
            if token[:2].lower() == "0x":
                token = token[2:]
            try:
                data += bytes.fromhex(token)
            except ValueError:
                pass
        if data:
            lines.append((marker, bytes(data)))
    return lines

def extract_messages(stream):
    """Control messages carried by valid link packets in `stream`."""
    found, i = [], 0
    while i + 9 <= len(stream):
        if stream[i] == 0xFF and stream[i + 1] == 0x5A and checksum(stream[i:i + 8]) == stream[i + 8]:
            length = stream[i + 2] << 8 | stream[i + 3]
            if 9 < length <= len(stream) - i:
                payload = stream[i + 9:i + length - 1]
                if payload[:2] == b"\x40\x40":
                    found.append(payload)
                i += length
                continue
        i += 1
    return found

# pcap / pcapng of usbmon, as tcpdump writes them.
def usbmon_header(event_id, kind, transfer, endpoint, data, mmapped, setup=None):
    header = struct.pack("<QBBBBHcc", event_id, kind, transfer, endpoint, 2, 1,
                         b"\x00" if setup else b"-", b"\x00" if data else b"<")
    header += struct.pack("<qiiII", 0, 0, 0 if kind == 0x43 else -115, len(data), len(data))
    header += (setup or bytes(8))
    if mmapped:
        header += bytes(16)
    return header + data

def transfers(lines, hid=False):
    events, event_id = [], 1
    for marker, data in lines:
        endpoint = 0x81 if marker == "<" else 0x01
        transfer = 1 if hid else 3
        is_in = endpoint & 0x80
        events.append((event_id, 0x53, transfer, endpoint, b"" if is_in else data))
        events.append((event_id, 0x43, transfer, endpoint, data if is_in else b""))
        event_id += 1
    return events

def pcap(lines, hid=False):
    out = struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 189)
    for event_id, kind, transfer, endpoint, data in transfers(lines, hid):
        record = usbmon_header(event_id, kind, transfer, endpoint, data, False)
        out += struct.pack("<IIII", event_id, 0, len(record), len(record)) + record
    return out

def block(kind, body):
    body += bytes((-len(body)) % 4)
    total = 12 + len(body)
    return struct.pack("<II", kind, total) + body + struct.pack("<I", total)

def pcapng(lines, hid=False):
    out = block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))
    out += block(1, struct.pack("<HHI", 220, 0, 262144))
    for event_id, kind, transfer, endpoint, data in transfers(lines, hid):
        record = usbmon_header(event_id, kind, transfer, endpoint, data, True)
        out += block(6, struct.pack("<IIIII", 0, 0, event_id, len(record), len(record)) + record)
    return out

for path in sorted(glob.glob(os.path.join(fixtures, "*.hex"))):
    name = os.path.splitext(os.path.basename(path))[0]
    lines = parse_hex(path)
    if not lines:
        continue
    stream = b"".join(data for _, data in lines)
    hid = "hid" in name
    write("FuzzLinkStream", name, stream)
    with open(path, "rb") as f:
        write("FuzzTraceInput", name + ".hex", f.read())
    write("FuzzTraceInput", name + ".raw", stream)
    write("FuzzTraceInput", name + ".pcap", pcap(lines, hid))
    write("FuzzTraceInput", name + ".pcapng", pcapng(lines, hid))
    for index, found in enumerate(extract_messages(stream)):
        write("FuzzControlMessage", "%s-%d" % (name, index), found)

# Generated packets, messages and frames.
sync = bytes([1, 8, 0x10, 0, 4, 0xB0, 0, 0x17, 3, 3, 10, 0, 1, 11, 2, 1, 12, 1, 1])
identify = message(0x1D01, parameter(0, b"Accessory\x00") + parameter(1, b"Model\x00")
                   + parameter(6, struct.pack(">HHHH", 0xAE00, 0xAE02, 0x5000, 0x5002))
                   + parameter(10, parameter(0, struct.pack(">H", 1)) + parameter(1, b"Transport\x00") + parameter(2, b""))
                   + parameter(12, b"en\x00"))
deep = parameter(0, b"")
for level in range(12):
    deep = parameter(level % 3, deep)
generated_messages = {
    "start-hid": message(0x6800, parameter(0, struct.pack(">H", 5353)) + parameter(1, struct.pack(">H", 0x1D6B))
                         + parameter(2, struct.pack(">H", 0xB31D)) + parameter(4, bytes(range(1, 45)))),
    "identification": identify,
    "deep-groups": message(0x1D01, deep),
    "now-playing": message(0x5001, parameter(0, parameter(1, b"Title\x00") + parameter(4, struct.pack(">I", 1234)))
                           + parameter(1, parameter(0, bytes([1])) + parameter(1, struct.pack(">Q", 7)))),
    "auth-cert": message(0xAA01, parameter(0, bytes(range(64)))),
    "two-messages": message(0xAA00) + message(0xAA02, parameter(0, bytes(20))),
    "unknown-id": message(0x1234, parameter(7, b"\x00\x01\x02") + parameter(8, b"x\x00")),
}
for name, data in generated_messages.items():
    write("FuzzControlMessage", "gen-" + name, data)

generated_streams = {
    "syn": link_packet(0x80, 0x2B, 0, 0, sync),
    "syn-ack": link_packet(0xC0, 0x10, 0x2B, 0, sync),
    "ack": link_packet(0x40, 0x2C, 0x10, 0),
    "eak": link_packet(0x60, 0x2C, 0x10, 0, bytes([3, 4, 5])),
    "rst": link_packet(0x10, 0, 0, 0),
    "control-data": link_packet(0x40, 0x2C, 0x10, 10, identify),
    "file-transfer": link_packet(0x40, 0x2D, 0x10, 11, bytes([0x80, 0x04]) + struct.pack(">Q", 1000)),
    "ea": link_packet(0x40, 0x2E, 0x10, 12, b"\x00\x42hello"),
    "detect-then-syn": bytes([0xFF, 0x55, 0x02, 0x00, 0xEE, 0x10]) + link_packet(0x80, 1, 0, 0, sync),
    "iap1-short-and-sync": iap1(b"\x00\x13\x00\x00\x00\x10") + iap1(b"\x04\x00\x01\x00\x00\x00", sync=True),
    "iap1-large": iap1(b"\x00\x02" + bytes(300), sync=True),
    "split-message": link_packet(0x40, 1, 0, 10, identify[:20]) + link_packet(0x40, 2, 0, 10, identify[20:]),
}
for name, data in generated_streams.items():
    write("FuzzLinkStream", "gen-" + name, data)
    write("FuzzTraceInput", "gen-" + name + ".raw", data)
    write("FuzzTraceInput", "gen-" + name + ".pcapng", pcapng([(">", data)]))
handshake = [(">", generated_streams["detect-then-syn"]), ("<", generated_streams["syn-ack"]),
             (">", generated_streams["ack"]), ("<", generated_streams["split-message"])]
write("FuzzTraceInput", "gen-handshake.pcapng", pcapng(handshake))
write("FuzzTraceInput", "gen-handshake.pcap", pcap(handshake))
write("FuzzTraceInput", "gen-handshake.hex",
      "".join("%s %s\n" % (m, d.hex(" ")) for m, d in handshake).encode())

# Scripts for FuzzLinkEnd (see its header for the format): one end against a
# scripted peer (first byte even; a handshake as the device's peer, one as
# the accessory's, then tagged data, consumption, resends and time) and two
# ends over a faulty wire (first byte odd).
config = [0x03, 0x06, 0x01, 0x05, 0x00, 0x10]
def tagged(n):
    return [7, 0, n] + [0x30 + i for i in range(n)] + [0, 0]
device_peer = ([1, 2, 0x10, 0xA3, 2, 1, 2, 2, 7, 4, 0, 1, 1] + tagged(5) + tagged(9) + [0xA2, 255] + tagged(3)
               + [9, 1, 0, 0, 0xAB, 0x22] + tagged(4) + [0xA0, 0x20, 4, 0, 1, 0xAB, 0x44])
accessory_peer = ([1, 3, 0x40, 1, 1, 8, 0x10, 0x00, 1, 4, 0, 1] + tagged(5) + tagged(9) + [0xA2, 255] + tagged(3)
                  + [9, 1, 0, 0, 0xAB, 0x22] + tagged(4) + [0xA0, 0x20, 4, 0, 1, 0xA5, 0xAB, 0x12, 3, 0x41, 1, 1, 8, 0x10, 0, 1]
                  + tagged(6) + [0xAB, 0x44])
link_end_scripts = {
    "device-peer": bytes([0] + config + device_peer),
    "accessory-peer": bytes([0] + config + accessory_peer),
    "pair": bytes([1] + config + config + [0x65, 0, 1, 0x08, 0, 8, 0x03, 0x0B, 0, 8, 0, 8, 0x25, 0, 8, 0, 8, 0, 8,
                                           0x03, 0x0B, 0x13, 0x21, 0, 8, 0, 8, 0xA5, 0, 8, 0, 8]),
    "pair-faults": bytes([1] + config + config + [0x65, 0, 0x10, 0x08, 0, 0x18, 0x03, 0x0B, 0x30, 0x08, 0x40, 1, 0x50, 2,
                                                  0x25, 0x0B, 0x13, 0x08, 0x08, 0x00, 0xFF, 0x85]),
}
for name, data in link_end_scripts.items():
    write("FuzzLinkEnd", "gen-" + name, data)

# Scripts for FuzzSession (Docs/Fuzzing.md has the format): two setup bytes,
# then operations, 0x80 on one naming the head unit's side. A whole
# authenticated conversation (authentication, identification, browsing,
# playing, now playing) step by step, each message delivered and each edge
# request answered by its own operation so that mutations can fault any of
# them; the same exchanged at once; and one with faults (a garbage
# certificate, identification after the failure, a verifier that never
# answers, duplicated, split, cut and changed messages, late and missing
# answers from the app, a message left unfinished, one link end down).
PHONE, HEAD = 0x00, 0x80
RAW, MESSAGE, USER, APP_ANSWER, EDGE, LINK_UP, LINK_DOWN, TIME, APP, EXCHANGE = 4, 7, 8, 10, 11, 12, 13, 14, 16, 18
def deliver(side, *fault):
    return [side] + (list(fault) or [0])
def deliveries(side, count):
    return deliver(side) * count
conversation = ([0x02, 0x00, LINK_UP, 0x00]
                + deliver(HEAD) + [EDGE | HEAD, 0] + deliver(PHONE) + [EDGE, 0]
                + deliver(HEAD) + [EDGE | HEAD, 0] + deliver(PHONE) + [EDGE, 0]
                + deliveries(HEAD, 2) + deliver(PHONE) + deliveries(HEAD, 3) + deliveries(PHONE, 4) + [APP_ANSWER, 0, 0]
                + deliveries(HEAD, 2) + [USER, 1, 1] + deliver(PHONE) + [APP_ANSWER, 0, 0] + deliver(HEAD)
                + [USER, 4, 0x0A] + deliver(PHONE) + [APP_ANSWER, 0, 0] + deliveries(HEAD, 2)
                + [TIME, 3, APP, 0, 4, 0, 0, 0] + deliver(HEAD))
faults = ([0x00, 0x00, LINK_UP, 0x00]
          + deliver(HEAD) + [EDGE | HEAD, 5, 4, 0x61, 0x62, 0x63, 0x64] + deliver(PHONE) + [EDGE, 0] + deliver(HEAD)
          + [MESSAGE, 4, TIME, 6, LINK_DOWN, 0, LINK_UP, 0]
          + deliver(HEAD) + [EDGE | HEAD, 0] + deliver(PHONE) + [EDGE, 7, TIME, 5, TIME, 3]
          + [LINK_DOWN, 0, LINK_UP, 0, EXCHANGE]
          + [USER, 5, 3, 0, 0, 0] + deliver(PHONE, 2) + [USER, 1, 4] + deliver(PHONE, 4, 5) + [APP_ANSWER, 0x60, 0, 2]
          + [USER, 4, 0x0A] + deliver(PHONE) + [APP_ANSWER, 0xC0, 0, TIME, 4]
          + deliver(HEAD, 5, 3) + deliver(HEAD, 3, 2, 0x10) + deliver(HEAD, 4, 7) + [TIME, 5]
          + [RAW | HEAD, 0, 0, 6, 0x40, 0x40, 0x00, 0x10, 0xB1, 0x01, TIME, 5, TIME, 3]
          + [LINK_DOWN, 2, TIME, 3, EXCHANGE])
session_scripts = {
    "conversation": conversation,
    "conversation-exchanged": [0x02, 0x00, LINK_UP, 0x00, EXCHANGE, USER, 1, 1, EXCHANGE, USER, 4, 0x0A, EXCHANGE,
                               TIME, 3, EXCHANGE, APP, 0, 4, 0, 0, 0, EXCHANGE],
    "faults": faults,
}
for name, data in session_scripts.items():
    write("FuzzSession", "gen-" + name, bytes(data))
# Each generated message as raw bytes on the control session of the end that receives it.
for name, data in generated_messages.items():
    side = HEAD if name in ("now-playing", "two-messages") else PHONE
    write("FuzzSession", "gen-message-" + name,
          bytes([0x02, 0x00, LINK_UP, 0x00, EXCHANGE, RAW | side, 0, 0, min(len(data), 63)]) + data[:63])

# Scripts for FuzzLegacyPhone (an operation byte, its arguments): an iAP1
# head unit identifying, counting the tabs as playlists (the app answering
# with a page), reading them and waiting; and one authenticating (a
# certificate section, the verifier's challenge, a signature, a valid verdict).
identify_browse = [0x30, 0x00, 0x01, 0x00, 0x02, 5, 1, 0x01, 0x07, 0, 3, 0x01, 4, 0x00, 5, 0x03, 6, 0, 3,
                   0x02, 6, 9, 0x01, 0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0B, 10]
authenticate = ([0x30, 0x02, 0x01, 0x01, 0, 0, 2, 0, 0x05, 0x00, 0, 0, 4] + [0x30] * 16
                + [0x08, 20] + list(range(20)) + [0x00, 0x06, 8] + [7] * 8 + [0x20, 0, 0x00, 0x02, 7, 0])
for name, data in {"identify-browse": identify_browse, "authenticate": authenticate}.items():
    write("FuzzLegacyPhone", "gen-" + name, bytes(data))

# Scripts for FuzzEndpoint (an operation byte, side in bit 0, the operation
# in (byte >> 1) % 10, then its arguments): both ends reading each other
# whole and the edge answering, with time running on, so that the link comes
# up and the session gets through authentication and identification; then
# the head unit's user browsing and a cable pulled and put back.
def endpoint_round(wait):
    read = lambda side: [side, 0, 0, 0, 4]           # read whole, unchanged
    answer = lambda side: [6 | side, 0, 1, 1, 1, 1]  # the oldest request, for its own link
    return read(0) + read(1) + answer(0) + answer(1) + [82, wait]  # then wait * 10 ms
settle = sum((endpoint_round(5) for _ in range(24)), [])
browse = settle + [9, 0, 1] + sum((endpoint_round(2) for _ in range(6)), []) + [9, 5, 0] + sum((endpoint_round(2) for _ in range(6)), [])
replug = settle + [12, 0] + [14] + sum((endpoint_round(5) for _ in range(12)), [])
for name, data in {"settle": settle, "browse": browse, "replug": replug}.items():
    write("FuzzEndpoint", "gen-" + name, bytes(data))

# A dictionary of the formats' magic numbers.
with open(os.path.join(corpus, "iap.dict"), "w") as f:
    for token in (b"\xff\x5a", b"\xff\x55", b"\xff\x55\x02\x00\xee\x10", b"\x40\x40", b"\x0a\x0d\x0d\x0a",
                  b"\x4d\x3c\x2b\x1a", b"\xd4\xc3\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\x00\xbd", b"\xdc\x00",
                  b"\xaa\x00", b"\x1d\x00", b"\x68\x00", b"> ff 5a ", b"< ", b"0x"):
        f.write('"%s"\n' % "".join("\\x%02x" % b for b in token))
PY

status=0
SUMMARY=()
for target in "${TARGETS[@]}"; do
    log="$LOGS/$target.log"
    echo "== $target: ${SECONDS_PER_TARGET}s, corpus $CORPUS/$target ($(ls "$CORPUS/$target" | wc -l) inputs), log $log"
    set +e
    limits=()
    [ "$SECONDS_PER_TARGET" != 0 ] && limits+=(-max_total_time="$SECONDS_PER_TARGET")
    [ -n "${FUZZ_RUNS:-}" ] && limits+=(-runs="$FUZZ_RUNS")
    [ -n "${FUZZ_FORK:-}" ] && limits+=(-fork="$FUZZ_FORK")
    started=$(date +%s)
    # shellcheck disable=SC2086
    "$FUZZ_BIN/$target" "$CORPUS/$target" \
        -dict="$CORPUS/iap.dict" \
        "${limits[@]}" \
        -rss_limit_mb=2048 -timeout=10 \
        -artifact_prefix="$CRASHES/$target-" \
        -print_final_stats=1 ${FUZZ_FLAGS:-} >"$log" 2>&1
    rc=$?
    set -e
    elapsed=$(( $(date +%s) - started ))
    runs=$(grep -h "stat::number_of_executed_units" "$log" | awk '{s += $2} END {print s + 0}')
    # Fork mode prints the executions of all its jobs so far as "#N: cov: …".
    if [ -n "${FUZZ_FORK:-}" ]; then
        runs=$(grep -oE '^#[0-9]+: ' "$log" | tail -n 1 | tr -dc '0-9')
        runs=${runs:-0}
    fi
    replay=""
    if [ "$rc" -eq 0 ] && [ "$ADDRESS_SANITIZER" = 0 ]; then
        replay_log="$LOGS/$target-asan-replay.log"
        echo "== $target: replaying $(ls "$CORPUS/$target" | wc -l) corpus inputs under ASan, log $replay_log"
        set +e
        "$BIN/$target" "$CORPUS/$target" -runs=0 -rss_limit_mb=2048 -timeout=10 \
            -artifact_prefix="$CRASHES/$target-asan-" >"$replay_log" 2>&1
        rc=$?
        set -e
        log="$replay_log"
        replay=", corpus replayed under ASan"
    fi
    if [ "$rc" -eq 0 ]; then
        result="clean$replay"
    else
        status=1
        artifact=$(grep -ho "Test unit written to .*" "$log" | tail -n 1 | sed 's/Test unit written to //')
        kind=$(grep -hoE "ERROR: (libFuzzer|AddressSanitizer): [a-zA-Z_-]+|FUZZ INVARIANT BROKEN: .*|Fatal error: .*" "$log" | head -n 1)
        result="FAILED (exit $rc): ${kind:-see log}; input: ${artifact:-none}"
    fi
    SUMMARY+=("$(printf '%-20s %12s executions %7ss  %s' "$target" "$runs" "$elapsed" "$result")")
done

echo
sanitizers="libFuzzer + ASan"
[ "$ADDRESS_SANITIZER" = 0 ] && sanitizers="libFuzzer only, corpus replayed under ASan"
echo "== summary ($CONFIGURATION build, $sanitizers, ${SECONDS_PER_TARGET}s per target${FUZZ_RUNS:+, at most $FUZZ_RUNS runs})"
printf '%s\n' "${SUMMARY[@]}"
exit $status
