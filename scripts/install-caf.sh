#!/usr/bin/env bash
# install-caf.sh: installs the toolchain the CAF (C++ Actor Framework) peer programs need:
# Debian's libcaf-dev (CAF 0.17), cmake and g++, and librabbitmq-dev (rabbitmq-c, RabbitMQ's C
# client: the energy peer publishes amqp:// events with it). Idempotent: when every package is
# already installed it only checks and exits, without touching the network.
set -euo pipefail

pkgs=(libcaf-dev librabbitmq-dev cmake g++ make pkg-config)
missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "caf toolchain present: libcaf-dev $(dpkg-query -W -f='${Version}' libcaf-dev)" >&2
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "installing: ${missing[*]}" >&2
$SUDO apt-get update
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${missing[@]}"
echo "caf toolchain installed: libcaf-dev $(dpkg-query -W -f='${Version}' libcaf-dev)" >&2
