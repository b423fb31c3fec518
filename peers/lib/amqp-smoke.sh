#!/usr/bin/env bash
# amqp-smoke.sh RUNTIME WORKLOAD: checks a peer's `amqp://` event transport (events.md,
# "Transport") against a private RabbitMQ broker started with scripts/rabbitmq.sh.
#
#   bash peers/lib/amqp-smoke.sh elixir chat      (akka chat, protoactor chat, erlang scp, caf energy)
#
# What it checks, in order (exit 1 at the first failure, naming it):
# 1. The same short run twice through `troupe lab run WORKLOAD --runtime RUNTIME`: once with the
#    events in a file (the default), once with `--set events=amqp://...` (the lab's collector
#    consumes them from the broker). Both runs end ok (or both degraded), and their events.jsonl
#    hold the same node set, the same event kinds, and the same counts of the deterministic
#    ones: run_started and run_finished per node, the ready lines (what and count), the
#    fault_injected ids. Throughput and the like may differ.
# 2. The peer run by hand with TROUPE_EVENTS naming the live broker but no collector bound to
#    its run id exits non-zero (its lines cannot be routed: they would be lost), and says so
#    naming the URL with the password hidden.
# 3. The peer run by hand with TROUPE_EVENTS naming a port where no broker listens exits
#    non-zero with an error naming that URL, password hidden.
# 4. For erlang and elixir, the EUnit tests of the shared publisher (troupe_amqp_tests).
#
# The troupe binary is found by peers/lib/troupe-bin.sh. Without RabbitMQ installed the check
# prints a loud SKIPPED line and exits 0, unless TROUPE_TEST_REQUIRE_RABBITMQ=1 (scripts/test.sh sets it),
# when that is a failure. Every wait is bounded (timeouts on each run and on the broker).
set -euo pipefail

rt=${1:-}
workload=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
fail() { echo "amqp-smoke $rt $workload: FAIL: $*" >&2; exit 1; }
step() { echo "amqp-smoke $rt $workload: $*" >&2; }

# Short runs with faults, small enough for a loaded 2-core machine.
case "$rt/$workload" in
    elixir/chat | akka/chat | protoactor/chat)
        # Distributed: discovery, a server group and a client group publish, each on its own.
        sets=(num_supervisor=1 chats_per_sup=3 clients_per_server=2 test_duration_secs=2 warmup_s=1
              fault_pause_ms=700 msg_type=kill deployment=distributed) ;;
    erlang/scp)
        sets=(pairs=16 supervisors=4 delay_ms=50 payload_bytes=100 pattern=uniform failure_rate=2
              duration_s=2 warmup_s=1) ;;
    caf/energy | erlang/energy)
        sets=(workload=ping_pong mode=native clients=4 msgs=200 reps=2 meter=estimate) ;;
    *)
        echo "usage: $0 RUNTIME WORKLOAD, one of: elixir chat, akka chat, protoactor chat, erlang scp," \
             "erlang energy, caf energy (got: '$rt' '$workload')" >&2
        exit 2 ;;
esac

if [[ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] && ! command -v rabbitmq-server >/dev/null 2>&1; then
    msg="RabbitMQ is not installed (run \`bash scripts/install-rabbitmq.sh\`)"
    [[ ${TROUPE_TEST_REQUIRE_RABBITMQ:-0} != 1 ]] || fail "$msg"
    echo "SKIPPED ********** amqp-smoke $rt $workload: $msg; the amqp:// check did not run **********" >&2
    exit 0
fi

# The troupe binary (peers/lib/troupe-bin.sh: a stale release build could lack this workload's
# events key, so the workspace's debug build is brought up to date).
. "$here/troupe-bin.sh"
troupe_bin=$(find_troupe_bin "$root") || fail "no usable troupe binary (reason above)"

tmp=$(mktemp -d)
broker=$tmp/broker
cleanup() {
    bash "$root/scripts/rabbitmq.sh" stop "$broker" >/dev/null 2>&1 || echo "amqp-smoke: stopping the broker under $broker failed" >&2
    rm -rf "$tmp"
}
trap cleanup EXIT
url=$(bash "$root/scripts/rabbitmq.sh" start "$broker") || fail "the private broker did not start (scripts/rabbitmq.sh start)"
[[ $url == amqp://guest:guest@127.0.0.1:* ]] || fail "unexpected broker URL: $url"
step "private broker at ${url/guest:guest@/guest:***@}"

# --- 1. the same run through a file and through the broker --------------------------------
lab_run() {   # name, extra --set...
    local name=$1; shift
    local args=(lab run "$workload" --runtime "$rt" --out "$tmp/$name")
    for s in "${sets[@]}" "$@"; do args+=(--set "$s"); done
    local rc=0
    (cd "$root" && TROUPE_HOME="$root" timeout 600 "$troupe_bin" "${args[@]}") >"$tmp/$name.out" 2>&1 || rc=$?
    if [[ $rc -ne 0 && $rc -ne 5 ]]; then
        cat "$tmp/$name.out" >&2
        [[ -f $tmp/$name/stderr.txt ]] && tail -20 "$tmp/$name/stderr.txt" >&2
        fail "the $name run exited $rc"
    fi
    [[ -f $tmp/$name/events.jsonl ]] || fail "the $name run has no events.jsonl"
    echo "$rc"
}
rc_file=$(lab_run file)
rc_amqp=$(lab_run amqp "events=$url")
[[ $rc_file == "$rc_amqp" ]] || fail "the file run exited $rc_file, the amqp run $rc_amqp"
grep -q '"events": *"amqp://guest:\*\*\*@127.0.0.1:' "$tmp/amqp/manifest.json" ||
    fail "the amqp run's manifest does not record the amqp:// transport (password hidden)"
grep -q 'guest:guest@' "$tmp/amqp/manifest.json" && fail "the amqp run's manifest shows the password"

# A summary of the deterministic parts of an events.jsonl, one fact per line, sorted.
facts() {
    local ev=$1
    local pat
    # the node set, the event kinds; run_started and run_finished per node; the ready lines
    # (what and count); the injected faults by id (a pattern may match nothing: grep || true)
    for pat in '"node":"[^"]*"' '"ev":"[a-z_]*"'; do
        { grep -o "$pat" "$ev" || true; } | sort -u
    done
    for pat in '"node":"[^"]*","ev":"run_\(started\|finished\)"' \
               '"ev":"ready","what":"[^"]*","count":[0-9]*' \
               '"ev":"fault_injected","id":\("[^"]*"\|[^,}]*\)'; do
        { grep -o "$pat" "$ev" || true; } | sort | uniq -c | sed 's/^ *//'
    done
}
facts "$tmp/file/events.jsonl" >"$tmp/file.facts"
facts "$tmp/amqp/events.jsonl" >"$tmp/amqp.facts"
grep -q '^"ev":"run_finished"' "$tmp/file.facts" || fail "the file run has no run_finished"
if ! diff -u "$tmp/file.facts" "$tmp/amqp.facts" >"$tmp/facts.diff"; then
    cat "$tmp/facts.diff" >&2
    fail "the events through the broker differ from the events through a file (diff above: - file, + amqp)"
fi
nodes=$(grep -c '^"node"' "$tmp/amqp.facts" || true)
kinds=$(grep -c '^"ev"' "$tmp/amqp.facts" || true)
faults=$(grep -c '^[0-9].*fault_injected' "$tmp/amqp.facts" || true)
step "file and amqp runs agree: $nodes node(s), $kinds event kinds, $faults fault ids," \
     "$(wc -l <"$tmp/amqp/events.jsonl") lines through the broker"

# --- 2 and 3. the peer alone: unroutable lines and an unreachable broker fail the run --------
run_peer() {   # name, TROUPE_EVENTS: runs the peer's program with the file run's config
    local name=$1 target=$2 rc=0
    TROUPE_CONFIG="$tmp/file/config.json" TROUPE_SCHEDULE="$tmp/file/schedule.jsonl" \
        TROUPE_EVENTS="$target" TROUPE_RUN_ID="amqp-smoke-$name" TROUPE_EXE="$troupe_bin" \
        timeout 300 "$root/peers/$rt/$workload/run" >"$tmp/$name.stdout" 2>"$tmp/$name.stderr" </dev/null || rc=$?
    echo "$rc"
}
rc=$(run_peer nocollector "$url")
[[ $rc -ne 0 && $rc -ne 124 ]] || { tail -20 "$tmp/nocollector.stderr" >&2; fail "with no collector bound the peer exited $rc (expected a failure, not a hang or success)"; }
grep -q 'guest:\*\*\*@127.0.0.1' "$tmp/nocollector.stderr" && grep -qi 'route' "$tmp/nocollector.stderr" ||
    { tail -20 "$tmp/nocollector.stderr" >&2; fail "with no collector bound the error does not name the URL and the unroutable lines"; }
grep -q 'guest:guest@' "$tmp/nocollector.stderr" && fail "an error message shows the broker password"
step "no collector bound: the peer exits $rc and says the lines could not be routed"

dead_port=$(erl -noshell -noinput -eval '{ok, S} = gen_tcp:listen(0, [{ip, {127,0,0,1}}]), {ok, P} = inet:port(S), io:format("~b", [P]), halt().' 2>/dev/null) ||
    fail "could not pick a free port (erl)"
rc=$(run_peer nobroker "amqp://guest:s3cret@127.0.0.1:$dead_port/%2f")
[[ $rc -ne 0 && $rc -ne 124 ]] || { tail -20 "$tmp/nobroker.stderr" >&2; fail "with no broker the peer exited $rc (expected a failure, not a hang or success)"; }
grep -q "cannot reach the RabbitMQ broker at amqp://guest:\*\*\*@127.0.0.1:$dead_port" "$tmp/nobroker.stderr" ||
    { tail -20 "$tmp/nobroker.stderr" >&2; fail "with no broker the error does not name the URL"; }
grep -q 's3cret' "$tmp/nobroker.stderr" && fail "an error message shows the broker password"
step "no broker: the peer exits $rc naming the URL, password hidden"

# --- 4. the shared Erlang publisher's unit tests -------------------------------------------
if [[ $rt == erlang || $rt == elixir ]]; then
    mkdir -p "$tmp/ebin"
    erlc -o "$tmp/ebin" "$root"/peers/erlang/common/*.erl "$root"/peers/erlang/common/amqp/*.erl
    erl -noshell -noinput -pa "$tmp/ebin" -eval \
        'case eunit:test([troupe_amqp_tests]) of ok -> halt(0); _ -> halt(1) end.' >&2 ||
        fail "EUnit tests of peers/erlang/common/troupe_amqp_tests.erl"
fi
step "ok"
