#!/usr/bin/env bash
# USB lab scenario: the project's gadget and host side over the real Linux
# USB stack (dummy_hcd), inside the lab guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/usb-session.sh 240
#
# The gadget (`iapctl gadget --role phone`) is the device; a head unit on the
# host side (`iapctl head-unit --transport usb:1209:1`) identifies, browses,
# fetches artwork, plays and watches now playing over the bulk endpoints. Then the UDC is
# unbound (unplug) and bound again (replug) for a fresh session.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 240

lab_start_usb

check "gadget set up (configfs, functionfs)" "$root/scripts/gadget-setup.sh"
"$iapctl" gadget --role phone --udc auto > "$out/gadget.log" 2>&1 &
gadget_pid=$!

device_path() { grep -l '^1209$' /sys/bus/usb/devices/*/idVendor 2>/dev/null | head -n 1 | xargs -r dirname; }
wait_for_device() {
    for _ in $(seq 1 100); do [ -n "$(device_path)" ] && return 0; sleep 0.1; done
    return 1
}
check "the gadget enumerates on the host side" wait_for_device
dev=$(device_path)
# The interface's directory appears a moment after the device's: wait for it.
iap_interface() { [ "$(cat "$dev"/*:1.0/bInterfaceClass) $(cat "$dev"/*:1.0/bInterfaceSubClass) $(cat "$dev"/*:1.0/bInterfaceProtocol)" = 'ff f0 00' ]; }
check "its iAP interface: class ff, subclass f0, protocol 00" within 50 iap_interface
udevadm settle

session() {
    printf 'cd 1\nart 1\ncd 2\nplay 4\nnext\nrepeat all\nnp\nquit\n' | timeout 60 "$iapctl" head-unit --transport usb:1209:1 > "$out/head-unit-$1.log" 2>&1
}
check "session 1: identification, browsing and now playing over USB" session 1
check "session 1: the phone authenticated the head unit (certificate read, challenge signed)" grep -q "phone #1: accessory certificate: .*EC P-256 key" "$out/gadget.log"
check "session 1: authentication came before identification" sh -c "grep -n 'phone #1: authentication succeeded' '$out/gadget.log' | head -1 | cut -d: -f1 | { read a; b=\$(grep -n 'phone #1: identified iap-devkit head unit' '$out/gadget.log' | head -1 | cut -d: -f1); [ -n \"\$a\" ] && [ -n \"\$b\" ] && [ \"\$a\" -lt \"\$b\" ]; }"
check "session 1: the phone identified the head unit" grep -q "phone #1: identified iap-devkit head unit" "$out/gadget.log"
check "session 1: now playing reached the host side" grep -q "now playing: All Blues" "$out/head-unit-1.log"
check "session 1: artwork over the file-transfer session" grep -E -q "file transfer [0-9]+: [0-9]+ bytes received" "$out/head-unit-1.log"

echo "" > "$gadget/UDC"
sleep 1
# The transport connection (not the iAP session, logged "disconnected from")
# ends exactly once, whether on the host's suspend or on the unplug.
check "unplug: connection #1 ended exactly once" sh -c "[ \$(grep -c 'phone #1: disconnected\$' $out/gadget.log) -eq 1 ]"
echo "$(ls /sys/class/udc | head -n 1)" > "$gadget/UDC"
check "replug: the gadget enumerates again" wait_for_device
udevadm settle
check "session 2 after replug: a fresh connection works" session 2
check "session 2: a new connection number" grep -q "phone #2: identified iap-devkit head unit" "$out/gadget.log"

kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo
echo "== gadget log"; tail -n 30 "$out/gadget.log"
echo "== head unit, session 1"; tail -n 15 "$out/head-unit-1.log"
lab_finish
