#!/usr/bin/env bash
# install-chromium.sh: installs a headless browser (Debian's `chromium` package) for the test of
# `troupe lab run --watch` (crates/troupe-cli/tests/cli_watch.rs), which loads the live page in
# `chromium --headless`, reads its DOM and decodes a screenshot of the plot. Idempotent: a quick
# no-op when `chromium` (or `chromium-browser`) is already on PATH, whatever its origin; otherwise
# one `apt-get update` and one install. The test finds the browser on PATH, or at
# TROUPE_CHROMIUM when that is set.
set -euo pipefail

for name in chromium chromium-browser; do
    if path=$(command -v "$name") && [[ -n $path ]]; then
        echo "chromium already installed: $("$path" --version 2>/dev/null | head -1) ($path)"
        exit 0
    fi
done

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "install-chromium.sh: need root (or sudo) to run apt-get" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-chromium.sh: apt-get not found; install Chromium with your package manager and put \`chromium\` on PATH (or set TROUPE_CHROMIUM)" >&2
    exit 1
fi

$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends chromium
echo "installed: $(chromium --version 2>/dev/null | head -1)"
