//! `troupe lab compare`: runs a comparison (plan, runtime check, progress bar, Ctrl-C) and
//! prints the side-by-side table its report wrote.

use std::path::{Path, PathBuf};
use std::time::Duration;

use troupe_lab::child::Stop;
use troupe_lab::compare;
use troupe_lab::workload::Workload;

use crate::code;
use crate::shared::{ctrl_c, default_out, project_root_for, read_config_file, say, troupe_exe, Tally};

/// The flags of `troupe lab compare` that go into its spec as they are.
pub(super) struct Options {
    pub(super) sets: Vec<String>,
    pub(super) runtimes: Vec<String>,
    pub(super) focus: Option<String>,
    pub(super) reps: u32,
}

/// `troupe lab compare`: plans, checks the runtimes, runs, prints the table; the exit code.
pub(super) fn compare(
    workload: &'static dyn Workload,
    file: Option<&Path>,
    opts: Options,
    out: Option<PathBuf>,
    hang_after: Duration,
) -> anyhow::Result<i32> {
    let Options { sets, runtimes, focus, reps } = opts;
    let config_file = read_config_file(file)?;
    let spec = compare::CompareSpec { workload, config_file, sets, runtimes, focus, reps };
    let plan = compare::plan(&spec)?;
    let project_root = project_root_for(&spec.runtimes)?;
    let workload = spec.workload.name();
    compare::check_runtimes(&spec.runtimes, workload, project_root.as_deref())?;
    let out = out.unwrap_or_else(|| default_out(&format!("compare-{workload}")));
    let stop = Stop::new();
    ctrl_c(&stop);
    let pending = plan.pending(&out);
    eprintln!(
        "troupe lab: comparing {} on {} points x {} runtimes{} ({} runs, {} to do) into {}",
        workload,
        plan.points.len(),
        spec.runtimes.len(),
        if spec.reps > 1 { format!(" x {} repetitions", spec.reps) } else { String::new() },
        plan.runs().len(),
        pending.len(),
        out.display()
    );
    let ctx = compare::RunContext {
        troupe: troupe_exe(spec.workload)?,
        project_root,
        command: std::env::args().collect(),
        deadline_slack: hang_after,
    };
    let mut bar = crate::progress::Bar::new(&pending);
    let result = compare::run(&plan, &out, &ctx, &stop, &mut bar);
    bar.finish();
    let s = match result {
        Err(e) if stop.is_set() => {
            eprintln!("troupe lab: interrupted: {e}");
            return Ok(code::INTERRUPTED);
        }
        r => r?,
    };
    let tally = Tally::from(&s);
    tally.say("compare", &out);
    for line in &s.table {
        say!("{line}");
    }
    say!("report  {}", out.join("report.html").display());
    Ok(tally.code())
}
