#!/usr/bin/env bash
# install-protoactor.sh: makes sure the Proto.Actor (Go) peer programs can be built: finds a Go
# toolchain new enough for protoactor-go (>= 1.21, it uses log/slog), then runs `go mod download`
# in every peer directory so the pinned module versions of go.mod/go.sum are in the module cache.
# Idempotent: with Go present and the modules cached it finishes in about a second.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# find_go prints the path of a usable go binary, or nothing.
find_go() {
  local c
  for c in "${GO:-}" /usr/local/go/bin/go "$(command -v go 2>/dev/null || true)" /usr/lib/go/bin/go; do
    [ -n "$c" ] && [ -x "$c" ] || continue
    local v
    v="$("$c" env GOVERSION 2>/dev/null || true)"          # e.g. go1.26.8
    v="${v#go}"
    local major="${v%%.*}" rest="${v#*.}"
    local minor="${rest%%.*}"
    if [ "${major:-0}" -gt 1 ] 2>/dev/null || { [ "${major:-0}" -eq 1 ] && [ "${minor:-0}" -ge 21 ]; } 2>/dev/null; then
      echo "$c"
      return 0
    fi
  done
  return 0
}

go_bin="$(find_go)"
if [ -z "$go_bin" ]; then
  echo "no Go >= 1.21 found; trying Debian's golang-go" >&2
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends golang-go ca-certificates
  go_bin="$(find_go)"
fi
if [ -z "$go_bin" ]; then
  echo "Proto.Actor Go needs Go >= 1.21 (it imports log/slog); the Debian package found is older." >&2
  echo "Install a Go >= 1.21 toolchain at /usr/local/go (or set GO=/path/to/go) and run this again." >&2
  exit 3
fi
echo "go: $go_bin ($("$go_bin" env GOVERSION))" >&2

for mod in "$repo"/peers/protoactor/*/go.mod; do
  [ -f "$mod" ] || continue
  dir="$(dirname "$mod")"
  echo "go mod download in ${dir#"$repo"/}" >&2
  (cd "$dir" && "$go_bin" mod download)
done
