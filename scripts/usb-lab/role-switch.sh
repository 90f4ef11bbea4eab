#!/usr/bin/env bash
# USB lab scenario: the role switch, the way a CarPlay-style head unit and a
# real iPhone meet. The phone starts as the iPhone-shaped USB device (iAP over
# HID); the head unit on the host asks it to become the host (0x40/0x51); the
# phone acknowledges and leaves the bus; the head unit becomes the USB device
# presenting the bulk "iAP Interface" (1209:0002, interface 0, bulk IN 0x81 /
# OUT 0x02); the phone, now on the host side, finds it and runs the session
# over bulk. Both gadgets share the one dummy UDC, each with its own configfs
# gadget and functionfs mount:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/role-switch.sh 300
#
# Then the head unit's shell quits, the accessory leaves the bus and the phone
# comes back as the iPhone-shaped device; `supervise --role-switch` takes it
# again as udev reports it, until the phone goes away. A last head unit asks with
# --role-switch against a phone that stalls the request: a clear refusal.
# Prints "N passed, N failed"; exits 1 on any failure.
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 300

lab_start_usb

accessory=/sys/kernel/config/usb_gadget/iapaccessory
check "the iPhone-shaped gadget set up (iapdevkit, /dev/ffs-iap)" "$root/scripts/gadget-setup.sh" --identity iphone --no-audio
check "the accessory's gadget set up beside it (iapaccessory, /dev/ffs-accessory)" "$root/scripts/gadget-setup.sh" --identity accessory
"$iapctl" gadget --role phone --identity iphone --udc auto > "$out/phone.log" 2>&1 &
phone_pid=$!

present() { grep -q "^$1\$" /sys/bus/usb/devices/*/idVendor 2>/dev/null; }
gone() { ! present "$1"; }
check "the phone enumerates as an iPhone (05ac)" within 100 present 05ac
udevadm settle

# What the accessory presents, read on the host side while it is there. Its
# interface directory and files appear one by one while the host configures
# it, and it is there for a second or two: the watcher reads sysfs with shell
# built-ins only (a round of forks takes most of a second under emulation),
# until every value is there, and writes the record in one rename, so that
# stopping it mid-read never leaves half a record.
accessory_record() {
    local dev vendor product configuration interface class subclass protocol endpoints
    for dev in /sys/bus/usb/devices/*; do
        read -r vendor 2> /dev/null < "$dev/idVendor" && [ "$vendor" = 1209 ] && break
        dev=
    done
    [ -n "$dev" ] || return 1
    local interfaces=("$dev"/*:1.0)
    local intf=${interfaces[0]}
    read -r product < "$dev/idProduct" && read -r configuration < "$dev/configuration" \
        && read -r interface < "$intf/interface" && read -r class < "$intf/bInterfaceClass" \
        && read -r subclass < "$intf/bInterfaceSubClass" && read -r protocol < "$intf/bInterfaceProtocol" || return 1
    endpoints=("$intf"/ep_*)
    endpoints=("${endpoints[@]##*/}")
    [[ " ${endpoints[*]} " == *" ep_02 "* && " ${endpoints[*]} " == *" ep_81 "* ]] || return 1
    printf 'ids %s:%s\nconfiguration %s\ninterface %s\nclass %s %s %s\nendpoints %s\n' \
        "$vendor" "$product" "$configuration" "$interface" "$class" "$subclass" "$protocol" "${endpoints[*]}"
}
(
    for _ in $(seq 1 900); do
        if accessory_record > "$out/accessory.tmp" 2> /dev/null; then
            mv "$out/accessory.tmp" "$out/accessory.txt"
            exit 0
        fi
        sleep 0.1
    done
) &
watcher=$!
printf 'cd 1\ncd 2\nplay 4\nnp\nquit\n' \
    | timeout 120 "$iapctl" head-unit --transport usb:auto --role-switch --gadget "$accessory" --ffs /dev/ffs-accessory \
        --log-level info > "$out/head-unit.log" 2>&1
rc=$?
check "the role-switched head unit ran its script and quit (exit 0; got $rc)" [ "$rc" -eq 0 ]
check "the head unit asked the iPhone for the role switch and saw it leave" \
    grep -q "05ac:12a8 on bus [0-9]* device [0-9]* took the role switch (iap) and left the bus after" "$out/head-unit.log"
check "the phone acknowledged and left the bus" grep -q "the head unit asked for the role switch; leaving the bus" "$out/phone.log"
check "the head unit presented the iAP Interface" grep -q "presenting the iAP Interface on" "$out/head-unit.log"
kill "$watcher" 2>/dev/null
wait "$watcher" 2>/dev/null
check "the accessory: 1209:0002, configuration \"Configuration-1\"" \
    sh -c "grep -q '^ids 1209:0002' $out/accessory.txt && grep -q '^configuration Configuration-1' $out/accessory.txt"
check "its interface 0: \"iAP Interface\", class ff f0 00" \
    sh -c "grep -q '^interface iAP Interface' $out/accessory.txt && grep -q '^class ff f0 00' $out/accessory.txt"
check "its endpoints: bulk IN 0x81 and OUT 0x02" sh -c "grep -q '^endpoints ep_02 ep_81' $out/accessory.txt"
check "the phone, now the host, found the accessory's iAP Interface" grep -q "phone (host): connected to the accessory's iAP Interface" "$out/phone.log"
check "the phone authenticated the head unit" grep -q "phone (host): authentication succeeded" "$out/phone.log"
check "the phone identified the head unit" grep -q "phone (host): identified iap-devkit head unit" "$out/phone.log"
check "browsing and now playing over bulk reached the head unit" grep -q "now playing: Blue in Green" "$out/head-unit.log"
check "the head unit left the bus when its shell quit" grep -q "role-switch: left the bus" "$out/head-unit.log"
check "the phone's host session ended with the accessory" within 100 grep -q "phone (host): disconnected" "$out/phone.log"
check "the phone came back as the iPhone-shaped device" within 100 grep -q "back on the bus as a device" "$out/phone.log"
check "it enumerates as 05ac again" within 100 present 05ac
check "the accessory is gone from the bus (1209:0002)" gone 1209

# supervise --role-switch: the phone, back as a device, is taken again as
# udev reports it; the session ends when the phone (the host) goes away.
udevadm settle
timeout 120 "$iapctl" supervise --role head-unit --role-switch --connections 1 --gadget "$accessory" --ffs /dev/ffs-accessory \
    > "$out/supervise.log" 2>&1 &
supervise_pid=$!
check "supervise: the plugged phone took the role switch" within 300 grep -q "head-unit #1: connected: 05ac:12a8 on bus [0-9]* device [0-9]*, now the USB host" "$out/supervise.log"
check "supervise: the phone, as the host, identified the head unit again" within 300 sh -c "[ \$(grep -c 'phone (host): identified iap-devkit head unit' $out/phone.log) -eq 2 ]"
check "supervise: now playing reached the head unit" within 150 grep -q "head-unit #1: now playing:" "$out/supervise.log"
# The phone lets the accessory go (the host side deauthorizes it, as a
# phone drops a port): the head unit's gadget connection ends, and so does
# its session.
accessory_dev=$(grep -l '^1209$' /sys/bus/usb/devices/*/idVendor 2>/dev/null | head -n 1 | xargs -r dirname)
check "supervise: the accessory is on the host side" test -n "$accessory_dev"
echo 0 > "$accessory_dev/authorized"
supervise_done() { ! kill -0 "$supervise_pid" 2>/dev/null; }
check "supervise: the session ended when the phone went, and supervise stopped (--connections 1)" within 600 supervise_done
wait "$supervise_pid"
rc=$?
check "supervise's exit status is 0 (got $rc)" [ "$rc" -eq 0 ]
check "supervise: head-unit #1 disconnected, and the accessory left the bus" \
    sh -c "grep -q 'head-unit #1: disconnected' $out/supervise.log && grep -q 'role-switch: left the bus' $out/supervise.log"

# A phone that refuses the role switch (it stalls the request).
stop_phone() {
    kill "$phone_pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$phone_pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$phone_pid" 2>/dev/null; then
        echo "note: the phone did not stop on SIGTERM within 5 s; killing it" >&2
        kill -9 "$phone_pid" 2>/dev/null
    fi
    wait "$phone_pid" 2>/dev/null
}
stop_phone
timeout 10 sh -c "echo '' > $gadget/UDC" 2>/dev/null || true  # unbound already when the phone's ep0 closed
"$iapctl" gadget --role phone --identity iphone --role-switch stall --udc auto > "$out/phone-stall.log" 2>&1 &
phone_pid=$!
check "a phone that refuses the role switch enumerates" within 100 present 05ac
udevadm settle
timeout 30 "$iapctl" head-unit --transport usb:auto --role-switch --gadget "$accessory" --ffs /dev/ffs-accessory < /dev/null > "$out/head-unit-stall.log" 2>&1
rc=$?
check "a stalled role switch fails the head unit (exit 1; got $rc)" [ "$rc" -eq 1 ]
check "and says the phone does not do the role switch" grep -q "stalled the request 0x40/0x51: it does not do the role switch" "$out/head-unit-stall.log"
check "the refusing phone stayed on the bus" present 05ac

stop_phone
echo
echo "== accessory"; cat "$out/accessory.txt"
echo "== head unit"; tail -n 30 "$out/head-unit.log"
echo "== phone"; tail -n 40 "$out/phone.log"
echo "== supervise"; tail -n 25 "$out/supervise.log"
echo "== head unit against a refusing phone"; tail -n 5 "$out/head-unit-stall.log"
lab_finish
