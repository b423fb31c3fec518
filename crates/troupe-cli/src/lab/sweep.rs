//! `troupe lab sweep`: a grid of runs (resumable), with a progress bar, Ctrl-C, and a tally.

use std::path::{Path, PathBuf};

use troupe_lab::child::Stop;
use troupe_lab::workload::Workload;
use troupe_lab::{compare, sweep};

use crate::shared::{ctrl_c, default_out, project_root_for, read_config_file, say, troupe_exe, Tally};

/// `troupe lab sweep`: expands the grid, checks the runtimes, runs the points not yet
/// complete, prints the tally; the exit code.
pub(super) fn sweep(
    w: &'static dyn Workload,
    file: Option<&Path>,
    sets: Vec<String>,
    out: Option<PathBuf>,
    runtimes: Vec<String>,
    reps: u32,
) -> anyhow::Result<i32> {
    let config_file = read_config_file(file)?;
    let workload = w.name();
    let spec = sweep::SweepSpec { workload: w, config_file, sets, runtimes: runtimes.clone(), reps };
    let grid = sweep::expand(&spec)?;
    let project_root = project_root_for(&runtimes)?;
    compare::check_runtimes(&runtimes, workload, project_root.as_deref())?;
    let out = out.unwrap_or_else(|| default_out(&format!("sweep-{workload}")));
    let stop = Stop::new();
    ctrl_c(&stop);
    let pending: Vec<_> =
        grid.points.iter().filter(|p| !sweep::is_complete(&out.join("runs").join(&p.name))).cloned().collect();
    eprintln!("troupe lab: sweep of {} runs ({} to do) into {}", grid.points.len(), pending.len(), out.display());
    let mut bar = crate::progress::Bar::new(&pending);
    let command: Vec<String> = std::env::args().collect();
    let result = sweep::run(&grid, &out, &troupe_exe(w)?, project_root, &command, &stop, &mut bar);
    bar.finish();
    let tally = Tally::from(&result?);
    tally.say("sweep", &out);
    say!("report  {}", out.join("report.html").display());
    Ok(tally.code())
}
