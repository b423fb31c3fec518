#!/usr/bin/env bash
# conform.sh WORKLOAD RUNTIME: the peer smoke tests' conformance step. Runs
# `troupe lab conform WORKLOAD --runtimes RUNTIME` (every scenario of the workload, each a few
# seconds) into a temporary folder and fails unless every rule of the workload's behaviour
# contract passes or is n/a (docs/lab.md, "Checking conformance"). The troupe binary is found
# by peers/lib/troupe-bin.sh.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: conform.sh WORKLOAD RUNTIME" >&2; exit 2; }
workload=$1 rt=$2
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
fail() { echo "smoke $rt: conform $workload: FAIL: $*" >&2; exit 1; }
. "$root/peers/lib/troupe-bin.sh"
troupe_bin=$(find_troupe_bin "$root") || fail "no usable troupe binary (reason above)"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
rc=0
TROUPE_HOME=$root "$troupe_bin" lab conform "$workload" --runtimes "$rt" --out "$out/conform" || rc=$?
[ "$rc" = 0 ] || fail "exit $rc (6: a rule FAILs, evidence above; see docs/lab-reference.md)"
echo "smoke $rt: conform $workload: every rule passes or is n/a"
