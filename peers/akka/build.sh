#!/usr/bin/env bash
# Builds the Akka peer jar (both workloads, scp and micro) with Maven; called by scp/build and
# micro/build. Cached: when target/ is newer than pom.xml and src/, it returns in well under a
# second without starting Maven. Offline first (`mvn -o`), online only when the local repository
# lacks something. A missing java/mvn exits 3 with the install command, per the peer contract.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
missing() {
    echo "missing toolchain: $1; install it with: bash scripts/install-akka.sh" >&2
    exit 3
}
command -v java >/dev/null 2>&1 || missing "java (OpenJDK 17)"
command -v mvn >/dev/null 2>&1 || missing "maven"
JAVA_MAJOR="$(java -version 2>&1 | awk -F'"' '/version/ {print $2; exit}' | cut -d. -f1)"
if [ -z "$JAVA_MAJOR" ] || [ "$JAVA_MAJOR" -lt 17 ] 2>/dev/null; then
    missing "java 17 or newer (found ${JAVA_MAJOR:-none})"
fi

JAR="$HERE/target/troupe-akka-peers.jar"
STAMP="$HERE/target/.built"
up_to_date() {
    [ -f "$JAR" ] && [ -f "$STAMP" ] && [ -d "$HERE/target/lib" ] &&
        [ -z "$(find "$HERE/pom.xml" "$HERE/src" -newer "$STAMP" -print -quit)" ]
}
if up_to_date; then
    exit 0
fi

# scp/build and micro/build may be started together: one Maven run at a time.
exec 9>"$HERE/.build.lock"
flock 9
if up_to_date; then
    exit 0
fi
cd "$HERE"
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
# copy-dependencies never deletes: start target/lib afresh so a dependency dropped from the
# pom cannot linger on the run scripts' classpath.
rm -rf "$HERE/target/lib"
MVN=(nice mvn -B -q -Dstyle.color=never package)
if ! "${MVN[@]}" -o >"$LOG" 2>&1; then
    echo "akka peers: offline build failed; retrying online (fetching dependencies)" >&2
    if ! "${MVN[@]}" >"$LOG" 2>&1; then
        cat "$LOG" >&2
        echo "akka peers: build failed" >&2
        exit 1
    fi
fi
touch "$STAMP"
