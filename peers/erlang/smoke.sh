#!/usr/bin/env bash
# smoke.sh: the Erlang peer's smoke test (peer contract): builds every Erlang
# workload, runs the EUnit tests of the shared modules, a very short run of every
# micro-benchmark (checking the output shape and that stdout holds nothing
# else), and two short SCP runs on loopback-free local files (checking the
# event stream: ready, one throughput line per second, the scheduled kills,
# restarts only when recovery is on, run_finished last), plus rejection of a
# bad config; and a very short run of both Erlang distribution benchmarks
# (remote/: two nodes on loopback, checking that no node or epmd outlives
# them); and the energy programs (energy/: the 4 workloads, native and
# distributed, checked against the energy peer contract by
# peers/lib/energy-smoke.sh); and the latency program (latency/: a refused
# transport and overlay, and a short run through the lab's relay: the troupe binary from
# TROUPE_EXE, PATH or ./target, built with cargo when none is found); and the kv store (kv/: a refused transport and overlay, then a 1 s run of the
# quorum store on three store nodes). Exits non-zero on the first failure. Takes well under 3 minutes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "smoke: FAIL: $*" >&2; exit 1; }
step() { echo "smoke: $*" >&2; }
# refused NAME WORKLOAD PATTERN WHAT [VAR=VALUE ...]: WORKLOAD's program, given $tmp/NAME.json
# (and the extra environment), exits 2 before starting anything, naming PATTERN on stderr.
refused() {
    local name=$1 w=$2 pattern=$3 what=$4 rc=0
    shift 4
    env "$@" TROUPE_CONFIG="$tmp/$name.json" TROUPE_EVENTS="$tmp/$name.events" "$here/$w/run" 2>"$tmp/$name.err" || rc=$?
    [[ $rc -eq 2 ]] || fail "$w: $what gave exit $rc, expected 2"
    grep -q -- "$pattern" "$tmp/$name.err" || fail "$w: the refusal of $what does not name the key"
}

# --- build (exit 3 with the install hint passes through) -------------------
"$here/scp/build"
"$here/micro/build"
"$here/remote/build"

# --- unit tests of the shared modules (JSON codec, event writer) -------------
mkdir -p "$tmp/ebin"
erlc -o "$tmp/ebin" "$here"/common/*.erl
erl -noshell -noinput -pa "$tmp/ebin" -eval \
    'case eunit:test([troupe_json_tests, troupe_events_tests]) of ok -> halt(0); _ -> halt(1) end.' >&2 ||
    fail "EUnit tests of peers/erlang/common"

# --- micro: every bench, small sizes, one rep -------------------------------
# Positive: every metric (times, rates, round trips, bytes per actor at n=20000) is above zero.
num='([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)(e[-+]?[0-9]+)?'
check_micro() {   # bench, expected metrics (space separated), args...
    local bench=$1 metrics=$2; shift 2
    local out="$tmp/micro-$bench.out"
    "$here/micro/run" "$bench" "$@" >"$out" 2>"$tmp/micro-$bench.err" ||
        { cat "$tmp/micro-$bench.err" >&2; fail "micro $bench exited non-zero"; }
    local n_lines; n_lines=$(wc -l <"$out")
    [[ $n_lines -eq $(wc -w <<<"$metrics") ]] || fail "micro $bench: $n_lines lines, expected metrics: $metrics"
    for m in $metrics; do
        grep -Eq "^\{\"bench\":\"$bench\",\"runtime\":\"erlang\",\"metric\":\"$m\",\"value\":$num,\"unit\":\"[A-Za-z/]+\",\"params\":\{(\"[a-z_]+\":[0-9]+,)*\"reps\":[0-9]+\}\}$" "$out" ||
            { cat "$out" >&2; fail "micro $bench: no well-formed $m line"; }
    done
    step "micro $bench ok: $(grep -o '"metric":"time_ms","value":[^,]*' "$out")"
}
check_micro pingpong   "time_ms msgs_per_s" n=2000 reps=1
check_micro count      "time_ms msgs_per_s" n=20000 reps=1
check_micro fjthrput   "time_ms msgs_per_s" n=200 actors=10 reps=1
check_micro fjcreate   "time_ms"            n=2000 reps=1
check_micro threadring "time_ms msgs_per_s" actors=10 n=1000 reps=1
check_micro chameneos  "time_ms msgs_per_s" chameneos=10 n=1000 reps=1
check_micro big        "time_ms msgs_per_s" n=200 actors=10 reps=1
check_micro fib        "time_ms"            n=12 reps=1
check_micro skynet     "time_ms"            depth=3 width=10 reps=2
check_micro memory     "bytes_per_actor vm_bytes_per_actor spawn_ms time_ms" n=20000
if "$here/micro/run" count n=0 >"$tmp/bad.out" 2>/dev/null; then fail "micro accepted n=0"; fi
[[ ! -s $tmp/bad.out ]] || fail "micro printed to stdout on bad arguments"

# --- remote: Erlang distribution (two nodes on loopback), tiny sizes ----------
# Each run announces its private epmd's and its far node's OS pids on stderr; both must be
# gone afterwards (checked by pid, so another run on the machine cannot confuse it).
gone() {   # pid: true when the process is gone or a zombie (within 5 s)
    local i
    for i in $(seq 50); do
        [[ -r /proc/$1/stat ]] || return 0
        [[ $(sed 's/.*) //' "/proc/$1/stat" | cut -c1) == Z ]] && return 0
        sleep 0.1
    done
    return 1
}
check_remote() {   # bench, expected line count, metrics, args...
    local bench=$1 lines=$2 metrics=$3; shift 3
    local out="$tmp/remote-$bench.out" err="$tmp/remote-$bench.err"
    "$here/remote/run" "$bench" "$@" >"$out" 2>"$err" ||
        { cat "$err" >&2; fail "remote $bench exited non-zero"; }
    [[ $(wc -l <"$out") -eq $lines ]] || { cat "$out" >&2; fail "remote $bench: expected $lines lines"; }
    for m in $metrics; do
        grep -Eq "^\{\"bench\":\"$bench\",\"runtime\":\"erlang\",\"metric\":\"$m\",\"value\":$num,\"unit\":\"[A-Za-z/]+\",\"params\":\{.*\"transport\":\"erlang distribution, tcp loopback, 2 OS processes\"" "$out" ||
            { cat "$out" >&2; fail "remote $bench: no well-formed $m line"; }
        grep "\"metric\":\"$m\"" "$out" | grep -Eq '"otp":"[0-9]+"' || fail "remote $bench: $m without the OTP version"
    done
    local pid
    for pid in $(grep -Eo '^remote: (epmd on 127.0.0.1:[0-9]+|far node far@127.0.0.1) is OS process [0-9]+' "$err" | awk '{print $NF}'); do
        gone "$pid" || fail "remote $bench: process $pid (epmd or far node) outlived the run"
    done
    [[ $(grep -c '^remote: .* is OS process' "$err") -eq 2 ]] || { cat "$err" >&2; fail "remote $bench: epmd and far node not announced"; }
    step "remote $bench ok: $(grep -o '"metric":"[a-z_0-9]*","value":[^,]*' "$out" | head -2 | tr '\n' ' ')"
}
check_remote remote-pingpong 2 "time_ms msgs_per_s" messages=20000 reps=1
check_remote remote-latency 4 "rtt_p50_us rtt_p99_us" samples=200 reps=1
grep -q '"mode":"idle"' "$tmp/remote-remote-latency.out" && grep -q '"mode":"busy-poll"' "$tmp/remote-remote-latency.out" ||
    fail "remote-latency: expected an idle and a busy-poll mode"
if "$here/remote/run" remote-pingpong messages=0 >"$tmp/bad.out" 2>/dev/null; then fail "remote accepted messages=0"; fi
[[ ! -s $tmp/bad.out ]] || fail "remote printed to stdout on bad arguments"

# --- SCP ----------------------------------------------------------------------
run_scp() {   # name, config json, schedule lines
    local name=$1
    printf '%s\n' "$2" >"$tmp/$name.config.json"
    printf '%s\n' "$3" >"$tmp/$name.schedule.jsonl"
    TROUPE_CONFIG="$tmp/$name.config.json" TROUPE_SCHEDULE="$tmp/$name.schedule.jsonl" \
    TROUPE_EVENTS="$tmp/$name.events.jsonl" TROUPE_RUN_ID="smoke-$name" \
        "$here/scp/run" 2>"$tmp/$name.err"
}
count_ev() { grep -c "\"ev\":\"$2\"" "$tmp/$1.events.jsonl" || true; }
common_fields='^\{"ts_us":[0-9]{16},"run":"smoke-[a-z]+","rt":"erlang","node":"[^"]+","ev":"[a-z_]+"'

# 16 pairs, 4 sub-supervisors, 50 ms delay: ceiling 320 exchanges/s.
run_scp rec '{"pairs":16,"supervisors":4,"delay_ms":50,"payload_bytes":100,"recovery":true,"duration_s":3,"warmup_s":1,"pattern":"uniform","seed":1}' \
'{"at_ms":300,"id":"k1","kind":"kill","group":1,"slot":2,"restart":true}
{"at_ms":900,"id":"k2","kind":"kill","group":1,"slot":2,"restart":true}
{"at_ms":1500,"id":"k3","kind":"kill","group":3,"slot":0,"restart":false}
{"at_ms":2100,"id":"k4","kind":"kill","group":3,"slot":0,"restart":true}' ||
    { cat "$tmp/rec.err" >&2; fail "scp (recovery) exited non-zero"; }
ev=$tmp/rec.events.jsonl
grep -Evq "$common_fields" "$ev" && fail "scp: a line lacks the common fields"
head -1 "$ev" | grep -q '"ev":"run_started","workload":"scp","config":{"pairs":16' || fail "scp: first line is not run_started"
tail -1 "$ev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0}$' || fail "scp: last line is not a clean run_finished"
grep -q '"ev":"ready","what":"pairs","count":16}' "$ev" || fail "scp: no ready line"
[[ $(count_ev rec throughput) -eq 3 ]] || fail "scp: expected 3 throughput lines"
total=$(grep -o '"ev":"throughput","second":[0-9]*,"count":[0-9]*' "$ev" | awk -F: '{s+=$NF} END {print s+0}')
[[ $total -ge 480 ]] || fail "scp: only $total exchanges in 3 s (ceiling 960)"
for id in k1 k2 k3 k4; do grep -q "\"fault_injected\",\"id\":\"$id\"" "$ev" || fail "scp: $id not injected"; done
grep -q '"id":"k4","target":"g3/s1"' "$ev" || fail "scp: k4 should move past the permanently killed g3/s0 to g3/s1"
grep -q '"ev":"restarted","target":"g1/s2","attempt":2}' "$ev" || fail "scp: no second restart of g1/s2"
grep -q '"ev":"restarted","target":"g3/s0"' "$ev" && fail "scp: g3/s0 restarted after a restart:false kill"
step "scp recovery run ok: $total exchanges, $(count_ev rec restarted) restarts"

# recovery off: killed servers stay dead; a kill of a dead slot moves on, and
# when the whole group is dead the action is skipped and counted.
run_scp norec '{"pairs":4,"supervisors":2,"delay_ms":50,"payload_bytes":10,"recovery":false,"duration_s":2,"warmup_s":0}' \
'{"at_ms":100,"id":"a","kind":"kill","group":0,"slot":1}
{"at_ms":200,"id":"b","kind":"kill","group":0,"slot":1}
{"at_ms":300,"id":"c","kind":"kill","group":0,"slot":0}' ||
    { cat "$tmp/norec.err" >&2; fail "scp (no recovery) exited non-zero"; }
ev=$tmp/norec.events.jsonl
[[ $(count_ev norec restarted) -eq 0 ]] || fail "scp: restarts with recovery=false"
grep -q '"id":"b","target":"g0/s0"' "$ev" || fail "scp: b should land on g0/s0"
tail -1 "$ev" | grep -q '"skipped_faults":1}$' || fail "scp: c should be skipped"
step "scp no-recovery run ok"

# bad input is refused before anything starts, with exit 2
printf '{"pairs":10,"supervisors":3}\n' >"$tmp/bad.json"
refused bad scp 'supervisors' "a bad config"
# --- SCP: where the injector runs (injector = "node" | "in_process") ---------------
# The same short run in each mode: fault_injected must come from the injector's own node
# (node "injector", a separate OS process that is gone after the run, with its own
# run_started and run_finished) or from the SUB's VM (node "erlang-scp"); an unknown mode
# is refused with exit 2.
inj_sched='{"at_ms":200,"id":"i1","kind":"kill","group":0,"slot":1,"restart":true}
{"at_ms":700,"id":"i2","kind":"kill","group":1,"slot":0,"restart":true}'
for mode in node in_process; do
    name=inj${mode//_/}
    run_scp "$name" '{"pairs":8,"supervisors":2,"delay_ms":50,"payload_bytes":10,"recovery":true,"duration_s":2,"warmup_s":0,"injector":"'"$mode"'"}' "$inj_sched" ||
        { cat "$tmp/$name.err" >&2; fail "scp injector=$mode exited non-zero"; }
    ev=$tmp/$name.events.jsonl
    want=erlang-scp
    [[ $mode == node ]] && want=injector
    [[ $(count_ev "$name" fault_injected) -eq 2 ]] || fail "scp injector=$mode: expected 2 fault_injected lines"
    [[ $(grep '"ev":"fault_injected"' "$ev" | grep -c "\"node\":\"$want\",") -eq 2 ]] ||
        fail "scp injector=$mode: fault_injected not from node $want: $(grep '"ev":"fault_injected"' "$ev")"
    grep '"node":"erlang-scp"' "$ev" | tail -1 | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0}$' ||
        fail "scp injector=$mode: the SUB's last line is not a clean run_finished"
    if [[ $mode == node ]]; then
        grep -q '"node":"injector","ev":"run_started","workload":"scp","role":"injector"' "$ev" || fail "scp injector=node: no run_started from the injector node"
        grep -q '"node":"injector","ev":"run_finished","dropped_events":0,"errors":0,"killed":2,"not_killed":0}' "$ev" ||
            fail "scp injector=node: no clean run_finished from the injector node"
        pid=$(grep -o '"ev":"ready","what":"injector","count":1,"pid":[0-9]*' "$ev" | grep -o '[0-9]*$') ||
            fail "scp injector=node: no ready {what: injector, pid}"
        gone "$pid" || fail "scp injector=node: the injector node (OS process $pid) outlived the run"
    else
        grep -q '"node":"injector"' "$ev" && fail "scp injector=in_process: lines from an injector node"
    fi
    step "scp injector=$mode ok: fault_injected from node $want"
done
printf '{"pairs":4,"supervisors":2,"injector":"thread"}\n' >"$tmp/badinj.json"
refused badinj scp 'config key injector = "thread": must be "node" or "in_process"' "injector=thread"
# --- end of SCP injector block ---------------------------------------------------
# --- latency: a refused transport, then a short run through the lab's relay ------
"$here/latency/build"
lat='{"pairs":2,"payload_bytes":524288,"messages":10,"rtt_ms":2,"transport":"one_connection","parallelism":4,"overlay":"full_mesh","seed":1}'
printf '%s\n' "${lat/one_connection/parallel_random}" >"$tmp/lat-bad.json"
refused lat-bad latency 'config key transport = "parallel_random"' "transport=parallel_random" TROUPE_EXE=/bin/true
printf '%s\n' "${lat/full_mesh/hyparview}" >"$tmp/lat-ovl.json"
refused lat-ovl latency 'config key overlay = "hyparview"' "overlay=hyparview" TROUPE_EXE=/bin/true
# The relay is the troupe binary: TROUPE_EXE, else `troupe` on PATH, else one under ./target
# (release first), else it is built here (cargo build -p troupe-cli); never skipped.
root=$(cd "$here/../.." && pwd)
troupe_bin=${TROUPE_EXE:-$(command -v troupe || true)}
target_dir=${CARGO_TARGET_DIR:-$root/target}
[[ $target_dir == /* ]] || target_dir=$root/$target_dir
for cand in "$target_dir/release/troupe" "$target_dir/debug/troupe"; do
    [[ -z $troupe_bin && -x $cand ]] && troupe_bin=$cand
done
if [[ -z $troupe_bin ]]; then
    step "latency: no troupe binary for the relay; building it (cargo build -p troupe-cli)"
    command -v cargo >/dev/null 2>&1 || fail "latency: no troupe binary for the relay and no cargo to build one (set TROUPE_EXE)"
    (cd "$root" && cargo build --quiet -p troupe-cli --bin troupe) || fail "latency: cargo build -p troupe-cli failed"
    troupe_bin=$target_dir/debug/troupe
fi
[[ -x $troupe_bin ]] || fail "latency: $troupe_bin is not an executable troupe binary"
printf '%s\n' "$lat" >"$tmp/lat.json"
TROUPE_CONFIG="$tmp/lat.json" TROUPE_EVENTS="$tmp/lat.events.jsonl" TROUPE_RUN_ID=smoke-lat TROUPE_EXE="$troupe_bin" \
    "$here/latency/run" 2>"$tmp/lat.err" || { cat "$tmp/lat.err" >&2; fail "latency exited non-zero"; }
ev=$tmp/lat.events.jsonl
[[ $(grep -c '"ev":"msg"' "$ev") -eq 10 ]] || fail "latency: expected 10 msg events"
grep -q '"ev":"relay","connections":1,' "$ev" || fail "latency: the distribution connection did not go through the relay"
tail -1 "$ev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0}$' || fail "latency: last line is not a clean run_finished"
step "latency ok ($troupe_bin): $(grep -o '"ev":"window","elapsed_us":[0-9]*' "$ev")"

# --- kv: a refused transport, then a 1 s run of the quorum store on 3 store nodes ----
"$here/kv/build"
kv='{"service":"kv","object_bytes":65536,"concurrency":2,"duration_s":1,"vnodes":8,"n":3,"r":2,"w":2,"parallelism":4,"transport":"one_connection","keys":20,"read_pct":50,"overlay":"full_mesh","seed":1}'
printf '%s\n' "${kv/one_connection/channels}" >"$tmp/kv-bad.json"
refused kv-bad kv 'config key transport = "channels"' "transport=channels"
printf '%s\n' "${kv/full_mesh/client_server}" >"$tmp/kv-ovl.json"
refused kv-ovl kv 'config key overlay = "client_server"' "overlay=client_server"
printf '%s\n' "${kv/\"seed\":1/\"seed\":1,\"nemesis\":\"kill\"}" >"$tmp/kv-nem.json"
refused kv-nem kv 'config key nemesis = "kill"' "nemesis=kill"
printf '%s\n' "${kv/\"seed\":1/\"seed\":1,\"storage_delay_ms\":5000}" >"$tmp/kv-slow.json"
refused kv-slow kv 'config key storage_delay_ms = 5000' "storage_delay_ms=5000"
printf '%s\n' "$kv" >"$tmp/kv.json"
TROUPE_CONFIG="$tmp/kv.json" TROUPE_EVENTS="$tmp/kv.events.jsonl" TROUPE_RUN_ID=smoke-kv \
    "$here/kv/run" 2>"$tmp/kv.err" || { cat "$tmp/kv.err" >&2; fail "kv exited non-zero"; }
ev=$tmp/kv.events.jsonl
[[ $(grep -c '"ev":"op"' "$ev") -ge 2 ]] || fail "kv: expected op events"
grep -q '"ok":false' "$ev" && fail "kv: an operation failed"
grep -q '"ev":"nodes"' "$ev" || fail "kv: no nodes event"
tail -1 "$ev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0}$' || fail "kv: last line is not a clean run_finished"
step "kv ok: $(grep -c '"ev":"op"' "$ev") operations"

# --- energy: the 4 workloads x native/distributed, small sizes (shared checker) --
bash "$here/../lib/energy-smoke.sh" erlang
# The behaviour contracts, checked on short runs (docs/lab.md, "Checking conformance").
for w in scp energy latency kv; do
    bash "$here/../lib/conform.sh" "$w" erlang
done
step "all Erlang smoke checks passed"
bash "$(dirname "${BASH_SOURCE[0]}")/../lib/amqp-smoke.sh" erlang scp  # the same run through RabbitMQ and through a file
