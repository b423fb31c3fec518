#!/usr/bin/env bash
# smoke.sh: builds every Proto.Actor (Go) peer workload and runs a very short run of each:
# the micro-benchmarks, checking the contract's output shape (see peers/lib/micro-smoke.sh),
# then a 3-second single-process chat run with a hand-written config and kill schedule, and a
# 3-second distributed run (6 processes on loopback), checking their event lines (docs/chat.md,
# "The chat peer contract"); each chat run once with lookup = "retry" and once with "park" (and
# then discovery's count of parked lookups must show each answered once). About 30 s in all.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

"$here/../lib/micro-smoke.sh" protoactor

# --- chat ---------------------------------------------------------------------------------
fail() { echo "smoke protoactor chat: FAIL: $*" >&2; exit 1; }
"$here/chat/build"
# discovery's lookup modes (chat/discovery_test.go), with the Go that chat/build uses
go_bin=""
for c in "${GO:-}" /usr/local/go/bin/go "$(command -v go 2>/dev/null || true)"; do
  if [ -n "$c" ] && [ -x "$c" ]; then go_bin="$c"; break; fi
done
(cd "$here/chat" && "$go_bin" test -mod=readonly -count=1 .) || fail "go test (discovery lookup modes)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Every key of the chat key table; 1 supervisor x 3 chats x 3 clients, 3 s window.
cat > "$work/config.json" <<'JSON'
{"test_type":"throughput","num_supervisor":1,"chats_per_sup":3,"clients_per_server":3,
 "fault_pause_ms":1000,"msg_type":"kill","test_duration_secs":3,"warmup_s":1,
 "send_interval_ms":200,"retry_delay_ms":10,"retry_max":500,"stress_ms":100,"stress_mb":64,
 "deployment":"single","clients_per_process":10000,"fault_phase":"random","events":"file","seed":1,
 "lookup":"retry"}
JSON
cat > "$work/schedule.jsonl" <<'JSON'
{"at_ms":250,"id":"f-0","kind":"kill","group":0,"slot":0,"restart":true}
{"at_ms":900,"id":"f-1","kind":"kill","group":1,"slot":0,"restart":true}
{"at_ms":1500,"id":"f-2","kind":"kill","group":2,"slot":0,"restart":true}
{"at_ms":2100,"id":"f-3","kind":"kill","group":0,"slot":0,"restart":true}
JSON
# single_run NAME CONFIG: one single-process run (run id smoke-NAME) and its checks.
single_run() {
  ev="$work/$1-events.jsonl"
  TROUPE_CONFIG="$2" TROUPE_SCHEDULE="$work/schedule.jsonl" TROUPE_EVENTS="$ev" \
    TROUPE_RUN_ID="smoke-$1" timeout 60 "$here/chat/run" 2> "$work/$1.err" \
    || { cat "$work/$1.err" >&2; fail "chat run $1 exited $?"; }

  has() { grep -q -- "$1" "$ev" || fail "no event line matching $1"; }
  count() { grep -c -- "$1" "$ev" || true; }
  common='"run":"smoke-'"$1"'","rt":"protoactor","node":"protoactor","ev":"'
  [ "$(grep -c '^{"ts_us":[0-9]*,'"$common" "$ev")" = "$(wc -l < "$ev")" ] || fail "a line lacks the common fields"
  head -1 "$ev" | grep -q '"ev":"run_started","workload":"chat","config":{' || fail "first line is not run_started"
  tail -1 "$ev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0}' \
    || fail "last line is not a clean run_finished: $(tail -1 "$ev")"
  has '"ev":"run_started".*"version":"protoactor-go '
  has '"ev":"ready","what":"chats","count":3}'
  has '"ev":"ready","what":"clients","count":9,"rss_bytes":[1-9]'
  has '"ev":"ready","what":"window","count":3,"start_us":[0-9]'
  for s in 0 1 2; do has "\"ev\":\"throughput\",\"second\":$s,\"count\":[1-9]"; done
  [ "$(count '"ev":"throughput"')" = 3 ] || fail "expected 3 throughput lines"
  for f in 0 1 2 3; do has "\"ev\":\"fault_injected\",\"id\":\"f-$f\",\"target\":\"chat-[0-2]\",\"kind\":\"kill\""; done
  # every kill is seen by the chat's 3 clients, and each of them rejoins
  det=$(count '"ev":"fault_detected","id":null,"target":"chat-[0-2]","by":"c[0-8]"')
  rec=$(count '"ev":"reconnected","target":"chat-[0-2]","by":"c[0-8]","ms":[0-9]')
  [ "$det" = 12 ] || fail "expected 12 fault_detected lines, got $det"
  [ "$rec" = 12 ] || fail "expected 12 reconnected lines, got $rec"
  echo "smoke protoactor chat: single $1 ok ($(wc -l < "$ev") event lines, $det detections, $rec reconnections)"
}
# parked_ok STDERR: with lookup = "park", discovery's end-of-run line says every parked lookup
# was answered once: by the chat's registration or by its retry_delay_ms timer.
parked_ok() {
  local l n r t
  l=$(grep -o 'discovery (lookup=park): [0-9]* lookups parked, [0-9]* answered by a registration, [0-9]* timed out' "$1") \
    || fail "no discovery (lookup=park) line in $1"
  read -r n r t <<< "$(echo "$l" | grep -o '[0-9]*' | tr '\n' ' ')"
  [ "$n" = "$((r + t))" ] || fail "parked lookups not all answered once: $l"
  echo "smoke protoactor chat: $l"
}
single_run chat "$work/config.json"
# The same run with lookup = "park": discovery holds a lookup for a restarting chat.
sed -e 's/"lookup":"retry"/"lookup":"park"/' "$work/config.json" > "$work/park.json"
single_run park "$work/park.json"
parked_ok "$work/park.err"
# An unknown lookup mode is refused at start (exit 2), naming the key.
sed -e 's/"lookup":"retry"/"lookup":"wait"/' "$work/config.json" > "$work/bad.json"
rc=0
TROUPE_CONFIG="$work/bad.json" TROUPE_EVENTS="$work/bad-events.jsonl" "$here/chat/run" 2> "$work/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "lookup=wait: exit $rc, expected 2"
grep -q 'lookup="wait"' "$work/bad.err" || fail "lookup=wait: no message naming the key: $(cat "$work/bad.err")"

# --- chat, deployment=distributed -----------------------------------------------------------
# 2 server processes x 3 chats x 3 clients in 3 client processes (clients_per_process 7: 7+7+4),
# one kill or poison per chat group, each injected from another process than the chat's.
sed -e 's/"deployment":"single"/"deployment":"distributed"/' -e 's/"num_supervisor":1/"num_supervisor":2/' \
    -e 's/"clients_per_process":10000/"clients_per_process":7/' "$work/config.json" > "$work/dist.json"
cat > "$work/dist.jsonl" <<'JSON'
{"at_ms":250,"id":"d-0","kind":"kill","group":0,"slot":0,"restart":true}
{"at_ms":900,"id":"d-1","kind":"error","group":3,"slot":0,"restart":true}
{"at_ms":1500,"id":"d-2","kind":"kill","group":5,"slot":0,"restart":true}
{"at_ms":2100,"id":"d-3","kind":"kill","group":2,"slot":0,"restart":true}
JSON
# dist_run NAME CONFIG: one distributed run (run id smoke-NAME) and its checks.
dist_run() {
  dev="$work/$1-events.jsonl"
  TROUPE_CONFIG="$2" TROUPE_SCHEDULE="$work/dist.jsonl" TROUPE_EVENTS="$dev" \
    TROUPE_RUN_ID="smoke-$1" timeout 60 "$here/chat/run" 2> "$work/$1.err" \
    || { cat "$work/$1.err" >&2; fail "distributed chat run $1 exited $?"; }
  dhas() { grep -q -- "$1" "$dev" || fail "distributed: no event line matching $1"; }
  dcount() { grep -c -- "$1" "$dev" || true; }
  nodes="discovery server-0 server-1 clients-0 clients-1 clients-2"
  [ "$(grep -c '^{"ts_us":[0-9]*,"run":"smoke-'"$1"'","rt":"protoactor","node":"[a-z0-9-]*","ev":"' "$dev")" = "$(wc -l < "$dev")" ] \
    || fail "distributed: a line lacks the common fields (or two lines were interleaved)"
  for n in $nodes; do
    [ "$(dcount "\"node\":\"$n\",\"ev\":\"run_started\"")" = 1 ] || fail "distributed: $n has no run_started"
    grep "\"node\":\"$n\"," "$dev" | tail -1 | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0' \
      || fail "distributed: $n's last line is not a clean run_finished"
  done
  dhas '"node":"discovery","ev":"run_finished",.*"failed_nodes":\[\]'
  dhas '"node":"server-0","ev":"ready","what":"chats","count":3,'
  dhas '"node":"server-1","ev":"ready","what":"chats","count":3,'
  dhas '"node":"clients-0","ev":"ready","what":"clients","count":7,"rss_bytes":[1-9]'
  dhas '"node":"clients-1","ev":"ready","what":"clients","count":7,"rss_bytes":[1-9]'
  dhas '"node":"clients-2","ev":"ready","what":"clients","count":4,"rss_bytes":[1-9]'
  dhas '"node":"discovery","ev":"ready","what":"window","count":3,"start_us":[0-9]'
  # every client process receives broadcasts every second (ceiling 105, 105, 60)
  for g in 0 1 2; do for s in 0 1 2; do
    dhas "\"node\":\"clients-$g\",\"ev\":\"throughput\",\"second\":$s,\"count\":[1-9]"
  done; done
  # the injector of chat c runs in the group holding client 3c: chats 0,2 -> clients-0, 3 -> clients-1, 5 -> clients-2
  dhas '"node":"clients-0","ev":"fault_injected","id":"d-0","target":"chat-0","kind":"kill"'
  dhas '"node":"clients-1","ev":"fault_injected","id":"d-1","target":"chat-3","kind":"error"'
  dhas '"node":"clients-2","ev":"fault_injected","id":"d-2","target":"chat-5","kind":"kill"'
  dhas '"node":"clients-0","ev":"fault_injected","id":"d-3","target":"chat-2","kind":"kill"'
  dhas '"node":"server-1","ev":"restarted","target":"chat-3","attempt":1'
  # each hurt chat's 3 clients detect the failure across processes and rejoin
  ddet=$(dcount '"ev":"fault_detected","id":null,"target":"chat-[0-5]","by":"c[0-9]*"')
  drec=$(dcount '"ev":"reconnected","target":"chat-[0-5]","by":"c[0-9]*","ms":[0-9]')
  [ "$ddet" = 12 ] || fail "distributed: expected 12 fault_detected lines, got $ddet"
  [ "$drec" = 12 ] || fail "distributed: expected 12 reconnected lines, got $drec"
  dhas '"node":"clients-1","ev":"fault_detected","id":null,"target":"chat-3","by":"c9"'
  dhas '"node":"clients-2","ev":"reconnected","target":"chat-5","by":"c17"'
  echo "smoke protoactor chat: distributed $1 ok (6 processes, $(wc -l < "$dev") event lines, $ddet detections, $drec reconnections)"
}
dist_run dist "$work/dist.json"
# The same run with lookup = "park" (discovery answers parked lookups across processes).
sed -e 's/"lookup":"retry"/"lookup":"park"/' "$work/dist.json" > "$work/dist-park.json"
dist_run dist-park "$work/dist-park.json"
parked_ok "$work/dist-park.err"

# A node process that dies must fail the run: kill -9 client group 0 (its pid is in its ready
# line) during the window; the orchestrator must name it in failed_nodes, kill and reap the
# other node processes and still end by itself.
kev="$work/kill-events.jsonl"
TROUPE_CONFIG="$work/dist.json" TROUPE_SCHEDULE="$work/dist.jsonl" TROUPE_EVENTS="$kev" \
  TROUPE_RUN_ID=smoke-kill timeout 60 "$here/chat/run" 2> "$work/kill.err" &
orch=$!
victim=""
for _ in $(seq 1 300); do  # up to 30 s for the set-up
  victim=$(grep -o '"node":"clients-0","ev":"ready","what":"clients",[^}]*"pid":[0-9]*' "$kev" 2>/dev/null | grep -o '[0-9]*$' || true)
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { kill "$orch" 2>/dev/null; fail "kill test: clients-0 never got ready"; }
sleep 1
kill -9 "$victim"
wait "$orch" || true
grep -q '"node":"discovery","ev":"run_finished",.*"failed_nodes":\["clients-0 (killed by signal 9)"\]' "$kev" \
  || fail "kill test: the orchestrator did not report clients-0 killed: $(grep '"node":"discovery","ev":"run_finished"' "$kev")"
for p in $(grep -o '"ev":"ready","what":"[a-z]*","count":[0-9]*,"rss_bytes":[0-9]*,"pid":[0-9]*' "$kev" | grep -o '[0-9]*$'); do
  ! kill -0 "$p" 2>/dev/null || { kill -9 "$p"; fail "kill test: node process $p outlived the orchestrator"; }
done
echo "smoke protoactor chat: a killed node process fails the run (failed_nodes) and nothing outlives it"
TROUPE_PA_ORCH=127.0.0.1:1 TROUPE_CONFIG="$work/dist.json" TROUPE_SCHEDULE="$work/dist.jsonl" \
  TROUPE_EVENTS="$work/orphan.jsonl" TROUPE_RUN_ID=smoke-orphan timeout 60 "$here/chat/run" clients 9 2> "$work/orphan.err" \
  && fail "a client group outside the config exited 0"
grep -q 'client group 9 does not exist' "$work/orphan.err" || fail "no error line for a client group outside the config"
echo "smoke protoactor chat: ok"
# The behaviour contract, checked on short runs (docs/lab.md, "Checking conformance").
"$here/../lib/conform.sh" chat protoactor
bash "$(dirname "${BASH_SOURCE[0]}")/../lib/amqp-smoke.sh" protoactor chat  # the same run through RabbitMQ and through a file
