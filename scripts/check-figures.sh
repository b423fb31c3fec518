#!/usr/bin/env bash
# check-figures.sh: every results folder the docs name holds its data. Run by scripts/test.sh.
#
# Reads README.md, docs/**/*.md and crates/**/README.md, and finds every results path they name:
#   - any path under docs/results/ or crates/troupe-micro/results/ (a `*` in it is a glob that
#     must match at least one file);
#   - in a file under docs/results/, a folder named relative to it (`name/` in the index's table,
#     `../name/` in a folder's README);
#   - anywhere, a dated folder name in backticks (`micro-2026-11-24-evening`), read as
#     docs/results/<name>.
# Each must exist. A folder under docs/results/ (and crates/troupe-micro/results/, one folder)
# must hold run.json with the keys command, git_commit, machine and load (null where nothing
# recorded the value; scripts/gen-run-json.py writes one from a folder's manifests); a loose data
# file docs/results/NAME.jsonl needs NAME.run.json beside it. Every failure names the doc and the
# line; the script exits 1 after listing them all.
set -euo pipefail
cd "$(dirname "$0")/.."

docs=(README.md)
while IFS= read -r f; do docs+=("$f"); done < <(find docs crates -name '*.md' \( -path 'docs/*' -o -name README.md \) -not -path '*/target/*' | sort)

failures=0
checked=0
fail() { # doc line path why
    echo "check-figures: $1:$2: $3: $4" >&2
    failures=$((failures + 1))
}

has_run_json() { # file: true when it is JSON with the four keys
    local f=$1 k
    [[ -f $f ]] || return 1
    for k in command git_commit machine load; do
        grep -q "\"$k\"[[:space:]]*:" "$f" || return 1
    done
}

check() { # doc line path
    local doc=$1 line=$2 path=$3 m
    path=${path%%[.,:;)]}
    path=${path%%[.,:;)]}
    if [[ $path == *'*'* ]]; then
        local matched=0
        while IFS= read -r m; do
            [[ -n $m ]] || continue
            matched=1
            check "$doc" "$line" "$m"
        done < <(compgen -G "$path" || true)
        [[ $matched == 1 ]] || fail "$doc" "$line" "$path" "matches no file"
        return
    fi
    checked=$((checked + 1))
    case $path in
    crates/troupe-micro/results | crates/troupe-micro/results/*)
        [[ -e $path ]] || { fail "$doc" "$line" "$path" "does not exist"; return; }
        has_run_json crates/troupe-micro/results/run.json ||
            fail "$doc" "$line" "$path" "crates/troupe-micro/results/ holds no run.json with command, git_commit, machine, load"
        ;;
    docs/results | docs/results/ | docs/results/README.md) [[ -e $path ]] || fail "$doc" "$line" "$path" "does not exist" ;;
    docs/results/*)
        local rest=${path#docs/results/}
        local entry=docs/results/${rest%%/*}
        if [[ ! -e $entry ]]; then
            fail "$doc" "$line" "$path" "no such results folder ($entry)"
        elif [[ -d $entry ]]; then
            has_run_json "$entry/run.json" ||
                fail "$doc" "$line" "$path" "$entry/ holds no run.json with command, git_commit, machine, load"
            [[ -e ${path%/} ]] || fail "$doc" "$line" "$path" "does not exist"
        else
            local side=${entry%.*}.run.json
            has_run_json "$side" || fail "$doc" "$line" "$path" "no $side (command, git_commit, machine, load) beside it"
        fi
        ;;
    esac
}

date_name='[a-z0-9]+(-[a-z0-9]+)*-20[0-9]{2}-[0-9]{2}-[0-9]{2}(-[a-z0-9]+)*'
for doc in "${docs[@]}"; do
    while IFS=: read -r line path; do
        check "$doc" "$line" "$path"
    done < <(grep -noE '(docs/results|crates/troupe-micro/results)(/[A-Za-z0-9_.*-]+)*/?' "$doc" || true)
    # a dated folder name in backticks, not part of a longer path
    while IFS=: read -r line name; do
        name=${name//\`/}
        check "$doc" "$line" "docs/results/${name%/}"
    done < <(grep -noE "(^|[^/A-Za-z0-9_.-])\`$date_name/?\`" "$doc" | sed -E 's/:[^`]*`/:`/' || true)
    # relative names inside docs/results/: `name/` (the index) and `../name/` (a folder's README)
    if [[ $doc == docs/results/* ]]; then
        while IFS=: read -r line name; do
            name=${name//\`/}
            name=${name#../}
            [[ $name == */ ]] || continue
            check "$doc" "$line" "docs/results/${name%/}"
        done < <(grep -noE "\`(\.\./)?$date_name/\`" "$doc" || true)
    fi
done

# gen-run-json.py refuses options it does not know and targets that do not exist, writing nothing
# (a `--help` once left a `--help.run.json` at the top of the tree)
for bad in --bogus does/not/exist; do
    if python3 scripts/gen-run-json.py "$bad" >/dev/null 2>&1; then
        fail scripts/gen-run-json.py 0 "$bad" "accepted instead of refused with exit 2"
    fi
done
if ls ./*.run.json >/dev/null 2>&1; then
    fail . 0 "$(ls ./*.run.json 2>/dev/null | head -1)" "a run.json at the top of the tree (a stray gen-run-json.py output)"
fi

if [[ $failures -gt 0 ]]; then
    echo "check-figures: $failures results reference(s) without their data (of $checked checked)" >&2
    exit 1
fi
echo "check-figures: $checked results references in ${#docs[@]} docs, each folder with its run.json"
