#!/usr/bin/env bash
# The test entry point named in README.md; .ci/run calls it.
#
# 1. formatting and the Rust test suite (unit, integration, property and doc tests);
# 2. each peer runtime present under peers/: its toolchain is installed by its own script
#    (scripts/install-<runtime>.sh) and its smoke test builds and briefly runs every workload;
# 3. a short cargo-fuzz run of the wire decoders (frame, handshake), when a nightly toolchain is
#    present (cargo-fuzz needs one); the stable fuzz smoke test runs in step 1 regardless.
#
# TROUPE_TEST_PEERS=0 skips step 2 (for a quick local loop); CI runs everything.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check

echo "== cargo test (workspace)"
cargo test --workspace --all-targets --quiet
cargo test --workspace --doc --quiet

echo "== fuzz (frame decoder, handshake)"
if cargo +nightly --version >/dev/null 2>&1; then
    command -v cargo-fuzz >/dev/null 2>&1 || cargo install --quiet --locked cargo-fuzz
    for target in frame_decoder handshake; do
        (cd fuzz && cargo +nightly fuzz run "$target" -- -max_total_time="${TROUPE_FUZZ_SECONDS:-20}" -print_final_stats=1 2>&1 | tail -8)
    done
else
    echo "fuzz step SKIPPED: no nightly toolchain (rustup toolchain install nightly); the stable smoke test ran above"
fi

if [ "${TROUPE_TEST_PEERS:-1}" = "0" ]; then
    echo "== peers skipped (TROUPE_TEST_PEERS=0)"
    exit 0
fi

failed=()
for dir in peers/*/; do
    rt=$(basename "$dir")
    [ -f "peers/$rt/smoke.sh" ] || continue
    echo "== peer $rt: install toolchain"
    if ! bash "scripts/install-$rt.sh"; then
        failed+=("$rt (install)")
        continue
    fi
    echo "== peer $rt: smoke"
    if ! bash "peers/$rt/smoke.sh"; then
        failed+=("$rt (smoke)")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "peer smoke tests failed: ${failed[*]}" >&2
    exit 1
fi
echo "== all peer smoke tests passed"
