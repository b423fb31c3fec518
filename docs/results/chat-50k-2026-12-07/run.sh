#!/usr/bin/env bash
# Chat at 50,000 clients (one chat, kill every 5 s, distributed: discovery, one server process,
# five client processes), two builds in turn, ROUNDS rounds:
#   BEFORE=path/to/troupe AFTER=path/to/troupe ROUNDS=3 bash run.sh OUT
# Keeps each run's summary.json, manifest.json and config.json, and writes phases.txt (per
# fault: when half and all of the clients had detected it and had rejoined, from the kill) from
# its events before deleting the bulky files (events.jsonl is about 57 MB a run).
set -euo pipefail
out=${1:?usage: BEFORE=bin AFTER=bin ROUNDS=3 bash run.sh OUT}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for r in $(seq 1 "${ROUNDS:-3}"); do
    for v in before after; do
        bin=$([ "$v" = before ] && echo "${BEFORE:?}" || echo "${AFTER:?}")
        d="$out/$v-$r"
        rc=0
        "$bin" lab run chat --set chats_per_sup=1 --set clients_per_server=50000 --set msg_type=kill \
            --set test_type=reconnection_time --set test_duration_secs=20 --out "$d" > "$d.txt" 2>&1 || rc=$?
        echo "exit $rc" >> "$d.txt"
        python3 "$here/phases.py" "$d" > "$d/phases.txt"
        find "$d" -type f ! -name summary.json ! -name manifest.json ! -name config.json ! -name phases.txt -delete
    done
done
