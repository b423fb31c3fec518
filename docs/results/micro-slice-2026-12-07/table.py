#!/usr/bin/env python3
"""Median ms per run folder under DIR (results.jsonl, time_ms lines), with the core-to-core
round trip before and after each run (run.json): python3 table.py DIR [RUNTIME]"""
import json, pathlib, sys

root = pathlib.Path(sys.argv[1])
runtime = sys.argv[2] if len(sys.argv) > 2 else "troupe"
rows, benches = [], []
for d in sorted(p for p in root.iterdir() if (p / "results.jsonl").is_file()):
    vals = {}
    for line in (d / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("runtime") == runtime and r.get("metric") == "time_ms":
            vals[r["bench"]] = r["value"]
            if r["bench"] not in benches:
                benches.append(r["bench"])
    load = json.loads((d / "run.json").read_text()).get("load") or {}
    rtt = f'{load.get("core_rtt_start_ns", "?")}-{load.get("core_rtt_end_ns", "?")}'
    rows.append((d.name, vals, rtt))
print("run".ljust(16) + "".join(b.rjust(11) for b in benches) + "   rtt ns")
for name, vals, rtt in rows:
    cells = "".join((f"{vals[b]:.1f}" if b in vals else "-").rjust(11) for b in benches)
    print(name.ljust(16) + cells + "   " + rtt)
