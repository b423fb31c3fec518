#!/usr/bin/env bash
# install-erlang.sh: installs the Erlang/OTP toolchain the peers/erlang programs
# build with (Debian's erlang-nox + erlang-dev, OTP 25 on bookworm: erl, erlc,
# OTP's stdlib/kernel/sasl and eunit). Idempotent: a quick no-op when erl and
# erlc are already on PATH.
set -euo pipefail

# erl and erlc alone are not enough: RabbitMQ's packages bring a partial Erlang (erlang-base,
# no erlang-dev/eunit), so where dpkg is the package manager the two packages must be there.
have_packages() {
    ! command -v dpkg-query >/dev/null 2>&1 ||
        { dpkg-query -W -f='${Status}' erlang-nox 2>/dev/null | grep -q "ok installed" &&
          dpkg-query -W -f='${Status}' erlang-dev 2>/dev/null | grep -q "ok installed"; }
}

if command -v erl >/dev/null 2>&1 && command -v erlc >/dev/null 2>&1 && have_packages; then
    rel=$(erl -noshell -noinput -eval 'io:format("~s", [erlang:system_info(otp_release)]), halt().')
    echo "erlang already installed: OTP $rel ($(command -v erl))"
    exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "install-erlang.sh: need root (or sudo) to run apt-get" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-erlang.sh: apt-get not found; install Erlang/OTP 25+ (erl, erlc) with your package manager" >&2
    exit 1
fi

$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends erlang-nox erlang-dev
erl -noshell -noinput -eval 'io:format("installed: OTP ~s~n", [erlang:system_info(otp_release)]), halt().'
