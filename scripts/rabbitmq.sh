#!/usr/bin/env bash
# rabbitmq.sh: a PRIVATE RabbitMQ node for the lab's `amqp://` event transport.
#
#   bash scripts/rabbitmq.sh start DIR   start a node whose every file lives under DIR; prints
#                                         its amqp:// URL once it accepts AMQP connections
#   bash scripts/rabbitmq.sh url DIR     print the URL of the node running under DIR
#   bash scripts/rabbitmq.sh stop DIR    stop that node and its epmd; nothing is left running
#
# Rules:
# 1. Every file the node writes (mnesia, logs, pid, config, plugins list, Erlang cookie in
#    DIR/home) is under DIR; the system's /etc/rabbitmq and /var/lib/rabbitmq are not read.
# 2. Three free loopback ports are picked at start: AMQP, Erlang distribution and a private
#    epmd (ERL_EPMD_PORT), all bound to 127.0.0.1, so the node never clashes with a system
#    RabbitMQ, the default epmd (4369) or the Erlang tests that start their own epmd. The node
#    name is troupe-AMQPPORT@localhost. No plugin is enabled (no management UI).
# 3. `start` waits at most 60 s for an AMQP protocol header to be answered; on failure it
#    stops whatever it started, prints the log tail and exits 1.
# 4. `stop` asks the node to stop (at most 30 s), then ends the node's process group and the
#    private epmd (TERM, then KILL after 10 s); it only signals the processes `start` recorded,
#    and only while their environment still names DIR.
# 5. The URL is amqp://guest:guest@127.0.0.1:PORT/%2f (guest may log in over loopback only).
set -euo pipefail

usage() { echo "usage: $0 start|stop|url DIR" >&2; exit 2; }
[[ $# -eq 2 ]] || usage
cmd=$1
mkdir -p "$2"
dir=$(cd "$2" && pwd)
state="$dir/node.env"

bin_dir() {
    if [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]]; then echo /usr/lib/rabbitmq/bin; return; fi
    local s
    s=$(command -v rabbitmq-server 2>/dev/null) || {
        echo "rabbitmq.sh: rabbitmq-server is not installed; run \`bash scripts/install-rabbitmq.sh\`" >&2
        exit 3
    }
    dirname "$s"
}

# The environment both the server and rabbitmqctl need (rule 1, rule 2).
node_env() {
    export HOME="$dir/home"
    export RABBITMQ_CONF_ENV_FILE="$dir/rabbitmq-env.conf"
    export RABBITMQ_CONFIG_FILE="$dir/rabbitmq.conf"
    export RABBITMQ_ADVANCED_CONFIG_FILE="$dir/advanced.config"
    export RABBITMQ_ENABLED_PLUGINS_FILE="$dir/enabled_plugins"
    export RABBITMQ_MNESIA_BASE="$dir/mnesia"
    export RABBITMQ_LOG_BASE="$dir/log"
    export RABBITMQ_PID_FILE="$dir/rabbit.pid"
    export RABBITMQ_NODENAME="$NODENAME"
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1
    export RABBITMQ_NODE_PORT="$AMQP_PORT"
    export RABBITMQ_DIST_PORT="$DIST_PORT"
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
    export ERL_EPMD_PORT="$EPMD_PORT"
    export ERL_EPMD_ADDRESS=127.0.0.1
}

url() { echo "amqp://guest:guest@127.0.0.1:$AMQP_PORT/%2f"; }

# Answers 0 when the port speaks AMQP 0-9-1: the server answers our protocol header with a
# frame whose first byte is 1 (bash's /dev/tcp; at most 2 s per try).
amqp_ready() {
    local b=""
    (
        exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
        printf 'AMQP\x00\x00\x09\x01' >&3
        LC_ALL=C IFS= read -r -d '' -n 1 -t 2 b <&3 || true
        [[ $b == $'\x01' ]]
    ) 2>/dev/null
}

alive() { [[ -n ${1:-} ]] && kill -0 "$1" 2>/dev/null; }
group_alive() { [[ -n ${1:-} ]] && kill -0 -- "-$1" 2>/dev/null; }

# Whether pid $1 carries this node's environment (so a recorded pid reused by another process
# after a crash or reboot is never signalled).
pid_ours() {
    [[ -n ${1:-} ]] && tr '\0' '\n' 2>/dev/null <"/proc/$1/environ" | grep -qxF "RABBITMQ_MNESIA_BASE=$dir/mnesia"
}
group_ours() {
    local p
    [[ -n ${1:-} ]] || return 1
    for p in $(ps -eo pid=,pgid= | awk -v g="$1" '$2 == g { print $1 }'); do
        pid_ours "$p" && return 0
    done
    return 1
}

# Rule 4: signal only what start recorded, and only while it is still ours; bounded waits.
stop_recorded() {
    local i group="" epmd=""
    group_ours "${SERVER_PGID:-}" && group=$SERVER_PGID
    pid_ours "${EPMD_PID:-}" && epmd=$EPMD_PID
    for sig in TERM KILL; do
        if group_alive "$group"; then kill "-$sig" -- "-$group" 2>/dev/null || true; fi
        if alive "$epmd"; then kill "-$sig" "$epmd" 2>/dev/null || true; fi
        for ((i = 0; i < 100; i++)); do
            group_alive "$group" || alive "$epmd" || return 0
            sleep 0.1
        done
    done
    if group_alive "$group" || alive "$epmd"; then
        echo "rabbitmq.sh: processes of group ${group:-?} or epmd ${epmd:-?} survived SIGKILL" >&2
        return 1
    fi
}

case $cmd in
start)
    if [[ -f $state ]]; then
        # shellcheck disable=SC1090
        . "$state"
        if group_ours "${SERVER_PGID:-}" && amqp_ready "$AMQP_PORT"; then url; exit 0; fi
        echo "rabbitmq.sh: a stale node record in $dir; cleaning it up" >&2
        stop_recorded || true
        rm -f "$state"
    fi
    bin=$(bin_dir)
    # Three free loopback ports, held open together while Erlang (which RabbitMQ brings) picks them.
    read -r AMQP_PORT DIST_PORT EPMD_PORT < <(erl -noshell -noinput -eval '
        Ps = [begin {ok, S} = gen_tcp:listen(0, [{ip, {127,0,0,1}}]), {ok, P} = inet:port(S), P end
              || _ <- [1, 2, 3]],
        io:format("~w ~w ~w~n", Ps), halt().')
    [[ -n ${EPMD_PORT:-} ]] || { echo "rabbitmq.sh: could not pick free loopback ports with erl" >&2; exit 1; }
    NODENAME="troupe-$AMQP_PORT@localhost"
    mkdir -p "$dir/home" "$dir/log" "$dir/mnesia"
    : >"$dir/rabbitmq-env.conf"
    echo "[]." >"$dir/enabled_plugins"
    cat >"$dir/rabbitmq.conf" <<EOF
listeners.tcp.default = 127.0.0.1:$AMQP_PORT
loopback_users.guest = true
log.console = false
log.file.level = info
EOF
    node_env
    epmd_bin=$(command -v epmd || echo "$(dirname "$(readlink -f "$(command -v erl)")")/epmd")
    setsid "$epmd_bin" -port "$EPMD_PORT" -address 127.0.0.1 </dev/null >"$dir/log/epmd.log" 2>&1 &
    EPMD_PID=$!
    setsid "$bin/rabbitmq-server" </dev/null >"$dir/log/server.out" 2>&1 &
    SERVER_PGID=$!
    cat >"$state" <<EOF
AMQP_PORT=$AMQP_PORT
DIST_PORT=$DIST_PORT
EPMD_PORT=$EPMD_PORT
NODENAME=$NODENAME
SERVER_PGID=$SERVER_PGID
EPMD_PID=$EPMD_PID
EOF
    deadline=$((SECONDS + 60))
    until amqp_ready "$AMQP_PORT"; do
        if ! alive "$SERVER_PGID" || ((SECONDS >= deadline)); then
            echo "rabbitmq.sh: the node under $dir did not accept AMQP on 127.0.0.1:$AMQP_PORT within 60 s" >&2
            tail -n 30 "$dir/log/server.out" >&2 || true
            stop_recorded || true
            rm -f "$state"
            exit 1
        fi
        sleep 0.5
    done
    url
    ;;
url)
    [[ -f $state ]] || { echo "rabbitmq.sh: no node under $dir; start one with \`bash scripts/rabbitmq.sh start $dir\`" >&2; exit 1; }
    # shellcheck disable=SC1090
    . "$state"
    group_ours "$SERVER_PGID" || { echo "rabbitmq.sh: the node under $dir is not running" >&2; exit 1; }
    url
    ;;
stop)
    [[ -f $state ]] || { echo "rabbitmq.sh: no node under $dir (nothing to stop)"; exit 0; }
    # shellcheck disable=SC1090
    . "$state"
    node_env
    bin=$(bin_dir)
    if group_ours "$SERVER_PGID"; then
        timeout 30 "$bin/rabbitmqctl" -n "$NODENAME" stop "$dir/rabbit.pid" >"$dir/log/stop.out" 2>&1 || true
    fi
    stop_recorded
    rm -f "$state"
    echo "stopped $NODENAME"
    ;;
*) usage ;;
esac
