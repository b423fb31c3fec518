#!/usr/bin/env bash
# smoke.sh: builds the Elixir chat peer, checks its formatting, runs its ExUnit tests (the JSON encoder/decoder, the
# config and schedule readers), then a 3-second single-process chat run (3 chats x 3 clients)
# on a hand-written config and schedule (kills, a poison message, a cpu stress) and checks the
# event lines it appends (docs/chat.md, "The chat peer contract"): the common fields, the ready
# events, one throughput line per window second near the ceiling, every fault carried out,
# detected by each client of the chat and followed by its rejoin, the restarts, and a clean
# run_finished; the same counts with lookup=park. Then the same on deployment=distributed (4 nodes on loopback) and a malformed
# config (exit 2). About 30 s on a 2-core machine.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fail() { echo "smoke elixir chat: FAIL: $*" >&2; exit 1; }

"$here/chat/build"
(cd "$here/chat" && mix format --check-formatted) || fail "the Elixir code is not formatted (mix format)"
(cd "$here/chat" && mix test) || fail "mix test failed"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# Every key of the chat key table; 1 supervisor x 3 chats x 3 clients, 3 s window.
cat > "$work/config.json" <<'JSON'
{"test_type":"throughput","num_supervisor":1,"chats_per_sup":3,"clients_per_server":3,
 "fault_pause_ms":1000,"msg_type":"kill","test_duration_secs":3,"warmup_s":1,
 "send_interval_ms":200,"retry_delay_ms":10,"retry_max":500,"lookup":"retry","stress_ms":50,"stress_mb":64,
 "deployment":"single","clients_per_process":10000,"fault_phase":"random","events":"file","seed":1}
JSON
# Two kills and a poison message on three different chats, a second kill of chat 0, and a cpu
# stress of chat 1 (the chat holds its handler 50 ms; nobody detects anything).
cat > "$work/schedule.jsonl" <<'JSON'
{"at_ms":300,"id":"f-0","kind":"kill","group":0,"slot":0,"restart":true}
{"at_ms":900,"id":"f-1","kind":"kill","group":2,"slot":0,"restart":true}
{"at_ms":1400,"id":"f-2","kind":"error","group":1,"slot":0,"restart":true}
{"at_ms":2000,"id":"f-3","kind":"kill","group":0,"slot":0,"restart":true}
{"at_ms":2500,"id":"f-4","kind":"cpu","group":1,"slot":0,"restart":true}
JSON
ev="$work/events.jsonl"
TROUPE_CONFIG="$work/config.json" TROUPE_SCHEDULE="$work/schedule.jsonl" TROUPE_EVENTS="$ev" \
  TROUPE_RUN_ID=smoke-chat timeout 60 "$here/chat/run" 2> "$work/stderr.txt" \
  || { cat "$work/stderr.txt" >&2; fail "chat run exited non-zero"; }
# The injected crashes are filtered from the log: nothing on stderr.
[ ! -s "$work/stderr.txt" ] || { cat "$work/stderr.txt" >&2; fail "the run wrote to stderr"; }

has() { grep -q -- "$1" "$ev" || fail "no event line matching $1"; }
count() { grep -c -- "$1" "$ev" || true; }
common='"run":"smoke-chat","rt":"elixir","node":"elixir","ev":"'
[ "$(grep -c '^{"ts_us":[0-9]\{16\},'"$common" "$ev")" = "$(wc -l < "$ev")" ] || fail "a line lacks the common fields"
head -1 "$ev" | grep -q '"ev":"run_started","workload":"chat","config":{' || fail "first line is not run_started"
tail -1 "$ev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0,"injected":5}' \
  || fail "last line is not a clean run_finished: $(tail -1 "$ev")"
has '"ev":"run_started".*"version":"Elixir 1\.'
has '"ev":"ready","what":"chats","count":3}'
has '"ev":"ready","what":"clients","count":9,"rss_bytes":[1-9]'
has '"ev":"ready","what":"window","count":3,"start_us":[0-9]'
for s in 0 1 2; do has "\"ev\":\"throughput\",\"second\":$s,\"count\":[1-9]"; done
[ "$(count '"ev":"throughput"')" = 3 ] || fail "expected 3 throughput lines"
# 9 clients each posting every 200 ms to 3 members: 135 broadcasts a second. A second can count
# more when the machine stalled the one before (posts late by a tick land in the next second),
# so the ceiling is checked on the window's total: 3 x 135, plus one tick of every client (27).
last="$(grep '"ev":"throughput","second":2,' "$ev" | sed 's/.*"count":\([0-9]*\).*/\1/')"
total="$(grep '"ev":"throughput"' "$ev" | sed 's/.*"count":\([0-9]*\).*/\1/' | awk '{t += $1} END {print t + 0}')"
[ "$last" -ge 90 ] || fail "$last broadcasts in the last second (expected near 135)"
[ "$total" -le 432 ] || fail "$total broadcasts over the 3 s window (ceiling 3 x 135 + 27)"
has '"ev":"fault_injected","id":"f-0","target":"chat-0","kind":"kill"}'
has '"ev":"fault_injected","id":"f-1","target":"chat-2","kind":"kill"}'
has '"ev":"fault_injected","id":"f-2","target":"chat-1","kind":"error"}'
has '"ev":"fault_injected","id":"f-3","target":"chat-0","kind":"kill"}'
has '"ev":"fault_injected","id":"f-4","target":"chat-1","kind":"cpu"}'
# Every crash is seen by the chat's 3 clients, and each of them rejoins: 4 x 3.
det=$(count '"ev":"fault_detected","id":null,"target":"chat-[0-2]","by":"c[0-8]"}')
rec=$(count '"ev":"reconnected","target":"chat-[0-2]","by":"c[0-8]","ms":[0-9]')
[ "$det" = 12 ] || fail "expected 12 fault_detected lines, got $det"
[ "$rec" = 12 ] || fail "expected 12 reconnected lines, got $rec"
has '"ev":"fault_detected","id":null,"target":"chat-1","by":"c4"}'
# Restarts after the kills and the poison message: chat-0 twice, chat-1 and chat-2 once.
[ "$(count '"ev":"restarted"')" = 4 ] || fail "expected 4 restarted lines, got $(count '"ev":"restarted"')"
has '"ev":"restarted","target":"chat-0","attempt":2}'
has '"ev":"restarted","target":"chat-1","attempt":1}'
# Order: every detection follows its chat's injection (the injector emits before it hurts).
awk '{
    match($0, /"ts_us":[0-9]+/); ts = substr($0, RSTART + 8, RLENGTH - 8) + 0
    match($0, /"target":"[^"]*"/); t = substr($0, RSTART, RLENGTH)
    if ($0 ~ /"ev":"fault_injected"/) last[t] = ts
    else if ($0 ~ /"ev":"fault_detected"/ && (!(t in last) || last[t] > ts)) bad = 1
} END { exit bad }' "$ev" || fail "a detection precedes its injection"

# lookup=park (docs/chat.md, "Behaviour contract", rule 3): discovery holds a lookup for a
# restarting chat until it registers; the same run makes the same counts.
sed 's/"lookup":"retry"/"lookup":"park"/' "$work/config.json" > "$work/park.json"
grep -q '"lookup":"park"' "$work/park.json" || fail "the park config was not made"
pev="$work/park.jsonl"
TROUPE_CONFIG="$work/park.json" TROUPE_SCHEDULE="$work/schedule.jsonl" TROUPE_EVENTS="$pev" \
  TROUPE_RUN_ID=smoke-park timeout 60 "$here/chat/run" 2> "$work/park.err" \
  || { cat "$work/park.err" >&2; fail "lookup=park: chat run exited non-zero"; }
tail -1 "$pev" | grep -q '"ev":"run_finished","dropped_events":0,"errors":0,"skipped_faults":0,"injected":5}' \
  || fail "lookup=park: last line is not a clean run_finished: $(tail -1 "$pev")"
pdet=$(grep -c '"ev":"fault_detected","id":null,"target":"chat-[0-2]","by":"c[0-8]"}' "$pev" || true)
prec=$(grep -c '"ev":"reconnected","target":"chat-[0-2]","by":"c[0-8]","ms":[0-9]' "$pev" || true)
[ "$pdet" = 12 ] || fail "lookup=park: expected 12 fault_detected lines, got $pdet"
[ "$prec" = 12 ] || fail "lookup=park: expected 12 reconnected lines, got $prec"

# deployment=distributed: the same system over Erlang distribution, one node per group: 1 server
# node, 2 client nodes (5 + 4 clients), the discovery node; the same schedule.
sed 's/"deployment":"single"/"deployment":"distributed"/; s/"clients_per_process":10000/"clients_per_process":5/' \
  "$work/config.json" > "$work/dist.json"
dev="$work/dist.jsonl"
TROUPE_CONFIG="$work/dist.json" TROUPE_SCHEDULE="$work/schedule.jsonl" TROUPE_EVENTS="$dev" \
  TROUPE_RUN_ID=smoke-dist timeout 120 "$here/chat/run" 2> "$work/dist.err" \
  || { cat "$work/dist.err" >&2; fail "distributed chat run exited non-zero"; }
dhas() { grep -q -- "$1" "$dev" || fail "distributed: no event line matching $1"; }
dcount() { grep -c -- "$1" "$dev" || true; }
for n in discovery server-0 clients-0 clients-1; do
  [ "$(dcount "\"node\":\"$n\",\"ev\":\"run_started\"")" = 1 ] || fail "distributed: no run_started from $n"
  [ "$(dcount "\"node\":\"$n\",\"ev\":\"run_finished\",\"dropped_events\":0,\"errors\":0,")" = 1 ] \
    || fail "distributed: no clean run_finished from $n"
done
[ "$(dcount '"ev":"run_started"')" = 4 ] || fail "distributed: expected 4 nodes"
dhas '"node":"server-0","ev":"ready","what":"chats","count":3}'
dhas '"node":"clients-0","ev":"ready","what":"clients","count":5,"rss_bytes":[1-9]'
dhas '"node":"clients-1","ev":"ready","what":"clients","count":4,"rss_bytes":[1-9]'
dhas '"node":"discovery","ev":"ready","what":"window","count":3,"start_us":[0-9]'
for n in clients-0 clients-1; do
  for s in 0 1 2; do dhas "\"node\":\"$n\",\"ev\":\"throughput\",\"second\":$s,\"count\":[1-9]"; done
done
# clients-0 holds c0-c4, clients-1 c5-c8: chat 1's members span both nodes. A chat's injector runs
# where its first client is (chats 0 and 1 on clients-0, chat 2 on clients-1); every crash is
# detected by its chat's 3 clients wherever they are.
[ "$(dcount '"ev":"fault_injected"')" = 5 ] || fail "distributed: expected 5 faults injected"
dhas '"node":"clients-1","ev":"fault_injected","id":"f-1","target":"chat-2","kind":"kill"}'
ddet=$(dcount '"ev":"fault_detected","id":null,"target":"chat-[0-2]","by":"c[0-8]"}')
drec=$(dcount '"ev":"reconnected","target":"chat-[0-2]","by":"c[0-8]","ms":[0-9]')
[ "$ddet" = 12 ] || fail "distributed: expected 12 fault_detected lines, got $ddet"
[ "$drec" = 12 ] || fail "distributed: expected 12 reconnected lines, got $drec"
dhas '"node":"server-0","ev":"restarted","target":"chat-0","attempt":2}'
tail -1 "$dev" | grep -q '"node":"discovery","ev":"run_finished"' || fail "distributed: discovery did not finish last"
# Nothing outlives the run: no node of this run's cookie is left.
sleep 1
! pgrep -f 'beam.*-name (discovery|server-0|clients-[01])@127\.0\.0\.1' >/dev/null || fail "distributed: a node outlived the run"

# A malformed config is a configuration error (exit 2), not a crash.
echo '{"chats_per_sup":"three","deployment":"single"}' > "$work/bad.json"
rc=0
TROUPE_CONFIG="$work/bad.json" TROUPE_EVENTS="$work/bad.jsonl" TROUPE_RUN_ID=smoke-bad \
  timeout 60 "$here/chat/run" 2> "$work/bad.err" || rc=$?
[ "$rc" = 2 ] || fail "a malformed config exited $rc, not 2"
grep -q "chats_per_sup" "$work/bad.err" || fail "the refusal does not name the bad key"
echo "smoke elixir chat: ok (single: $(wc -l < "$ev") event lines, $det detections, $rec reconnections; park: $prec reconnections; distributed: 4 nodes, $ddet detections, $drec reconnections)"
# The behaviour contract, checked on short runs (docs/lab.md, "Checking conformance").
"$here/../lib/conform.sh" chat elixir
bash "$(dirname "${BASH_SOURCE[0]}")/../lib/amqp-smoke.sh" elixir chat  # the same run through RabbitMQ and through a file
