#!/usr/bin/env bash
# install-rabbitmq.sh: installs RabbitMQ (Debian's rabbitmq-server, 3.10 on bookworm, which
# pulls the Erlang/OTP runtime it needs) for the optional `amqp://` event transport
# (docs/lab.md, "Events through RabbitMQ"). Idempotent: a quick no-op when rabbitmq-server is
# already installed. The lab never uses the system service: scripts/rabbitmq.sh starts a
# private node with its own ports and files.
set -euo pipefail

find_server() {
    command -v rabbitmq-server 2>/dev/null || { [[ -x /usr/sbin/rabbitmq-server ]] && echo /usr/sbin/rabbitmq-server; } || { [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] && echo /usr/lib/rabbitmq/bin/rabbitmq-server; }
}

if server=$(find_server) && [[ -n $server ]]; then
    ver=$(dpkg-query -W -f='${Version}' rabbitmq-server 2>/dev/null || echo "unknown version")
    echo "rabbitmq-server already installed: $ver ($server)"
    exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "install-rabbitmq.sh: need root (or sudo) to run apt-get" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-rabbitmq.sh: apt-get not found; install RabbitMQ 3.10+ (rabbitmq-server) with your package manager" >&2
    exit 1
fi

$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends rabbitmq-server
echo "installed: rabbitmq-server $(dpkg-query -W -f='${Version}' rabbitmq-server)"
