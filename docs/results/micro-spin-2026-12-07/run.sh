#!/usr/bin/env bash
# The cell's spin lock (crates/troupe/src/spin.rs): its unlock is a plain store where
# parking_lot's is a compare-and-swap. The before/after rounds are micro-handoff-2026-12-07's
# (two builds in turn, ROUNDS rounds, Troupe only, every benchmark, at 1 worker pinned to one
# CPU and at 2 workers); then the after build against actix, ractor and kameo at 1 and 2
# workers (all-t1/, all-t2/: README's micro table):
#   BEFORE=path/to/troupe AFTER=path/to/troupe ROUNDS=2 bash run.sh OUT
# Each run's run.json has its load and core-to-core round trip.
# Read the medians with: python3 ../micro-slice-2026-12-07/table.py OUT
set -euo pipefail
out=${1:?usage: BEFORE=bin AFTER=bin ROUNDS=2 bash run.sh OUT}
bash "$(dirname "$0")/../micro-handoff-2026-12-07/run.sh" "$out"
for t in 1 2; do
    "${AFTER:?}" lab micro --runtimes troupe,actix,ractor,kameo --reps 5 --threads "$t" --out "$out/all-t$t" \
        > "$out/all-t$t.txt" 2>&1
done
