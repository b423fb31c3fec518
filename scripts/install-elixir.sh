#!/usr/bin/env bash
# install-elixir.sh: installs the Elixir toolchain the peers/elixir programs build and run with
# (Debian's `elixir` package: Elixir 1.14 on bookworm, with `elixir` and `mix`, on the OTP 25 of
# scripts/install-erlang.sh). No Hex packages are used (Hex is not reachable here): the peers
# use only Elixir's and OTP's own libraries. Idempotent: a quick no-op when `elixir` and `mix`
# are already on PATH and run. Exits 1 with a message naming what is missing when it cannot
# install.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

elixir_version() { elixir --version 2>/dev/null | grep -m1 '^Elixir' || true; }

if command -v elixir >/dev/null 2>&1 && command -v mix >/dev/null 2>&1 && [ -n "$(elixir_version)" ]; then
    echo "elixir already installed: $(elixir_version) ($(command -v elixir))"
    exit 0
fi

# Elixir runs on the OTP that install-erlang.sh installs (erlang-nox, erlang-dev); Debian's
# `elixir` package would pull in a smaller Erlang of its own otherwise.
bash "$here/install-erlang.sh"

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "install-elixir.sh: need root (or sudo) to run apt-get" >&2
        exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-elixir.sh: apt-get not found; install Elixir 1.14+ (elixir, mix) on OTP 25+ with your package manager" >&2
    exit 1
fi

# Debian's package lists may be missing or stale on a fresh machine: refresh them once, and again
# only if the install still cannot find the package.
if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends elixir; then
    $sudo apt-get update
    if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends elixir; then
        echo "install-elixir.sh: apt-get could not install the Debian package 'elixir'" >&2
        exit 1
    fi
fi
if [ -z "$(elixir_version)" ]; then
    echo "install-elixir.sh: 'elixir' was installed but 'elixir --version' does not run" >&2
    exit 1
fi
echo "installed: $(elixir_version)"
