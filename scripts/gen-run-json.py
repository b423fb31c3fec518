#!/usr/bin/env python3
"""gen-run-json.py: writes run.json for a committed results folder (or a loose results file) that
has none, from the provenance the folder already records; nothing is invented.

    python3 scripts/gen-run-json.py docs/results/kv-2026-11-24 docs/results/iot-default.jsonl ...

A folder gets FOLDER/run.json; a loose data file F.jsonl gets F.run.json beside it. Existing files
are left alone unless --force. Sources, read in this order:
  - every manifest.json and nested run.json under the folder (what `troupe lab` and `troupe lab
    micro` write: command, git_commit, git_dirty, machine, load, started_at, ended_at);
  - JSON Lines records that carry `command` or `git_commit` (the iot-*.jsonl files), and a
    `_comment` line or a first line with `command` but no data (cluster-micro.jsonl,
    crdt-replication.jsonl, overlay-scale.jsonl): kept verbatim under `notes`;
  - command.txt files: kept verbatim under `notes`; their `command:` line, the commit of a
    `binary: ... built from SHA` or `commit SHA` line and the load averages of `start`/`end`
    lines are read as a run's command, git_commit and load;
  - load.txt and log.txt of the folder: verbatim under `notes`;
  - README.md of the folder: commands quoted in backticks or fenced blocks that start with
    `troupe `, `target/release/troupe`, `cargo run` or `taskset`, verbatim under
    `commands_in_readme`, and the commits it names (`commit SHA`) under `commits_in_readme`.
Each of command, git_commit, machine, load is one value when every source agrees, a list of the
distinct values when they differ, and null when no source records it (named in `not_recorded`).
`load` is summarised over the runs: how many recorded it, and the range of busy_pct, steal_pct
and the 1-minute load average at start and end. scripts/check-figures.sh checks that every
results folder the docs name holds a run.json with these four keys.
"""
import json
import os
import re
import sys

README_CMD = re.compile(r"`((?:troupe |target/release/troupe|\./target/release/|cargo run|taskset )[^`]*)`")


def distinct(values):
    out = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    if not out:
        return None
    return out[0] if len(out) == 1 else out


def rng(xs):
    xs = [x for x in xs if isinstance(x, (int, float))]
    return [min(xs), max(xs)] if xs else None


def first_float(s):
    try:
        return float(str(s).split()[0])
    except (ValueError, IndexError):
        return None


def load_summary(records):
    loads = [r.get("load") for r in records if isinstance(r.get("load"), dict)]
    if not loads:
        return None
    la = []
    for l in loads:
        la += [first_float(l.get("loadavg_start")), first_float(l.get("loadavg_end"))]
    return {
        "runs": len(loads),
        "busy_pct": rng([l.get("busy_pct") for l in loads]),
        "steal_pct": rng([l.get("steal_pct") for l in loads]),
        "loadavg_1min": rng([x for x in la if x is not None]),
    }


def gather(target):
    records, notes, sources, readme_cmds, readme_commits = [], [], [], [], []
    files = []
    if os.path.isdir(target):
        for root, dirs, names in os.walk(target):
            dirs.sort()
            for n in sorted(names):
                files.append(os.path.join(root, n))
    else:
        files = [target]
    for f in files:
        rel = os.path.relpath(f, target if os.path.isdir(target) else os.path.dirname(target))
        name = os.path.basename(f)
        if os.path.isdir(target) and rel == "run.json":
            continue
        if name in ("manifest.json", "run.json"):
            with open(f) as fh:
                records.append(json.load(fh))
            sources.append(rel)
        elif name.endswith(".jsonl"):
            used = False
            with open(f) as fh:
                for line in fh:
                    line = line.strip()
                    if not line:
                        continue
                    try:
                        d = json.loads(line)
                    except ValueError:
                        continue
                    if not isinstance(d, dict):
                        continue
                    if "_comment" in d:
                        notes.append(f"{rel}: {d['_comment']}")
                        used = True
                    elif "command" in d or "git_commit" in d:
                        if any(k in d for k in ("git_commit", "load", "started_at")):
                            records.append(d)
                        else:
                            notes.append(f"{rel}: {json.dumps(d, sort_keys=True)}")
                            records.append({"command": d.get("command"), "machine": d.get("machine")})
                        used = True
            if used:
                sources.append(rel)
        elif name == "command.txt":
            with open(f) as fh:
                text = fh.read().strip()
            notes.append(f"{rel}: {text}")
            rec = {}
            for line in text.splitlines():
                if line.startswith("command: "):
                    rec["command"] = line[len("command: "):].strip()
                m = re.match(r"(?:binary: .*built from|commit) ([0-9a-f]{7,40})\b", line)
                if m:
                    rec["git_commit"] = m.group(1)
                m = re.match(r"(start|end):? (\S+Z) load ?average:? ([\d.]+ [\d.]+ [\d.]+)", line)
                if m:
                    rec.setdefault("load", {})[f"loadavg_{m.group(1)}"] = m.group(3)
                    rec["started_at" if m.group(1) == "start" else "ended_at"] = m.group(2)
            if rec:
                records.append(rec)
            sources.append(rel)
        elif name == "README.md" and os.path.dirname(f) == target.rstrip("/"):
            with open(f) as fh:
                text = fh.read()
            readme_cmds += [m.group(1) for m in README_CMD.finditer(text)]
            readme_commits += re.findall(r"\bcommits? ([0-9a-f]{7,40})\b", text)
            # commands in fenced blocks, backslash continuations joined
            for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
                for cmd in re.sub(r"\\\n\s*", "", block).splitlines():
                    if README_CMD.match("`" + cmd.strip() + "`"):
                        readme_cmds.append(cmd.strip())
            sources.append(rel)
        elif name in ("load.txt", "log.txt") and os.path.dirname(f) == target.rstrip("/"):
            with open(f) as fh:
                notes.append(f"{rel}: {fh.read().strip()}")
            sources.append(rel)
    return records, notes, sources, readme_cmds, readme_commits


def build(target):
    records, notes, sources, readme_cmds, readme_commits = gather(target)
    out = {
        "generated_by": "scripts/gen-run-json.py, from the files named in `sources` (written by the "
        "runs themselves, or by hand beside them); nothing is invented: a key that no source "
        "records is null and named in `not_recorded`",
        "sources": sources,
        "command": distinct([r.get("command") for r in records]),
        "git_commit": distinct([r.get("git_commit") for r in records]),
        "git_dirty": distinct([r.get("git_dirty") for r in records]),
        "machine": distinct([r.get("machine") for r in records]),
        "load": load_summary(records),
        "started_at": min([r["started_at"] for r in records if r.get("started_at")], default=None),
        "ended_at": max([r["ended_at"] for r in records if r.get("ended_at")], default=None),
        "runs_recorded": sum(1 for r in records if r.get("started_at") or r.get("load")),
    }
    if readme_cmds:
        out["commands_in_readme"] = list(dict.fromkeys(readme_cmds))
    if readme_commits:
        out["commits_in_readme"] = list(dict.fromkeys(readme_commits))
    if notes:
        out["notes"] = notes
    out["not_recorded"] = [k for k in ("command", "git_commit", "machine", "load") if out[k] is None]
    return out


def main(argv):
    if not argv or "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0 if argv else 2
    unknown = [a for a in argv if a.startswith("-") and a != "--force"]
    if unknown:
        print(f"gen-run-json.py: unknown option {unknown[0]!r}; the only option is --force (see --help)", file=sys.stderr)
        return 2
    force = "--force" in argv
    targets = [a.rstrip("/") for a in argv if a != "--force"]
    missing = [t for t in targets if not os.path.exists(t)]
    if missing:
        print(f"gen-run-json.py: {missing[0]!r} does not exist; name a results folder or a .jsonl file", file=sys.stderr)
        return 2
    for target in targets:
        dest = os.path.join(target, "run.json") if os.path.isdir(target) else re.sub(r"\.jsonl?$", "", target) + ".run.json"
        if os.path.exists(dest) and not force:
            print(f"{dest}: exists, left alone (--force rewrites it)")
            continue
        out = build(target)
        with open(dest, "w") as fh:
            json.dump(out, fh, indent=2, sort_keys=False)
            fh.write("\n")
        print(f"{dest}: written from {len(out['sources'])} source(s); not recorded: {', '.join(out['not_recorded']) or 'none'}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
