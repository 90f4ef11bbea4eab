#!/usr/bin/env bash
# USB lab scenario: the placement a real car meets, a head unit on the host
# side and a phone as the USB device carrying iAP over HID, over the real
# Linux USB stack (dummy_hcd), inside the lab guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/usb-hid-session.sh 300
#
# The gadget presents an iPhone (`iapctl gadget --role phone --identity
# iphone`: 05ac:12a8, a HID interface with the real 208-byte report
# descriptor); `iapctl devices` must name its HID interface and report sizes;
# the head unit (`iapctl head-unit --transport usb:auto`) finds it, reads
# the report descriptor, and authenticates, identifies, browses, plays and
# watches now playing over HID reports. Then the UDC is unbound (unplug) and
# bound again (replug) for a fresh session.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 300

lab_start_usb

# dummy_hcd has no isochronous endpoints, so the iPod configuration goes without
# its UAC1 audio interfaces here: the HID interface is its interface 0.
check "gadget set up as an iPhone (configfs: PTP and iPod USB Interface, functionfs)" "$root/scripts/gadget-setup.sh" --identity iphone --no-audio
"$iapctl" gadget --role phone --identity iphone --udc auto > "$out/gadget.log" 2>&1 &
gadget_pid=$!

device_path() { grep -l '^05ac$' /sys/bus/usb/devices/*/idVendor 2>/dev/null | head -n 1 | xargs -r dirname; }
wait_for_device() {
    for _ in $(seq 1 100); do [ -n "$(device_path)" ] && return 0; sleep 0.1; done
    return 1
}
check "the iPhone-shaped gadget enumerates on the host side" wait_for_device
dev=$(device_path)
check "as 05ac:12a8" sh -c "[ \"\$(cat $dev/idVendor):\$(cat $dev/idProduct)\" = '05ac:12a8' ]"
check "two configurations, the first (PTP) active, as the kernel chooses for a real iPhone" \
    sh -c "[ \"\$(cat $dev/bNumConfigurations) \$(cat $dev/bConfigurationValue)\" = '2 1' ]"
udevadm settle
"$iapctl" devices > "$out/devices.txt" 2>&1
"$iapctl" devices --json > "$out/devices.json" 2>/dev/null
check "iapctl devices names iAP over HID in configuration 2" grep -q "iAP over HID: interface 0 in configuration 2 (active: 1; selected when opened)" "$out/devices.txt"
check "iapctl devices --json says kind hid, configuration 2" grep -q '"iap_interface":{"configuration":2,"interface":0,.*"kind":"hid"' "$out/devices.json"

# Session 1 sends SET_REPORT in the full form (report id + declared size),
# session 2 in the count form (id inside the declared size): the phone takes both.
session() {
    printf 'cd 1\ncd 2\nplay 4\nnext\nrepeat all\nnp\nquit\n' \
        | timeout 90 "$iapctl" head-unit --transport usb:auto --hid-report-length "$2" --log-level info > "$out/head-unit-$1.log" 2>&1
}
check "session 1: identification, browsing and now playing over HID" session 1 full
check "session 1: the head unit selected configuration 2" grep -q "selected configuration 2 in place of 1" "$out/head-unit-1.log"
check "session 1: the head unit read the report descriptor" grep -q "iAP over HID on interface 0, input reports 0x01(5)" "$out/head-unit-1.log"
check "configuration 2 is active and holds the HID interface" sh -c "[ \"\$(cat $dev/bConfigurationValue) \$(cat $dev/*:2.0/bInterfaceClass)\" = '2 03' ]"
# Enumeration may enable the function more than once (a connection each):
# the session is the connection that identified the head unit.
first=$(grep -o 'phone #[0-9]*: identified iap-devkit head unit' "$out/gadget.log" | head -n 1 | grep -o '#[0-9]*')
check "session 1: the phone identified the head unit" test -n "$first"
check "session 1: the phone authenticated it first" sh -c "grep -n 'phone $first: authentication succeeded' '$out/gadget.log' | head -1 | cut -d: -f1 | { read a; b=\$(grep -n 'phone $first: identified' '$out/gadget.log' | head -1 | cut -d: -f1); [ -n \"\$a\" ] && [ \"\$a\" -lt \"\$b\" ]; }"
check "session 1: now playing reached the host side" grep -q "now playing: All Blues" "$out/head-unit-1.log"

echo "" > "$gadget/UDC"
sleep 1
check "unplug: connection $first ended exactly once" sh -c "[ \$(grep -c 'phone $first: disconnected\$' $out/gadget.log) -eq 1 ]"
echo "$(ls /sys/class/udc | head -n 1)" > "$gadget/UDC"
check "replug: the gadget enumerates again" wait_for_device
udevadm settle
check "session 2 after replug, SET_REPORT in the count form: a fresh connection works" session 2 count
check "session 2: now playing reached the host side" grep -q "now playing: All Blues" "$out/head-unit-2.log"
check "session 2: by a new connection" sh -c "[ \$(grep -c 'phone #[0-9]*: identified iap-devkit head unit' '$out/gadget.log') -eq 2 ] && ! grep 'identified iap-devkit head unit' '$out/gadget.log' | tail -n 1 | grep -q 'phone $first:'"

kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo
echo "== devices"; cat "$out/devices.txt"
echo "== gadget log"; tail -n 30 "$out/gadget.log"
echo "== head unit, session 1"; tail -n 25 "$out/head-unit-1.log"
lab_finish
