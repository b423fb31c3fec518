#!/usr/bin/env python3
"""phases.py RUN_DIR: for each chat fault of a run, the milliseconds from the kill until half
and all of the detections, and until half and all of the rejoins, and until the chat's
`restarted` event (its restarted incarnation started), from events.jsonl."""
import json
import sys

d = sys.argv[1]
inj, det, rec, rst = [], [], [], []
with open(d + "/events.jsonl") as fh:
    for line in fh:
        if '"fault_injected"' in line:
            inj.append(json.loads(line)["ts_us"])
        elif '"fault_detected"' in line:
            det.append(json.loads(line)["ts_us"])
        elif '"reconnected"' in line:
            rec.append(json.loads(line)["ts_us"])
        elif '"restarted"' in line:
            rst.append(json.loads(line)["ts_us"])
print("fault  detected_50pct_ms  detected_all_ms  rejoined_50pct_ms  rejoined_all_ms  detections  restarted_ms")
for i, t0 in enumerate(inj):
    t1 = inj[i + 1] if i + 1 < len(inj) else float("inf")
    dd = sorted(x - t0 for x in det if t0 <= x < t1)
    rr = sorted(x - t0 for x in rec if t0 <= x < t1)
    if not dd or not rr:
        print(f"{i}  (no detections or rejoins in its interval)")
        continue
    ss = [x - t0 for x in rst if t0 <= x < t1]
    restarted = f"{ss[0] / 1e3:.1f}" if ss else "-"
    print(f"{i}  {dd[len(dd) // 2] / 1e3:.0f}  {dd[-1] / 1e3:.0f}  {rr[len(rr) // 2] / 1e3:.0f}  {rr[-1] / 1e3:.0f}  {len(dd)}  {restarted}")
