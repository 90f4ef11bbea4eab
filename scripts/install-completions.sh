#!/usr/bin/env bash
# Installs iapctl's shell completion for the current user, written by the
# iapctl binary itself (rerun after upgrading it). README, "Shell completion
# and man page".
#   scripts/install-completions.sh              # bash, zsh and fish, those installed here
#   scripts/install-completions.sh zsh          # the shells named
#   IAPCTL=.build/release/iapctl scripts/install-completions.sh
set -euo pipefail
iapctl="${IAPCTL:-$(command -v iapctl || true)}"
if [ -z "$iapctl" ]; then
    echo "install-completions: no iapctl on PATH; install it (install -m 0755 .build/release/iapctl ~/.local/bin/) or set IAPCTL" >&2
    exit 1
fi
shells=("$@")
if [ ${#shells[@]} -eq 0 ]; then
    for shell in bash zsh fish; do
        if command -v "$shell" > /dev/null; then shells+=("$shell"); fi
    done
fi
for shell in "${shells[@]}"; do
    case "$shell" in
        bash) file="${XDG_DATA_HOME:-$HOME/.local/share}/bash-completion/completions/iapctl" ;;
        zsh) file="${ZDOTDIR:-$HOME}/.zfunc/_iapctl" ;;
        fish) file="${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions/iapctl.fish" ;;
        *) echo "install-completions: '$shell' is not bash, zsh or fish" >&2; exit 64 ;;
    esac
    mkdir -p "$(dirname "$file")"
    "$iapctl" --generate-completion-script "$shell" > "$file"
    echo "$shell: $file"
    if [ "$shell" = zsh ]; then
        echo "  zsh reads it when ~/.zfunc is on fpath before compinit: fpath=(~/.zfunc \$fpath); autoload -Uz compinit && compinit"
    fi
done
