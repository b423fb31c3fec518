//! `troupe lab conform`: runs each runtime on the workload's conformance scenarios and checks
//! every rule of its behaviour contract on each trace (`troupe_lab::conform`); prints the rule x
//! runtime table and every failure's evidence; the exit code is 0 only when no rule FAILs.

use std::path::{Path, PathBuf};

use troupe_lab::child::Stop;
use troupe_lab::compare::{self, RunContext};
use troupe_lab::conform::driver::{self, ConformOutcome, ConformSpec};
use troupe_lab::registry::Registry;
use troupe_lab::{machine, peer, root};

use crate::code;
use crate::shared::{ctrl_c, project_root_for, say, troupe_exe};

/// The default folder: `lab-results/conform/<workload>-<UTC stamp>`.
fn default_out(workload: &str) -> PathBuf {
    let base = Path::new("lab-results").join("conform");
    let stamp = format!("{workload}-{}", machine::folder_stamp(machine::now_unix_ms()));
    let first = base.join(&stamp);
    if !first.exists() {
        return first;
    }
    (2..10_000).map(|i| base.join(format!("{stamp}-{i}"))).find(|p| !p.exists()).unwrap_or(first)
}

/// Troupe, then every peer with a program for `workload` under the project root, by name.
fn default_runtimes(workload: &str) -> Vec<String> {
    let mut peers: Vec<String> = match root::project_root() {
        Ok(r) => std::fs::read_dir(r.join("peers"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|rt| peer::has_program(&r, rt, workload))
                    .collect()
            })
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    peers.sort();
    peers.insert(0, "troupe".into());
    peers
}

/// The exit code of a finished check: interrupted, else [`code::NONCONFORMING`] when a rule
/// FAILs for some runtime, else 0.
fn exit_code(o: &ConformOutcome) -> i32 {
    if o.interrupted {
        code::INTERRUPTED
    } else if o.passed() {
        0
    } else {
        code::NONCONFORMING
    }
}

/// `troupe lab conform WORKLOAD`: plans, checks the runtimes, runs, prints the table and the
/// failures; the exit code.
pub(super) fn conform(
    reg: &Registry,
    workload: &str,
    runtimes: Option<Vec<String>>,
    out: Option<PathBuf>,
    scenario: Option<String>,
) -> anyhow::Result<i32> {
    let w = driver::resolve(reg, workload)?;
    let runtimes = runtimes.unwrap_or_else(|| default_runtimes(w.name()));
    let project_root = project_root_for(&runtimes)?;
    compare::check_runtimes(&runtimes, w.name(), project_root.as_deref())?;
    let plan = driver::plan(&ConformSpec { workload: w, runtimes, scenario })?;
    let out = out.unwrap_or_else(|| default_out(w.name()));
    let stop = Stop::new();
    ctrl_c(&stop);
    eprintln!(
        "troupe lab: checking {} rules of {} on {} x {} scenarios ({}) into {}",
        plan.rules.len(),
        w.name(),
        plan.runtimes.join(", "),
        plan.scenarios.len(),
        plan.scenarios.iter().map(|(s, _)| s.name.as_str()).collect::<Vec<_>>().join(", "),
        out.display()
    );
    let ctx = RunContext {
        troupe: troupe_exe(w)?,
        project_root,
        command: std::env::args().collect(),
        deadline_slack: troupe_lab::run::DEADLINE_SLACK,
    };
    let runs = plan.runs();
    let mut bar = crate::progress::Bar::new(&runs);
    let result = driver::run(&plan, &out, &ctx, &stop, &mut bar);
    bar.finish();
    let o = match result {
        Err(e) if stop.is_set() => {
            eprintln!("troupe lab: interrupted: {e}");
            return Ok(code::INTERRUPTED);
        }
        r => r?,
    };
    for line in o.table() {
        say!("{line}");
    }
    let fails = o.failure_lines();
    if !fails.is_empty() {
        say!("");
        say!("failures:");
        for f in &fails {
            say!("  {f}");
        }
    }
    say!("");
    say!(
        "conform {}: {}{}",
        out.display(),
        if o.passed() {
            "every rule passes or is n/a on every runtime".to_string()
        } else {
            format!("{} failure(s)", fails.len())
        },
        if o.interrupted { ", interrupted" } else { "" }
    );
    say!("results {}", out.join(troupe_lab::conform::FILE).display());
    Ok(exit_code(&o))
}
