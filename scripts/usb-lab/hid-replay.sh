#!/usr/bin/env bash
# USB lab scenario: a real legacy head unit's HID reports replayed into the
# iPhone-shaped gadget, inside the lab guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/hid-replay.sh 240
#
# The requests a Pioneer AVH-4200NEX sent between StartIDPS and its payload
# size question (Tests/IAPLegacyTests/Fixtures/pioneer-avh-4200nex-idps.txt,
# from oandrew/ipod-gadget issue 4) go to `iapctl gadget --role phone
# --identity iphone` by SET_REPORT exactly as recorded (hid-replay.c); each
# answer must carry the iAP1 frame the recorded iPod gave, or this phone's
# documented one where it differs on purpose.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 240

lab_start_usb

check "gadget set up as an iPhone" "$root/scripts/gadget-setup.sh" --identity iphone --no-audio
"$iapctl" gadget --role phone --identity iphone --udc auto > "$out/gadget.log" 2>&1 &
gadget_pid=$!
wait_for_device() {
    for _ in $(seq 1 100); do grep -q '^05ac$' /sys/bus/usb/devices/*/idVendor 2>/dev/null && return 0; sleep 0.1; done
    return 1
}
check "the iPhone-shaped gadget enumerates" wait_for_device
udevadm settle
check "hid-replay.c builds against libusb" ${CC:-cc} -O2 -o "$out/hid-replay" "$here/hid-replay.c" -lusb-1.0
"$out/hid-replay" 05ac:12a8 "$root/Tests/IAPLegacyTests/Fixtures/pioneer-avh-4200nex-idps.txt" > "$out/replay.txt" 2> "$out/replay.err"
replay_status=$?
cat "$out/replay.txt" "$out/replay.err"
check "every recorded request answered as a real iPod answered it" test "$replay_status" -eq 0

kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo
echo "== gadget log"; tail -n 30 "$out/gadget.log"
lab_finish
