#!/usr/bin/env bash
# The loom models of the core's cell races (crates/troupe/src/cell.rs, "Loom models"; the
# models are in crates/troupe/src/cell/models.rs) and of the cell's spin lock
# (crates/troupe/src/spin.rs, `models`).
#
# Builds troupe's unit tests with `--cfg troupe_loom` (a cfg of troupe's own: the plain `loom`
# cfg changes tokio and other dependencies), in release, and runs only the models. Each model
# is bounded (LOOM_MAX_PREEMPTIONS, default 5 in the models); the whole suite explores in
# seconds once built, and the run is cut off after LOOM_SH_TIMEOUT seconds (default 300).
# Exits non-zero when a model fails (a loom deadlock is a lost wake-up), when none ran, or when
# the time runs out.
#
# The build goes to its own folder ($CARGO_TARGET_DIR/loom, default target/loom), so switching
# RUSTFLAGS does not rebuild the ordinary target folder. Extra arguments go to the test binary
# (`--exact cell::models::NAME` or `--exact spin::models::NAME` runs one model; `--nocapture`
# shows how many interleavings each explored).
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}/loom"
export RUSTFLAGS="${RUSTFLAGS:-} --cfg troupe_loom"
limit="${LOOM_SH_TIMEOUT:-300}"

# Built first, so the time limit is the models' alone.
if ! cargo test -p troupe --release --lib --no-run; then
    echo "loom.sh: building the models failed" >&2
    exit 1
fi
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
set +e
timeout "$limit" cargo test -p troupe --release --lib -- models:: "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" = 124 ]; then
    echo "loom.sh: the models ran past ${limit}s (LOOM_SH_TIMEOUT)" >&2
    exit 1
fi
if [ "$rc" != 0 ]; then
    echo "loom.sh: a loom model failed (exit $rc)" >&2
    exit "$rc"
fi
if ! grep -Eq 'test result: ok\. [1-9][0-9]* passed' "$log"; then
    echo "loom.sh: no loom model ran" >&2
    exit 1
fi
