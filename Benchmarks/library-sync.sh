#!/usr/bin/env bash
# A media library synced between two processes over TCP (`iapctl phone` with
# a generated library, `iapctl library` as the head unit), against the same
# library synced in one process (library-sync, the stack with no thread,
# socket or second process) in the same run. Prints per size: the in-process
# sync, the TCP sync (the head unit's wall clock, connection included) and
# their ratio, and each end's memory: the phone's resident size with the
# library loaded before the sync, its peak during it (VmHWM, reset by
# /proc/PID/clear_refs before the sync), and the head
# unit's peak (its copy of the library).
#
#   Benchmarks/library-sync.sh [ITEMS...]      (default: 10000 100000)
#
# Builds iapctl in release into ../.build-bench (IAPCTL=path uses that binary
# instead) and library-sync in this package's .build. PORT (default 47312).
set -euo pipefail

SIZES="${*:-10000 100000}"
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
SCRATCH="$ROOT/.build-bench"
PORT="${PORT:-47312}"

echo "== building (release): library-sync${IAPCTL:+ (iapctl given: $IAPCTL)}" >&2
(cd "$BENCH_DIR" && swift build -c release --product library-sync >&2)
if [ -z "${IAPCTL:-}" ]; then
    (cd "$ROOT" && swift build -c release --product iapctl --scratch-path "$SCRATCH" >&2)
    IAPCTL="$SCRATCH/release/iapctl"
fi
SYNC="$BENCH_DIR/.build/release/library-sync"
WORK="$(mktemp -d)"
PHONE_PID=""
trap 'rm -rf "$WORK"; [ -n "$PHONE_PID" ] && kill "$PHONE_PID" 2>/dev/null || true' EXIT
echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

kib() { awk -v key="$2:" '$1 == key { print $2 }' "/proc/$1/status"; }

printf '%-8s %12s %12s %7s %18s %15s %18s\n' items "in-process" "over TCP" ratio "phone before/peak" "phone growth" "head unit peak"
for items in $SIZES; do
    # The same library as library-sync builds: albums of 12 tracks, 50 artists, 8 genres.
    python3 - "$items" >"$WORK/library.json" <<'PY'
import json, sys
items = int(sys.argv[1])
albums = []
for album in range((items + 11) // 12):
    tracks = [{"id": f"{album}:{track}", "persistentID": album * 12 + track + 1, "title": f"Song {track + 1} of album {album}",
               "artist": f"Artist {album % 50}", "album": f"Album {album}", "genre": f"Genre {album % 8}",
               "durationMilliseconds": 180000 + track * 1000, "inBrowseTree": True}
              for track in range(min(12, items - album * 12))]
    albums.append({"id": f"album-{album}", "title": f"Album {album}", "artist": f"Artist {album % 50}", "imageID": f"art:{album}", "tracks": tracks})
interlude = {"id": "interlude", "persistentID": 0, "title": "Interlude", "artist": "-", "album": "-", "genre": "-",
             "durationMilliseconds": 1000, "inBrowseTree": False}
json.dump({"albums": albums, "stations": [], "podcasts": [], "interlude": interlude}, sys.stdout)
PY
    in_process="$("$SYNC" "$items" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["sync_s"])')"
    "$IAPCTL" phone --auth off --transport "tcp-listen:127.0.0.1:$PORT" --library "$WORK/library.json" >"$WORK/phone.log" 2>&1 &
    PHONE_PID=$!
    for _ in $(seq 1 600); do grep -q "listening on" "$WORK/phone.log" 2>/dev/null && break; sleep 0.1; done
    sleep 0.5
    before="$(kib "$PHONE_PID" VmRSS)"
    # The peak from here on: loading the library (JSON) peaked higher than it holds.
    echo 5 >"/proc/$PHONE_PID/clear_refs"
    start="$(date +%s.%N)"
    /usr/bin/time -f '%M' -o "$WORK/head-unit.rss" "$IAPCTL" library --quiet --auth off --transport "tcp:127.0.0.1:$PORT" >"$WORK/summary" 2>"$WORK/head-unit.log" \
        || { cat "$WORK/head-unit.log" >&2; exit 1; }
    end="$(date +%s.%N)"
    peak="$(kib "$PHONE_PID" VmHWM)"
    kill "$PHONE_PID"; wait "$PHONE_PID" 2>/dev/null || true; PHONE_PID=""
    grep -q ": $items items" "$WORK/summary" || { echo "the head unit did not get $items items: $(cat "$WORK/summary")" >&2; exit 1; }
    python3 - "$items" "$in_process" "$start" "$end" "$before" "$peak" "$(tail -1 "$WORK/head-unit.rss")" <<'PY'
import sys
items, in_process, start, end, before, peak, head = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
tcp = end - start
print(f"{items:<8} {in_process * 1000:9.0f} ms {tcp * 1000:9.0f} ms {tcp / in_process:6.2f}× {before // 1024:7d} / {peak // 1024:4d} MiB {(peak - before) // 1024:11d} MiB {head // 1024:14d} MiB")
PY
done
