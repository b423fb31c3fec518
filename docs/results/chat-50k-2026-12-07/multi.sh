#!/usr/bin/env bash
# Chat at 50,000 clients as in run.sh, for any number of builds or settings in turn:
#   bash multi.sh OUT ROUNDS NAME=path/to/troupe [NAME=...]...
# A setting is a wrapper script, e.g. `MIMALLOC_ALLOW_THP=0 exec path/to/troupe "$@"`.
# Keeps what run.sh keeps; each run is OUT/NAME-ROUND.
set -uo pipefail
out=${1:?usage: bash multi.sh OUT ROUNDS NAME=BIN...}
rounds=${2:?usage: bash multi.sh OUT ROUNDS NAME=BIN...}
shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
    for nb in "$@"; do
        n=${nb%%=*}
        bin=${nb#*=}
        d="$out/$n-$r"
        "$bin" lab run chat --set chats_per_sup=1 --set clients_per_server=50000 --set msg_type=kill \
            --set test_type=reconnection_time --set test_duration_secs=20 --out "$d" > "$d.txt" 2>&1
        echo "exit $?" >> "$d.txt"
        python3 "$here/phases.py" "$d" > "$d/phases.txt"
        find "$d" -type f ! -name summary.json ! -name manifest.json ! -name config.json ! -name phases.txt -delete
    done
done
