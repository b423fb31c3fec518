#!/usr/bin/env bash
# Rule 5's time slice (sched.rs): two builds in turn, ROUNDS rounds, Troupe only, the three
# benchmarks that ran slower on two workers than on one, at 1 and at 2 workers:
#   BEFORE=path/to/troupe AFTER=path/to/troupe ROUNDS=3 bash run.sh OUT
# then every benchmark against actix, ractor and kameo with the after build, at 1 and 2 workers
# (OUT/all-t1, OUT/all-t2). Each run's run.json has its load and core-to-core round trip.
set -euo pipefail
out=${1:?usage: BEFORE=bin AFTER=bin ROUNDS=3 bash run.sh OUT}
mkdir -p "$out"
for r in $(seq 1 "${ROUNDS:-3}"); do
    for v in before after; do
        bin=$([ "$v" = before ] && echo "${BEFORE:?}" || echo "${AFTER:?}")
        for t in 1 2; do
            d="$out/$v-t$t-$r"
            "$bin" lab micro --runtimes troupe --only pingpong,count,threadring --reps 5 --threads "$t" \
                --out "$d" > "$d.txt" 2>&1
        done
    done
done
for t in 1 2; do
    "${AFTER:?}" lab micro --runtimes troupe,actix,ractor,kameo --threads "$t" --reps 5 --out "$out/all-t$t" \
        > "$out/all-t$t.txt" 2>&1
done
