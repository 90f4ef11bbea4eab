#!/usr/bin/env bash
# Boots the USB lab guest and runs one scenario script in it.
#
#   run-in-guest.sh SCENARIO_SCRIPT [TIMEOUT_SECONDS [SCENARIO_ARGS...]]
#
# SCENARIO_SCRIPT is a host path. The guest sees the host's / read-only (with
# a throwaway tmpfs overlay, so writes succeed but vanish) and runs the script
# as root with the host's userland and the lab kernel's modules. The guest
# console is streamed to stdout. Exit status: the scenario's own, 124 when the
# time limit (default 300 s) killed the guest, 125 for lab errors.
#
# Environment:
#   IAP_LAB_CACHE        cache folder made by prepare.sh (default /var/cache/iap-devkit-lab)
#   IAP_LAB_WORK         folder shared read-write with the guest at the same
#                        path (default $IAP_LAB_CACHE/work); each run gets
#                        IAP_LAB_WORK/run-*/ (exported to the scenario as $IAP_LAB_OUT)
#   IAP_LAB_ACCEL        tcg or kvm (default: tcg when /sys/module/kvm_pvm exists
#                        or /dev/kvm is unusable, kvm otherwise)
#   IAP_LAB_MEMORY       guest memory in MiB (default 1024)
#   IAP_LAB_CPUS         guest CPUs (default 1)
#   IAP_LAB_KERNEL_ARGS  extra kernel command line (default "quiet"; use
#                        "loglevel=7" to see all kernel messages)
#   IAP_LAB_KEEP_RUNS    how many run folders to keep (default 20)
#   IAPCTL               the iapctl binary the scenarios run (default: the
#                        checkout's .build/debug/iapctl). The guest reads it
#                        over 9p as it runs: a copy keeps a rebuild on the
#                        host from changing it under a running scenario
set -uo pipefail

CACHE=${IAP_LAB_CACHE:-/var/cache/iap-devkit-lab}
LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

say() { printf '[run-in-guest] %s\n' "$*" >&2; }
die() { printf '[run-in-guest] error: %s\n' "$*" >&2; exit 125; }
usage() { sed -n '2,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 125; }

[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
scenario_arg=$1
timeout_s=${2:-300}
shift; [ $# -ge 1 ] && shift
[[ "$timeout_s" =~ ^[0-9]+$ ]] && [ "$timeout_s" -gt 0 ] || die "TIMEOUT_SECONDS must be a positive integer, got '$timeout_s'"

# ---------------------------------------------------------------- prerequisites
[ -f "$scenario_arg" ] || die "scenario script '$scenario_arg' not found"
[ -r "$scenario_arg" ] || die "scenario script '$scenario_arg' is not readable"
scenario=$(realpath "$scenario_arg")
command -v qemu-system-x86_64 >/dev/null 2>&1 \
    || die "qemu-system-x86_64 not found; run $LAB_DIR/prepare.sh first"
[ -f "$CACHE/current.env" ] || die "no lab kernel in $CACHE; run $LAB_DIR/prepare.sh first"
# shellcheck disable=SC1091
. "$CACHE/current.env"
for f in "$IAP_LAB_KERNEL" "$IAP_LAB_INITRD"; do
    [ -f "$f" ] || die "$f is missing; run $LAB_DIR/prepare.sh again"
done
[ -d "$IAP_LAB_MODULES/$IAP_LAB_KVER" ] || die "$IAP_LAB_MODULES/$IAP_LAB_KVER is missing; run $LAB_DIR/prepare.sh again"

work=${IAP_LAB_WORK:-$CACHE/work}
mkdir -p "$work" || die "cannot create the work folder $work"
work=$(realpath "$work")

# The guest gets fresh /run, /proc, /sys and /dev: paths there are not the
# host's. Whitespace would break the kernel command line.
for p in "$scenario" "$work" "$IAP_LAB_MODULES"; do
    case "$p" in
        /run/*|/proc/*|/sys/*|/dev/*) die "$p is under /run, /proc, /sys or /dev, which the guest does not share with the host" ;;
        *[[:space:]]*) die "path '$p' contains whitespace; not supported" ;;
    esac
done
[ "$work" != / ] || die "IAP_LAB_WORK must not be /"

# ---------------------------------------------------------------- accelerator
accel=${IAP_LAB_ACCEL:-}
if [ -z "$accel" ]; then
    if [ -d /sys/module/kvm_pvm ]; then
        accel=tcg; accel_why="/sys/module/kvm_pvm exists (paravirtual KVM cannot boot a stock kernel)"
    elif [ -c /dev/kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
        accel=kvm; accel_why="/dev/kvm is usable"
    else
        accel=tcg; accel_why="/dev/kvm is missing or not accessible"
    fi
else
    accel_why="IAP_LAB_ACCEL"
fi
case "$accel" in
    tcg) accel_opts=(-accel tcg -cpu max) ;;
    kvm) accel_opts=(-accel kvm -cpu host) ;;
    *) die "IAP_LAB_ACCEL must be tcg or kvm, got '$accel'" ;;
esac

# ---------------------------------------------------------------- run folder
run_name="run-$(date +%Y%m%d-%H%M%S)-$$"
out="$work/$run_name"
mkdir -p "$out" || die "cannot create $out"
{
    echo "scenario=$scenario"
    echo "cwd=$PWD"
    echo "path=$PATH"
    echo "modules=$IAP_LAB_MODULES"
    echo "iapctl=${IAPCTL:-}"
} >"$out/guest.conf"
: >"$out/args"
for a in "$@"; do
    case "$a" in *$'\n'*) die "scenario arguments must not contain newlines" ;; esac
    printf '%s\n' "$a" >>"$out/args"
done

# Keep the newest IAP_LAB_KEEP_RUNS run folders.
keep=${IAP_LAB_KEEP_RUNS:-20}
if [[ "$keep" =~ ^[0-9]+$ ]]; then
    ls -1dt "$work"/run-* 2>/dev/null | tail -n +"$((keep + 1))" | while read -r old; do rm -rf "$old"; done
fi

# ---------------------------------------------------------------- boot
qemu_pid=""
cleanup() {
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill -TERM "$qemu_pid" 2>/dev/null
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$qemu_pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$qemu_pid" 2>/dev/null
        wait "$qemu_pid" 2>/dev/null
    fi
    qemu_pid=""
}
trap cleanup EXIT
trap 'say "interrupted"; cleanup; exit 130' INT
trap 'say "terminated"; cleanup; exit 143' TERM HUP

# qboot boots faster than SeaBIOS and does not reset the terminal.
bios_opts=()
for rom in /usr/share/qemu/qboot.rom /usr/share/qboot/bios.bin; do
    [ -f "$rom" ] && { bios_opts=(-bios "$rom"); break; }
done

append="console=ttyS0 panic=-1 ${IAP_LAB_KERNEL_ARGS-quiet} iaplab.work=$work iaplab.run=$run_name"
# If this script is killed outright (SIGKILL), qemu dies with it.
pdeath=()
if setpriv --help 2>/dev/null | grep -q -- --pdeathsig; then
    pdeath=(setpriv --pdeathsig KILL --)
fi
qemu_cmd=(
    "${pdeath[@]}" qemu-system-x86_64
    "${accel_opts[@]}"
    -m "${IAP_LAB_MEMORY:-1024}"
    -smp "${IAP_LAB_CPUS:-1}"
    -nographic -no-reboot -nodefaults
    "${bios_opts[@]}"
    -chardev "stdio,id=console,signal=off,logfile=$out/console.log"
    -serial chardev:console
    -monitor none
    -net none
    -kernel "$IAP_LAB_KERNEL"
    -initrd "$IAP_LAB_INITRD"
    -append "$append"
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$work,mount_tag=labwork,security_model=none,multidevs=remap"
)
say "kernel $IAP_LAB_KVER, accel $accel ($accel_why), timeout ${timeout_s} s"
say "scenario $scenario"
say "output folder $out"
printf '%q ' "${qemu_cmd[@]}" >"$out/qemu-command"

start=$(date +%s.%N)
"${qemu_cmd[@]}" </dev/null &
qemu_pid=$!
deadline=$(( $(date +%s) + timeout_s ))
timed_out=0
while kill -0 "$qemu_pid" 2>/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
        timed_out=1
        break
    fi
    sleep 0.2
done
if [ "$timed_out" -eq 1 ]; then
    cleanup
    qemu_rc=124
else
    wait "$qemu_pid"
    qemu_rc=$?
    qemu_pid=""
fi
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo

boot=$(cat "$out/boot-to-scenario-seconds" 2>/dev/null || echo "?")
if [ "$timed_out" -eq 1 ]; then
    say "TIMEOUT: the guest was still running after ${timeout_s} s and was killed (wall ${wall} s, boot-to-scenario ${boot} s)"
    say "console log: $out/console.log"
    exit 124
fi
if [ ! -f "$out/exit-status" ]; then
    say "FAILED: the guest ended without a scenario exit status (qemu exit $qemu_rc, wall ${wall} s); see $out/console.log"
    exit 125
fi
rc=$(cat "$out/exit-status")
[[ "$rc" =~ ^[0-9]+$ ]] || { say "FAILED: bad exit status '$rc' in $out/exit-status"; exit 125; }
say "scenario exit status $rc (wall ${wall} s, guest boot-to-scenario ${boot} s)"
say "output folder $out"
exit "$rc"
