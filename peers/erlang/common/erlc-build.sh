#!/usr/bin/env bash
# erlc-build.sh: the one build routine behind every peers/erlang/<workload>/build.
#
# Compiles <workload>/src/*.erl plus the shared modules in peers/erlang/common
# and common/amqp (not the *_tests.erl ones) into <workload>/_build/ebin with erlc, warnings as
# errors. Cached: a stamp file records the source list; when no source (or this
# script) is newer than the stamp and the list is unchanged, it exits at once.
# A missing toolchain exits 3 with the install command, per the peer contract.
# Concurrent callers (parallel tests, a lab run beside them) are serialised by
# an flock on <workload>/_build/.lock, and a build goes to a fresh directory
# that replaces ebin only when complete, so no caller sees a half-built ebin.
set -euo pipefail

dir=$(cd "${1:?usage: erlc-build.sh <workload dir>}" && pwd)
common=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v erlc >/dev/null 2>&1 || ! command -v erl >/dev/null 2>&1; then
    echo "missing toolchain: erlang (erlc, erl); install it with: bash scripts/install-erlang.sh" >&2
    exit 3
fi

out=$dir/_build/ebin
stamp=$out/.stamp
mkdir -p "$dir/_build"
exec 9>"$dir/_build/.lock"
if command -v flock >/dev/null 2>&1; then
    flock -w 300 9 || { echo "erlc-build: waited 300 s for $dir/_build/.lock; is another build stuck?" >&2; exit 1; }
fi
mapfile -t srcs < <(ls "$dir"/src/*.erl "$common"/*.erl "$common"/amqp/*.erl | grep -v '_tests\.erl$' | sort)
list=$(printf '%s\n' "${srcs[@]}")

if [[ -f $stamp ]] && [[ "$(cat "$stamp")" == "$list" ]] &&
   [[ -z $(find "${srcs[@]}" "${BASH_SOURCE[0]}" -newer "$stamp" -print -quit) ]]; then
    echo "$(basename "$dir"): up to date" >&2
    exit 0
fi

fresh=$(mktemp -d "$dir/_build/ebin.XXXXXX")
trap 'rm -rf "$fresh"' EXIT
nice erlc -Wall +warnings_as_errors -o "$fresh" "${srcs[@]}"
printf '%s\n' "$list" > "$fresh/.stamp"
rm -rf "$out"
mv "$fresh" "$out"
echo "$(basename "$dir"): built ${#srcs[@]} modules into ${out#"$PWD"/}" >&2
