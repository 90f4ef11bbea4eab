#!/usr/bin/env bash
# USB lab measurement: round trips over iAP over HID, the whole stack
# against a raw HID echo, over the same controller and the same descriptors:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/throughput-hid.sh 300 [SIZES] [COUNT] [LINKS]
#
# Baseline: raw-hid-echo.c on both sides (a FunctionFS function with the
# iPhone's HID descriptors echoing what SET_REPORT brings in input reports;
# synchronous libusb on the host), reports cut and padded as iAP over HID
# cuts them, no protocol above them. Stack: `iapctl gadget --role phone
# --identity iphone` answering `iapctl ping --transport usb:05ac:12a8`. Same
# payload sizes, same round-trip measure. Prints a table and writes
# throughput-hid.json to the run folder. A measurement, not a limit: checks
# only fail when a side did not run. LINKS (default "default"): as in
# throughput.sh, the stack measured again per entry with both ends proposing
# LENGTH/OUTSTANDING link packets ("default 65535/5").
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 300

iapctl=${IAPCTL:-$root/.build/release/iapctl}
[ -x "$iapctl" ] || iapctl=$root/.build/debug/iapctl
sizes=${1:-"64 1024 4096"}
count=${2:-100}
links=${3:-default}
link_options() { [ "$1" = default ] || echo "--link-packet-length ${1%/*} --link-outstanding ${1#*/}"; }
configfs=/sys/kernel/config/usb_gadget
wait_for() { for _ in $(seq 1 80); do eval "$1" && return 0; sleep 0.25; done; return 1; }
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }
present() { for d in /sys/bus/usb/devices/*; do [ "$(cat "$d/idVendor" 2>/dev/null)$(cat "$d/idProduct" 2>/dev/null)" = "$1" ] && return 0; done; return 1; }

lab_start_usb
udc=$(ls /sys/class/udc | head -n 1)
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
check "raw-hid-echo.c builds against libusb" ${CC:-cc} -O2 -o "$out/raw-hid-echo" "$here/raw-hid-echo.c" -lusb-1.0

# The baseline device: configfs gadget 1209:0003 with a FunctionFS function run by raw-hid-echo.
echo=$configfs/hidecho
mkdir -p "$echo/strings/0x409" "$echo/configs/c.1" "$echo/functions/ffs.hidecho"
echo 0x1209 > "$echo/idVendor"; echo 0x0003 > "$echo/idProduct"
echo "iap-devkit raw HID echo" > "$echo/strings/0x409/product"
ln -s "$echo/functions/ffs.hidecho" "$echo/configs/c.1/"
mkdir -p /dev/ffs-hidecho
mount -t functionfs hidecho /dev/ffs-hidecho
"$out/raw-hid-echo" device /dev/ffs-hidecho 2> "$out/raw-device.err" &
echo_pid=$!
check "the raw echo device wrote its descriptors" wait_for "grep -q 'descriptors written' '$out/raw-device.err'"
echo "$udc" > "$echo/UDC"
check "the raw HID echo enumerates" wait_for "present 12090003"
udevadm settle
for size in $sizes; do
    check "raw HID echo, $size bytes x $count" sh -c "'$out/raw-hid-echo' host 1209:0003 $size $count > '$out/raw-$size.json' 2> '$out/raw-$size.err'"
done
echo "" > "$echo/UDC"
kill "$echo_pid" 2>/dev/null; wait "$echo_pid" 2>/dev/null
umount /dev/ffs-hidecho
rm "$echo/configs/c.1/ffs.hidecho"; rmdir "$echo/configs/c.1" "$echo/functions/ffs.hidecho" "$echo/strings/0x409" "$echo"
wait_for "! present 12090003"

# The stack: the iPhone-shaped gadget running the phone role, pinged from the host side over HID.
check "gadget set up as an iPhone" "$root/scripts/gadget-setup.sh" --identity iphone --no-audio
n=0
for link in $links; do
n=$((n + 1)); tag=$n-${link//\//-}
"$iapctl" gadget --role phone --identity iphone --udc auto $(link_options "$link") > "$out/gadget-$tag.log" 2>&1 &
gadget_pid=$!
check "the iPhone-shaped gadget enumerates (link packets: $link)" wait_for "present 05ac12a8"
udevadm settle
for size in $sizes; do
    check "iAP ping over HID, $size bytes x $count, link packets $link" sh -c "'$iapctl' ping --transport usb:05ac:12a8 --size $size --count $count --json $(link_options "$link") > '$out/iap-$tag-$size.json' 2> '$out/iap-$tag-$size.err'"
done
kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo "" > "$configfs/iapdevkit/UDC" 2>/dev/null
wait_for "! present 05ac12a8"
done

echo
printf '%-14s %-8s %16s %16s %14s\n' "link packets" size "raw median ms" "iAP median ms" "iAP / raw"
json="{\"binary\":\"$iapctl\",\"count\":$count,\"sizes\":["
first=1
n=0
for link in $links; do
n=$((n + 1)); tag=$n-${link//\//-}
for size in $sizes; do
    raw=$(field median_ms "$out/raw-$size.json"); iap=$(field median_ms "$out/iap-$tag-$size.json")
    [ -n "$raw" ] && [ -n "$iap" ] || continue
    ratio=$(awk -v a="$iap" -v b="$raw" 'BEGIN { printf "%.2f", a / b }')
    printf '%-14s %-8s %16s %16s %13sx\n' "$link" "$size" "$raw" "$iap" "$ratio"
    [ $first = 1 ] || json+=","
    first=0
    json+="{\"link_packets\":\"$link\",\"size\":$size,\"raw_median_ms\":$raw,\"iap_median_ms\":$iap,\"iap_over_raw\":$ratio}"
done
done
echo "$json]}" > "$out/throughput-hid.json"
echo "(round trip of SIZE payload bytes over iAP over HID; $count round trips each; iapctl: $iapctl)"
lab_finish
