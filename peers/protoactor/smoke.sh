#!/usr/bin/env bash
# smoke.sh: builds every Proto.Actor (Go) peer workload and runs a very short run of each:
# the micro-benchmarks, checking the contract's output shape (see peers/lib/micro-smoke.sh),
# then a 3-second single-process chat run with a hand-written config and kill schedule,
# checking its event lines (docs/lab.md, "The chat peer contract"). About 10 s in all.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

"$here/../lib/micro-smoke.sh" protoactor

# --- chat ---------------------------------------------------------------------------------
fail() { echo "smoke protoactor chat: FAIL: $*" >&2; exit 1; }
"$here/chat/build"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Every key of the chat key table; 1 supervisor x 3 chats x 3 clients, 3 s window.
cat > "$work/config.json" <<'JSON'
{"test_type":"throughput","num_supervisor":1,"chats_per_sup":3,"clients_per_server":3,
 "fault_pause_ms":1000,"msg_type":"kill","test_duration_secs":3,"warmup_s":1,
 "send_interval_ms":200,"retry_delay_ms":10,"retry_max":500,"stress_ms":100,"stress_mb":64,
 "deployment":"single","clients_per_process":10000,"fault_phase":"random","events":"file","seed":1}
JSON
cat > "$work/schedule.jsonl" <<'JSON'
{"at_ms":250,"id":"f-0","kind":"kill","group":0,"slot":0,"restart":true}
{"at_ms":900,"id":"f-1","kind":"kill","group":1,"slot":0,"restart":true}
{"at_ms":1500,"id":"f-2","kind":"kill","group":2,"slot":0,"restart":true}
{"at_ms":2100,"id":"f-3","kind":"kill","group":0,"slot":0,"restart":true}
JSON
ev="$work/events.jsonl"
TROUPE_CONFIG="$work/config.json" TROUPE_SCHEDULE="$work/schedule.jsonl" TROUPE_EVENTS="$ev" \
  TROUPE_RUN_ID=smoke-chat timeout 60 "$here/chat/run" 2> "$work/stderr.txt" \
  || { cat "$work/stderr.txt" >&2; fail "chat run exited $?"; }

has() { grep -q -- "$1" "$ev" || fail "no event line matching $1"; }
count() { grep -c -- "$1" "$ev" || true; }
common='"run":"smoke-chat","rt":"protoactor","node":"protoactor","ev":"'
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
# deployment=distributed is refused with exit 2
sed 's/"deployment":"single"/"deployment":"distributed"/' "$work/config.json" > "$work/dist.json"
set +e
TROUPE_CONFIG="$work/dist.json" TROUPE_SCHEDULE="$work/schedule.jsonl" TROUPE_EVENTS="$work/dist.jsonl" \
  TROUPE_RUN_ID=smoke-dist "$here/chat/run" 2> "$work/dist.err"
rc=$?
set -e
[ "$rc" = 2 ] || fail "deployment=distributed exited $rc, not 2"
grep -q "deployment=distributed is not implemented" "$work/dist.err" || fail "no refusal line on stderr"
echo "smoke protoactor chat: ok ($(wc -l < "$ev") event lines, $det detections, $rec reconnections)"
