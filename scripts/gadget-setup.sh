#!/usr/bin/env bash
# Sets up a Linux USB gadget for `iapctl gadget` (run as root): configfs
# gadget with the project's test id 1209:0001 and one FunctionFS function,
# mounted at /dev/ffs-iap. The UDC is bound by `iapctl gadget --udc auto`
# once it has written the descriptors (binding earlier fails).
#   scripts/gadget-setup.sh          set up
#   scripts/gadget-setup.sh --remove unbind and remove
set -euo pipefail
gadget=/sys/kernel/config/usb_gadget/iapdevkit
mountpoint=/dev/ffs-iap

if [ "${1:-}" = "--remove" ]; then
    [ -d "$gadget" ] || exit 0
    echo "" > "$gadget/UDC" 2>/dev/null || true
    umount "$mountpoint" 2>/dev/null || true
    rm -f "$gadget/configs/c.1/ffs.iap"
    rmdir "$gadget/configs/c.1/strings/0x409" "$gadget/configs/c.1" "$gadget/functions/ffs.iap" "$gadget/strings/0x409" "$gadget" 2>/dev/null || true
    echo "removed $gadget"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || { echo "error: run as root (configfs and mount need it)" >&2; exit 1; }
modprobe libcomposite 2>/dev/null || true
modprobe usb_f_fs 2>/dev/null || true
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
[ -d /sys/kernel/config/usb_gadget ] || { echo "error: no usb_gadget in configfs: load libcomposite" >&2; exit 1; }

mkdir -p "$gadget"
echo 0x1209 > "$gadget/idVendor"
echo 0x0001 > "$gadget/idProduct"
echo 0x0200 > "$gadget/bcdUSB"
mkdir -p "$gadget/strings/0x409"
echo "iap-devkit" > "$gadget/strings/0x409/manufacturer"
echo "iap-devkit test hardware" > "$gadget/strings/0x409/product"
echo "DK-0001" > "$gadget/strings/0x409/serialnumber"
mkdir -p "$gadget/configs/c.1/strings/0x409"
echo "iAP" > "$gadget/configs/c.1/strings/0x409/configuration"
echo 250 > "$gadget/configs/c.1/MaxPower"
mkdir -p "$gadget/functions/ffs.iap"
[ -e "$gadget/configs/c.1/ffs.iap" ] || ln -s "$gadget/functions/ffs.iap" "$gadget/configs/c.1/"
mkdir -p "$mountpoint"
mountpoint -q "$mountpoint" || mount -t functionfs iap "$mountpoint"
echo "gadget $gadget ready; functionfs at $mountpoint; UDCs: $(ls /sys/class/udc 2>/dev/null | tr '\n' ' ')"
echo "next: iapctl gadget --role phone --udc auto"
