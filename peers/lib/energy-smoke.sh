#!/usr/bin/env bash
# peers/lib/energy-smoke.sh RUNTIME: builds peers/RUNTIME/energy and checks its programs against
# the energy peer contract (peers/erlang/README.md, "The energy peer contract"), with small sizes,
# for each of the 4 workloads in both modes:
#   1. exit 0; every events line has the common fields (ts_us, run, rt=RUNTIME, node, ev);
#   2. the first line is run_started with workload "energy", the config object and a version;
#   3. then one `work` line per rep, rep = 0, 1, ... in order, start_us < end_us, each rep's
#      interval after the previous one's, result = clients*msgs (ping_pong*) or pi(range) (prime);
#   4. the last line is run_finished with dropped_events 0 and errors 0; nothing else in between;
#   5. every OS process the program announces on stderr ("... is OS process N") is gone (or a
#      zombie) within 5 s after it exits; distributed mode must announce at least one;
#   6. an unknown workload, an unknown mode, an out-of-range, missing or non-integer number each
#      exit 2 with one stderr line naming the key, and write no events;
#   7. a far process killed mid-run (the one announced as "far ... is OS process N") makes the
#      run fail promptly: exit 1, run_finished with errors >= 1 last, nothing left running;
#   8. the prime count is seed 002's trial division: pi(range) for ranges at its edges (2, the
#      square 4 and the prime squares 121 and 10201, which a divisor bound below floor(sqrt(n))
#      would count as primes), besides pi(10000) = 1229 of rule 3.
# Shared by the peers' smoke.sh scripts. Exits non-zero on the first failure.
set -euo pipefail
rt="${1:?usage: energy-smoke.sh RUNTIME}"
prog="$(cd "$(dirname "${BASH_SOURCE[0]}")/../$rt/energy" && pwd)"
"$prog/build"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "energy smoke $rt: FAIL: $*" >&2; exit 1; }
step() { echo "energy smoke $rt: $*" >&2; }

gone() {   # pid: true when the process is gone or a zombie (within 5 s)
    local i
    for i in $(seq 50); do
        [[ -r /proc/$1/stat ]] || return 0
        [[ $(sed 's/.*) //' "/proc/$1/stat" | cut -c1) == Z ]] && return 0
        sleep 0.1
    done
    return 1
}

field() {   # line, key -> the integer value of "key" in line
    grep -oE "\"$2\":-?[0-9]+" <<<"$1" | head -1 | cut -d: -f2
}

# run_case NAME CONFIG: runs the program with the contract's environment; sets $ev, $err.
run_case() {
    local name=$1
    printf '%s\n' "$2" >"$tmp/$name.json"
    : >"$tmp/$name.schedule.jsonl"
    ev="$tmp/$name.events.jsonl"
    err="$tmp/$name.err"
    TROUPE_CONFIG="$tmp/$name.json" TROUPE_SCHEDULE="$tmp/$name.schedule.jsonl" \
    TROUPE_EVENTS="$ev" TROUPE_RUN_ID="smoke-energy" \
        "$prog/run" </dev/null >"$tmp/$name.out" 2>"$err"
}

common='^\{"ts_us":[0-9]{16},"run":"smoke-energy","rt":"'"$rt"'","node":"[^"]+","ev":"[a-z_]+"'
reps=2
for mode in native distributed; do
    for w in prime ping_pong ping_pong_lb ping_pong_lb_prime; do
        clients=3 msgs=200 servers=2 range=100
        [[ $w == prime ]] && range=10000
        case $w in prime) want=1229 ;; *) want=$((clients * msgs)) ;; esac
        name="$w-$mode"
        cfg='{"workload":"'"$w"'","mode":"'"$mode"'","clients":'$clients',"msgs":'$msgs',"servers":'$servers',"range":'$range',"reps":'$reps',"seed":7,"sample_ms":100}'
        run_case "$name" "$cfg" || { cat "$err" >&2; fail "$name exited non-zero"; }
        [[ -s $ev ]] || fail "$name: no events written"
        if grep -Evq "$common" "$ev"; then
            grep -Ev "$common" "$ev" | head -3 >&2
            fail "$name: a line lacks the common fields"
        fi
        first=$(head -1 "$ev")
        [[ $first == *'"ev":"run_started","workload":"energy","config":{'* ]] || fail "$name: first line is not run_started: $first"
        [[ $first == *"\"workload\":\"$w\""* && $first == *"\"mode\":\"$mode\""* && $first == *"\"range\":$range"* ]] ||
            fail "$name: run_started does not carry the config: $first"
        grep -Eq '"version":"[^"]+"' <<<"$first" || fail "$name: run_started has no version"
        last=$(tail -1 "$ev")
        grep -Eq '"ev":"run_finished","dropped_events":0,"errors":0\}$' <<<"$last" || fail "$name: last line is not a clean run_finished: $last"
        [[ $(wc -l <"$ev") -eq $((reps + 2)) ]] || { cat "$ev" >&2; fail "$name: expected run_started, $reps work lines, run_finished"; }
        prev_end=0
        r=0
        while IFS= read -r l; do
            [[ $l == *'"ev":"work",'* ]] || fail "$name: line $((r + 2)) is not a work line: $l"
            [[ $(field "$l" rep) -eq $r ]] || fail "$name: work line $r has rep $(field "$l" rep)"
            s=$(field "$l" start_us) e=$(field "$l" end_us) res=$(field "$l" result)
            [[ -n $s && -n $e && $s -lt $e ]] || fail "$name: rep $r: start_us ($s) not before end_us ($e)"
            [[ $s -ge $prev_end ]] || fail "$name: rep $r starts before rep $((r - 1)) ended"
            [[ $res -eq $want ]] || fail "$name: rep $r: result $res, expected $want"
            prev_end=$e
            r=$((r + 1))
        done < <(sed -n "2,$((reps + 1))p" "$ev")
        pids=$(grep -Eo 'is OS process [0-9]+$' "$err" | awk '{print $NF}' || true)
        if [[ $mode == distributed && -z $pids ]]; then
            cat "$err" >&2
            fail "$name: distributed mode announced no other OS process on stderr"
        fi
        for pid in $pids; do
            gone "$pid" || fail "$name: OS process $pid outlived the run"
        done
        ms=$(sed -n '2p' "$ev" | { read -r l; echo $(( ($(field "$l" end_us) - $(field "$l" start_us)) / 1000 )); })
        step "ok $name (rep 0: $ms ms, result $want)"
    done
done

# Bad values are refused before anything starts: exit 2, the key named on stderr, no events.
good='"clients":1,"msgs":1,"servers":1,"range":10,"reps":1,"seed":1,"sample_ms":100'
bad_cases=(
    'workload|{"workload":"primes","mode":"native",'"$good"'}'
    'mode|{"workload":"prime","mode":"cluster",'"$good"'}'
    'msgs|{"workload":"ping_pong","mode":"native","clients":1,"msgs":0,"servers":1,"range":10,"reps":1}'
    'range|{"workload":"prime","mode":"native","clients":1,"msgs":1,"servers":1,"reps":1}'
    'range|{"workload":"prime","mode":"native","clients":1,"msgs":1,"servers":1,"range":1000000001,"reps":1}'
    'clients|{"workload":"ping_pong","mode":"native","clients":"2","msgs":1,"servers":1,"range":10,"reps":1}'
)
for c in "${bad_cases[@]}"; do
    key=${c%%|*} cfg=${c#*|}
    set +e
    run_case "bad-$key" "$cfg"
    rc=$?
    set -e
    [[ $rc -eq 2 ]] || { cat "$err" >&2; fail "bad $key gave exit $rc, expected 2"; }
    grep -q "$key" "$err" || fail "bad $key: stderr does not name the key: $(cat "$err")"
    [[ $(wc -l <"$err") -eq 1 ]] || fail "bad $key: expected one stderr line, got: $(cat "$err")"
    [[ ! -s $ev ]] || fail "bad $key: events were written"
done
step "ok: bad workload, mode, msgs, range (missing, above 10^9), clients refused with exit 2"

# Rule 8: the seed's trial division, pinned at its edges (docs/energy.md, "Seed programs").
for pair in 2:1 4:2 121:30 10201:1252; do
    range=${pair%%:*} want=${pair#*:}
    run_case "pi-$range" '{"workload":"prime","mode":"native","clients":1,"msgs":1,"servers":1,"range":'"$range"',"reps":1,"seed":1,"sample_ms":100}' ||
        { cat "$err" >&2; fail "pi-$range exited non-zero"; }
    res=$(field "$(grep '"ev":"work"' "$ev")" result)
    [[ $res == "$want" ]] || fail "prime range $range: result ${res:-none}, expected pi($range) = $want"
done
step "ok: pi(2) = 1, pi(4) = 2, pi(121) = 30, pi(10201) = 1252"

# Rule 7: a lost far process fails the run (not a hang), and the run still cleans up.
name=lost-far
printf '%s\n' '{"workload":"ping_pong_lb","mode":"distributed","clients":2,"msgs":1000000000,"servers":2,"range":100,"reps":1,"seed":1,"sample_ms":100}' >"$tmp/$name.json"
ev="$tmp/$name.events.jsonl" err="$tmp/$name.err"
TROUPE_CONFIG="$tmp/$name.json" TROUPE_SCHEDULE=/dev/null TROUPE_EVENTS="$ev" TROUPE_RUN_ID=smoke-energy \
    "$prog/run" </dev/null >/dev/null 2>"$err" &
run_pid=$!
far=""
for i in $(seq 300); do   # up to 30 s for the far process to be announced
    far=$(grep -Eo 'far .* is OS process [0-9]+$' "$err" | awk '{print $NF}' || true)
    [[ -n $far ]] && break
    kill -0 "$run_pid" 2>/dev/null || break
    sleep 0.1
done
[[ -n $far ]] || { kill -KILL "$run_pid" 2>/dev/null || true; cat "$err" >&2; fail "$name: no far process announced"; }
sleep 1   # let the work start
kill -KILL "$far"
for i in $(seq 300); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$run_pid" 2>/dev/null; then
    kill -KILL "$run_pid" 2>/dev/null || true
    fail "$name: the run did not end within 30 s of losing its far process"
fi
set +e
wait "$run_pid"
rc=$?
set -e
[[ $rc -eq 1 ]] || { cat "$err" >&2; fail "$name: exit $rc after the far process was killed, expected 1"; }
grep -Eq '"ev":"run_finished","dropped_events":0,"errors":[1-9][0-9]*\}$' <<<"$(tail -1 "$ev")" ||
    fail "$name: last line is not run_finished with errors >= 1: $(tail -1 "$ev")"
for pid in $(grep -Eo 'is OS process [0-9]+$' "$err" | awk '{print $NF}'); do
    gone "$pid" || fail "$name: OS process $pid outlived the failed run"
done
step "ok $name (exit 1, run_finished errors >= 1, nothing left running)"
step "all energy contract checks passed"
