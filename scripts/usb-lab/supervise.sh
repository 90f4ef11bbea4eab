#!/usr/bin/env bash
# USB lab scenario: the device supervisor on real hotplug, inside the lab guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/supervise.sh 240
#
# The gadget runs the phone role and is already plugged in when
# `iapctl supervise --role head-unit` starts on the host side. The supervisor
# must take the device present at start, bring the link up and identify over
# libusb, end the connection exactly once on unplug (UDC unbind, mid-session),
# and take the replugged device as a fresh connection.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 240

# Polls up to ~20 s (each try costs a few forks, slow under TCG).
wait_for() { for _ in $(seq 1 80); do eval "$1" && return 0; sleep 0.25; done; return 1; }
count() { grep -c -E "$1" "$2" 2>/dev/null || true; }

lab_start_usb

check "gadget set up (configfs, functionfs)" "$root/scripts/gadget-setup.sh"
"$iapctl" gadget --role phone --udc auto > "$out/gadget.log" 2>&1 &
gadget_pid=$!
check "the gadget enumerates on the host side" wait_for "grep -q '^1209$' /sys/bus/usb/devices/*/idVendor"
udevadm settle

log=$out/supervise.log
"$iapctl" supervise --role head-unit --connections 2 --trace "$out/supervise.pcapng" > "$log" 2>&1 &
supervise_pid=$!
check "the device present at start is taken: connection #1" wait_for "grep -q 'head-unit #1: connected: 1209:0001' '$log'"
check "connection #1: identified by the phone" wait_for "grep -q 'phone #1: identified iap-devkit head unit' '$out/gadget.log'"
check "connection #1: now playing reached the head unit" wait_for "grep -q 'head-unit #1: now playing: ' '$log'"
# Open files and threads of the supervisor while connected: the same on the
# second connection, or the first one left something behind.
resources() { echo "$(ls /proc/"$supervise_pid"/fd | wc -l) fds, $(ls /proc/"$supervise_pid"/task | wc -l) threads"; }
sleep 1
resources_first=$(resources)

echo "" > "$gadget/UDC"   # unplug with the session live
check "unplug: connection #1 ends" wait_for "grep -q 'head-unit #1: disconnected: ' '$log'"
ls /sys/class/udc | head -n 1 > "$gadget/UDC"
check "replug: a fresh connection #2" wait_for "grep -q 'head-unit #2: connected: 1209:0001' '$log'"
check "connection #2: now playing again" wait_for "grep -q 'head-unit #2: now playing: ' '$log'"
# Worker threads of the system's queues come and go on their own (a loaded
# machine keeps one a little longer): a leak is a difference that stays, so
# the second count is taken again for up to 10 s until it matches.
for _ in $(seq 1 20); do
    sleep 0.5
    resources_second=$(resources)
    [ "$resources_second" = "$resources_first" ] && break
done
check "nothing leaked by connection #1 ($resources_first, then $resources_second)" test "$resources_first" = "$resources_second"
echo "" > "$gadget/UDC"
check "the supervisor exits after its 2 connections (--connections 2)" wait_for "! kill -0 $supervise_pid 2>/dev/null"
wait "$supervise_pid"
check "the supervisor's exit status is 0" test $? -eq 0
check "each connection connected exactly once" sh -c "[ $(count 'head-unit #1: connected:' "$log") -eq 1 ] && [ $(count 'head-unit #2: connected:' "$log") -eq 1 ]"
check "each connection disconnected exactly once" sh -c "[ $(count 'head-unit #1: disconnected:' "$log") -eq 1 ] && [ $(count 'head-unit #2: disconnected:' "$log") -eq 1 ]"
check "no third connection" sh -c "[ $(count 'head-unit #3' "$log") -eq 0 ]"
"$iapctl" decode "$out/supervise.pcapng" --stats > "$out/trace-stats.txt" 2>&1
check "--trace: both connections' identification decoded from the pcapng" grep -E -q 'IdentificationInformation +2$' "$out/trace-stats.txt"
check "--trace: no checksum errors in the recorded traffic" grep -E -q 'checksum errors: 0$' "$out/trace-stats.txt"
check "the phone side: two connections, each ended once" \
    sh -c "[ $(count '^\[[0-9.]+\] phone #[12]: disconnected$' "$out/gadget.log") -eq 2 ]"

kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo
echo "== supervise"; cat "$log"
echo "== gadget"; tail -n 20 "$out/gadget.log"
lab_finish
