#!/usr/bin/env bash
# Builds iapctl's man page from its --help texts with swift-argument-parser's
# GenerateManual plugin (offline), then makes it clean mdoc: the plugin
# writes the blank lines between a discussion's paragraphs as they are,
# where mdoc wants a .Pp request (`man --warnings -l` flagged each one as
# "Empty input line"). Then checks that groff finds nothing to warn about,
# and prints the pages' paths. Arguments go to generate-manual; the debug
# configuration is the default here (it reuses the debug build).
#   scripts/man-page.sh && man -l .build/plugins/GenerateManual/outputs/iapctl/iapctl.1
#   scripts/man-page.sh --multi-page --date 2025-01-01
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
arguments=("$@")
case " $* " in
    *" --configuration "*|*" -c "*) ;;
    *) arguments=(--configuration debug "${arguments[@]}") ;;
esac
out=.build/plugins/GenerateManual/outputs/iapctl
rm -f "$out"/*.1
swift package generate-manual "${arguments[@]}" >&2
pages=("$out"/*.1)
sed -i 's/^$/.Pp/' "${pages[@]}"
if command -v groff > /dev/null; then
    for page in "${pages[@]}"; do
        warnings=$(groff -mandoc -ww -z "$page" 2>&1 || true)
        if [ -n "$warnings" ]; then
            echo "error: $page: groff warns:" >&2
            echo "$warnings" >&2
            exit 1
        fi
    done
fi
printf '%s\n' "${pages[@]}"
