//! `troupe lab compare`: runs a comparison (plan, runtime check, progress bar, Ctrl-C) and
//! prints the side-by-side table its report wrote.

use std::path::PathBuf;
use std::time::Duration;

use troupe_lab::child::Stop;
use troupe_lab::{compare, root};

use crate::code;
use crate::lab::{ctrl_c, default_out, troupe_exe};

/// Prints a line to stdout, ignoring a closed pipe.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `troupe lab compare`: plans, checks the runtimes, runs, prints the table; the exit code.
pub(crate) fn cmd_compare(
    spec: compare::CompareSpec,
    out: Option<PathBuf>,
    hang_after: Duration,
) -> anyhow::Result<i32> {
    let plan = compare::plan(&spec)?;
    let project_root = match root::project_root() {
        Ok(r) => Some(r),
        Err(e) if spec.runtimes.iter().any(|r| r != "troupe") => return Err(e.into()),
        Err(_) => None,
    };
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
    say!(
        "compare {}: {} ok, {} failed, {} already complete{}{}",
        out.display(),
        s.ok,
        s.failed,
        s.skipped,
        if s.degraded > 0 { format!("; {} degraded", s.degraded) } else { String::new() },
        if s.interrupted { ", interrupted (run the same command again to resume)" } else { "" }
    );
    for line in &s.table {
        say!("{line}");
    }
    say!("report  {}", out.join("report.html").display());
    Ok(if s.interrupted {
        code::INTERRUPTED
    } else if s.failed > 0 {
        code::FAILED
    } else if s.degraded > 0 {
        code::DEGRADED
    } else {
        0
    })
}
