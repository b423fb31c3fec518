#!/bin/bash
# Troupe alone, the build before and the build after in turn, ROUNDS times, on one worker: the
# paired figure behind each change of issue 30 (session of 2026-12-07), less exposed to the
# VM's slow spells than a long four-runtime run.
#
#   BEFORE=path/to/troupe-before AFTER=path/to/troupe-after ROUNDS=2 bash pairs.sh OUTDIR
#
# OUTDIR gets <round>-<before|after>/ (results.jsonl, run.json) and <round>-<before|after>.txt.
set -u
out="${1:?usage: BEFORE=... AFTER=... [ROUNDS=2] bash pairs.sh OUTDIR}"
only="${ONLY:-pingpong,count,fjcreate,threadring,chameneos,big,skynet}"
mkdir -p "$out"
for r in $(seq 1 "${ROUNDS:-2}"); do
    for v in before after; do
        if [ "$v" = before ]; then bin="$BEFORE"; else bin="$AFTER"; fi
        "$bin" lab micro --threads 1 --runtimes troupe --only "$only" --reps 5 \
            --out "$out/$r-$v" > "$out/$r-$v.txt" 2>&1
        echo "round $r $v rc=$?"
    done
done
