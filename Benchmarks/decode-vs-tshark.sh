#!/usr/bin/env bash
# Times `iapctl decode --stats` against `tshark -T fields -e usb.capdata` on the
# same large usbmon pcapng, in one run, and prints the ratio.
#
#   Benchmarks/decode-vs-tshark.sh [MEGABYTES] [RUNS]     (defaults: 300, 5)
#
# Needs root for apt-get when tshark or hyperfine is missing. Environment:
#   CAPTURE=path   capture file to use, or to create if missing
#                  (default: ${TMPDIR:-/tmp}/iap-bench-<MB>MB.pcapng; reused when present)
set -euo pipefail

MEGABYTES="${1:-300}"
RUNS="${2:-5}"
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
SCRATCH="$ROOT/.build-bench"
CAPTURE="${CAPTURE:-${TMPDIR:-/tmp}/iap-bench-${MEGABYTES}MB.pcapng}"

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

if [ ! -s "$CAPTURE" ]; then
    echo "== generating $CAPTURE (~${MEGABYTES} MB)"
    "$GENERATOR" "$CAPTURE" "$MEGABYTES"
fi
SIZE=$(stat -c %s "$CAPTURE")
echo "== capture: $CAPTURE, $SIZE bytes"

echo "== sanity: both tools read the whole file"
"$IAPCTL" decode --stats "$CAPTURE" | head -n 40
FRAMES=$(tshark -r "$CAPTURE" -T fields -e frame.number | tail -n 1)
echo "tshark frames: $FRAMES"

echo "== machine"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
echo "tshark: $(tshark --version | head -n 1)"
echo "iapctl: $IAPCTL"

JSON="$(mktemp --suffix=.json)"
trap 'rm -f "$JSON"' EXIT
# Warm the page cache first so both read the file from memory.
hyperfine --warmup 1 --runs "$RUNS" --export-json "$JSON" \
    -n iapctl "'$IAPCTL' decode --stats '$CAPTURE' > /dev/null" \
    -n tshark "tshark -r '$CAPTURE' -T fields -e usb.capdata > /dev/null"

python3 - "$JSON" "$SIZE" <<'PY'
import json, sys
results = {r["command"]: r for r in json.load(open(sys.argv[1]))["results"]}
size = int(sys.argv[2])
i, t = results["iapctl"], results["tshark"]
for name, r in (("iapctl", i), ("tshark", t)):
    print(f"{name:7s} median {r['median']:.3f} s  mean {r['mean']:.3f} ± {r['stddev']:.3f} s  "
          f"({size / r['median'] / 1e6:.0f} MB/s)  user {r['user']:.3f} s  sys {r['system']:.3f} s")
print(f"ratio (tshark median / iapctl median): {t['median'] / i['median']:.2f}x  "
      f"-> iapctl is {'faster' if t['median'] > i['median'] else 'slower'}")
PY
echo "(the capture is kept for reruns: rm '$CAPTURE' when done)"
