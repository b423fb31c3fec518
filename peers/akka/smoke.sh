#!/usr/bin/env bash
# Smoke test of the Akka peer (peer contract): builds both workloads, runs every micro-benchmark
# once with small parameters and checks each stdout line's shape, then runs two short SCP runs
# (with and without recovery) on hand-made schedules and checks the events they append: the
# throughput seconds, the faults carried out, the restarts, the skipped kill, run_finished.
# Then a short single-process chat run (3 chats x 3 clients, kills and a poison message) whose
# events are checked the same way, once with lookup = "retry" and once with "park", then a
# distributed chat run (5 JVMs in one Akka Cluster) and a distributed run whose client JVM is
# killed (it must fail, nothing may outlive it), then the IoT runs of iot/smoke.sh. Exits non-zero on the first failure. About five minutes on a loaded
# 2-core machine.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fail() {
    echo "akka smoke: FAIL: $*" >&2
    exit 1
}

"$HERE/scp/build"
"$HERE/micro/build"
"$HERE/chat/build"

# --- micro: every bench, small parameters, reps=1 -----------------------------------------
micro() { # bench, expect msgs_per_s (yes/no), args...
    local bench="$1" rate="$2"
    shift 2
    local out="$WORK/micro-$bench.out"
    if ! timeout 120 "$HERE/micro/run" "$bench" reps=1 "$@" >"$out" 2>"$WORK/micro-$bench.err"; then
        cat "$WORK/micro-$bench.err" >&2
        fail "micro $bench exited non-zero"
    fi
    # Positive: every metric (times, rates, bytes per actor at n=20000) is above zero.
    local num='([1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)'
    local line_re="^\{\"bench\":\"$bench\",\"runtime\":\"akka\",\"metric\":\"[a-z_]+\",\"value\":$num,\"unit\":\"[A-Za-z/]+\",\"params\":\{(\"[a-z_]+\":-?[0-9]+,)*\"reps\":1\}\}$"
    while IFS= read -r line; do
        [[ "$line" =~ $line_re ]] || fail "micro $bench: malformed line: $line"
    done <"$out"
    grep -q '"metric":"time_ms"' "$out" || [ "$bench" = memory ] || fail "micro $bench: no time_ms"
    if [ "$rate" = yes ]; then
        grep -q '"metric":"msgs_per_s"' "$out" || fail "micro $bench: no msgs_per_s"
    fi
    echo "akka smoke: micro $bench ok: $(tr '\n' ' ' <"$out" | cut -c1-160)"
}
micro pingpong yes n=2000
micro count yes n=20000
micro fjthrput yes n=200 actors=8
micro fjcreate no n=2000
micro threadring yes actors=10 n=5000
micro chameneos yes chameneos=10 n=2000
micro big yes n=200 actors=10
micro fib no n=12
micro skynet no depth=3 width=10
micro memory no n=20000
grep -q '"metric":"bytes_per_actor"' "$WORK/micro-memory.out" || fail "memory: no bytes_per_actor"
grep -q '"metric":"spawn_ms"' "$WORK/micro-memory.out" || fail "memory: no spawn_ms"
# A wrong parameter must be refused (exit 2), not ignored.
if "$HERE/micro/run" pingpong nosuchkey=1 >/dev/null 2>&1; then
    fail "micro accepted an unknown parameter"
fi

# --- scp ----------------------------------------------------------------------------------
scp_run() { # name, config json, schedule lines
    local name="$1"
    printf '%s\n' "$2" >"$WORK/$name.config.json"
    printf '%s\n' "$3" >"$WORK/$name.schedule.jsonl"
    if ! TROUPE_CONFIG="$WORK/$name.config.json" TROUPE_SCHEDULE="$WORK/$name.schedule.jsonl" \
        TROUPE_EVENTS="$WORK/$name.events.jsonl" TROUPE_RUN_ID="smoke-$name" \
        timeout 60 "$HERE/scp/run" 2>"$WORK/$name.err"; then
        cat "$WORK/$name.err" >&2
        fail "scp $name exited non-zero"
    fi
}
count_ev() { grep -c "\"ev\":\"$2\"" "$WORK/$1.events.jsonl" || true; }
check_common() { # name, duration
    local ev="$WORK/$1.events.jsonl"
    grep -q -v '^{"ts_us":[0-9]*,"run":"smoke-'"$1"'","rt":"akka","node":"[^"]*","ev":"' "$ev" &&
        fail "scp $1: a line without the common fields: $(grep -v '"rt":"akka"' "$ev" | head -1)"
    [ "$(grep -c '"node":"akka-scp","ev":"run_started"' "$ev")" = 1 ] || fail "scp $1: run_started count"
    grep -q '"ev":"ready","what":"pairs","count":' "$ev" || fail "scp $1: no ready event"
    local s
    for ((s = 0; s < $2; s++)); do
        grep -q "\"ev\":\"throughput\",\"second\":$s,\"count\":" "$ev" || fail "scp $1: no throughput second $s"
    done
    [ "$(count_ev "$1" throughput)" = "$2" ] || fail "scp $1: expected $2 throughput events"
    tail -1 "$ev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,' ||
        fail "scp $1: last line is not a clean run_finished: $(tail -1 "$ev")"
}

# With recovery: two kills, each followed by a restart; exchanges keep flowing.
scp_run recover '{"pairs":4,"supervisors":2,"delay_ms":50,"payload_bytes":100,"recovery":true,"duration_s":3,"warmup_s":1,"seed":7}' \
'{"at_ms":500,"id":"k1","kind":"kill","group":0,"slot":0,"restart":true}
{"at_ms":1500,"id":"k2","kind":"kill","group":1,"slot":1,"restart":true}'
check_common recover 3
grep -q '"ev":"fault_injected","id":"k1","target":"g0/s0","kind":"kill"' "$WORK/recover.events.jsonl" || fail "recover: k1"
grep -q '"ev":"fault_injected","id":"k2","target":"g1/s1","kind":"kill"' "$WORK/recover.events.jsonl" || fail "recover: k2"
grep -q '"ev":"restarted","target":"g0/s0","attempt":1' "$WORK/recover.events.jsonl" || fail "recover: restart g0/s0"
grep -q '"ev":"restarted","target":"g1/s1","attempt":1' "$WORK/recover.events.jsonl" || fail "recover: restart g1/s1"
grep -q '"skipped_faults":0' "$WORK/recover.events.jsonl" || fail "recover: skipped faults"
# 4 pairs at 50 ms: about 80 exchanges a second; demand at least half in the last second.
last="$(grep '"ev":"throughput","second":2,' "$WORK/recover.events.jsonl" | sed 's/.*"count":\([0-9]*\).*/\1/')"
[ "$last" -ge 40 ] || fail "recover: only $last exchanges in the last second"

# Without recovery: 2 pairs, 3 kills in group 0: the second kill of slot 0 takes the next live
# slot (1), the third finds none and is skipped; nothing is restarted, throughput drops to 0.
scp_run norecover '{"pairs":2,"supervisors":1,"delay_ms":50,"payload_bytes":10,"recovery":false,"duration_s":3,"warmup_s":1,"seed":7}' \
'{"at_ms":300,"id":"p1","kind":"kill","group":0,"slot":0,"restart":false}
{"at_ms":600,"id":"p2","kind":"kill","group":0,"slot":0,"restart":false}
{"at_ms":900,"id":"p3","kind":"kill","group":0,"slot":1,"restart":false}
{"at_ms":9000,"id":"late","kind":"kill","group":0,"slot":1,"restart":false}'
check_common norecover 3
grep -q '"ev":"fault_injected","id":"p1","target":"g0/s0"' "$WORK/norecover.events.jsonl" || fail "norecover: p1"
grep -q '"ev":"fault_injected","id":"p2","target":"g0/s1"' "$WORK/norecover.events.jsonl" || fail "norecover: p2 wrap"
[ "$(count_ev norecover fault_injected)" = 2 ] || fail "norecover: expected 2 faults injected"
[ "$(count_ev norecover restarted)" = 0 ] || fail "norecover: something restarted"
grep -q '"skipped_faults":1,"faults_after_window":1' "$WORK/norecover.events.jsonl" || fail "norecover: skipped/after-window counts"
grep -q '"ev":"throughput","second":2,"count":0' "$WORK/norecover.events.jsonl" || fail "norecover: throughput did not drop to 0"
echo "akka smoke: scp ok (recovery and no-recovery runs)"
# --- scp: where the injector runs (injector = "node" | "in_process") ----------------------
# The same short run in each mode: fault_injected must come from the injector's own JVM (node
# "injector", a separate OS process reaching the system over Akka remoting, gone after the run,
# with its own run_started and run_finished) or from the measured JVM (node "akka-scp"); an
# unknown mode is refused with exit 2.
for mode in node in_process; do
    name="inj${mode//_/}"
    scp_run "$name" '{"pairs":4,"supervisors":2,"delay_ms":50,"payload_bytes":10,"recovery":true,"duration_s":2,"warmup_s":0,"seed":7,"injector":"'"$mode"'"}' \
'{"at_ms":200,"id":"i1","kind":"kill","group":0,"slot":1,"restart":true}
{"at_ms":700,"id":"i2","kind":"kill","group":1,"slot":0,"restart":true}'
    check_common "$name" 2
    iev="$WORK/$name.events.jsonl"
    want=akka-scp
    [ "$mode" = node ] && want=injector
    [ "$(count_ev "$name" fault_injected)" = 2 ] || fail "scp injector=$mode: expected 2 fault_injected lines"
    [ "$(grep '"ev":"fault_injected"' "$iev" | grep -c "\"node\":\"$want\",")" = 2 ] ||
        fail "scp injector=$mode: fault_injected not from node $want: $(grep '"ev":"fault_injected"' "$iev")"
    grep -q '"ev":"restarted","target":"g1/s0","attempt":1' "$iev" || fail "scp injector=$mode: g1/s0 not restarted"
    if [ "$mode" = node ]; then
        grep -q '"node":"injector","ev":"run_started","workload":"scp","role":"injector"' "$iev" ||
            fail "scp injector=node: no run_started from the injector JVM"
        grep -q '"node":"injector","ev":"run_finished","dropped_events":0,"errors":0,"killed":2,"not_killed":0}' "$iev" ||
            fail "scp injector=node: no clean run_finished from the injector JVM"
        ipid="$(grep -o '"ev":"ready","what":"injector","count":1,"pid":[0-9]*' "$iev" | grep -o '[0-9]*$')" ||
            fail "scp injector=node: no ready {what: injector, pid}"
        if kill -0 "$ipid" 2>/dev/null; then
            kill -9 "$ipid"
            fail "scp injector=node: the injector JVM $ipid outlived the run"
        fi
    elif grep -q '"node":"injector"' "$iev"; then
        fail "scp injector=in_process: lines from an injector JVM"
    fi
    echo "akka smoke: scp injector=$mode ok (fault_injected from node $want)"
done
printf '%s\n' '{"pairs":4,"supervisors":2,"injector":"thread"}' >"$WORK/badinj.config.json"
rc=0
TROUPE_CONFIG="$WORK/badinj.config.json" TROUPE_EVENTS="$WORK/badinj.events.jsonl" "$HERE/scp/run" 2>"$WORK/badinj.err" || rc=$?
[ "$rc" = 2 ] || fail "scp injector=thread: exit $rc, expected 2"
grep -q 'config key injector="thread": expected "node" or "in_process"' "$WORK/badinj.err" ||
    fail "scp injector=thread: no message naming the key: $(cat "$WORK/badinj.err")"
# --- end of scp injector block ---------------------------------------------------------------

# --- chat (single process) ----------------------------------------------------------------
# Every key of the chat table (docs/chat.md) with its default, except the small sizes and times.
CHAT_CFG='{"test_type":"throughput","num_supervisor":1,"chats_per_sup":3,"clients_per_server":3,"fault_pause_ms":1000,"msg_type":"kill","test_duration_secs":3,"warmup_s":1,"send_interval_ms":200,"retry_delay_ms":10,"retry_max":500,"stress_ms":100,"stress_mb":64,"deployment":"single","clients_per_process":10000,"fault_phase":"random","events":"file","seed":1,"lookup":"retry"}'
printf '%s\n' "$CHAT_CFG" >"$WORK/chat.config.json"
# Two kills and a poison message on three different chats, then a second kill of chat 0.
printf '%s\n' \
    '{"at_ms":300,"id":"f-0","kind":"kill","group":0,"slot":0,"restart":true}' \
    '{"at_ms":900,"id":"f-1","kind":"kill","group":2,"slot":0,"restart":true}' \
    '{"at_ms":1400,"id":"f-2","kind":"error","group":1,"slot":0,"restart":true}' \
    '{"at_ms":2000,"id":"f-3","kind":"kill","group":0,"slot":0,"restart":true}' >"$WORK/chat.schedule.jsonl"
# chat_single NAME CONFIG: one single-process run (run id smoke-NAME) and its checks.
chat_single() {
    chat_env=(TROUPE_CONFIG="$2" TROUPE_SCHEDULE="$WORK/chat.schedule.jsonl"
        TROUPE_EVENTS="$WORK/$1.events.jsonl" TROUPE_RUN_ID="smoke-$1")
    if ! env "${chat_env[@]}" timeout 60 "$HERE/chat/run" 2>"$WORK/$1.err"; then
        cat "$WORK/$1.err" >&2
        fail "chat $1 exited non-zero"
    fi
    cev="$WORK/$1.events.jsonl"
    grep -q -v '^{"ts_us":[0-9]*,"run":"smoke-'"$1"'","rt":"akka","node":"akka","ev":"' "$cev" &&
        fail "chat: a line without the common fields"
    chat_has() { grep -q "$1" "$cev" || fail "chat: no line matching $1"; }
    chat_count() { grep -c "$1" "$cev" || true; }
    [ "$(chat_count '"ev":"run_started","workload":"chat"')" = 1 ] || fail "chat: run_started"
    chat_has '"ev":"ready","what":"chats","count":3}'
    chat_has '"ev":"ready","what":"clients","count":9,"rss_bytes":[1-9]'
    chat_has '"ev":"ready","what":"window","count":3,"start_us":[0-9]'
    for s in 0 1 2; do
        chat_has "\"ev\":\"throughput\",\"second\":$s,\"count\":[1-9]"
    done
    [ "$(chat_count '"ev":"throughput"')" = 3 ] || fail "chat: expected 3 throughput lines"
    chat_has '"ev":"fault_injected","id":"f-0","target":"chat-0","kind":"kill"'
    chat_has '"ev":"fault_injected","id":"f-1","target":"chat-2","kind":"kill"'
    chat_has '"ev":"fault_injected","id":"f-2","target":"chat-1","kind":"error"'
    chat_has '"ev":"fault_injected","id":"f-3","target":"chat-0","kind":"kill"'
    # Every client of a hurt chat detects each fault and rejoins: 3 faults x 3 clients + 3 (f-3).
    [ "$(chat_count '"ev":"fault_detected","id":null,"target":"chat-[012]","by":"c[0-8]"')" = 12 ] ||
        fail "chat: expected 12 fault_detected lines, got $(chat_count '"ev":"fault_detected"')"
    [ "$(chat_count '"ev":"reconnected","target":"chat-[012]","by":"c[0-8]","ms":[0-9]')" = 12 ] ||
        fail "chat: expected 12 reconnected lines, got $(chat_count '"ev":"reconnected"')"
    chat_has '"ev":"fault_detected","id":null,"target":"chat-1","by":"c4"'
    chat_has '"ev":"restarted","target":"chat-0","attempt":2'
    # 9 clients each posting every 200 ms to 3 members: 135 broadcasts a second. A second can count
    # more when the machine stalled the one before (late posts land in the next second), so the
    # ceiling is checked on the window's total: 3 x 135, plus one tick of every client (27).
    last="$(grep '"ev":"throughput","second":2,' "$cev" | sed 's/.*"count":\([0-9]*\).*/\1/')"
    total="$(grep '"ev":"throughput"' "$cev" | sed 's/.*"count":\([0-9]*\).*/\1/' | awk '{t += $1} END {print t + 0}')"
    [ "$last" -ge 90 ] || fail "chat: $last broadcasts in the last second (expected near 135)"
    [ "$total" -le 432 ] || fail "chat: $total broadcasts over the 3 s window (ceiling 3 x 135 + 27)"
    tail -1 "$cev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0' ||
        fail "chat: last line is not a clean run_finished: $(tail -1 "$cev")"
    echo "akka smoke: chat $1 ok (3 chats x 3 clients: 4 faults, 12 detections, 12 rejoins)"
}
chat_single chat "$WORK/chat.config.json"
# The same run with lookup = "park": discovery holds a lookup for a restarting chat until it
# registers (or retry_delay_ms passed); its end-of-run line must show each parked lookup answered
# once, by the registration or by its timer.
printf '%s\n' "${CHAT_CFG/\"lookup\":\"retry\"/\"lookup\":\"park\"}" >"$WORK/park.config.json"
chat_single park "$WORK/park.config.json"
parked="$(grep -o 'discovery (lookup=park): [0-9]* lookups parked, [0-9]* answered by a registration, [0-9]* timed out' "$WORK/park.err")" ||
    fail "chat park: no discovery (lookup=park) line on stderr"
read -r n_parked n_reg n_timeout <<<"$(echo "$parked" | grep -o '[0-9]*' | tr '\n' ' ')"
[ "$n_parked" = "$((n_reg + n_timeout))" ] || fail "chat park: parked lookups not all answered once: $parked"
echo "akka smoke: chat park: $parked"
# An unknown lookup mode is refused at start (exit 2), naming the key.
printf '%s\n' "${CHAT_CFG/\"lookup\":\"retry\"/\"lookup\":\"wait\"}" >"$WORK/bad.config.json"
rc=0
TROUPE_CONFIG="$WORK/bad.config.json" TROUPE_EVENTS="$WORK/bad.events.jsonl" "$HERE/chat/run" 2>"$WORK/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "chat lookup=wait: exit $rc, expected 2"
grep -q 'config key lookup="wait"' "$WORK/bad.err" || fail "chat lookup=wait: no message naming the key: $(cat "$WORK/bad.err")"

# --- chat, deployment=distributed ---------------------------------------------------------
# 2 server JVMs x 2 chats x 3 clients in 2 client JVMs (clients_per_process 6), all members of
# one Akka Cluster on loopback; a kill, a poison and a kill, each injected from a client JVM.
DIST_CFG="${CHAT_CFG/\"single\"/\"distributed\"}"
DIST_CFG="${DIST_CFG/\"num_supervisor\":1/\"num_supervisor\":2}"
DIST_CFG="${DIST_CFG/\"chats_per_sup\":3/\"chats_per_sup\":2}"
DIST_CFG="${DIST_CFG/\"clients_per_process\":10000/\"clients_per_process\":6}"
printf '%s\n' "$DIST_CFG" >"$WORK/dist.config.json"
printf '%s\n' \
    '{"at_ms":300,"id":"d-0","kind":"kill","group":0,"slot":0,"restart":true}' \
    '{"at_ms":1000,"id":"d-1","kind":"error","group":3,"slot":0,"restart":true}' \
    '{"at_ms":1800,"id":"d-2","kind":"kill","group":1,"slot":0,"restart":true}' >"$WORK/dist.schedule.jsonl"
dist_env=(TROUPE_CONFIG="$WORK/dist.config.json" TROUPE_SCHEDULE="$WORK/dist.schedule.jsonl")
dev="$WORK/dist.events.jsonl"
if ! env "${dist_env[@]}" TROUPE_EVENTS="$dev" TROUPE_RUN_ID=smoke-dist timeout 150 "$HERE/chat/run" \
    2>"$WORK/dist.err"; then
    grep -v '^\s*at ' "$WORK/dist.err" | tail -30 >&2
    fail "distributed chat exited non-zero"
fi
dhas() { grep -q "$1" "$dev" || fail "distributed chat: no line matching $1"; }
dcount() { grep -c "$1" "$dev" || true; }
[ "$(grep -c '^{"ts_us":[0-9]*,"run":"smoke-dist","rt":"akka","node":"[a-z0-9-]*","ev":"' "$dev")" = "$(wc -l <"$dev")" ] ||
    fail "distributed chat: a line without the common fields (or two lines interleaved)"
for n in discovery server-0 server-1 clients-0 clients-1; do
    [ "$(dcount "\"node\":\"$n\",\"ev\":\"run_started\"")" = 1 ] || fail "distributed chat: $n has no run_started"
    grep "\"node\":\"$n\"," "$dev" | tail -1 |
        grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0' ||
        fail "distributed chat: $n's last line is not a clean run_finished"
done
dhas '"node":"discovery","ev":"run_finished",.*"failed_nodes":\[\]'
dhas '"node":"server-0","ev":"ready","what":"chats","count":2,'
dhas '"node":"server-1","ev":"ready","what":"chats","count":2,'
dhas '"node":"clients-0","ev":"ready","what":"clients","count":6,"rss_bytes":[1-9]'
dhas '"node":"clients-1","ev":"ready","what":"clients","count":6,"rss_bytes":[1-9]'
dhas '"node":"discovery","ev":"ready","what":"window","count":3,"start_us":[0-9]'
for g in 0 1; do for s in 0 1 2; do
    dhas "\"node\":\"clients-$g\",\"ev\":\"throughput\",\"second\":$s,\"count\":[1-9]"
done; done
dhas '"node":"clients-0","ev":"fault_injected","id":"d-0","target":"chat-0","kind":"kill"'
dhas '"node":"clients-1","ev":"fault_injected","id":"d-1","target":"chat-3","kind":"error"'
dhas '"node":"clients-0","ev":"fault_injected","id":"d-2","target":"chat-1","kind":"kill"'
dhas '"node":"server-1","ev":"restarted","target":"chat-3","attempt":1'
ddet=$(dcount '"ev":"fault_detected","id":null,"target":"chat-[013]","by":"c[0-9]*"')
drec=$(dcount '"ev":"reconnected","target":"chat-[013]","by":"c[0-9]*","ms":[0-9]')
[ "$ddet" = 9 ] && [ "$(dcount '"ev":"fault_detected"')" = 9 ] || fail "distributed chat: expected 9 fault_detected lines, got $(dcount '"ev":"fault_detected"')"
[ "$drec" = 9 ] || fail "distributed chat: expected 9 reconnected lines, got $drec"
dhas '"node":"clients-1","ev":"reconnected","target":"chat-3","by":"c10"'
echo "akka smoke: distributed chat ok (5 JVMs: 3 faults across nodes, 9 detections, 9 rejoins)"

# A node JVM that dies must fail the run: kill -9 client group 0 once it is ready; the
# orchestrator names it in failed_nodes, kills and reaps the others, and ends by itself.
kev="$WORK/kill.events.jsonl"
env "${dist_env[@]}" TROUPE_EVENTS="$kev" TROUPE_RUN_ID=smoke-kill timeout 150 "$HERE/chat/run" 2>"$WORK/kill.err" &
orch=$!
victim=""
for _ in $(seq 1 900); do # up to 90 s for the set-up
    victim=$(grep -o '"node":"clients-0","ev":"ready","what":"clients",[^}]*"pid":[0-9]*' "$kev" 2>/dev/null | grep -o '[0-9]*$' || true)
    [ -n "$victim" ] && break
    sleep 0.1
done
[ -n "$victim" ] || { kill "$orch" 2>/dev/null; fail "distributed kill test: clients-0 never got ready"; }
kill -9 "$victim"
wait "$orch" || true
grep -q '"node":"discovery","ev":"run_finished",.*"failed_nodes":\["clients-0 (killed by signal 9)"\]' "$kev" ||
    fail "distributed kill test: clients-0 not reported: $(grep '"node":"discovery","ev":"run_finished"' "$kev")"
for p in $(grep -o '"pid":[0-9]*' "$kev" | grep -o '[0-9]*$'); do
    if kill -0 "$p" 2>/dev/null; then
        kill -9 "$p"
        fail "distributed kill test: node JVM $p outlived the orchestrator"
    fi
done
echo "akka smoke: a killed node JVM fails the distributed run (failed_nodes), nothing outlives it"
"$HERE/iot/smoke.sh" # the IoT peer: a clean run and a run with device kills
# The behaviour contract, checked on short runs (docs/lab.md, "Checking conformance").
for w in chat scp iot; do
    "$HERE/../lib/conform.sh" "$w" akka
done
echo "akka smoke: passed"
bash "$(dirname "${BASH_SOURCE[0]}")/../lib/amqp-smoke.sh" akka chat  # the same run through RabbitMQ and through a file
