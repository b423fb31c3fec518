#!/usr/bin/env python3
"""table.py SET_DIR: one line per run of a set made by run.sh (before-N, after-N; any
NAME-N), and the median of each column per NAME."""
import glob
import json
import os
import statistics
import sys

d = sys.argv[1]
cols = ["cpu_s", "det_mean", "det_p99", "rec_mean", "rec_p99", "all_rejoined_ms", "bytes_per_client"]
rows = {}
print("run        status " + " ".join(f"{c:>16}" for c in cols))
for f in sorted(glob.glob(os.path.join(d, "*", "summary.json"))):
    run = os.path.basename(os.path.dirname(f))
    s = json.load(open(f))
    with open(os.path.join(os.path.dirname(f), "phases.txt")) as fh:
        phases = [line.split() for line in fh.readlines()[1:] if len(line.split()) >= 6]
    all_rejoined = statistics.median(float(p[4]) for p in phases) if phases else float("nan")
    v = [
        s["resources"]["cpu_s"],
        s["detection_ms"]["mean"],
        s["detection_ms"]["p99"],
        s["reconnection_ms"]["mean"],
        s["reconnection_ms"]["p99"],
        all_rejoined,
        s["bytes_per_client"],
    ]
    rows.setdefault(run.split("-")[0], []).append(v)
    print(f"{run:<10} {s['status']:<6} " + " ".join(f"{x:>16.2f}" for x in v))
for build, vs in rows.items():
    if vs:
        med = [statistics.median(c) for c in zip(*vs)]
        print(f"{build + ' med':<10} {'':<6} " + " ".join(f"{x:>16.2f}" for x in med))
