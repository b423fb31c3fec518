#!/usr/bin/env bash
# conform.sh WORKLOAD RUNTIME: the peer smoke tests' conformance step. Runs
# `troupe lab conform WORKLOAD --runtimes RUNTIME` (every scenario of the workload, each a few
# seconds) into a temporary folder and fails unless every rule of the workload's behaviour
# contract passes or is n/a (docs/lab.md, "Checking conformance"). The troupe binary is
# TROUPE_EXE when set, else the workspace's debug build, brought up to date with cargo (a stale
# binary could lack the command), else `troupe` on PATH.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: conform.sh WORKLOAD RUNTIME" >&2; exit 2; }
workload=$1 rt=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "smoke $rt: conform $workload: FAIL: $*" >&2; exit 1; }
troupe_bin=${TROUPE_EXE:-}
if [ -z "$troupe_bin" ] && command -v cargo >/dev/null 2>&1; then
    target_dir=${CARGO_TARGET_DIR:-$root/target}
    [[ $target_dir == /* ]] || target_dir=$root/$target_dir
    (cd "$root" && cargo build --quiet -p troupe-cli --bin troupe) || fail "cargo build -p troupe-cli failed"
    troupe_bin=$target_dir/debug/troupe
fi
[ -n "$troupe_bin" ] || troupe_bin=$(command -v troupe || true)
[ -x "$troupe_bin" ] || fail "no troupe binary (set TROUPE_EXE, or install cargo)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
TROUPE_HOME=$root "$troupe_bin" lab conform "$workload" --runtimes "$rt" --out "$out/conform" || rc=$?
[ "$rc" = 0 ] || fail "exit $rc (6: a rule FAILs, evidence above; see docs/lab-reference.md)"
echo "smoke $rt: conform $workload: every rule passes or is n/a"
