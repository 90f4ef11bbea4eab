#!/usr/bin/env bash
# USB lab scenario: the roles the other way round. The gadget (the USB device)
# runs the head-unit role and the phone runs on the USB host side, over libusb:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/role-swap.sh 240 [phone-restart]
#
# The gadget's head unit has no shell: it identifies, subscribes to now
# playing and opens the root of the phone's content tree by itself. The
# phone (`iapctl phone --transport usb:1209:1`) runs until its transport ends;
# unbinding the UDC (unplug) must end it exactly once, and it then exits.
# With the argument phone-restart it also checks that a new phone process on
# the same USB connection (the first one exited, no replug) gets a link again.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 240

restart=0
case "${1:-}" in
    "") ;;
    phone-restart) restart=1 ;;
    *) echo "usage: role-swap.sh [phone-restart]" >&2; exit 2 ;;
esac

# Waits up to $1 tenths of a second for the command to succeed.
count() { grep -c -- "$1" "$2" 2>/dev/null; }
exactly() { [ "$(count "$2" "$3")" -eq "$1" ]; }

lab_start_usb

check "gadget set up (configfs, functionfs)" "$root/scripts/gadget-setup.sh"
"$iapctl" gadget --role head-unit --udc auto > "$out/gadget.log" 2>&1 &
gadget_pid=$!

device_path() { grep -l '^1209$' /sys/bus/usb/devices/*/idVendor 2>/dev/null | head -n 1 | xargs -r dirname; }
check "the gadget enumerates on the host side" within 100 sh -c "grep -q '^1209\$' /sys/bus/usb/devices/*/idVendor"
dev=$(device_path)
# The interface's directory appears a moment after the device's: wait for it.
check "its iAP interface: class ff, subclass f0, protocol 00" \
    within 50 sh -c "[ \"\$(cat $dev/*:1.0/bInterfaceClass) \$(cat $dev/*:1.0/bInterfaceSubClass) \$(cat $dev/*:1.0/bInterfaceProtocol)\" = 'ff f0 00' ]"
check "the gadget runs the head-unit role: head-unit #1 connected" within 100 grep -q 'head-unit #1: connected$' "$out/gadget.log"
udevadm settle

# The phone on the host side; it runs until its transport ends.
timeout 90 "$iapctl" phone --transport usb:1209:1 > "$out/phone-1.log" 2>&1 &
phone_pid=$!
check "the phone (host side) brings the link up over USB" within 300 grep -q 'phone: link up' "$out/phone-1.log"
check "the phone identified the gadget's head unit" within 150 grep -q 'phone: identified iap-devkit head unit.*accepted' "$out/phone-1.log"
check "the gadget's head unit: identification accepted" within 100 grep -q 'head-unit #1: identification accepted' "$out/gadget.log"
check "now playing reached the gadget's head unit" within 100 grep -q 'head-unit #1: now playing:' "$out/gadget.log"
check "browsing: the head unit got the phone's tabs" within 100 grep -q 'head-unit #1: tabs: Library' "$out/gadget.log"
check "the phone is still running before the unplug" kill -0 "$phone_pid"

# Unplug: the phone's transport ends, the phone reports it once and exits.
echo "" > "$gadget/UDC"
phone_exited() { ! kill -0 "$phone_pid" 2>/dev/null; }
check "unplug: the phone exits by itself" within 150 phone_exited
wait "$phone_pid"
phone_rc=$?
check "the phone's exit status is 0 (its link was up; got $phone_rc)" [ "$phone_rc" -eq 0 ]
check "unplug: the phone saw its transport close exactly once" exactly 1 'phone: transport closed' "$out/phone-1.log"
check "unplug: the phone ended its iAP session exactly once" exactly 1 'phone: disconnected from iap-devkit head unit' "$out/phone-1.log"
check "unplug: the gadget's connection #1 ended exactly once" \
    within 50 exactly 1 'head-unit #1: disconnected$' "$out/gadget.log"

# Replug, and a second phone process: a fresh connection on both sides.
echo "$(ls /sys/class/udc | head -n 1)" > "$gadget/UDC"
check "replug: the gadget enumerates again" within 100 sh -c "grep -q '^1209\$' /sys/bus/usb/devices/*/idVendor"
check "replug: head-unit #2 connected on the gadget" within 100 grep -q 'head-unit #2: connected$' "$out/gadget.log"
udevadm settle
timeout 90 "$iapctl" phone --transport usb:1209:1 > "$out/phone-2.log" 2>&1 &
phone_pid=$!
check "phone 2 identified the gadget's head unit" within 300 grep -q 'phone: identified iap-devkit head unit.*accepted' "$out/phone-2.log"
check "now playing reached head-unit #2" within 100 grep -q 'head-unit #2: now playing:' "$out/gadget.log"
echo "" > "$gadget/UDC"
check "unplug 2: phone 2 exits by itself" within 150 phone_exited
wait "$phone_pid"
phone_rc=$?
check "phone 2's exit status is 0 (got $phone_rc)" [ "$phone_rc" -eq 0 ]
check "unplug 2: phone 2 saw its transport close exactly once" exactly 1 'phone: transport closed' "$out/phone-2.log"
check "unplug 2: the gadget's connection #2 ended exactly once" \
    within 50 exactly 1 'head-unit #2: disconnected$' "$out/gadget.log"
check "over the whole run: 2 connections and 2 ends on the gadget" \
    sh -c "[ \$(grep -c 'head-unit #[0-9]*: connected\$' $out/gadget.log) -eq 2 ] && [ \$(grep -c 'head-unit #[0-9]*: disconnected\$' $out/gadget.log) -eq 2 ]"

# Optional (argument phone-restart): the phone process on the host side exits
# (SIGTERM) and a new one starts on the same USB connection, with no replug.
# The gadget's head unit initiates the link (detect, SYN), so the new phone
# only gets a link if the head unit starts over after losing its peer.
if [ "$restart" = 1 ]; then
    echo "$(ls /sys/class/udc | head -n 1)" > "$gadget/UDC"
    check "restart: head-unit #3 connected on the gadget" within 100 grep -q 'head-unit #3: connected$' "$out/gadget.log"
    udevadm settle
    timeout 90 "$iapctl" phone --transport usb:1209:1 > "$out/phone-3.log" 2>&1 &
    phone_pid=$!
    check "restart: phone 3 identified head-unit #3" within 300 grep -q 'phone: identified iap-devkit head unit.*accepted' "$out/phone-3.log"
    kill -TERM "$phone_pid" 2>/dev/null
    check "restart: phone 3 exits on SIGTERM" within 50 phone_exited
    wait "$phone_pid" 2>/dev/null
    timeout 90 "$iapctl" phone --transport usb:1209:1 > "$out/phone-4.log" 2>&1 &
    phone_pid=$!
    # The head unit learns that its peer is gone from the new phone's RST to
    # its next keep-alive (a listening device resets a connection it does
    # not have), or after 10 s of silence from a phone that kept the link
    # alive; give it 30 s in all to start over.
    check "restart: phone 4 (new process, same USB connection) brings the link up" \
        within 300 grep -q 'phone: link up' "$out/phone-4.log"
    check "restart: phone 4 identified head-unit #3" within 50 grep -q 'phone: identified iap-devkit head unit.*accepted' "$out/phone-4.log"
    check "restart: connection #3 still open on the gadget (no replug)" \
        sh -c "! grep -q 'head-unit #3: disconnected\$' $out/gadget.log"
    kill -TERM "$phone_pid" 2>/dev/null
    wait "$phone_pid" 2>/dev/null
    echo "== phone 4"; cat "$out/phone-4.log"
fi
check "the gadget process is still running" kill -0 "$gadget_pid"

kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo
echo "== gadget log"; tail -n 40 "$out/gadget.log"
echo "== phone 1"; tail -n 25 "$out/phone-1.log"
echo "== phone 2 (last lines)"; tail -n 8 "$out/phone-2.log"
lab_finish
