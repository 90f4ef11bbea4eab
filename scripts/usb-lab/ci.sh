#!/usr/bin/env bash
# The USB lab as CI runs it: prepare the lab where qemu can run, then run the
# project's USB scenarios in the guest. Where the lab cannot run (not root and
# no sudo, not x86_64, qemu or the kernel cannot be installed) it says why and
# skips, exiting 0; a scenario that runs and fails exits non-zero.
#
# Needs iapctl built on the host first (.build/debug/iapctl, or IAPCTL=...).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

skip() { echo "USB lab skipped: $*" >&2; exit 0; }

[ "$(uname -m)" = x86_64 ] || skip "the lab boots an amd64 kernel; this machine is $(uname -m)"
if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null; then
    skip "preparing it needs root (packages, device nodes) and sudo asks for a password"
fi
[ -x "${IAPCTL:-$root/.build/debug/iapctl}" ] || { echo "USB lab: build iapctl first (swift build --product iapctl)" >&2; exit 1; }

prepare_log=$(mktemp)
if ! "$here/prepare.sh" > "$prepare_log" 2>&1; then
    tail -n 15 "$prepare_log" >&2
    skip "prepare.sh could not set up qemu and the guest kernel (its log above)"
fi
tail -n 1 "$prepare_log"

# throughput.sh measures a release build (a debug one measures the compiler's checks).
echo "== USB lab: building iapctl for release (for throughput.sh)"
(cd "$root" && swift build -c release --product iapctl 2>&1 | tail -n 1) || { echo "USB lab: the release build failed" >&2; exit 1; }

status=0
# Runs one scenario in a fresh guest; prints its PASS/FAIL lines and, when it
# fails, the end of its output. Returns run-in-guest.sh's exit status.
run_scenario() {
    local scenario=$1; shift
    "$here/run-in-guest.sh" "$here/$scenario" 300 "$@" > "$prepare_log.run" 2>&1
    local rc=$?
    grep -E '^(PASS|FAIL|[0-9]+ passed|iapctl:|size +raw)|^[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+x|cycles per second' "$prepare_log.run"
    case $rc in
        0) ;;
        125) tail -n 20 "$prepare_log.run" >&2 ;;
        124) tail -n 40 "$prepare_log.run" >&2; echo "USB lab: $scenario ran out of time" >&2 ;;
        *) tail -n 60 "$prepare_log.run" >&2; echo "USB lab: $scenario failed (exit $rc)" >&2 ;;
    esac
    return $rc
}
# Each entry: the scenario and its arguments. The guest runs under software
# emulation on a shared machine: a scenario that fails gets one more run in a
# fresh guest, and both outcomes are printed (a fault fails twice).
for entry in "usb-session.sh" "usb-hid-session.sh" "hid-replay.sh" "role-switch.sh" "role-swap.sh phone-restart" "plug-cycles.sh" "hotplug.sh" "supervise.sh" "throughput.sh" "throughput-hid.sh"; do
    read -r scenario args <<< "$entry"
    echo "== USB lab: $entry"
    # shellcheck disable=SC2086 # the arguments are words on purpose
    run_scenario "$scenario" $args
    rc=$?
    [ "$rc" -eq 125 ] && skip "qemu could not run the guest here (run-in-guest.sh exit 125, its output above)"
    if [ "$rc" -ne 0 ]; then
        echo "== USB lab: $entry failed (above); running it once more in a fresh guest"
        # shellcheck disable=SC2086
        run_scenario "$scenario" $args
        rc=$?
        if [ "$rc" -eq 0 ]; then
            echo "USB lab: $entry passed on its second run; the first run's failure is printed above" >&2
        else
            status=1
        fi
    fi
done
rm -f "$prepare_log" "$prepare_log.run"
exit $status
