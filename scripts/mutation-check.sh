#!/usr/bin/env bash
# Mutation check: applies each mutation of scripts/mutations.txt alone to a
# scratch copy of the working tree, builds, and runs the tests and the
# conformance suite. A mutation is "caught" when either fails (or hangs past
# the timeout); it "survives" when everything passes. Docs/Testing.md says
# how to read the results and lists the known survivors.
#
#   scripts/mutation-check.sh                  # every mutation
#   scripts/mutation-check.sh --list           # names, files and notes
#   scripts/mutation-check.sh --check          # only verify every snippet applies (no build)
#   scripts/mutation-check.sh --only link-window-off-by-one,wire-checksum-not-negated
#   scripts/mutation-check.sh --keep           # keep the scratch copy (the next run rebuilds incrementally)
#
# Needs bash, coreutils, git and swift. Runs one build at a time.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
list_file="$root/scripts/mutations.txt"
doc_file="$root/Docs/Testing.md"
scratch="${IAP_MUTATION_DIR:-$root/.build-mutation}"
threshold=95
only=""
keep=false
mode=run
seeds="1 2 3"
build_timeout=900
test_timeout=""   # default: from the baseline run (see below)
conformance_timeout=60
full_suite=false

usage() {
    cat <<'EOF'
usage: scripts/mutation-check.sh [options]

  --list               print the mutations (name, file, note) and exit
  --check              verify that every mutation's original snippet occurs
                       exactly once in its file, without building; exit 2 if not
  --only A[,B...]      run only these mutations (names as in --list)
  --keep               keep the scratch copy and its build directory afterwards
                       (the next run then only rebuilds what changed)
  --threshold N        exit non-zero when the score is below N percent (default 95)
  --seeds "1 2 3"      conformance seeds (default "1 2 3")
  --full-suite         run every test target for every mutation (default: only
                       the targets that depend on the mutated module)
  --timeout-build S    per-mutation build timeout in seconds (default 900)
  --timeout-test S     per-mutation `swift test` timeout (default: four times the
                       unmutated run plus 30 s, at least 60 s)
  --mutations FILE     read mutations from FILE (default scripts/mutations.txt)
  -h, --help           this text

Environment: IAP_MUTATION_DIR sets the scratch directory (default
.build-mutation in the repository, which git ignores).
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
        --list) mode=list ;;
        --check) mode=check ;;
        --only) only="${2:?--only needs a name list}"; shift ;;
        --only=*) only="${1#--only=}" ;;
        --keep) keep=true ;;
        --threshold) threshold="${2:?--threshold needs a number}"; shift ;;
        --threshold=*) threshold="${1#--threshold=}" ;;
        --seeds) seeds="${2:?--seeds needs a list}"; shift ;;
        --full-suite) full_suite=true ;;
        --timeout-build) build_timeout="${2:?}"; shift ;;
        --timeout-test) test_timeout="${2:?}"; shift ;;
        --mutations) list_file="${2:?}"; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "mutation-check: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$threshold" in ''|*[!0-9]*) echo "mutation-check: --threshold must be a whole number" >&2; exit 2 ;; esac

# ---------------------------------------------------------------------------
# The mutation list. Format (scripts/mutations.txt):
#
#   @@@ mutation NAME PATH
#   @@@ note one line saying what the mistake is (optional, repeatable)
#   @@@ original
#   ...exact lines of PATH, indentation included...
#   @@@ replacement
#   ...the lines that replace them (may be empty: the lines are deleted)...
#   @@@ end
#
# Lines outside blocks that start with '#' and blank lines are ignored.

names=() files=() notes=() originals=() replacements=()

die_list() { echo "mutation-check: $list_file:$1: $2" >&2; exit 2; }

parse_list() {
    [ -f "$list_file" ] || { echo "mutation-check: no mutation list at $list_file" >&2; exit 2; }
    local state=outside line number=0 name="" file="" note="" original="" replacement=""
    local nl=$'\n'
    while IFS= read -r line || [ -n "$line" ]; do
        number=$((number + 1))
        case "$state" in
            outside)
                case "$line" in
                    ''|'#'*) ;;
                    '@@@ mutation '*)
                        read -r _ _ name file _rest <<<"$line"
                        [ -n "$name" ] && [ -n "$file" ] || die_list "$number" "'@@@ mutation' needs a name and a path"
                        [ -z "${_rest:-}" ] || die_list "$number" "'@@@ mutation NAME PATH' takes nothing more"
                        case "$name" in *[!A-Za-z0-9._-]*) die_list "$number" "name '$name' may use only letters, digits, '.', '_' and '-'" ;; esac
                        local existing
                        for existing in "${names[@]+"${names[@]}"}"; do
                            [ "$existing" != "$name" ] || die_list "$number" "mutation '$name' is defined twice"
                        done
                        note="" original="" replacement=""
                        state=header ;;
                    *) die_list "$number" "expected '@@@ mutation NAME PATH', a comment or a blank line" ;;
                esac ;;
            header)
                case "$line" in
                    '@@@ note '*) note="${note:+$note }${line#@@@ note }" ;;
                    '@@@ original') state=original; original="" ;;
                    *) die_list "$number" "expected '@@@ note' or '@@@ original' in mutation '$name'" ;;
                esac ;;
            original)
                if [ "$line" = '@@@ replacement' ]; then
                    state=replacement; replacement=""
                    [ -n "$original" ] || die_list "$number" "mutation '$name' has an empty original"
                    original="${original%$nl}"
                else
                    original+="$line$nl"
                fi ;;
            replacement)
                if [ "$line" = '@@@ end' ]; then
                    replacement="${replacement%$nl}"
                    names+=("$name"); files+=("$file"); notes+=("$note")
                    originals+=("$original"); replacements+=("$replacement")
                    state=outside
                else
                    replacement+="$line$nl"
                fi ;;
        esac
    done < "$list_file"
    [ "$state" = outside ] || die_list "$number" "mutation '$name' is not closed with '@@@ end'"
}

parse_list

# --only: keep the named mutations, refusing unknown names.
selected=()
if [ -n "$only" ]; then
    IFS=',' read -r -a wanted <<<"$only"
    for want in "${wanted[@]}"; do
        found=""
        for i in "${!names[@]}"; do [ "${names[$i]}" = "$want" ] && found=$i; done
        [ -n "$found" ] || { echo "mutation-check: no mutation named '$want' (see --list)" >&2; exit 2; }
        selected+=("$found")
    done
else
    selected=("${!names[@]}")
fi

if [ "$mode" = list ]; then
    for i in "${selected[@]}"; do
        printf '%-44s %s\n' "${names[$i]}" "${files[$i]}"
        [ -z "${notes[$i]}" ] || printf '    %s\n' "${notes[$i]}"
    done
    echo "${#selected[@]} mutations"
    exit 0
fi

# ---------------------------------------------------------------------------
# Applying a mutation: the original must occur exactly once.

# Reads a file exactly (trailing newlines included) into $content.
read_exact() { content="$(cat -- "$1"; printf x)"; content="${content%x}"; }

# Occurrences of $2 in $1 (a literal match).
count_occurrences() {
    local rest="$1" needle="$2" n=0
    while [[ "$rest" == *"$needle"* ]]; do
        rest="${rest#*"$needle"}"
        n=$((n + 1))
        [ "$n" -gt 1 ] && break
    done
    echo "$n"
}

# check_applies INDEX BASE: prints a problem and returns 1 when the snippet
# is not found exactly once in BASE/file.
check_applies() {
    local i="$1" base="$2" path="$2/${files[$1]}"
    if [ ! -f "$path" ]; then
        echo "STALE ${names[$i]}: ${files[$i]} does not exist" >&2
        return 1
    fi
    read_exact "$path"
    local n
    n=$(count_occurrences "$content" "${originals[$i]}")
    if [ "$n" -eq 0 ]; then
        echo "STALE ${names[$i]}: its original snippet is not in ${files[$i]} (refresh it in ${list_file#$root/})" >&2
        return 1
    elif [ "$n" -gt 1 ]; then
        echo "STALE ${names[$i]}: its original snippet occurs more than once in ${files[$i]} (make it longer)" >&2
        return 1
    fi
    return 0
}

stale=0
for i in "${selected[@]}"; do
    check_applies "$i" "$root" || stale=$((stale + 1))
done
if [ "$stale" -gt 0 ]; then
    echo "mutation-check: $stale mutation(s) no longer apply to the working tree; nothing was run" >&2
    exit 2
fi
if [ "$mode" = check ]; then
    echo "all ${#selected[@]} mutations apply to the working tree"
    exit 0
fi

# ---------------------------------------------------------------------------
# The scratch copy: tracked and untracked-but-not-ignored files, copied only
# when they differ, so its .build stays valid and rebuilds are incremental.

tree="$scratch/tree"
mkdir -p "$tree" || exit 2
manifest="$scratch/manifest"
new_manifest="$scratch/manifest.new"
paths=()
while IFS= read -r -d '' path; do
    [ -f "$root/$path" ] && paths+=("$path")     # a deleted file may still be tracked
done < <(cd "$root" && git ls-files -co --exclude-standard -z)
printf '%s\n' "${paths[@]}" | sort > "$new_manifest"
# Copy what differs (cksum is in coreutils; cmp is not).
mapfile -t sums_root < <(cd "$root" && cksum -- "${paths[@]}")
# One cksum run over the files the copy has; "missing" for the others.
present=()
for p in "${paths[@]}"; do [ -f "$tree/$p" ] && present+=("$p"); done
sums_tree=()
declare -A sum_of=()
if [ "${#present[@]}" -gt 0 ]; then
    while IFS= read -r line; do
        read -r _crc _size p <<<"$line"
        sum_of["$p"]="$line"
    done < <(cd "$tree" && cksum -- "${present[@]}")
fi
for p in "${paths[@]}"; do sums_tree+=("${sum_of[$p]:-missing}"); done
for k in "${!paths[@]}"; do
    if [ "${sums_root[$k]}" != "${sums_tree[$k]}" ]; then
        mkdir -p -- "$tree/$(dirname -- "${paths[$k]}")"
        cp -p -- "$root/${paths[$k]}" "$tree/${paths[$k]}"
    fi
done
if [ -f "$manifest" ]; then
    # Files the previous run copied that are gone from the working tree.
    comm -23 "$manifest" "$new_manifest" | while IFS= read -r path; do rm -f -- "$tree/$path"; done
fi
mv "$new_manifest" "$manifest"

cleanup() {
    if [ -n "${restore_path:-}" ]; then
        printf '%s' "$restore_content" > "$restore_path"
        restore_path=""
    fi
    if [ "$keep" = false ]; then rm -rf -- "$scratch"; fi
}
trap cleanup EXIT
trap 'echo; echo "mutation-check: interrupted" >&2; exit 130' INT TERM

log_dir="$scratch/logs"
mkdir -p "$log_dir"

# Test targets to run for a mutated module: those that depend on it, directly
# or through another module (Package.swift). A module missing here runs the
# whole suite, which is always sound.
test_filter_for() {
    case "$1" in
        IAPTrace) echo 'IAPTraceTests' ;;
        IAPHotplug) echo 'IAPHotplugTests' ;;
        IAPConformance) echo 'IAPLinkTests' ;;
        IAPEndpoint) echo 'IAPEndpointTests|IAPKitTests|IAPScreenTests|IAPLinkTests' ;;
        IAPScreen) echo 'IAPScreenTests|IAPCtlTests' ;;   # iapctl serves the screen; its CLI tests run it
        IAPLegacy) echo 'IAPLegacyTests|IAPEndpointTests|IAPKitTests|IAPScreenTests|IAPLinkTests' ;;
        IAPUSB) echo 'IAPUSBTests' ;;
        IAPAuthentication) echo 'IAPAuthenticationTests|IAPLinkTests' ;;
        IAPSession) echo 'IAPSessionTests|IAPAuthenticationTests|IAPEndpointTests|IAPLinkTests|IAPLegacyTests|IAPKitTests|IAPScreenTests' ;;
        IAPRoles) echo 'IAPRolesTests|IAPSessionTests|IAPAuthenticationTests|IAPEndpointTests|IAPLinkTests|IAPLegacyTests|IAPKitTests|IAPScreenTests' ;;
        IAPTransport) echo 'IAPTransportTests|IAPLinkTests|IAPEndpointTests|IAPUSBTests|IAPHotplugTests|IAPKitTests|IAPScreenTests' ;;
        *) echo '' ;;   # IAPWire, IAPLink and anything else: every target
    esac
}

# Runs `swift test` (extra arguments: filters) appending to LOG. Stops it as
# soon as a test records an issue (a hung test after a failure must not cost
# the whole timeout) and returns 1 then; 124 when it ran past the timeout.
run_part() {
    local log="$1"; shift
    local size_before
    size_before=$(wc -c < "$log")
    timeout --kill-after=20 "${test_timeout:-900}" swift test --package-path "$tree" --skip-build "$@" >> "$log" 2>&1 &
    local pid=$! text
    while kill -0 "$pid" 2>/dev/null; do
        sleep 1
        text="$(tail -c +"$((size_before + 1))" -- "$log")"
        case "$text" in
            *"✘ Test "*|*"✘ Suite "*|*"error: Exited with"*|*"Fatal error"*)
                # timeout leads its own process group: end it with its children.
                kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
                sleep 2
                kill -KILL -- "-$pid" 2>/dev/null
                wait "$pid" 2>/dev/null
                echo "mutation-check: stopped swift test at its first recorded issue" >> "$log"
                return 1 ;;
        esac
    done
    wait "$pid"
}

# Programs a test started from the scratch build (`iapctl phone` and the
# like) run in their own process groups, so ending `swift test` at a
# timeout or a first failure can leave them running, its cleanup never
# reached. Ends whatever still runs from the scratch tree's build.
end_leftovers() {
    pkill -TERM -f "$tree/.build/" 2>/dev/null || return 0
    sleep 1
    pkill -KILL -f "$tree/.build/" 2>/dev/null || true
}

# The real-time suites (loopback and TCP in real time, the library's async
# API) run after the rest and on their own, as scripts/test runs them: beside
# the CPU-heavy suites on two cores, the phone's app tasks can wait past
# their 5 s answer deadline, and a test fails that no mutation broke.
realtime_targets=(IAPEndpointTests IAPKitTests)

# Runs the test targets FILTER names (a regex of target names; empty: all)
# into LOG in those two parts; returns as run_part does, at the first part
# that fails.
run_tests() {
    local log="$1" filter="${2:-}" name status
    local realtime=() rest=()
    if [ -z "$filter" ]; then
        realtime=("${realtime_targets[@]}")
    else
        IFS='|' read -r -a rest <<< "$filter"
        local kept=()
        for name in "${rest[@]}"; do
            if [[ " ${realtime_targets[*]} " == *" $name "* ]]; then realtime+=("$name"); else kept+=("$name"); fi
        done
        rest=("${kept[@]+"${kept[@]}"}")
    fi
    local skip
    skip=$(IFS='|'; echo "${realtime_targets[*]}")
    if [ -z "$filter" ]; then
        run_part "$log" --skip "^($skip)\\."
    elif [ "${#rest[@]}" -gt 0 ]; then
        run_part "$log" --filter "^($(IFS='|'; echo "${rest[*]}"))\\."
    fi
    status=$?
    [ "$status" -eq 0 ] || return "$status"
    [ "${#realtime[@]}" -gt 0 ] || return 0
    run_part "$log" --filter "^($(IFS='|'; echo "${realtime[*]}"))\\."
}

swift_build() { timeout --kill-after=20 "$build_timeout" swift build --package-path "$tree" --build-tests; }

echo "mutation-check: scratch copy in $tree"
echo "mutation-check: baseline build (unmutated)..."
start_all=$(date +%s)
if ! swift_build > "$log_dir/baseline-build.log" 2>&1; then
    echo "mutation-check: the unmutated tree does not build; see $log_dir/baseline-build.log" >&2
    exit 2
fi
echo "mutation-check: baseline tests and conformance (unmutated)..."
t0=$(date +%s)
: > "$log_dir/baseline-test.log"
if ! run_tests "$log_dir/baseline-test.log"; then
    # Real-time tests (loopback, TCP) can miss a deadline on a loaded machine:
    # one more try before giving up, and a warning, since such a test can
    # then also fail under a mutation that it does not really catch.
    mv "$log_dir/baseline-test.log" "$log_dir/baseline-test-1.log"
    echo "mutation-check: warning: the unmutated tests failed once (flaky under load?); see $log_dir/baseline-test-1.log; trying again" >&2
    # Name what failed here too: the log goes with the scratch logs unless --keep.
    grep -E "✘ Test .*(recorded an issue|failed)|Fatal error|exited with unexpected signal" "$log_dir/baseline-test-1.log" | head -n 10 | sed 's/^/mutation-check:   /' >&2 || true
    t0=$(date +%s)
    : > "$log_dir/baseline-test.log"
    if ! run_tests "$log_dir/baseline-test.log"; then
        echo "mutation-check: the unmutated tree fails its tests; see $log_dir/baseline-test.log" >&2
        exit 2
    fi
fi
if [ -z "$test_timeout" ]; then
    test_timeout=$(( 4 * ($(date +%s) - t0) + 30 ))
    [ "$test_timeout" -ge 60 ] || test_timeout=60
fi
for seed in $seeds; do
    if ! timeout --kill-after=5 "$conformance_timeout" "$tree/.build/debug/iapctl" conformance --seed "$seed" > "$log_dir/baseline-conformance-$seed.log" 2>&1; then
        echo "mutation-check: the unmutated tree fails conformance with seed $seed; see $log_dir/baseline-conformance-$seed.log" >&2
        exit 2
    fi
done
echo "mutation-check: baseline done in $(( $(date +%s) - start_all )) s; ${#selected[@]} mutations, test timeout ${test_timeout} s"
echo

caught=0 survived=0 build_failed=0 timed_out=0
survivor_list=() build_failed_list=() timeout_list=()
total=${#selected[@]}
position=0

for i in "${selected[@]}"; do
    position=$((position + 1))
    name="${names[$i]}" file="${files[$i]}"
    path="$tree/$file"
    log="$log_dir/$name.log"
    t0=$(date +%s)

    check_applies "$i" "$tree" || { echo "mutation-check: the scratch copy diverged from the working tree" >&2; exit 2; }
    read_exact "$path"
    restore_content="$content"
    restore_path="$path"
    prefix="${content%%"${originals[$i]}"*}"
    suffix="${content#*"${originals[$i]}"}"
    printf '%s' "$prefix${replacements[$i]}$suffix" > "$path"

    result="" detail=""
    swift_build > "$log" 2>&1
    status=$?
    if [ "$status" -ne 0 ]; then
        if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then result="build timed out"; else result="build failed"; fi
    else
        module="${file#Sources/}"; module="${module%%/*}"
        filter=""
        [ "$full_suite" = true ] || [[ "$file" != Sources/* ]] || filter="$(test_filter_for "$module")"
        run_tests "$log" "$filter"
        status=$?
        if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
            result="caught (timeout)"; detail="swift test ran past ${test_timeout} s"
        elif [ "$status" -ne 0 ]; then
            result="caught"; detail="swift test${filter:+ ($filter)}"
        else
            for seed in $seeds; do
                timeout --kill-after=5 "$conformance_timeout" "$tree/.build/debug/iapctl" conformance --seed "$seed" >> "$log" 2>&1
                status=$?
                if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
                    result="caught (timeout)"; detail="conformance --seed $seed ran past ${conformance_timeout} s"; break
                elif [ "$status" -ne 0 ]; then
                    result="caught"; detail="conformance --seed $seed"; break
                fi
            done
            [ -n "$result" ] || result="SURVIVED"
        fi
    fi

    end_leftovers
    printf '%s' "$restore_content" > "$path"
    restore_path=""

    seconds=$(( $(date +%s) - t0 ))
    case "$result" in
        caught) caught=$((caught + 1)) ;;
        "caught (timeout)") caught=$((caught + 1)); timed_out=$((timed_out + 1)); timeout_list+=("$name") ;;
        SURVIVED) survived=$((survived + 1)); survivor_list+=("$i") ;;
        *) build_failed=$((build_failed + 1)); build_failed_list+=("$name") ;;
    esac
    printf '[%2d/%d] %-44s %-18s %4ss  %s\n' "$position" "$total" "$name" "$result" "$seconds" "$detail"
done

applicable=$((caught + survived))
if [ "$applicable" -gt 0 ]; then score=$((caught * 100 / applicable)); else score=0; fi
echo
echo "mutation-check: $caught caught of $applicable applicable ($score %)," \
     "$survived survived, $timed_out caught by timeout, $build_failed did not build," \
     "$(( $(date +%s) - start_all )) s in all"
if [ "${#build_failed_list[@]}" -gt 0 ]; then
    echo "did not build (not counted; fix the mutation so it compiles): ${build_failed_list[*]}"
fi
if [ "${#timeout_list[@]}" -gt 0 ]; then
    echo "caught by timeout: ${timeout_list[*]}"
fi
if [ "${#survivor_list[@]}" -gt 0 ]; then
    echo "survivors:"
    for i in "${survivor_list[@]}"; do
        echo "  ${names[$i]}  (${files[$i]})"
        [ -z "${notes[$i]}" ] || echo "      mutation: ${notes[$i]}"
        explained=""
        if [ -f "$doc_file" ]; then
            # The first line naming it under the "## Survivors" heading.
            in_survivors=false
            while IFS= read -r line; do
                case "$line" in
                    '## Survivors'*) in_survivors=true ;;
                    '## '*) in_survivors=false ;;
                    *"\`${names[$i]}\`"*) [ "$in_survivors" = false ] || { explained="$line"; break; } ;;
                esac
            done < "$doc_file"
        fi
        if [ -n "$explained" ]; then
            echo "      Docs/Testing.md: ${explained#- }"
        else
            echo "      not explained in Docs/Testing.md (Survivors)"
        fi
    done
fi
echo "logs: $log_dir$( [ "$keep" = true ] || echo ' (removed; run with --keep to keep them)')"
if [ "$score" -lt "$threshold" ]; then
    echo "mutation-check: score $score % is below the threshold of $threshold %" >&2
    exit 1
fi
exit 0
