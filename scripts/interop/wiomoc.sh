#!/usr/bin/env bash
# Runs wiomoc/iap2's Python accessory stack against `iapctl phone` over TCP:
# its link layer and message codec, unchanged, with our phone on the other
# end (Docs/Conformance.md, "Against other implementations").
#
#   scripts/interop/wiomoc.sh CHECKOUT [IAPCTL]
#
# CHECKOUT  a checkout of https://github.com/wiomoc/iap2 (the directory
#           holding iap2/); nothing of it is kept in this repository
# IAPCTL    the iapctl to test (default .build/debug/iapctl)
#
# Needs python3 with `cryptography` (pip install cryptography). Each
# scenario starts a phone with --once on a free port, runs the accessory
# against it (through scripts/interop/lossy-proxy.py where packets are
# lost), and checks both sides' output. Prints one line per scenario and
# exits non-zero if any failed; logs stay in a temporary directory, named
# at the end.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
checkout="${1:?usage: scripts/interop/wiomoc.sh CHECKOUT [IAPCTL]}"
iapctl="${2:-$root/.build/debug/iapctl}"
[ -f "$checkout/iap2/link_layer.py" ] || { echo "$checkout does not hold wiomoc/iap2 (no iap2/link_layer.py)" >&2; exit 2; }
[ -x "$iapctl" ] || { echo "no iapctl at $iapctl: run swift build first" >&2; exit 2; }
python3 -c "import cryptography" 2>/dev/null || { echo "python3 lacks cryptography: pip install cryptography" >&2; exit 2; }

logs="$(mktemp -d /tmp/iap-interop.XXXXXX)"
python3 "$here/wiomoc-accessory.py" --make-identity "$logs/identity"
anchor="$logs/identity/authority-certificate.pem"
failed=0

# Ports are handed out in order (not from a subshell, which would not
# remember the last one).
next_port=$((20000 + RANDOM % 20000))

# scenario NAME EXPECT PHONE_ARGS ACCESSORY_ARGS [PROXY_ARGS]
#   EXPECT: ok (every step passes) or a phrase the phone's log must hold
#   when the accessory is refused.
scenario() {
    local name="$1" expect="$2" phone_args="$3" accessory_args="$4" proxy_args="${5:-}"
    local port target dir="$logs/$name"
    mkdir -p "$dir"
    port=$next_port
    next_port=$((next_port + 1))
    # shellcheck disable=SC2086
    "$iapctl" phone --once --transport "tcp-listen:127.0.0.1:$port" $phone_args >"$dir/phone.out" 2>"$dir/phone.err" &
    local phone=$!
    for _ in $(seq 50); do grep -q "running over" "$dir/phone.err" 2>/dev/null && break; sleep 0.1; done
    target=$port
    local proxy=""
    if [ -n "$proxy_args" ]; then
        target=$next_port
        next_port=$((next_port + 1))
        # shellcheck disable=SC2086
        python3 "$here/lossy-proxy.py" "$target" "$port" $proxy_args >"$dir/proxy.out" 2>&1 &
        proxy=$!
        sleep 0.5
    fi
    # shellcheck disable=SC2086
    timeout 180 python3 "$here/wiomoc-accessory.py" "$checkout" 127.0.0.1 "$target" $accessory_args >"$dir/accessory.out" 2>&1
    local accessory=$?
    for _ in $(seq 50); do kill -0 "$phone" 2>/dev/null || break; sleep 0.1; done
    kill "$phone" 2>/dev/null; wait "$phone" 2>/dev/null
    [ -n "$proxy" ] && { kill "$proxy" 2>/dev/null; wait "$proxy" 2>/dev/null; }
    local result
    if [ "$expect" = ok ]; then
        if [ "$accessory" -eq 0 ]; then result="pass"; else result="FAIL: $(grep -h 'INTEROP FAIL' "$dir/accessory.out" | tail -n 1)"; fi
    else
        if [ "$accessory" -ne 0 ] && grep -q "$expect" "$dir/phone.err"; then result="pass (refused as expected: $expect)"
        else result="FAIL: expected the phone to say \"$expect\""; fi
    fi
    case "$result" in pass*) ;; *) failed=$((failed + 1)) ;; esac
    local drops=""
    [ -n "$proxy" ] && drops=" ($(grep -h 'proxy: dropped [0-9]' "$dir/proxy.out" | sed 's/proxy: //'))"
    printf '%-28s %s%s\n' "$name" "$result" "$drops"
}

echo "== wiomoc/iap2 accessory ($(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo "checkout $checkout")) against $iapctl phone"
scenario authenticated ok "--trust-anchors $anchor" "--identity $logs/identity"
scenario without-authentication ok "--auth off" "--no-auth"
scenario all-components ok "--trust-anchors $anchor" "--identity $logs/identity --components"
scenario two-languages "SupportedLanguage (13) malformed" "--trust-anchors $anchor" "--identity $logs/identity --languages de,en"
scenario lost-to-accessory ok "--trust-anchors $anchor" "--identity $logs/identity --rounds 20" "--to-client 3"
# Heavier loss than this (every 4th and 3rd) ends the link within a few
# rounds in most runs: wiomoc gives up after 4 transmissions of a packet and
# counts the resends our EAKs prompt (it reads an EAK as a list of missing
# packets), Docs/Conformance.md.
scenario lost-both-ways ok "--trust-anchors $anchor" "--identity $logs/identity --rounds 20" "--to-client 5 --to-target 7"
echo "logs: $logs"
exit $((failed > 0))
