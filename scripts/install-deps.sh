#!/usr/bin/env bash
# Installs the Debian packages the project needs when they are missing.
# Safe to run repeatedly; does nothing when everything is present.
#
#   scripts/install-deps.sh             what the build needs
#   scripts/install-deps.sh --browser   also what the screen's browser test
#                                       needs (chromium, its driver, selenium)
set -euo pipefail

# Debian packages the build needs: libusb for the USB host transport,
# libudev for hotplug, libedit for the interactive head-unit shell (the only
# C libraries the package links) and pkg-config to find them.
packages=(libusb-1.0-0-dev libudev-dev libedit-dev pkg-config)
if [ "${1:-}" = "--browser" ]; then
    packages+=(chromium chromium-driver python3-pip)
fi

missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "installing: ${missing[*]}" >&2
    sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || { echo "error: ${missing[*]} must be installed (as root: apt-get install ${missing[*]})" >&2; exit 1; }
        sudo_cmd=(sudo)
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
        || { "${sudo_cmd[@]}" apt-get -y --fix-broken install && "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; }
fi
if ! command -v swift >/dev/null; then
    echo "error: the Swift toolchain (6.0 or later) is not on PATH; install it from swift.org first" >&2
    exit 1
fi
if [ "${1:-}" = "--browser" ] && ! python3 -c "import selenium" 2>/dev/null; then
    echo "installing: selenium (python)" >&2
    python3 -m pip install --quiet selenium 2>/dev/null || python3 -m pip install --quiet --break-system-packages selenium
fi
