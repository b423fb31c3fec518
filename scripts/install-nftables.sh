#!/usr/bin/env bash
# install-nftables.sh: installs nft (Debian's nftables) and ip (iproute2), which the lab's
# network layer uses (crates/troupe-lab/src/netlayer: network namespaces per node process, loss
# and partitions as nftables rules in a hub namespace). Idempotent: a quick no-op when both are
# on PATH, whatever their origin.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [[ -x /usr/sbin/$1 || -x /sbin/$1 ]]; }
if have nft && have ip; then
    echo "nft and ip already installed"
    exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "install-nftables.sh: need root (or sudo) to run apt-get" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-nftables.sh: apt-get not found; install nftables and iproute2 with your package manager" >&2
    exit 1
fi

$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends nftables iproute2
echo "installed: $(/usr/sbin/nft --version 2>/dev/null || nft --version)"
