#!/usr/bin/env bash
# Rule 3's stack (crates/troupe/src/sched.rs): an activation displaced from the run-next slot
# runs later in the same carrier, newest first, instead of in a carrier of its own. The same
# procedure as micro-spin-2026-12-07: two builds in turn, ROUNDS rounds, Troupe only, every
# benchmark, at 1 worker pinned to one CPU and at 2 workers; then the after build against
# actix, ractor and kameo at 1 and 2 workers (all-t1/, all-t2/: README's micro table):
#   BEFORE=path/to/troupe AFTER=path/to/troupe ROUNDS=2 bash run.sh OUT
# Each run's run.json has its load and core-to-core round trip.
# Read the medians with: python3 ../micro-slice-2026-12-07/table.py OUT
set -euo pipefail
exec bash "$(dirname "$0")/../micro-spin-2026-12-07/run.sh" "$@"
