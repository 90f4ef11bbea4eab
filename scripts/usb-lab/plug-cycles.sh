#!/usr/bin/env bash
# USB lab scenario: many unplug/replug cycles of the gadget phone, inside the
# lab guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/plug-cycles.sh 300 [N [SESSION_EVERY]]
#
# With `iapctl gadget --role phone --udc auto` running, unbinds and binds the
# UDC N times (default 100) and checks that the gadget reported every
# connection and every end exactly once and in order ("phone #K: connected",
# "phone #K: disconnected" for K = 1..N+1, alternating), and that the host side
# enumerated the device afresh each cycle (a new device number, one udev add
# and one remove per cycle). Every SESSION_EVERY-th cycle (default 10; 0 for
# none) a short head-unit session over libusb proves the replugged connection
# works. Prints the elapsed time and cycles per second, "N passed, N failed";
# exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 300 "[N]"

cycles=${1:-100}
session_every=${2:-10}
[[ "$cycles" =~ ^[0-9]+$ ]] && [ "$cycles" -ge 1 ] || { echo "N must be a positive integer, got '$cycles'" >&2; exit 2; }
[[ "$session_every" =~ ^[0-9]+$ ]] || { echo "SESSION_EVERY must be a number (0: no sessions), got '$session_every'" >&2; exit 2; }

log=$out/gadget.log
now() { echo "$EPOCHREALTIME"; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

lab_start_usb

check "gadget set up (configfs, functionfs)" "$root/scripts/gadget-setup.sh"
udc=$(ls /sys/class/udc | head -n 1)
# Kernel uevents for USB devices (not interfaces) on the host side: one add
# and one remove per plug cycle.
udevadm monitor --kernel --subsystem-match=usb/usb_device > "$out/uevents.log" 2>&1 &
monitor_pid=$!
sleep 0.5
"$iapctl" gadget --role phone --udc auto > "$log" 2>&1 &
gadget_pid=$!

# The device's sysfs folder on the host side (no forks: it is polled).
device_path() {
    local f v
    for f in /sys/bus/usb/devices/*/idVendor; do
        read -r v < "$f" 2>/dev/null && [ "$v" = 1209 ] && { echo "${f%/idVendor}"; return 0; }
    done
    return 0
}
# Waits up to $1 tenths of a second for the command to succeed (polling every 50 ms).
present() { [ -n "$(device_path)" ]; }
absent() { [ -z "$(device_path)" ]; }
logged() { grep -q -- "$1" "$log"; }

check "the gadget enumerates on the host side" within 100 present
check "connection #1" within 100 logged 'phone #1: connected$'
# Without the gadget process nothing below can pass: say why and stop.
if ! kill -0 "$gadget_pid" 2>/dev/null; then
    wait "$gadget_pid"; status=$?
    failed=$((failed + 1)); echo "FAIL: the gadget process is running (it exited with status $status before connection #1)"
    echo "== gadget log"; cat "$log"
    echo "== kernel (last lines)"; dmesg | tail -n 15
    kill "$monitor_pid" 2>/dev/null
    lab_finish
fi
# Open files and threads of the gadget process while connected: the same
# after N cycles, or something leaks per connection.
resources() { echo "$(ls /proc/"$gadget_pid"/fd | wc -l) fds, $(ls /proc/"$gadget_pid"/task | wc -l) threads"; }
devnum=$(cat "$(device_path)/devnum" 2>/dev/null)
udevadm settle

session() {
    printf 'np\nquit\n' | timeout 30 "$iapctl" head-unit --transport usb:1209:1 > "$out/head-unit-$1.log" 2>&1 \
        && grep -q 'head-unit: now playing:' "$out/head-unit-$1.log"
}

# Per-cycle tallies; a cycle that does not complete is named in the output.
phases="0 0 0 0 0"; session_time=0; enumerated=0; fresh=0; sessions_run=0; sessions_ok=0; bad_cycles=0; stuck=0
echo "== $cycles plug cycles (a head-unit session every ${session_every} cycles)"
# A first session on connection #1 sets up what lives as long as the process
# (the cryptography's random source opens a descriptor once): measure after
# it, so that only what grows per connection counts.
if [ "$session_every" -gt 0 ]; then
    udevadm settle
    sessions_run=1
    if session first; then sessions_ok=1; fi
fi
sleep 1
resources_before=$(resources)
start=$(now)
for k in $(seq 1 "$cycles"); do
    ok=1; why=""
    t0=$EPOCHREALTIME
    echo "" > "$gadget/UDC"
    t1=$EPOCHREALTIME
    within 100 absent || { ok=0; why+=" still-enumerated"; }
    within 100 logged "phone #$k: disconnected\$" || { ok=0; why+=" no-disconnect-#$k"; }
    t2=$EPOCHREALTIME
    echo "$udc" > "$gadget/UDC" || { ok=0; why+=" bind-failed"; }
    t3=$EPOCHREALTIME
    if within 100 present; then
        enumerated=$((enumerated + 1))
        new=$(cat "$(device_path)/devnum" 2>/dev/null)
        if [ -n "$new" ] && [ "$new" != "$devnum" ]; then fresh=$((fresh + 1)); else ok=0; why+=" same-devnum-$new"; fi
        devnum=$new
    else
        ok=0; why+=" not-enumerated"
    fi
    t4=$EPOCHREALTIME
    within 100 logged "phone #$((k + 1)): connected\$" || { ok=0; why+=" no-connect-#$((k + 1))"; }
    t5=$EPOCHREALTIME
    phases=$(awk -v p="$phases" -v t="$t0 $t1 $t2 $t3 $t4 $t5" 'BEGIN {
        split(p, s, " "); split(t, x, " ")
        for (i = 1; i <= 5; i++) printf "%.3f ", s[i] + x[i + 1] - x[i] }')
    if [ "$session_every" -gt 0 ] && [ $((k % session_every)) -eq 0 ]; then
        udevadm settle
        sessions_run=$((sessions_run + 1))
        session_start=$(now)
        if session "$k"; then sessions_ok=$((sessions_ok + 1)); else ok=0; why+=" session-failed"; fi
        session_time=$(awk -v a="$session_time" -v b="$(seconds_since "$session_start")" 'BEGIN { printf "%.1f", a + b }')
    fi
    if [ "$ok" -eq 1 ]; then
        stuck=0
    else
        bad_cycles=$((bad_cycles + 1)); stuck=$((stuck + 1))
        echo "cycle $k:$why"
        # Something is persistently wrong: stop rather than time out 100 times.
        [ "$stuck" -ge 3 ] && { echo "3 bad cycles in a row: stopping after cycle $k"; break; }
    fi
    [ $((k % 10)) -eq 0 ] && echo "  $k cycles, $(seconds_since "$start") s"
done
done_cycles=$k
elapsed=$(seconds_since "$start")
rate=$(awk -v n="$done_cycles" -v t="$elapsed" 'BEGIN { printf "%.2f", (t > 0) ? n / t : 0 }')
echo "== $done_cycles cycles in $elapsed s: $rate cycles per second ($sessions_run head-unit sessions took $session_time s of it)"
echo "$phases" | awk -v n="$done_cycles" '{ printf "   per cycle on average: unbind write %.2f s, until gone and disconnected logged %.2f s, bind write %.2f s, until enumerated %.2f s, until connected logged %.2f s\n", $1 / n, $2 / n, $3 / n, $4 / n, $5 / n }'

within 100 logged "phone #$((done_cycles + 1)): connected\$"
sleep 1
resources_after=$(resources)
echo "gadget process while connected: $resources_before on connection #1, $resources_after on connection #$((done_cycles + 1))"
# Descriptors exactly; threads within 2: libdispatch keeps idle worker
# threads for a while after a timer fires (the link's and the session's
# deadline timers), so one more or fewer at the instant of counting is the
# pool, while a thread leaked per connection would show as about 100 more.
no_leak() {
    local fds_before threads_before fds_after threads_after
    read -r fds_before _ threads_before _ <<< "$resources_before"
    read -r fds_after _ threads_after _ <<< "$resources_after"
    [ "$fds_before" = "$fds_after" ] && [ $((threads_after - threads_before)) -le 2 ]
}
check "no file or thread leaked over the cycles ($resources_before, then $resources_after)" no_leak

# A last unplug, so that every connection has ended.
echo "" > "$gadget/UDC"
within 100 absent
total=$((cycles + 1))
within 100 logged "phone #$total: disconnected\$"
sleep 0.5
check "the gadget process survived every cycle" kill -0 "$gadget_pid"
kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
kill "$monitor_pid" 2>/dev/null
wait "$monitor_pid" 2>/dev/null

check "all $cycles cycles ran ($done_cycles)" [ "$done_cycles" -eq "$cycles" ]
check "every cycle completed ($bad_cycles did not)" [ "$bad_cycles" -eq 0 ]
# The transport connection's lines only: "phone #K: disconnected from ..." is
# the iAP session's end, a different line.
grep -oE 'phone #[0-9]+: (connected|disconnected)$' "$log" > "$out/connections.txt"
connects=$(grep -c ': connected$' "$out/connections.txt")
disconnects=$(grep -c ': disconnected$' "$out/connections.txt")
echo "gadget: $connects connects, $disconnects disconnects (expected $total of each)"
check "$total connects on the gadget side, none missed or doubled" [ "$connects" -eq "$total" ]
check "$total disconnects on the gadget side, none missed or doubled" [ "$disconnects" -eq "$total" ]
unique_each() {  # $1: connected|disconnected; each K in 1..total exactly once
    [ "$(grep ": $1\$" "$out/connections.txt" | grep -oE '#[0-9]+' | tr -d '#' | sort -n | uniq -c | awk '$1 == 1 { print $2 }' | tr '\n' ' ')" \
        = "$(seq 1 "$total" | tr '\n' ' ')" ]
}
check "each connection number 1..$total connected exactly once" unique_each connected
check "each connection number 1..$total disconnected exactly once" unique_each disconnected
expected_sequence() { for k in $(seq 1 "$total"); do echo "phone #$k: connected"; echo "phone #$k: disconnected"; done; }
check "in order: #1 connected, #1 disconnected, #2 connected, ..." \
    sh -c "[ \"\$(cat $out/connections.txt)\" = \"\$1\" ]" _ "$(expected_sequence)"
echo "host: $enumerated of $cycles replugs enumerated, $fresh with a new device number"
check "the host enumerated the device on each of the $cycles replugs" [ "$enumerated" -eq "$cycles" ]
check "each replug was a fresh enumeration (a new device number)" [ "$fresh" -eq "$cycles" ]
adds=$(grep -cE '^KERNEL.* add +/devices/platform/dummy_hcd.0/usb[0-9]+/[0-9]+-[0-9]+ ' "$out/uevents.log")
removes=$(grep -cE '^KERNEL.* remove +/devices/platform/dummy_hcd.0/usb[0-9]+/[0-9]+-[0-9]+ ' "$out/uevents.log")
echo "host uevents: $adds adds, $removes removes (expected $total of each)"
check "udev saw $total adds and $total removes of the device" [ "$adds-$removes" = "$total-$total" ]
if [ "$session_every" -gt 0 ]; then
    check "head-unit sessions after replug: $sessions_ok of $sessions_run got now playing" [ "$sessions_ok" -eq "$sessions_run" ]
    check "the phone identified the head unit in each session" \
        [ "$(grep -c 'identified iap-devkit head unit' "$log")" -eq "$sessions_run" ]
fi

echo
echo "== gadget log (last lines)"; tail -n 12 "$log"
echo "== uevents (first lines)"; head -n 6 "$out/uevents.log"
echo
echo "elapsed $elapsed s for $done_cycles cycles ($rate cycles per second)"
lab_finish
