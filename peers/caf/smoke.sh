#!/usr/bin/env bash
# smoke.sh: builds every CAF (C++) peer workload and runs a very short run of each
# micro-benchmark, checking the contract's output shape (see peers/lib/micro-smoke.sh).
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/../lib/micro-smoke.sh" caf
