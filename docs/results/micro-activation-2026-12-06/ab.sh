#!/bin/bash
# A/B of the activation rewrite (issue 30): the same Savina set, four Rust runtimes, 3 reps,
# at 1 and at 2 workers, the build before the change and the build after it in turn (before
# t1, after t1, before t2, after t2), on an otherwise idle machine.
#
#   BEFORE=path/to/troupe-before AFTER=path/to/troupe-after bash ab.sh OUTDIR
#
# Each binary is `cargo build --release -p troupe-cli` of its commit (before: 36ba148, after:
# 3b5e143). OUTDIR gets before-t1/ after-t1/ before-t2/ after-t2/ (results.jsonl, run.json)
# and each run's printed table as <run>.txt; `python3 table.py OUTDIR` compares them.
set -u
out="${1:?usage: BEFORE=... AFTER=... bash ab.sh OUTDIR}"
mkdir -p "$out"
for t in 1 2; do
    for v in before after; do
        if [ "$v" = before ]; then bin="$BEFORE"; else bin="$AFTER"; fi
        "$bin" lab micro --threads "$t" --runtimes troupe,actix,ractor,kameo --reps 3 \
            --out "$out/$v-t$t" > "$out/$v-t$t.txt" 2>&1
        echo "$v t$t rc=$?"
    done
done
