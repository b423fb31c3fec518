#!/usr/bin/env bash
# ab-instructions.sh: how many instructions two builds of the `troupe` binary execute on the same
# micro-benchmarks, on one worker, under valgrind's cachegrind. An A/B figure that does not move
# with the VM's state: on a noisy day two runs of one build differ by 2x in time, but not in
# instructions. It is not a timing: cache misses, cross-core hops and waits are not in it, so
# it backs a timed A/B (docs/lab.md, "Reading them on a small VM"), never replaces one.
#
#   bash scripts/ab-instructions.sh BEFORE_BIN AFTER_BIN BENCH[,BENCH...] [ROUNDS]
#
# Each benchmark runs alone per process (`lab micro --runtimes troupe --threads 1 --reps 1
# --only BENCH`: its warm-up, one measured repetition, and the process's start, which is the
# same for both builds), the builds in turn, ROUNDS times (default 1). Prints one line per
# benchmark and build: the instruction counts of each round, then the after/before ratio of the
# first round. Needs valgrind (installed with apt-get when run as root and missing).
set -euo pipefail
before=${1:?usage: ab-instructions.sh BEFORE_BIN AFTER_BIN BENCH[,BENCH...] [ROUNDS]}
after=${2:?usage: ab-instructions.sh BEFORE_BIN AFTER_BIN BENCH[,BENCH...] [ROUNDS]}
benches=${3:?usage: ab-instructions.sh BEFORE_BIN AFTER_BIN BENCH[,BENCH...] [ROUNDS]}
rounds=${4:-1}
for b in "$before" "$after"; do
    [[ -x $b ]] || { echo "ab-instructions: $b is not an executable troupe binary (build one with cargo build --release -p troupe-cli)" >&2; exit 2; }
done
[[ $rounds =~ ^[1-9][0-9]?$ ]] || { echo "ab-instructions: ROUNDS must be 1-99, got '$rounds'" >&2; exit 2; }
if ! command -v valgrind > /dev/null; then
    if [[ $(id -u) == 0 ]] && command -v apt-get > /dev/null; then
        apt-get update -qq > /dev/null && apt-get install -y -qq valgrind > /dev/null
    else
        echo "ab-instructions: valgrind not found: install it (apt-get install valgrind) and run again" >&2
        exit 2
    fi
fi

count() { # bin bench: the instruction count of one run, or exit naming what failed
    local out n
    out=$(valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
        "$1" lab micro --runtimes troupe --threads 1 --reps 1 --only "$2" 2>&1) || {
        echo "ab-instructions: $1 failed on $2:" >&2
        tail -20 <<< "$out" >&2
        exit 1
    }
    n=$(sed -n 's/.*I *refs: *\([0-9,]*\).*/\1/p' <<< "$out" | tr -d ,)
    [[ -n $n ]] || { echo "ab-instructions: no instruction count in cachegrind's output for $2" >&2; exit 1; }
    echo "$n"
}

IFS=, read -ra list <<< "$benches"
printf '%-12s %-7s %s\n' bench build "instructions (per round)"
for bench in "${list[@]}"; do
    b=() a=()
    for _ in $(seq 1 "$rounds"); do
        b+=("$(count "$before" "$bench")")
        a+=("$(count "$after" "$bench")")
    done
    printf '%-12s %-7s %s\n' "$bench" before "${b[*]}"
    printf '%-12s %-7s %s   after/before %s\n' "$bench" after "${a[*]}" \
        "$(awk -v x="${a[0]}" -v y="${b[0]}" 'BEGIN { printf "%.3f", x / y }')"
done
