#!/usr/bin/env bash
# Rule 9's batches (sched.rs): two builds in turn, ROUNDS rounds, Troupe only, every benchmark,
# at 1 worker, at 1 worker with the process pinned to one CPU (`taskset -c 1`: no other core to
# be disturbed by, and no core-to-core round trip to time), and at 2 workers:
#   BEFORE=path/to/troupe AFTER=path/to/troupe ROUNDS=2 bash run.sh OUT
# then every benchmark against actix, ractor and kameo with the after build, at 1 and 2 workers
# (OUT/all-t1, OUT/all-t2). Each run's run.json has its load and core-to-core round trip.
# Read the medians with: python3 ../micro-slice-2026-12-07/table.py OUT
set -euo pipefail
out=${1:?usage: BEFORE=bin AFTER=bin ROUNDS=2 bash run.sh OUT}
mkdir -p "$out"
for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in before after; do
        bin=$([ "$v" = before ] && echo "${BEFORE:?}" || echo "${AFTER:?}")
        for mode in t1 t1cpu1 t2; do
            d="$out/$v-$mode-$r"
            case $mode in
                t1) "$bin" lab micro --runtimes troupe --reps 5 --threads 1 --out "$d" > "$d.txt" 2>&1 ;;
                t1cpu1) taskset -c 1 "$bin" lab micro --runtimes troupe --reps 5 --threads 1 --out "$d" > "$d.txt" 2>&1 ;;
                t2) "$bin" lab micro --runtimes troupe --reps 5 --threads 2 --out "$d" > "$d.txt" 2>&1 ;;
            esac
        done
    done
done
for t in 1 2; do
    "${AFTER:?}" lab micro --runtimes troupe,actix,ractor,kameo --threads "$t" --reps 5 --out "$out/all-t$t" \
        > "$out/all-t$t.txt" 2>&1
done
