#!/usr/bin/env bash
# Times `iapctl decode --stats` and `iapctl decode --json` against
# `tshark -T fields -e usb.capdata` on the same usbmon pcapng, all three in one
# hyperfine run per capture shape, and prints the ratios. Two shapes:
#   large    ~MEGABYTES of a session heavy in large transfers (artwork,
#            external-accessory data, a USB disk beside the phone)
#   session  RECORDS records shaped like a real session: mostly transfers
#            under 300 bytes (ACK-only link packets, now-playing updates,
#            small control messages)
#
#   Benchmarks/decode-vs-tshark.sh [MEGABYTES] [RUNS]     (defaults: 300, 5)
#
# Needs root for apt-get when tshark or hyperfine is missing. Environment:
#   SHAPES="large session"  the shapes to time (default: both)
#   RECORDS=1000000         records in the session capture
#   CAPTURE=path            the large capture, used or created
#                           (default: ${TMPDIR:-/tmp}/iap-bench-<MB>MB.pcapng)
#   SESSION_CAPTURE=path    the session capture, used or created
#                           (default: ${TMPDIR:-/tmp}/iap-bench-session-<RECORDS>.pcapng)
#   BASELINE=path           another iapctl binary (an older build, say) timed
#                           in the same runs as stats-baseline and json-baseline
# Captures are reused when present.
set -euo pipefail

MEGABYTES="${1:-300}"
RUNS="${2:-5}"
SHAPES="${SHAPES:-large session}"
RECORDS="${RECORDS:-1000000}"
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
SCRATCH="$ROOT/.build-bench"
CAPTURE="${CAPTURE:-${TMPDIR:-/tmp}/iap-bench-${MEGABYTES}MB.pcapng}"
SESSION_CAPTURE="${SESSION_CAPTURE:-${TMPDIR:-/tmp}/iap-bench-session-${RECORDS}.pcapng}"

need_apt=()
command -v tshark >/dev/null 2>&1 || need_apt+=(tshark)
command -v hyperfine >/dev/null 2>&1 || need_apt+=(hyperfine)
if ((${#need_apt[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    # wireshark-common asks whether non-root users may capture; answer no.
    echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
    if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_apt[@]}"; then
        $SUDO apt-get update
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y "${need_apt[@]}"
    fi
fi

echo "== building (release): make-usbmon-capture, iapctl"
(cd "$BENCH_DIR" && swift build -c release --product make-usbmon-capture)
(cd "$ROOT" && swift build -c release --product iapctl --scratch-path "$SCRATCH")
GENERATOR="$BENCH_DIR/.build/release/make-usbmon-capture"
IAPCTL="$SCRATCH/release/iapctl"

echo "== machine"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "tshark: $(tshark --version | head -n 1)"
echo "iapctl: $IAPCTL"

RESULTS="$(mktemp --suffix=.json)"
trap 'rm -f "$RESULTS"' EXIT

for shape in $SHAPES; do
    case "$shape" in
        large) capture="$CAPTURE"; size_argument="$MEGABYTES" ;;
        session) capture="$SESSION_CAPTURE"; size_argument="$RECORDS" ;;
        *) echo "unknown shape $shape (large or session)" >&2; exit 2 ;;
    esac
    echo
    echo "==== shape: $shape"
    if [ ! -s "$capture" ]; then
        echo "== generating $capture"
        "$GENERATOR" --shape "$shape" "$capture" "$size_argument"
    fi
    size=$(stat -c %s "$capture")
    echo "== capture: $capture, $size bytes"

    echo "== sanity: both tools read the whole file"
    "$IAPCTL" decode --stats "$capture" | head -n 40
    echo "tshark frames: $(tshark -r "$capture" -T fields -e frame.number | tail -n 1)"

    baseline=()
    if [ -n "${BASELINE:-}" ]; then
        baseline=(-n stats-baseline "'$BASELINE' decode --stats '$capture' > /dev/null"
                  -n json-baseline "'$BASELINE' decode --json '$capture' > /dev/null")
    fi
    # Warm the page cache first so that all read the file from memory.
    hyperfine --warmup 1 --runs "$RUNS" --export-json "$RESULTS" \
        -n stats "'$IAPCTL' decode --stats '$capture' > /dev/null" \
        -n json "'$IAPCTL' decode --json '$capture' > /dev/null" \
        "${baseline[@]}" \
        -n tshark "tshark -r '$capture' -T fields -e usb.capdata > /dev/null"

    python3 - "$RESULTS" "$size" "$shape" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
size, shape = int(sys.argv[2]), sys.argv[3]
tshark = results["tshark"]
for name in ("stats", "json", "stats-baseline", "json-baseline", "tshark"):
    if name not in results:
        continue
    r = results[name]
    print(f"{shape:7s} {name:6s} median {r['median']:.3f} s  mean {r['mean']:.3f} ± {r['stddev']:.3f} s  "
          f"({size / r['median'] / 1e6:.0f} MB/s)  user {r['user']:.3f} s  sys {r['system']:.3f} s")
for name in ("stats", "json", "stats-baseline", "json-baseline"):
    if name in results:
        r = results[name]
        print(f"{shape:7s} ratio tshark / iapctl {name} (medians): {tshark['median'] / r['median']:.2f}x")
PY
done
echo "(captures are kept for reruns: rm '$CAPTURE' '$SESSION_CAPTURE' when done)"
