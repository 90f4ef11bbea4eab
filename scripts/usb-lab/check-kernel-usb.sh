#!/usr/bin/env bash
# USB lab scenario: checks that the guest kernel's USB gadget stack is ready
# for the project's FunctionFS gadget. Run it through the lab:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/check-kernel-usb.sh 180
#
# Loads dummy_hcd, libcomposite and usb_f_fs, starts systemd-udevd, creates
# the configfs gadget "iap" (1209:0001) with a FunctionFS function "iap" and
# mounts FunctionFS at /dev/ffs-iap. It does NOT bind the UDC: binding needs a
# program that has written descriptors to /dev/ffs-iap/ep0 first (that is
# `iapctl gadget`). Prints "N passed, N failed"; exits 1 on any failure.
#
# Set IAP_LAB_KEEP_GADGET=1 to skip the teardown checks at the end.
set -u

if [ "${IAP_LAB:-}" != 1 ]; then
    echo "check-kernel-usb.sh changes kernel modules and configfs; it runs inside the USB lab guest only:" >&2
    echo "  scripts/usb-lab/run-in-guest.sh $0 180" >&2
    exit 2
fi

passed=0
failed=0
check() {
    # check "description" command...
    local what=$1; shift
    local output
    if output=$("$@" 2>&1); then
        passed=$((passed + 1))
        echo "PASS: $what"
    else
        failed=$((failed + 1))
        echo "FAIL: $what"
        [ -n "$output" ] && printf '      %s\n' "$output" | head -n 20
    fi
}
section() { echo; echo "== $*"; }
now() { cut -d' ' -f1 /proc/uptime; }

GADGET_NAME=iap
G=/sys/kernel/config/usb_gadget/$GADGET_NAME
FFS=/dev/ffs-$GADGET_NAME

section "kernel $(uname -r), guest uptime $(now) s"

section "modules"
check "modprobe dummy_hcd" modprobe dummy_hcd
check "modprobe libcomposite" modprobe libcomposite
check "modprobe usb_f_fs" modprobe usb_f_fs
check "a dummy UDC is registered in /sys/class/udc" sh -c 'ls /sys/class/udc | grep -q dummy_udc'
echo "ls /sys/class/udc: $(ls /sys/class/udc 2>&1 | tr '\n' ' ')"
if ! grep -q ' /sys/kernel/config configfs ' /proc/mounts; then
    mount -t configfs configfs /sys/kernel/config 2>/dev/null
fi
check "configfs mounted at /sys/kernel/config" grep -q ' /sys/kernel/config configfs ' /proc/mounts
check "usb_gadget folder present in configfs" test -d /sys/kernel/config/usb_gadget

section "udev"
t0=$(now)
udevd=/lib/systemd/systemd-udevd
check "systemd-udevd present" test -x "$udevd"
check "systemd-udevd --daemon" "$udevd" --daemon
check "udevadm trigger --type=subsystems" udevadm trigger --type=subsystems --action=add
check "udevadm trigger --type=devices" udevadm trigger --type=devices --action=add
check "udevadm settle" udevadm settle --timeout=60
echo "udev start + trigger + settle: $(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }') s"
check "udevd answers udevadm control --ping" udevadm control --ping
check "udev database has the dummy_hcd root hub" \
    sh -c 'for d in /sys/bus/usb/devices/usb*; do udevadm info --query=property --path="$d" | grep -q "^ID_BUS=usb\|^DEVNAME=/dev/bus/usb" && exit 0; done; exit 1'
check "libusb-1.0 is on the library path" sh -c 'ldconfig -p | grep -q "libusb-1.0.so.0 "'
check "libudev is on the library path" sh -c 'ldconfig -p | grep -q "libudev.so.1 "'

section "configfs gadget $G"
check "create gadget folder" mkdir "$G"
check "idVendor 0x1209" sh -c "echo 0x1209 > $G/idVendor"
check "idProduct 0x0001" sh -c "echo 0x0001 > $G/idProduct"
check "bcdUSB 0x0200, bcdDevice 0x0100" sh -c "echo 0x0200 > $G/bcdUSB && echo 0x0100 > $G/bcdDevice"
check "device strings (0x409)" sh -c "mkdir -p $G/strings/0x409 &&
    echo iap-devkit > $G/strings/0x409/manufacturer &&
    echo 'iap-devkit USB lab' > $G/strings/0x409/product &&
    echo LAB0001 > $G/strings/0x409/serialnumber"
check "configuration c.1" sh -c "mkdir -p $G/configs/c.1/strings/0x409 &&
    echo iAP > $G/configs/c.1/strings/0x409/configuration &&
    echo 100 > $G/configs/c.1/MaxPower"
check "FunctionFS function ffs.$GADGET_NAME" mkdir "$G/functions/ffs.$GADGET_NAME"
check "function linked into c.1" ln -s "$G/functions/ffs.$GADGET_NAME" "$G/configs/c.1/"
check "idVendor reads back 0x1209" sh -c "[ \"\$(cat $G/idVendor)\" = 0x1209 ]"
check "idProduct reads back 0x0001" sh -c "[ \"\$(cat $G/idProduct)\" = 0x0001 ]"

section "FunctionFS"
check "mkdir $FFS" mkdir -p "$FFS"
check "mount -t functionfs $GADGET_NAME $FFS" mount -t functionfs "$GADGET_NAME" "$FFS"
check "$FFS/ep0 exists" test -e "$FFS/ep0"
echo "functionfs mount: $(grep " $FFS " /proc/mounts)"
echo "ls $FFS: $(ls "$FFS" 2>&1 | tr '\n' ' ')"
check "UDC is not bound (descriptors come from iapctl gadget)" sh -c "[ -z \"\$(cat $G/UDC)\" ]"

if [ "${IAP_LAB_KEEP_GADGET:-0}" != 1 ]; then
    section "teardown"
    check "umount $FFS" umount "$FFS"
    check "unlink function from c.1" rm "$G/configs/c.1/ffs.$GADGET_NAME"
    check "remove strings, config, function, gadget" sh -c "
        rmdir $G/configs/c.1/strings/0x409 && rmdir $G/configs/c.1 &&
        rmdir $G/functions/ffs.$GADGET_NAME && rmdir $G/strings/0x409 && rmdir $G"
fi

echo
echo "check-kernel-usb: $passed passed, $failed failed (guest uptime $(now) s)"
[ "$failed" -eq 0 ]
