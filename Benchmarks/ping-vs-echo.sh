#!/usr/bin/env bash
# Round trips through the whole live stack against a raw TCP echo, in one run,
# the same payload sizes, interleaved so that all see the same machine load:
#
# - echo (the baseline): `tcp-echo`, two threads of one process echoing over
#   127.0.0.1 with TCP_NODELAY, no protocol;
# - tcp (the headline): `iapctl ping --transport tcp:` to `iapctl phone
#   --transport tcp-listen:` in another process (PORT, default 47311), where
#   every message crosses threads and the kernel as the echo's does;
# - in-process (context): `iapctl ping` over the in-process loopback, both
#   link ends and endpoint cores in one process, no thread switch;
# - echo between processes (context): `tcp-echo --processes`, the same echo
#   with its echoing side in a child process, so each round trip crosses a
#   process boundary as the tcp ping does: what that boundary costs alone.
#
#   Benchmarks/ping-vs-echo.sh [ROUNDS] [COUNT]      (defaults: 3 rounds, 1000 round trips each)
#
# BEFORE=path/to/iapctl adds a fourth tool, interleaved with the others: the
# same tcp ping with that binary (say, a build of an earlier commit) against
# its own phone on PORT+1, so a change is measured against what it replaced
# in the same run.
#
# Prints each tool's median per size and round with its ratio to the echo,
# then per size the median of the rounds' ratios against the targets of
# Docs/Performance.md (tcp at most 1.5x the echo at 64 and 16,000 B, 3x at
# 60,000 B), and the tcp ping against the echo between processes.
# SIZES="64 16000 60000" chooses the payload sizes. Builds iapctl in release
# into ../.build-bench (IAPCTL=path uses that binary instead) and tcp-echo in
# this package's .build.
set -euo pipefail

ROUNDS="${1:-3}"
COUNT="${2:-1000}"
SIZES="${SIZES:-64 16000 60000}"
BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$BENCH_DIR/.." && pwd)"
SCRATCH="$ROOT/.build-bench"

echo "== building (release): tcp-echo${IAPCTL:+ (iapctl given: $IAPCTL)}" >&2
(cd "$BENCH_DIR" && swift build -c release --product tcp-echo >&2)
if [ -z "${IAPCTL:-}" ]; then
    (cd "$ROOT" && swift build -c release --product iapctl --scratch-path "$SCRATCH" >&2)
    IAPCTL="$SCRATCH/release/iapctl"
fi
ECHO="$BENCH_DIR/.build/release/tcp-echo"

# The headline: pings over TCP to a phone in another process.
PORT="${PORT:-47311}"
"$IAPCTL" phone --quiet --transport "tcp-listen:127.0.0.1:$PORT" >/dev/null 2>&1 &
PHONE_PID=$!
BEFORE_PID=""
if [ -n "${BEFORE:-}" ]; then
    "$BEFORE" phone --quiet --transport "tcp-listen:127.0.0.1:$((PORT + 1))" >/dev/null 2>&1 &
    BEFORE_PID=$!
fi

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
RESULTS="$(mktemp)"
trap 'rm -f "$RESULTS"; kill $PHONE_PID $BEFORE_PID 2>/dev/null' EXIT
for round in $(seq 1 "$ROUNDS"); do
    for size in $SIZES; do
        echo "round $round, $size B: tcp-echo (threads, processes), iapctl ping over tcp, iapctl ping in process" >&2
        printf '%s echo %s\n' "$round" "$("$ECHO" "$size" "$COUNT")" >>"$RESULTS"
        printf '%s processes %s\n' "$round" "$("$ECHO" "$size" "$COUNT" --processes)" >>"$RESULTS"
        printf '%s tcp %s\n' "$round" "$("$IAPCTL" ping --quiet --json --transport "tcp:127.0.0.1:$PORT" --size "$size" --count "$COUNT")" >>"$RESULTS"
        printf '%s process %s\n' "$round" "$("$IAPCTL" ping --quiet --json --size "$size" --count "$COUNT")" >>"$RESULTS"
        if [ -n "${BEFORE:-}" ]; then
            printf '%s before %s\n' "$round" "$("$BEFORE" ping --quiet --json --transport "tcp:127.0.0.1:$((PORT + 1))" --size "$size" --count "$COUNT")" >>"$RESULTS"
        fi
    done
done

python3 - "$RESULTS" <<'EOF'
import json, sys
rows = {}
for line in open(sys.argv[1]):
    round_, tool, text = line.split(" ", 2)
    figures = json.loads(text)
    if figures["received"] != figures["sent"]:
        sys.exit(f"{tool} lost {figures['sent'] - figures['received']} of {figures['sent']} round trips at {figures['size']} B")
    rows.setdefault((int(round_), figures["size"]), {})[tool] = figures["median_ms"]
before = any('before' in tools for tools in rows.values())
print(f"{'round':>5} {'size B':>7} {'echo ms':>9} {'tcp ms':>9} {'tcp/echo':>9} {'in-process ms':>14} {'in-process/echo':>16}"
      + f" {'echo-proc ms':>13} {'echo-proc/echo':>15}"
      + (f" {'before ms':>10} {'before/echo':>12}" if before else ""))
ratios, before_ratios, process_ratios = {}, {}, {}
for (round_, size), tools in sorted(rows.items()):
    ratios.setdefault(size, []).append(tools['tcp'] / tools['echo'])
    line = (f"{round_:>5} {size:>7} {tools['echo']:>9.3f} {tools['tcp']:>9.3f} {tools['tcp'] / tools['echo']:>8.2f}x"
            f" {tools['process']:>14.3f} {tools['process'] / tools['echo']:>15.2f}x"
            f" {tools['processes']:>13.3f} {tools['processes'] / tools['echo']:>14.2f}x")
    process_ratios.setdefault(size, []).append(tools['tcp'] / tools['processes'])
    if before:
        before_ratios.setdefault(size, []).append(tools['before'] / tools['echo'])
        line += f" {tools['before']:>10.3f} {tools['before'] / tools['echo']:>11.2f}x"
    print(line)

def median(values):
    values = sorted(values)
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2

targets = {64: 1.5, 16000: 1.5, 60000: 3.0}
print()
print(f"{'size B':>7} {'tcp/echo, median of rounds':>27} {'target':>7}" + (f" {'before/echo':>12}" if before else "")
      + f" {'tcp/echo-proc':>14}")
for size, values in sorted(ratios.items()):
    target = f"{targets[size]:.1f}x" if size in targets else "-"
    print(f"{size:>7} {median(values):>26.2f}x {target:>7}" + (f" {median(before_ratios[size]):>11.2f}x" if before else "")
          + f" {median(process_ratios[size]):>13.2f}x")
EOF
