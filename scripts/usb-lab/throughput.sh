#!/usr/bin/env bash
# USB lab measurement: echo throughput over the dummy controller, the whole
# iAP stack against raw libusb, in the same guest:
#
#   scripts/usb-lab/run-in-guest.sh scripts/usb-lab/throughput.sh 300 [SIZES] [COUNT] [LINKS]
#
# Baseline: the kernel's Loopback gadget function (usb_f_ss_lb echoes bulk OUT
# on bulk IN) driven by raw-echo.c with synchronous libusb calls, no protocol.
# Stack: `iapctl gadget --role phone` answering `iapctl ping --transport
# usb:1209:1` (link packets, acknowledgements, control messages, both USB
# transports). Same payload sizes, same round-trip measure. Prints a table
# and writes throughput.json to the run folder. This is a measurement, not a
# speed limit: checks only fail when a side did not run.
#
# LINKS (default "default") measures the stack again per entry, in the same
# guest, with both ends proposing other link packets: LENGTH/OUTSTANDING
# (--link-packet-length, --link-outstanding), or default for the
# transport's own; "default 16384/8 65535/5" compares three, and an entry
# may repeat ("default 65535/5 default 65535/5": rounds, interleaved).
set -u

. "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
lab_require 300

# A release build when there is one: a debug build is several times slower
# and would measure the compiler's checks, not the stack.
iapctl=${IAPCTL:-$root/.build/release/iapctl}
[ -x "$iapctl" ] || iapctl=$root/.build/debug/iapctl
sizes=${1:-"1024 4096 16000"}
count=${2:-200}
links=${3:-default}
link_options() { [ "$1" = default ] || echo "--link-packet-length ${1%/*} --link-outstanding ${1#*/}"; }
configfs=/sys/kernel/config/usb_gadget
wait_for() { for _ in $(seq 1 80); do eval "$1" && return 0; sleep 0.25; done; return 1; }
field() { sed -n "s/.*\"$1\":\([0-9.]*\).*/\1/p" "$2"; }

lab_start_usb usb_f_ss_lb
udc=$(ls /sys/class/udc | head -n 1)
mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
# A device by its ids (root hubs have product 0002 too).
present() { for d in /sys/bus/usb/devices/*; do [ "$(cat "$d/idVendor" 2>/dev/null)$(cat "$d/idProduct" 2>/dev/null)" = "$1" ] && return 0; done; return 1; }

check "raw-echo.c builds against libusb" ${CC:-cc} -O2 -o "$out/raw-echo" "$here/raw-echo.c" -lusb-1.0

# The baseline device: configfs gadget 1209:0002 with the Loopback function.
lb=$configfs/lbtest
mkdir -p "$lb/strings/0x409" "$lb/configs/c.1" "$lb/functions/Loopback.0"
echo 0x1209 > "$lb/idVendor"; echo 0x0002 > "$lb/idProduct"
echo "iap-devkit loopback baseline" > "$lb/strings/0x409/product"
ln -s "$lb/functions/Loopback.0" "$lb/configs/c.1/"
echo "$udc" > "$lb/UDC"
check "the loopback baseline enumerates" wait_for "present 12090002"
udevadm settle
for size in $sizes; do
    check "raw libusb echo, $size bytes x $count" sh -c "'$out/raw-echo' 1209:0002 $size $count > '$out/raw-$size.json' 2> '$out/raw-$size.err'"
done
echo "" > "$lb/UDC"
rm "$lb/configs/c.1/Loopback.0"; rmdir "$lb/configs/c.1" "$lb/functions/Loopback.0" "$lb/strings/0x409" "$lb"
wait_for "! present 12090002"

# The stack: the project's gadget running the phone role, pinged from the host side.
check "gadget set up (configfs, functionfs)" "$root/scripts/gadget-setup.sh"
n=0
for link in $links; do
n=$((n + 1)); tag=$n-${link//\//-}
"$iapctl" gadget --role phone --udc auto $(link_options "$link") > "$out/gadget-$tag.log" 2>&1 &
gadget_pid=$!
check "the iAP gadget enumerates (link packets: $link)" wait_for "present 12090001"
udevadm settle
for size in $sizes; do
    check "iAP ping over USB, $size bytes x $count, link packets $link" sh -c "'$iapctl' ping --transport usb:1209:1 --size $size --count $count --json $(link_options "$link") > '$out/iap-$tag-$size.json' 2> '$out/iap-$tag-$size.err'"
done
kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null
echo "" > "$configfs/iapdevkit/UDC" 2>/dev/null
wait_for "! present 12090001"
done

# How the packets travel, with both ends proposing 4,096-byte link packets
# (over USB they propose 65,535 by default, and a 16,000-byte ping would be
# one packet).
small="--link-packet-length 4096 --link-outstanding 32"
"$iapctl" gadget --role phone --udc auto $small > "$out/gadget-checks.log" 2>&1 &
gadget_pid=$!
check "the iAP gadget enumerates (4,096-byte link packets)" wait_for "present 12090001"
udevadm settle
# Pings of 484 and 996 bytes travel in link packets of exactly 512 and 1024
# bytes: whole USB packets, which must end with a zero-length packet or the
# other side's larger read waits (before the fix, for the 1 s retransmission).
for size in 484 996; do
    "$iapctl" ping --transport usb:1209:1 $small --size $size --count 10 --json --trace "$out/whole-$size.pcapng" > /dev/null 2>&1
    "$iapctl" decode "$out/whole-$size.pcapng" --stats > "$out/whole-$size.txt" 2>&1
    check "$size-byte pings in $((size + 28))-byte link packets: none retransmitted (zero-length packets sent)" \
        grep -E -q '^retransmissions: 0$' "$out/whole-$size.txt"
done
# Over bulk the packets one turn of the core makes leave in one transfer
# (a 16,000-byte ping is four link packets): some record of each direction
# holds more than one link packet.
"$iapctl" ping --transport usb:1209:1 $small --size 16000 --count 5 --json --trace "$out/coalesced.pcapng" > /dev/null 2>&1
"$iapctl" decode "$out/coalesced.pcapng" --json > "$out/coalesced.json" 2>&1
most_per_transfer() { grep "\"kind\":\"link\",\"dir\":\"$1\"" "$out/coalesced.json" | grep -o '"frame":[0-9]*' | sort | uniq -c | sort -rn | awk 'NR == 1 { print $1 }'; }
check "the head unit's link packets share bulk transfers (at most $(most_per_transfer out) in one)" sh -c "[ 0$(most_per_transfer out) -gt 1 ]"
check "the gadget's link packets share bulk transfers (at most $(most_per_transfer in) in one)" sh -c "[ 0$(most_per_transfer in) -gt 1 ]"
kill "$gadget_pid" 2>/dev/null
wait "$gadget_pid" 2>/dev/null

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
    json+="{\"link_packets\":\"$link\",\"size\":$size,\"raw_median_ms\":$raw,\"iap_median_ms\":$iap,\"iap_over_raw\":$ratio,\"raw_mb_per_s\":$(field mb_per_s "$out/raw-$size.json")}"
done
done
echo "$json]}" > "$out/throughput.json"
echo "(round trip of SIZE payload bytes; $count round trips each; iapctl: $iapctl)"
lab_finish
