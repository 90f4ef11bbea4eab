# Sourced by the USB lab scenarios (not run on its own): refusal outside the
# guest, the paths they share, PASS/FAIL bookkeeping and the USB stack start.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/scenario-lib.sh"
#   lab_require 240 "[ARGS]"      # exits 2 outside the lab guest
#   lab_start_usb [MODULE...]     # dummy_hcd, libcomposite, usb_f_fs (+ modules), udevd
#   check "what" command args...  # PASS/FAIL line, counted
#   within TENTHS command args...  # the command until it succeeds, for at most TENTHS/10 s
#   lab_finish                    # "N passed, N failed"; exit status 1 on any failure

here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/../.." && pwd)
iapctl=${IAPCTL:-$root/.build/debug/iapctl}
out=${IAP_LAB_OUT:-/tmp}
# The software authenticator keeps its test keys in the run folder, not in the guest's HOME.
export XDG_DATA_HOME="${XDG_DATA_HOME:-$out/data}"
gadget=/sys/kernel/config/usb_gadget/iapdevkit
passed=0
failed=0

lab_require() {
    if [ "${IAP_LAB:-}" != 1 ]; then
        echo "$(basename "$0") runs inside the USB lab guest only: scripts/usb-lab/run-in-guest.sh $0 ${1:-240} ${2:-}" >&2
        exit 2
    fi
}

check() {
    local what=$1; shift
    if "$@" > /dev/null 2>&1; then passed=$((passed + 1)); echo "PASS: $what"; else failed=$((failed + 1)); echo "FAIL: $what"; fi
}

within() {
    local n=$(( $1 * 2 )); shift
    while [ "$n" -gt 0 ]; do "$@" > /dev/null 2>&1 && return 0; sleep 0.05; n=$((n - 1)); done
    "$@" > /dev/null 2>&1
}

# The kernel's USB gadget stack with its dummy controller, and udevd (Debian's
# libusb enumerates through udev: without it libusb sees nothing).
lab_start_usb() {
    [ -x "$iapctl" ] || { echo "no $iapctl: build it on the host first (swift build)"; exit 1; }
    echo "iapctl: $iapctl"
    local module
    for module in dummy_hcd libcomposite usb_f_fs "$@"; do modprobe "$module" || exit 1; done
    /lib/systemd/systemd-udevd --daemon
    udevadm trigger --type=subsystems --action=add
    udevadm trigger --type=devices --action=add
    udevadm settle
}

lab_finish() {
    echo
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit
}
