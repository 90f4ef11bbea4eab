#!/usr/bin/env bash
# Builds Examples/ (its own package, depending on this one by path, as an
# app developer's package would) and runs minimal-phone and
# minimal-head-unit against each other over TCP on this machine. Fails
# unless the head unit prints its one line of now playing and exits 0.
set -euo pipefail
cd "$(dirname "$0")/../Examples"

swift build 2>&1 | tail -n 1
bin=$(swift build --show-bin-path)
port=$(( 20000 + RANDOM % 20000 ))
out=$(mktemp -d)

"$bin/minimal-phone" --listen "127.0.0.1:$port" >"$out/phone.out" 2>"$out/phone.err" &
phone=$!
trap 'kill $phone 2>/dev/null || true' EXIT
# The phone is listening once it says so.
for _ in $(seq 50); do grep -q "waiting for a head unit" "$out/phone.out" && break; sleep 0.1; done

if ! timeout 60 "$bin/minimal-head-unit" --connect "127.0.0.1:$port" >"$out/head-unit.out" 2>"$out/head-unit.err"; then
    echo "minimal-head-unit failed:" >&2
    cat "$out/head-unit.out" "$out/head-unit.err" "$out/phone.err" >&2
    exit 1
fi
cat "$out/head-unit.out"
grep -q '^now playing: So What — Miles Davis$' "$out/head-unit.out"
# The phone serves one connection and exits when the head unit has gone.
timeout 20 tail --pid=$phone -f /dev/null
grep -q "the head unit went away" "$out/phone.out"
echo "examples: ok"
