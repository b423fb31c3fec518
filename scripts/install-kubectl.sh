#!/usr/bin/env bash
# install-kubectl.sh: installs kubectl (Debian's kubernetes-client, kubectl 1.20 on bookworm) for
# the offline checks of deploy/kubernetes/ in crates/troupe-cli/tests/deploy_kubernetes.rs
# (`kubectl kustomize` renders the kustomization, and kubectl decodes every rendered object into
# its API types; neither needs a cluster). Idempotent: a quick no-op when kubectl is already on
# PATH, whatever its origin.
set -euo pipefail

if path=$(command -v kubectl) && [[ -n $path ]]; then
    echo "kubectl already installed: $("$path" version --client 2>/dev/null | head -1) ($path)"
    exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
        echo "install-kubectl.sh: need root (or sudo) to run apt-get" >&2; exit 1
    fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-kubectl.sh: apt-get not found; install kubectl (https://kubernetes.io/docs/tasks/tools/) with your package manager" >&2
    exit 1
fi

$sudo apt-get update
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends kubernetes-client
echo "installed: $(kubectl version --client 2>/dev/null | head -1)"
