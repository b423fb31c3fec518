#!/usr/bin/env bash
# gen-proto.sh: regenerates msg/chat.pb.go from msg/chat.proto (not part of the build: the
# generated file is committed). Needs protoc (Debian: protobuf-compiler) and protoc-gen-go
# v1.33.0 (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.33.0).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
go_bin="${GO:-/usr/local/go/bin/go}"
actor_dir="$(cd "$here" && "$go_bin" list -m -f '{{.Dir}}' github.com/asynkron/protoactor-go)/actor"
cd "$here/msg"
protoc -I . -I "$actor_dir" --go_out=. --go_opt=paths=source_relative \
  --go_opt=Mactor.proto=github.com/asynkron/protoactor-go/actor chat.proto
