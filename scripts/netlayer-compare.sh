#!/usr/bin/env bash
# netlayer-compare.sh [OUT] [RUNTIMES]: the chat benchmark compared on several runtimes at the
# lab's network layer (docs/lab.md, "Network faults"): every node process in its own network
# namespace, the faults as nftables rules in the hub, so every runtime meets the same network.
# Two comparisons: a server group cut off for 2 s, and 2% packet loss over the whole window.
# Then checks, per runtime and case, that the run completed (ok, or degraded saying why), that
# the layer carried out every network line (fault_injected from node `network`), and that the
# hub counted the cut or lost packets (summary.json net_packets_cut / net_packets_lost).
# Needs root, ip and nft (bash scripts/install-nftables.sh) and the runtimes' toolchains.
# Defaults: OUT a temporary folder, RUNTIMES troupe,elixir,akka,protoactor. TROUPE_BIN picks
# the binary (default target/debug/troupe, built when missing); EXTRA adds --set flags (e.g. a
# longer window for published figures: EXTRA="--set test_duration_secs=30").
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-}
[[ -n $out ]] || out=$(mktemp -d)/netlayer
runtimes=${2:-troupe,elixir,akka,protoactor}
bin=${TROUPE_BIN:-target/debug/troupe}
if [[ ! -x $bin ]]; then
    cargo build --quiet -p troupe-cli --bin troupe
    bin=target/debug/troupe
fi
fail() { echo "netlayer-compare: FAIL: $*" >&2; exit 1; }
common=(--set deployment=distributed --set num_supervisor=2 --set chats_per_sup=4 --set clients_per_server=3
        --set test_duration_secs=6 --set warmup_s=1 --set fault_pause_ms=1500 --set msg_type=kill)
# shellcheck disable=SC2206
extra=(${EXTRA:-})
for case in partition loss; do
    case $case in
        partition) faults=(--set 'net_faults.partitions=[{at_ms=1500, duration_ms=2000, nodes=[0]}]') ;;
        loss) faults=(--set net_faults.drop_pct=2) ;;
    esac
    echo "== netlayer-compare: chat on $runtimes, $case"
    set +e
    "$bin" lab compare chat --runtimes "$runtimes" --out "$out/$case" "${common[@]}" "${faults[@]}" "${extra[@]}"
    rc=$?
    set -e
    # 0: every run ok; 5: some degraded (a cut server group may leave detections undone).
    [[ $rc -eq 0 || $rc -eq 5 ]] || fail "$case: troupe lab compare exited $rc"
    python3 - "$out/$case" "$case" "$runtimes" <<'PY'
import json, pathlib, sys
root, case, runtimes = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3].split(",")
bad = []
for rt in runtimes:
    runs = [p.parent for p in (root / rt).rglob("summary.json")]
    if not runs:
        bad.append(f"{rt}: no run folder with summary.json under {root / rt}")
        continue
    for run in runs:
        s = json.loads((run / "summary.json").read_text())
        evs = [json.loads(l) for l in (run / "events.jsonl").read_text().splitlines() if l.strip()]
        by_layer = [e for e in evs if e.get("ev") == "fault_injected" and e.get("node") == "network"]
        key = "net_packets_cut" if case == "partition" else "net_packets_lost"
        line = (f"{rt}: status {s.get('status')}, {len(by_layer)} network lines carried out, "
                f"seen {s.get('net_packets_seen')}, lost {s.get('net_packets_lost')}, cut {s.get('net_packets_cut')}, "
                f"detections {s.get('detections')}/{s.get('expected_detections')}")
        print("   ", line)
        if s.get("status") not in ("ok", "degraded"):
            bad.append(line)
        elif not by_layer or not (s.get(key) or 0) > 0:
            bad.append(f"{line}: the layer did not carry out or count the {case}")
if bad:
    print("netlayer-compare: FAIL:\n  " + "\n  ".join(bad), file=sys.stderr)
    sys.exit(1)
PY
done
echo "== netlayer-compare: ok ($out)"
