#!/usr/bin/env bash
# Prepares the QEMU USB lab: installs the host packages it needs, fetches and
# unpacks the current Debian kernel into a cache folder and builds a small
# initramfs that boots into the host's own userland over 9p.
#
# Idempotent: a second run only checks that everything is in place.
#
# Environment:
#   IAP_LAB_CACHE        cache folder (default /var/cache/iap-devkit-lab)
#   IAP_LAB_KERNEL_PKG   exact kernel package to use (default: the package the
#                        metapackage linux-image-amd64 depends on)
#
# The host's /boot and /lib/modules are never touched.
set -euo pipefail

CACHE=${IAP_LAB_CACHE:-/var/cache/iap-devkit-lab}
START=$(date +%s.%N)

say() { printf '[prepare] %s\n' "$*"; }
die() { printf '[prepare] error: %s\n' "$*" >&2; exit 1; }
elapsed() { awk -v a="$START" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        say "not root: re-running through sudo"
        exec sudo --preserve-env=IAP_LAB_CACHE,IAP_LAB_KERNEL_PKG "$0" "$@"
    fi
    die "must run as root (installs packages, creates device nodes for the initramfs)"
fi

# ---------------------------------------------------------------- packages
packages=(qemu-system-x86 busybox-static udev kmod cpio libusb-1.0-0-dev libudev-dev pkg-config)
apt_updated=0
apt_update() {
    if [ "$apt_updated" -eq 0 ]; then
        say "apt-get update"
        apt-get update -qq
        apt_updated=1
    fi
}

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt_update
    say "installing: ${missing[*]}"
    if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
        say "apt-get install failed; trying 'apt-get -y --fix-broken install' first"
        apt-get -y -qq --fix-broken install
        apt-get install -y -qq --no-install-recommends "${missing[@]}"
    fi
    say "packages installed ($(elapsed) s so far)"
else
    say "packages already installed: ${packages[*]}"
fi
for tool in qemu-system-x86_64 depmod modprobe cpio dpkg-deb; do
    command -v "$tool" >/dev/null 2>&1 || die "'$tool' is still missing after installing packages"
done
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] && [ -x "$BUSYBOX" ] || die "busybox (package busybox-static) not found"
if file_out=$(LC_ALL=C ldd "$BUSYBOX" 2>&1) && ! grep -q "not a dynamic executable" <<<"$file_out"; then
    die "$BUSYBOX is dynamically linked; install busybox-static (not busybox)"
fi

mkdir -p "$CACHE/kernels" "$CACHE/work"
exec 9>"$CACHE/.lock"
flock 9

# ---------------------------------------------------------------- kernel
# Which kernel package? The metapackage linux-image-amd64 depends on exactly
# one versioned package, e.g. linux-image-6.1.0-56-amd64. Its name changes
# with Debian point releases, so it is looked up every time.
resolve_kernel_pkg() {
    apt-cache depends linux-image-amd64 2>/dev/null \
        | awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-amd64$/ { print $2; exit }'
}
kpkg=${IAP_LAB_KERNEL_PKG:-}
if [ -z "$kpkg" ]; then
    kpkg=$(resolve_kernel_pkg)
    if [ -z "$kpkg" ]; then
        apt_update || true
        kpkg=$(resolve_kernel_pkg)
    fi
fi
kver_pkg=""
if [ -n "$kpkg" ]; then
    kver_pkg=$(apt-cache policy "$kpkg" 2>/dev/null | awk '$1 == "Candidate:" { print $2; exit }')
fi

current_env="$CACHE/current.env"
if [ -z "$kpkg" ] || [ -z "$kver_pkg" ] || [ "$kver_pkg" = "(none)" ]; then
    if [ -f "$current_env" ]; then
        say "warning: cannot resolve the kernel package from apt-cache; keeping the cached kernel"
        # shellcheck disable=SC1090
        . "$current_env"
        kpkg=$IAP_LAB_KERNEL_PKG_NAME
        kver_pkg=$IAP_LAB_KERNEL_PKG_VERSION
    else
        die "cannot find the kernel package (apt-cache depends linux-image-amd64 gave nothing); set IAP_LAB_KERNEL_PKG"
    fi
fi

kdir="$CACHE/kernels/${kpkg}_${kver_pkg//:/%}"
if [ -f "$kdir/.unpacked" ]; then
    say "kernel $kpkg $kver_pkg already unpacked in $kdir"
else
    say "downloading $kpkg $kver_pkg"
    tmp=$(mktemp -d "$CACHE/.download.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$kpkg=$kver_pkg") \
        || { apt_update; (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "$kpkg=$kver_pkg"); } \
        || die "apt-get download $kpkg failed"
    deb=$(ls "$tmp"/*.deb)
    say "unpacking $(basename "$deb") ($(du -h "$deb" | cut -f1))"
    rm -rf "$kdir"
    mkdir -p "$kdir.partial"
    dpkg-deb -x "$deb" "$kdir.partial"
    rm -rf "$kdir.partial/usr/share/doc" "$deb"
    mv "$kdir.partial" "$kdir"
    rm -rf "$tmp"
    trap - EXIT
    touch "$kdir/.unpacked"
fi

# Layout: bookworm ships lib/modules/KVER, a merged-usr package usr/lib/modules/KVER.
if [ -d "$kdir/lib/modules" ]; then modbase="$kdir"; else modbase="$kdir/usr"; fi
[ -d "$modbase/lib/modules" ] || die "no lib/modules in $kdir"
kver=$(ls "$modbase/lib/modules" | head -n1)
[ -n "$kver" ] || die "no kernel version folder under $modbase/lib/modules"
vmlinuz="$kdir/boot/vmlinuz-$kver"
[ -f "$vmlinuz" ] || die "no kernel image $vmlinuz"

if [ ! -f "$modbase/lib/modules/$kver/modules.dep.bin" ] || [ "$modbase/lib/modules/$kver/modules.dep.bin" -ot "$kdir/.unpacked" ]; then
    say "depmod -b $modbase $kver"
    depmod -b "$modbase" "$kver"
else
    say "depmod already done"
fi

# Drop kernels left over from an older point release.
for old in "$CACHE"/kernels/*; do
    [ -d "$old" ] && [ "$old" != "$kdir" ] || continue
    say "removing old kernel $(basename "$old")"
    rm -rf "$old"
done

# ---------------------------------------------------------------- initramfs
# Modules needed to reach the host's userland: virtio PCI transport, 9p over
# virtio and overlayfs. modprobe resolves their dependencies in load order
# ("builtin" lines need nothing).
initramfs_modules=(virtio_pci 9pnet_virtio 9p overlay)
modlist=()
for m in "${initramfs_modules[@]}"; do
    deps=$(modprobe -d "$modbase" -S "$kver" --show-depends "$m") || die "modprobe cannot resolve $m for $kver"
    while read -r kind path _; do
        [ "$kind" = insmod ] || continue
        case " ${modlist[*]} " in *" $path "*) ;; *) modlist+=("$path") ;; esac
    done <<<"$deps"
done

build_init() {
cat <<'INIT'
#!/bin/busybox sh
# iap-devkit USB lab: stage 1 (initramfs). Mounts the host's / read-only over
# 9p with a tmpfs overlay, the lab work folder read-write at its host path,
# the lab kernel's modules at /lib/modules, then switches root into stage 2.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t devtmpfs devtmpfs /dev 2>/dev/null
exec </dev/console >/dev/console 2>&1
mount -t proc proc /proc
mount -t sysfs sysfs /sys

say() { echo "[iap-lab init] $*"; }
fatal() {
    say "FATAL: $*"
    echo 1 >/proc/sys/kernel/sysrq 2>/dev/null
    poweroff -f
    echo o >/proc/sysrq-trigger
    sleep 60
}

work=""; run=""
for arg in $(cat /proc/cmdline); do
    case "$arg" in
        iaplab.work=*) work=${arg#iaplab.work=} ;;
        iaplab.run=*) run=${arg#iaplab.run=} ;;
    esac
done
[ -n "$work" ] && [ -n "$run" ] || fatal "kernel command line lacks iaplab.work= / iaplab.run="

while read -r m; do
    insmod "/modules/$m" || fatal "insmod $m failed"
done </modules/order

opts=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o "$opts,ro,cache=loose" hostroot /lower || fatal "cannot mount the host root (9p tag hostroot)"
mount -t tmpfs -o mode=0755 tmpfs /rw || fatal "cannot mount tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work overlay /newroot \
    || fatal "cannot mount the overlay root"

mkdir -p "/newroot$work"
mount -t 9p -o "$opts" labwork "/newroot$work" || fatal "cannot mount the work folder (9p tag labwork) at $work"
conf="/newroot$work/$run/guest.conf"
[ -f "$conf" ] || fatal "no $conf"
modules=$(sed -n 's/^modules=//p' "$conf")
[ -d "/newroot$modules" ] || fatal "kernel modules folder $modules not visible in the guest"
mkdir -p /newroot/lib/modules
mount --bind "/newroot$modules" /newroot/lib/modules || fatal "cannot bind $modules to /lib/modules"

# Fresh /run (the host's would make tools think systemd is running) and /dev.
mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs /newroot/run
mkdir -p /newroot/run/iap-lab
cp /bin/busybox /stage2 /newroot/run/iap-lab/
mount --move /dev /newroot/dev
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=000 devpts /newroot/dev/pts
mount -t tmpfs -o nosuid,nodev tmpfs /newroot/dev/shm
hostname iap-lab
exec switch_root -c /dev/console /newroot /run/iap-lab/busybox sh /run/iap-lab/stage2 "$work" "$run"
INIT
}

build_stage2() {
cat <<'STAGE2'
# iap-devkit USB lab: stage 2, PID 1 in the host-userland root. Runs the
# scenario, writes its exit status into the shared run folder, powers off.
BB=/run/iap-lab/busybox
work=$1; run=$2
out="$work/$run"
conf="$out/guest.conf"
get() { $BB sed -n "s/^$1=//p" "$conf"; }
scenario=$(get scenario)
cwd=$(get cwd)
PATH=$(get path)
[ -n "$PATH" ] || PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH HOME=/root TERM=dumb LANG=C.UTF-8 IAP_LAB=1 IAP_LAB_WORK="$work" IAP_LAB_OUT="$out"
# The iapctl the scenarios run, when the host named one (scenario-lib.sh's default otherwise).
iapctl=$(get iapctl)
[ -n "$iapctl" ] && export IAPCTL="$iapctl"

$BB mount -t configfs configfs /sys/kernel/config 2>/dev/null
$BB mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
$BB ip link set lo up 2>/dev/null

set --
while IFS= read -r a; do set -- "$@" "$a"; done <"$out/args"

up() { $BB cut -d' ' -f1 /proc/uptime; }
t0=$(up)
echo "$t0" >"$out/boot-to-scenario-seconds"
echo "[iap-lab] scenario start: $scenario (guest uptime ${t0} s)"
cd "$cwd" 2>/dev/null || cd /
if [ -x "$scenario" ]; then
    "$scenario" "$@" </dev/null
else
    /bin/sh "$scenario" "$@" </dev/null
fi
rc=$?
t1=$(up)
echo "[iap-lab] scenario exit status $rc (guest uptime ${t1} s)"
$BB dmesg >"$out/dmesg.txt" 2>/dev/null
echo "$rc" >"$out/exit-status.tmp" && $BB mv "$out/exit-status.tmp" "$out/exit-status"
$BB sync
$BB poweroff -f
echo o >/proc/sysrq-trigger
$BB sleep 60
STAGE2
}

busybox_version=$("$BUSYBOX" 2>&1 | head -n1 || true)
fingerprint=$( { build_init; build_stage2; printf '%s\n' "$kver" "$busybox_version" "${modlist[@]}"; } | sha256sum | cut -d' ' -f1)
initrd="$CACHE/initramfs-$kver.cpio.gz"
if [ -f "$initrd" ] && [ "$(cat "$initrd.sha256" 2>/dev/null)" = "$fingerprint" ]; then
    say "initramfs up to date: $initrd"
else
    say "building initramfs for $kver (${#modlist[@]} modules)"
    stage=$(mktemp -d "$CACHE/.initramfs.XXXXXX")
    trap 'rm -rf "$stage"' EXIT
    mkdir -p "$stage"/{bin,dev,proc,sys,lower,rw,newroot,modules}
    cp "$BUSYBOX" "$stage/bin/busybox"
    mknod -m 600 "$stage/dev/console" c 5 1
    mknod -m 666 "$stage/dev/null" c 1 3
    build_init >"$stage/init"
    build_stage2 >"$stage/stage2"
    chmod 755 "$stage/init"
    : >"$stage/modules/order"
    for path in "${modlist[@]}"; do
        name=$(basename "$path")
        case "$name" in
            *.ko.xz)  name=${name%.xz};  xz -dc "$path" >"$stage/modules/$name" ;;
            *.ko.zst) name=${name%.zst}; zstd -qdc "$path" >"$stage/modules/$name" ;;
            *.ko.gz)  name=${name%.gz};  gzip -dc "$path" >"$stage/modules/$name" ;;
            *)        cp "$path" "$stage/modules/$name" ;;
        esac
        echo "$name" >>"$stage/modules/order"
    done
    (cd "$stage" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) | gzip -9 >"$initrd.partial"
    mv "$initrd.partial" "$initrd"
    echo "$fingerprint" >"$initrd.sha256"
    rm -rf "$stage"
    trap - EXIT
    say "initramfs: $initrd ($(du -h "$initrd" | cut -f1)), modules: ${modlist[*]##*/}"
fi
for f in "$CACHE"/initramfs-*.cpio.gz; do
    [ "$f" = "$initrd" ] || rm -f "$f" "$f.sha256"
done

cat >"$current_env.partial" <<EOF
IAP_LAB_KERNEL_PKG_NAME=$kpkg
IAP_LAB_KERNEL_PKG_VERSION=$kver_pkg
IAP_LAB_KVER=$kver
IAP_LAB_KERNEL=$vmlinuz
IAP_LAB_INITRD=$initrd
IAP_LAB_MODULES=$modbase/lib/modules
EOF
mv "$current_env.partial" "$current_env"

say "kernel:    $vmlinuz"
say "initramfs: $initrd"
say "modules:   $modbase/lib/modules/$kver"
say "cache:     $CACHE ($(du -sh "$CACHE" | cut -f1))"
say "done in $(elapsed) s"
