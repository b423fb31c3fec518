//! `troupe lab micro`: checks every name before anything runs, runs the distribution
//! benchmarks (`remote_micro`) and the local ones (`troupe_micro`), prints JSON lines or
//! tables with the machine's load over the run, and with `--out DIR` records the run:
//! `results.jsonl` (every result line) and `run.json` (what it was measured on and with).
//! `--scaling` is `scaling`'s; what both use (the arguments, the record) is in `common`.

use std::collections::BTreeMap;

use troupe_lab::machine::{self, LoadProbe};

use crate::code;

mod common;
mod scaling;

pub(crate) use common::MicroArgs;
use common::{micro_code, record};

/// Runs `troupe lab micro` and returns its exit code.
pub(crate) fn main(a: MicroArgs) -> i32 {
    // The binary has the core's `metrics` feature (for `troupe node`'s endpoint); the
    // benchmarks measure the runtime as a crate user builds it by default, without it.
    troupe::set_metrics_recording(false);
    // A `memory` child gets this same command line, so it applies the same --threads.
    troupe_micro::set_worker_threads(a.threads);
    // SAFETY: `mi_collect` only returns mimalloc's free pages to the OS (the allocator this
    // binary runs on, `main.rs`); it has no preconditions and is safe from any thread.
    troupe_micro::set_release_hook(|| unsafe { libmimalloc_sys::mi_collect(true) });
    if std::env::var_os(troupe_micro::CHILD_ENV).is_some() {
        // A `memory` child started with this same command line: it only measures and prints
        // its lines for the parent (no table, no record, no remote benchmarks).
        let opts = troupe_micro::MicroOptions::default();
        return match troupe_micro::run(&opts, &mut std::io::stdout().lock()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("troupe lab micro: {e}");
                code::FAILED
            }
        };
    }
    let mut params = BTreeMap::new();
    for s in &a.sets {
        let parsed = s.split_once('=').and_then(|(k, v)| Some((k.trim(), v.trim().parse::<u64>().ok()?)));
        let Some((k, v)) = parsed else {
            eprintln!("troupe lab micro: --set {s:?} is not KEY=NUMBER (e.g. n=1000 or fib.n=20)");
            return code::USAGE;
        };
        params.insert(k.to_owned(), v);
    }
    if let Err(msg) = check_names(a.only.as_deref(), &a.runtimes) {
        eprintln!("troupe lab micro: {msg}");
        return code::USAGE;
    }
    if let Some(counts) = &a.scaling {
        return scaling::main(&a, counts, params);
    }
    if let Some(dir) = &a.out {
        if let Err(e) = std::fs::create_dir_all(dir) {
            eprintln!("troupe lab micro: {}: {e}", dir.display());
            return code::FILES;
        }
    }
    let probe = LoadProbe::start();
    let started = machine::rfc3339(machine::now_unix_ms());
    // The cluster benchmarks live in troupe-cluster (printed, not recorded by --out).
    let (cluster, rest): (Vec<String>, Option<Vec<String>>) = match a.only {
        Some(names) => {
            let (c, l): (Vec<_>, Vec<_>) =
                names.into_iter().partition(|n| crate::cluster_micro::NAMES.contains(&n.as_str()));
            (c, (!l.is_empty()).then_some(l))
        }
        None => (Vec::new(), None),
    };
    if !cluster.is_empty() {
        if let Err(e) = crate::cluster_micro::run(&cluster, a.reps, &params, a.json) {
            eprintln!("troupe lab micro: {e}");
            return code::FAILED;
        }
        if rest.is_none() {
            return 0;
        }
    }
    // The distribution benchmarks live in troupe-remote; the rest in troupe-micro.
    let (remote, only): (Vec<String>, Option<Vec<String>>) = match rest {
        Some(names) => {
            let (r, l): (Vec<_>, Vec<_>) =
                names.into_iter().partition(|n| crate::remote_micro::NAMES.contains(&n.as_str()));
            (r, (!l.is_empty()).then_some(l))
        }
        None => (Vec::new(), None),
    };
    let mut lines: Vec<String> = Vec::new();
    // A remote benchmark that could not run does not stop the local ones; the exit code is the
    // worse of both (a failure over a missing toolchain).
    let mut remote_code = 0;
    if !remote.is_empty() {
        if let Err(e) = crate::remote_micro::run(&remote, &a.runtimes, a.reps, &params, a.json, &mut lines) {
            eprintln!("troupe lab micro: {}", e.message);
            remote_code = if e.missing_toolchain { code::TOOLCHAIN } else { code::FAILED };
        }
    }
    let mut local_code = 0;
    if only.is_some() || remote.is_empty() {
        if !a.json {
            println!("allocator: mimalloc (the troupe binary's global allocator; every Rust runtime in this table shares it)");
        }
        // With --out the lines are collected (and printed as they would be) for the record.
        let collect = a.out.is_some();
        let opts = troupe_micro::MicroOptions {
            only,
            runtimes: a.runtimes.clone(),
            json: a.json || collect,
            reps: a.reps,
            params,
            child_args: None,
            rep_probe: Some(machine::core_round_trip_ns),
        };
        let mut buf: Vec<u8> = Vec::new();
        let result = if collect {
            troupe_micro::run(&opts, &mut buf)
        } else {
            troupe_micro::run(&opts, &mut std::io::stdout().lock())
        };
        if collect {
            let text = String::from_utf8_lossy(&buf).into_owned();
            if a.json {
                print!("{text}");
            } else {
                let recs: Vec<troupe_micro::Record> =
                    text.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
                let _ = troupe_micro::render_table(&recs, &mut std::io::stdout().lock());
            }
            lines.extend(text.lines().map(str::to_owned));
        }
        if let Err(e) = result {
            eprintln!("troupe lab micro: {e}");
            local_code = micro_code(&e.kind);
        }
    }
    let load = probe.finish();
    if !a.json {
        println!("load over the run: {}", load.summary());
        if let Some((c, dirty)) = machine::build_commit() {
            println!("commit: {c}{}", if dirty { " (built with uncommitted changes)" } else { "" });
        }
    }
    if let Some(dir) = &a.out {
        if let Err(e) = record(dir, &lines, &a.runtimes, &started, &load) {
            eprintln!("troupe lab micro: {e}");
            return code::FILES;
        }
        eprintln!("troupe lab micro: recorded {} lines in {}", lines.len(), dir.join("results.jsonl").display());
    }
    match (remote_code, local_code) {
        (0, l) => l,
        (r, 0) => r,
        (r, l) if r == code::FAILED || l == code::FAILED => code::FAILED,
        (_, l) => l,
    }
}

/// Every benchmark and runtime name must exist: an unknown benchmark lists them all (local and
/// distribution), an unknown runtime lists the runtimes, each with a suggestion for a typo.
fn check_names(only: Option<&[String]>, runtimes: &[String]) -> Result<(), String> {
    let all: Vec<&str> = troupe_micro::Bench::ALL
        .iter()
        .map(|b| b.name())
        .chain(crate::remote_micro::NAMES.iter().copied())
        .chain(crate::cluster_micro::NAMES.iter().copied())
        .collect();
    for n in only.into_iter().flatten() {
        if !all.contains(&n.trim()) {
            let hint = troupe_micro::did_you_mean(n.trim(), &all);
            return Err(format!("unknown benchmark `{n}`{hint}; benchmarks: {}", all.join(", ")));
        }
    }
    let known: Vec<&str> =
        troupe_micro::IN_PROCESS_RUNTIMES.iter().chain(&troupe_micro::EXTERNAL_RUNTIMES).copied().collect();
    for rt in runtimes {
        if !known.contains(&rt.trim()) {
            let hint = troupe_micro::did_you_mean(rt.trim(), &known);
            return Err(format!("unknown runtime `{rt}`{hint}; runtimes: {}", known.join(", ")));
        }
    }
    Ok(())
}
