#!/usr/bin/env bash
# Copies a lab output folder (a `troupe lab reproduce`, `sweep` or `compare` --out) into the
# form committed under docs/results/: every file as it is, except
#   - each run's JSON Lines files (`events.jsonl`, `schedule.jsonl`, `resources.jsonl`,
#     `history.jsonl`, ...), compressed with xz (`*.jsonl.xz`, about 20x smaller; `xz -dk
#     FILE` gives the file back), and its `*.txt` output files over 256 KiB (`stderr.txt.xz`:
#     the Akka SCP peer logs every kill, 2.3 MB a run);
#   - each run's own page, plots and tables (`runs/*/report.html`, `runs/*/*.svg`,
#     `runs/*/*.csv`: chat's per-client tables alone come to 45 MB for one study), which
#     `troupe lab report SWEEP_DIR` re-makes from the raw lines once they are unpacked
#     (`for d in SWEEP_DIR/runs/*/; do (cd "$d" && xz -dk *.xz); done`). Rebuild the sweep,
#     not a lone run: a run rebuilt alone is judged against its ceiling, not the sweep's
#     baseline cell, and its summary changes accordingly;
#   - a run still being written (`events.raw.jsonl`): the script refuses it.
# Usage: bash scripts/pack-results.sh SRC DEST    (DEST must not exist yet)
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: bash scripts/pack-results.sh SRC DEST   (SRC: a lab output folder; DEST: a new folder)" >&2
  exit 2
fi
src=${1%/}
dest=${2%/}
if [ ! -d "$src" ]; then
  echo "pack-results: $src is not a folder" >&2
  exit 2
fi
if [ -e "$dest" ]; then
  echo "pack-results: $dest exists; name a new folder (the script never overwrites)" >&2
  exit 2
fi
if ! command -v xz >/dev/null; then
  echo "pack-results: needs xz (apt-get install xz-utils)" >&2
  exit 3
fi
if [ -n "$(find "$src" -name events.raw.jsonl -print -quit)" ]; then
  echo "pack-results: a run in $src is still being written (events.raw.jsonl); wait for it to end" >&2
  exit 1
fi

copied=0
packed=0
left=0
while IFS= read -r -d '' f; do
  rel=${f#"$src"/}
  name=${rel##*/}
  in_run=no
  # a sweep's runs sit at runs/X/ at its top; a reproduce's at FIG/runs/X/; a comparison's at
  # RUNTIME/X/: any folder below the top that holds a run's manifest.json
  case "$rel" in runs/*/* | */runs/*/*) in_run=yes ;; esac
  if [ "$in_run" = no ] && [ "$(dirname "$f")" != "$src" ] && [ -f "$(dirname "$f")/manifest.json" ]; then
    in_run=yes
  fi
  if [ "$in_run" = yes ] && { [ "$name" = report.html ] || [ "${name%.svg}" != "$name" ] || [ "${name%.csv}" != "$name" ]; }; then
    left=$((left + 1))
    continue
  fi
  mkdir -p "$dest/$(dirname "$rel")"
  case "$in_run:$name" in
    yes:*.jsonl)
      xz -9 -T1 -c "$f" >"$dest/$rel.xz"
      packed=$((packed + 1))
      ;;
    yes:*.txt)
      # a run's stdout/stderr: kept as it is unless over 256 KiB (Akka logs every kill)
      if [ "$(stat -c %s "$f")" -gt 262144 ]; then
        xz -9 -T1 -c "$f" >"$dest/$rel.xz"
        packed=$((packed + 1))
      else
        cp -p "$f" "$dest/$rel"
        copied=$((copied + 1))
      fi
      ;;
    *)
      cp -p "$f" "$dest/$rel"
      copied=$((copied + 1))
      ;;
  esac
done < <(find "$src" -type f -print0 | sort -z)

echo "pack-results: $dest: $copied files copied, $packed raw files compressed (.xz), $left run pages, plots and tables left out; $(du -sh "$dest" | cut -f1) in all"
