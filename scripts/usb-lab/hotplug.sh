#!/usr/bin/env bash
# USB lab scenario: hotplug seen through libudev, inside the lab guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/hotplug.sh 240
#
# The gadget (`iapctl gadget --role phone`) is plugged in before
# `iapctl monitor` starts, then unplugged and replugged (UDC unbind/bind)
# several times while the monitor watches. Checks that the device present at
# start is found, that every unplug and replug is reported exactly once, that
# `iapctl devices` lists the iAP interface with its endpoints and says what it
# found, and that the monitor stops promptly. Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 240

cycles=${1:-5}

lab_start_usb

check "gadget set up (configfs, functionfs)" "$root/scripts/gadget-setup.sh"
"$iapctl" gadget --role phone --udc auto > "$out/gadget.log" 2>&1 &
gadget_pid=$!
device_path() { grep -l '^1209$' /sys/bus/usb/devices/*/idVendor 2>/dev/null | head -n 1 | xargs -r dirname; }
# Polls up to ~15 s (each try costs a few forks, slow under TCG).
wait_for() { for _ in $(seq 1 60); do eval "$1" && return 0; sleep 0.2; done; return 1; }
check "the gadget enumerates on the host side" wait_for '[ -n "$(device_path)" ]'
udevadm settle

"$iapctl" devices --json > "$out/devices.json" 2> "$out/devices.err"
"$iapctl" devices > "$out/devices.txt" 2>&1
cp "$(device_path)/descriptors" "$out/descriptors.bin" 2>/dev/null
check "devices: the gadget is listed with its iAP interface" \
    grep -q '"vendor_id":"1209","product_id":"0001".*"iap_interface":{"configuration":1,"interface":0,"endpoint_in":"0x81","endpoint_out":"0x02"' "$out/devices.json"
check "devices: root may open it" grep -q '"access":true' "$out/devices.json"
check "devices: the text form names the transport" grep -q 'use --transport usb:1209:0001' "$out/devices.txt"
check "devices: a last line says what was found" grep -E -q '^1 iAP device among [0-9]+ USB devices? \(--all lists every one\)$' "$out/devices.txt"

"$iapctl" monitor --json > "$out/monitor.jsonl" 2> "$out/monitor.err" &
monitor_pid=$!
check "monitor: the device present at start is found" wait_for "grep -q '\"event\":\"present\"' '$out/monitor.jsonl'"
for i in $(seq 1 "$cycles"); do
    echo "" > "$gadget/UDC"
    wait_for "[ \$(grep -c '\"event\":\"remove\"' '$out/monitor.jsonl') -ge $i ]"
    ls /sys/class/udc | head -n 1 > "$gadget/UDC"
    wait_for "[ \$(grep -c '\"event\":\"add\"' '$out/monitor.jsonl') -ge $i ]"
done
sleep 1
check "monitor: $cycles unplugs reported, none doubled" sh -c "[ \$(grep -c '\"event\":\"remove\"' '$out/monitor.jsonl') -eq $cycles ]"
check "monitor: $cycles replugs reported, none doubled" sh -c "[ \$(grep -c '\"event\":\"add\"' '$out/monitor.jsonl') -eq $cycles ]"
check "monitor: removes name the device by its ids" grep -q '"event":"remove".*"vendor_id":"1209","product_id":"0001"' "$out/monitor.jsonl"
check "monitor: no bind/unbind noise, nothing but present/add/remove" sh -c "! grep -v -E '\"event\":\"(present|add|remove)\"' '$out/monitor.jsonl'"
kill -TERM "$monitor_pid"  # SIGINT is ignored by background jobs of a script
check "monitor: stops promptly on SIGTERM" wait_for "! kill -0 $monitor_pid 2>/dev/null"

kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo
echo "== devices"; cat "$out/devices.txt"
echo "== monitor"; cat "$out/monitor.jsonl" "$out/monitor.err"
lab_finish
