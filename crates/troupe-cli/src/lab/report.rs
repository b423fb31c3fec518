//! `troupe lab report`: rebuilds the report of a run, sweep or comparison folder from its
//! recorded events.

use std::path::Path;

use troupe_lab::registry::Registry;
use troupe_lab::run::RunOutcome;
use troupe_lab::{compare, sweep, Error, ErrorKind};

use crate::code;
use crate::shared::{print_summary, say};

/// `troupe lab report DIR`: which kind of folder it is decides what is rebuilt; the exit code.
pub(super) fn report(reg: &Registry, dir: &Path) -> anyhow::Result<i32> {
    if dir.join(compare::FILE).is_file() {
        for line in compare::write_report(reg, dir)? {
            say!("{line}");
        }
        say!("rebuilt the report of a comparison: {}", dir.join("report.html").display());
    } else if dir.join("sweep.json").is_file() {
        let n = sweep::write_report(reg, dir)?;
        say!("rebuilt the report of a sweep of {n} runs: {}", dir.join("report.html").display());
    } else if dir.join("manifest.json").is_file() {
        let w = reg.get(&troupe_lab::manifest::Manifest::read(dir)?.workload)?;
        let (m, _, stats) = troupe_lab::run_folder::rebuild_run(w, dir, None)?;
        let missing = stats.is_none();
        let o = RunOutcome { dir: dir.to_path_buf(), manifest: m, stats };
        print_summary(&o);
        if missing {
            // A run folder without its events has nothing to report, whatever its manifest says.
            eprintln!(
                "troupe lab: {} has no events.jsonl: there are no statistics to report (the manifest's status is \
                 what the run recorded, not a result)",
                dir.display()
            );
            return Ok(code::FILES);
        }
    } else if !dir.is_dir() {
        return Err(Error::io(dir, std::io::Error::new(std::io::ErrorKind::NotFound, "no such folder")).into());
    } else {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())).into());
    }
    Ok(0)
}
