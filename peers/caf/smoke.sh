#!/usr/bin/env bash
# smoke.sh: builds every CAF (C++) peer workload and runs a very short run of each
# micro-benchmark, checking the contract's output shape (see peers/lib/micro-smoke.sh), then the
# energy programs: the 4 workloads, native and distributed, against the energy peer contract
# (see peers/lib/energy-smoke.sh).
set -euo pipefail
lib="$(dirname "${BASH_SOURCE[0]}")/../lib"
bash "$lib/micro-smoke.sh" caf
bash "$lib/energy-smoke.sh" caf
# The behaviour contract, checked on short runs (docs/lab.md, "Checking conformance").
bash "$lib/conform.sh" energy caf
bash "$(dirname "${BASH_SOURCE[0]}")/../lib/amqp-smoke.sh" caf energy  # the same run through RabbitMQ and through a file
