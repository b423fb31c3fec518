//! `troupe lab run`: one run into a run folder, with a progress line, Ctrl-C, its summary, and
//! with `--watch` a live view of it (`troupe_lab::watch`) that stops when the run ends.

use std::path::{Path, PathBuf};

use troupe_lab::child::Stop;
use troupe_lab::compare;
use troupe_lab::manifest::Status;
use troupe_lab::run::RunRequest;
use troupe_lab::watch::Watch;
use troupe_lab::workload::Workload;

use crate::code;
use crate::shared::{ctrl_c, default_out, print_summary, project_root_for, resolve, troupe_exe};

/// `troupe lab run`: resolves the config, checks the runtime and the `--watch` address, runs
/// (serving the live view beside it when asked), prints the summary; the exit code.
pub(super) fn run(
    w: &'static dyn Workload,
    file: Option<&Path>,
    sets: &[String],
    out: Option<PathBuf>,
    runtime: &str,
    watch: Option<&str>,
) -> anyhow::Result<i32> {
    let workload = w.name();
    let watch_addr = watch.map(troupe_lab::watch::parse_addr).transpose()?;
    let config = resolve(w, file, sets)?;
    let runtimes = [runtime.to_owned()];
    let project_root = project_root_for(&runtimes)?;
    // A runtime without a program for the workload is a usage error naming the ones there are
    // (with a suggestion for a typo), before any folder is made.
    compare::check_runtimes(&runtimes, workload, project_root.as_deref())?;
    let out = out.unwrap_or_else(|| default_out(workload));
    let stop = Stop::new();
    ctrl_c(&stop);
    let mut req = RunRequest::new(w, config, runtime, out, troupe_exe(w)?);
    req.project_root = project_root;
    req.command = std::env::args().collect();
    // The view listens before the run starts, so a port that cannot be had fails first.
    let view = match watch_addr {
        Some(addr) => {
            let v = Watch::start(addr, &req.out_dir, &format!("{workload} on {runtime}"))?;
            if !v.local_addr().ip().is_loopback() {
                eprintln!("troupe lab: --watch {} is reachable from other machines", v.local_addr());
            }
            eprintln!("watch: {}", v.url());
            Some(v)
        }
        None => None,
    };
    eprintln!("troupe lab: running {workload} on {runtime} into {}", req.out_dir.display());
    let planned = w.expected_duration(&req.config);
    let progress = crate::progress::RunProgress::start(&format!("{workload} on {runtime}"), planned);
    let outcome = troupe_lab::run::run(&req, &stop);
    progress.finish();
    if let Some(v) = view {
        v.finish();
    }
    let outcome = outcome?;
    print_summary(&outcome);
    Ok(match (outcome.manifest.interrupted, outcome.manifest.status) {
        (true, _) => code::INTERRUPTED,
        (false, Status::Ok) => 0,
        (false, Status::Degraded) => code::DEGRADED,
        _ => code::FAILED,
    })
}
