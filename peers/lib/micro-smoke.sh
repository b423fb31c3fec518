#!/usr/bin/env bash
# peers/lib/micro-smoke.sh RUNTIME: builds peers/RUNTIME/micro and runs a very short run of each
# micro-benchmark, checking the output shape of the peer-program contract: every stdout line is
# one JSON result with bench, runtime, metric, a positive value, unit and params, and each bench reports the
# metrics it must. A bad argument must be refused. Exits non-zero on the first failure.
# Shared by the peers' smoke.sh scripts.
set -euo pipefail
rt="${1:?usage: micro-smoke.sh RUNTIME}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/../$rt" && pwd)"
"$here/micro/build"

# bench and its short parameters
cases=(
  "pingpong n=2000"
  "count n=20000"
  "fjthrput n=200 actors=8"
  "fjcreate n=2000"
  "threadring actors=20 n=2000"
  "chameneos chameneos=10 n=2000"
  "big n=200 actors=10"
  "fib n=15"
  "skynet depth=4 width=10"
  "memory n=20000"
)

# A value must be a positive number: every metric of the contract (a time, a rate, bytes per
# actor at n=20000) is above zero, so 0 or a negative value is a broken measurement.
pos='([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)([eE][-+]?[0-9]+)?'
line_re='^\{"bench":"[a-z]+","runtime":"'"$rt"'","metric":"[a-z_]+","value":'"$pos"',"unit":"[^"]+","params":\{("[a-z_]+":[0-9]+)(,"[a-z_]+":[0-9]+)*\}\}$'

fail() { echo "smoke $rt: FAIL: $*" >&2; exit 1; }
errdir="$(mktemp -d)"
trap 'rm -rf "$errdir"' EXIT

for c in "${cases[@]}"; do
  read -r -a words <<<"$c"
  bench="${words[0]}"
  extra=(reps=1)
  [ "$bench" = memory ] && extra=()
  if ! out="$("$here/micro/run" "${words[@]}" "${extra[@]}" 2>"$errdir/$bench.err")"; then
    cat "$errdir/$bench.err" >&2
    fail "$bench exited non-zero"
  fi
  [ -n "$out" ] || fail "$bench printed nothing on stdout"
  while IFS= read -r l; do
    [[ "$l" =~ $line_re ]] || fail "$bench: stdout line is not a result line: $l"
    [[ "$l" == *"\"bench\":\"$bench\""* ]] || fail "$bench: line names another bench: $l"
  done <<<"$out"
  want=(time_ms)
  case "$bench" in
    pingpong|count|fjthrput|threadring|chameneos|big) want+=(msgs_per_s) ;;
    memory) want+=(bytes_per_actor spawn_ms) ;;
  esac
  for m in "${want[@]}"; do
    grep -q "\"metric\":\"$m\"" <<<"$out" || fail "$bench: no $m line"
  done
  echo "smoke $rt: ok $c ($(grep -o '"metric":"time_ms","value":[^,]*' <<<"$out" | cut -d: -f3) ms)" >&2
done

# A bad argument must be refused with a non-zero exit.
if "$here/micro/run" pingpong n=abc >/dev/null 2>&1; then fail "bad parameter accepted"; fi
if "$here/micro/run" nosuchbench >/dev/null 2>&1; then fail "unknown bench accepted"; fi
echo "smoke $rt: all ok" >&2
