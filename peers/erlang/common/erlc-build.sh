#!/usr/bin/env bash
# erlc-build.sh: the one build routine behind every peers/erlang/<workload>/build.
#
# Compiles <workload>/src/*.erl plus the shared modules in peers/erlang/common
# (not the *_tests.erl ones) into <workload>/_build/ebin with erlc, warnings as
# errors. Cached: a stamp file records the source list; when no source (or this
# script) is newer than the stamp and the list is unchanged, it exits at once.
# A missing toolchain exits 3 with the install command, per the peer contract.
set -euo pipefail

dir=$(cd "${1:?usage: erlc-build.sh <workload dir>}" && pwd)
common=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if ! command -v erlc >/dev/null 2>&1 || ! command -v erl >/dev/null 2>&1; then
    echo "missing toolchain: erlang (erlc, erl); install it with: bash scripts/install-erlang.sh" >&2
    exit 3
fi

out=$dir/_build/ebin
stamp=$out/.stamp
mapfile -t srcs < <(ls "$dir"/src/*.erl "$common"/*.erl | grep -v '_tests\.erl$' | sort)
list=$(printf '%s\n' "${srcs[@]}")

if [[ -f $stamp ]] && [[ "$(cat "$stamp")" == "$list" ]] &&
   [[ -z $(find "${srcs[@]}" "${BASH_SOURCE[0]}" -newer "$stamp" -print -quit) ]]; then
    echo "$(basename "$dir"): up to date" >&2
    exit 0
fi

rm -rf "$out"
mkdir -p "$out"
nice erlc -Wall +warnings_as_errors -o "$out" "${srcs[@]}"
printf '%s\n' "$list" > "$stamp"
echo "$(basename "$dir"): built ${#srcs[@]} modules into ${out#"$PWD"/}" >&2
