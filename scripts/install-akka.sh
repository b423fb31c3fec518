#!/usr/bin/env bash
# Installs what the Akka peer (peers/akka) needs: OpenJDK 17+ and Maven from Debian's packages
# when missing, then pre-fetches Akka Typed 2.6.21 and the Maven plugins into the local Maven
# repository (~/.m2) from Maven Central, so peers/akka/*/build can run offline (`mvn -o`).
# Idempotent: when java, mvn and the fetched dependencies (for this pom.xml) are present it
# returns at once.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
POM="$ROOT/peers/akka/pom.xml"
M2="${HOME}/.m2/repository"
MARK="$M2/.troupe-akka-prefetched"

java_ok() {
    command -v java >/dev/null 2>&1 || return 1
    local major
    major="$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}' | cut -d. -f1)"
    [ -n "$major" ] && [ "$major" -ge 17 ] 2>/dev/null
}

pom_sum="$(sha256sum "$POM" | cut -d' ' -f1)"
if java_ok && command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 &&
    [ -f "$MARK" ] && [ "$(cat "$MARK")" = "$pom_sum" ]; then
    echo "install-akka: java, maven and the Akka dependencies are already installed"
    exit 0
fi

if ! java_ok || ! command -v javac >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-akka: need root to apt-get install openjdk-17-jdk-headless maven" >&2
        exit 1
    fi
    echo "install-akka: installing OpenJDK 17 and Maven with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless maven
fi

echo "install-akka: fetching Akka Typed and the Maven plugins into $M2" >&2
# Building the project once fetches exactly what `build` needs (dependencies and plugins);
# the output goes to a scratch directory so the tree's target/ is left alone.
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
cp -r "$ROOT/peers/akka/pom.xml" "$ROOT/peers/akka/src" "$SCRATCH/"
(cd "$SCRATCH" && nice mvn -B -q -Dstyle.color=never package >"$SCRATCH/mvn.log" 2>&1) || {
    cat "$SCRATCH/mvn.log" >&2
    echo "install-akka: fetching the Maven dependencies failed" >&2
    exit 1
}
mkdir -p "$M2"
echo "$pom_sum" >"$MARK"
echo "install-akka: done ($(java -version 2>&1 | head -1); $(mvn -v 2>/dev/null | head -1 | sed 's/\x1b\[[0-9;]*m//g'))"
