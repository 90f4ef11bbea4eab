#!/usr/bin/env bash
# Sets up a Linux USB gadget for `iapctl gadget` or `iapctl head-unit
# --role-switch` (run as root): a configfs gadget with one FunctionFS
# function, mounted at /dev/ffs-iap (or --ffs). The UDC is bound by iapctl
# once it has written the descriptors (binding earlier fails).
#
#   scripts/gadget-setup.sh                      the lab identity: 1209:0001, one
#                                                configuration with the bulk iAP interface
#   scripts/gadget-setup.sh --identity iphone [--product-id 12a8] [--ipod-first] [--no-audio]
#                                                what a real iPhone shows a car: 05ac:PID,
#                                                configuration 1 "PTP" (a mass-storage
#                                                function stands in, as ipod-gadget's does),
#                                                configuration 2 "iPod USB Interface"
#                                                (UAC1 audio control and streaming, then
#                                                the HID interface iapctl serves);
#                                                --ipod-first swaps them, for docks that
#                                                only look at the first; --no-audio
#                                                leaves UAC1 out (a UDC without
#                                                isochronous endpoints, such as the lab's
#                                                dummy_hcd, cannot bind it)
#   scripts/gadget-setup.sh --identity accessory [--name iapaccessory] [--ffs /dev/ffs-accessory]
#                                                what a head unit presents after the role
#                                                switch, as a production stack does:
#                                                1209:0002, one configuration
#                                                "Configuration-1", interface 0 "iAP
#                                                Interface" (bulk IN 0x81, OUT 0x02);
#                                                its own gadget name and mount by default,
#                                                so it sits beside an iPhone-shaped gadget
#   --name NAME                                  the configfs gadget's name (default
#                                                iapdevkit; iapaccessory for accessory)
#   --ffs DIRECTORY                              where functionfs is mounted (default
#                                                /dev/ffs-iap; /dev/ffs-accessory for accessory)
#   scripts/gadget-setup.sh [--name NAME] [--ffs DIRECTORY] --remove
#                                                unbind and remove
set -euo pipefail
name=
mountpoint=
identity=lab
product=12a8
ipod_first=false
audio=true

remove() {
    [ -d "$gadget" ] || return 0
    echo "" > "$gadget/UDC" 2>/dev/null || true
    umount "$mountpoint" 2>/dev/null || true
    local config function
    for config in "$gadget"/configs/*; do
        [ -d "$config" ] || continue
        for function in "$config"/*.*; do [ -L "$function" ] && rm -f "$function"; done
        rmdir "$config/strings/0x409" "$config" 2>/dev/null || true
    done
    for function in "$gadget"/functions/*; do [ -d "$function" ] && rmdir "$function" 2>/dev/null || true; done
    rmdir "$gadget/strings/0x409" "$gadget" 2>/dev/null || true
}

while [ $# -gt 0 ]; do
    case "$1" in
        --remove) removing=true ;;
        --name) name=${2:?--name needs a gadget name}; shift ;;
        --ffs) mountpoint=${2:?--ffs needs a directory}; shift ;;
        --identity) identity=${2:?--identity needs lab or iphone}; shift ;;
        --product-id) product=${2:?--product-id needs four hex digits}; shift ;;
        --ipod-first) ipod_first=true ;;
        --no-audio) audio=false ;;
        -h|--help) sed -n '2,35s/^# \{0,1\}//p' "$0"; exit 0 ;;
        *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$identity" in lab|iphone|accessory) ;; *) echo "error: --identity is lab, iphone or accessory, not $identity" >&2; exit 2 ;; esac
if [ "$identity" = accessory ]; then
    name=${name:-iapaccessory}; mountpoint=${mountpoint:-/dev/ffs-accessory}
else
    name=${name:-iapdevkit}; mountpoint=${mountpoint:-/dev/ffs-iap}
fi
[[ "$name" =~ ^[A-Za-z0-9_-]+$ ]] || { echo "error: --name is letters, digits, - and _, not $name" >&2; exit 2; }
gadget=/sys/kernel/config/usb_gadget/$name
# The functionfs instance: "iap" for the default gadget (as before), else the gadget's name.
instance=iap
[ "$name" = iapdevkit ] || instance=$name
if ${removing:-false}; then
    [ "$(id -u)" -eq 0 ] || { echo "error: run as root (configfs and mount need it)" >&2; exit 1; }
    remove; echo "removed $gadget"; exit 0
fi
product=${product#0x}
[[ "$product" =~ ^[0-9a-fA-F]{4}$ ]] || { echo "error: --product-id is four hex digits (such as 12a8), not $product" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || { echo "error: run as root (configfs and mount need it)" >&2; exit 1; }
modprobe libcomposite 2>/dev/null || true
modprobe usb_f_fs 2>/dev/null || true
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
[ -d /sys/kernel/config/usb_gadget ] || { echo "error: no usb_gadget in configfs: load libcomposite" >&2; exit 1; }
# A gadget of the other identity (or an older layout) is taken down first.
remove

# configuration NAME TITLE: a configuration directory with its string.
configuration() {
    mkdir -p "$gadget/configs/$1/strings/0x409"
    echo "$2" > "$gadget/configs/$1/strings/0x409/configuration"
    echo 250 > "$gadget/configs/$1/MaxPower"
}

mkdir -p "$gadget/strings/0x409"
echo 0x0200 > "$gadget/bcdUSB"
mkdir -p "$gadget/functions/ffs.$instance"
if [ "$identity" = lab ]; then
    echo 0x1209 > "$gadget/idVendor"
    echo 0x0001 > "$gadget/idProduct"
    echo "iap-devkit" > "$gadget/strings/0x409/manufacturer"
    echo "iap-devkit test hardware" > "$gadget/strings/0x409/product"
    echo "DK-0001" > "$gadget/strings/0x409/serialnumber"
    configuration c.1 "iAP"
    ln -s "$gadget/functions/ffs.$instance" "$gadget/configs/c.1/"
elif [ "$identity" = accessory ]; then
    echo 0x1209 > "$gadget/idVendor"
    echo 0x0002 > "$gadget/idProduct"
    echo 0x0001 > "$gadget/bcdDevice"
    echo "iap-devkit" > "$gadget/strings/0x409/manufacturer"
    echo "iap-devkit accessory" > "$gadget/strings/0x409/product"
    echo "DK-0002" > "$gadget/strings/0x409/serialnumber"
    configuration c.1 "Configuration-1"
    ln -s "$gadget/functions/ffs.$instance" "$gadget/configs/c.1/"
else
    modprobe usb_f_mass_storage 2>/dev/null || true
    modprobe usb_f_uac1 2>/dev/null || true
    echo 0x05ac > "$gadget/idVendor"
    echo "0x$product" > "$gadget/idProduct"
    echo 0x1005 > "$gadget/bcdDevice"
    echo "Apple Inc." > "$gadget/strings/0x409/manufacturer"
    echo "iPhone" > "$gadget/strings/0x409/product"
    echo "DK0001IPHONE" > "$gadget/strings/0x409/serialnumber"
    if $ipod_first; then ptp=c.2; ipod=c.1; else ptp=c.1; ipod=c.2; fi
    # Configurations are listed by their number: create the first one first.
    for config in c.1 c.2; do
        if [ "$config" = "$ptp" ]; then configuration "$ptp" "PTP"; else configuration "$ipod" "iPod USB Interface"; fi
    done
    mkdir -p "$gadget/functions/mass_storage.ptp"
    echo 1 > "$gadget/functions/mass_storage.ptp/lun.0/removable"
    ln -s "$gadget/functions/mass_storage.ptp" "$gadget/configs/$ptp/"
    # Audio control and streaming come first (interfaces 0 and 1), the HID interface after them, as on a real iPhone.
    if ! $audio; then
        :
    elif mkdir -p "$gadget/functions/uac1.ipod" 2>/dev/null; then
        echo 0 > "$gadget/functions/uac1.ipod/c_chmask" 2>/dev/null || true
        ln -s "$gadget/functions/uac1.ipod" "$gadget/configs/$ipod/"
    else
        echo "note: no uac1 gadget function (usb_f_uac1): the iPod configuration has no audio interfaces" >&2
    fi
    ln -s "$gadget/functions/ffs.$instance" "$gadget/configs/$ipod/"
fi
mkdir -p "$mountpoint"
mountpoint -q "$mountpoint" || mount -t functionfs "$instance" "$mountpoint"
echo "gadget $gadget ready ($identity); functionfs at $mountpoint; UDCs: $(ls /sys/class/udc 2>/dev/null | tr '\n' ' ')"
case "$identity" in
    lab) echo "next: iapctl gadget --role phone --udc auto" ;;
    iphone) echo "next: iapctl gadget --role phone --identity iphone --udc auto" ;;
    accessory) echo "next: iapctl head-unit --transport usb:auto --role-switch --gadget $gadget --ffs $mountpoint" ;;
esac
