"""Troupe before and after the activation rewrite, and against the best Rust peer, from the
results.jsonl files of ab.sh (medians of 3 reps, time_ms).

    python3 table.py [DIR]    # DIR holds before-t1/ after-t1/ before-t2/ after-t2/
"""
import json
import sys

PEERS = ("actix", "ractor", "kameo")


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            o = json.loads(line)
            if o.get("metric") == "time_ms":
                rows[(o["bench"], o["runtime"])] = o["value"]
    return rows


def best_peer(rows, bench):
    return min((rows[(bench, r)], r) for r in PEERS if (bench, r) in rows)


def main(root):
    print("| bench | workers | Troupe before | Troupe after | after vs before | best peer before | ratio before | ratio after |")
    print("|---|---|---|---|---|---|---|---|")
    for t in ("1", "2"):
        before = load(f"{root}/before-t{t}/results.jsonl")
        after = load(f"{root}/after-t{t}/results.jsonl")
        for bench in sorted({b for b, _ in after}):
            tb, ta = before[(bench, "troupe")], after[(bench, "troupe")]
            pb, pa = best_peer(before, bench), best_peer(after, bench)
            print(f"| {bench} | {t} | {tb:.1f} ms | {ta:.1f} ms | {tb / ta:.2f}x | {pb[1]} {pb[0]:.1f} ms "
                  f"| {pb[0] / tb:.2f}x | {pa[0] / ta:.2f}x |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
