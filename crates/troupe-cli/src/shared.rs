//! What every `troupe lab` subcommand uses: the `say!` macro, the Ctrl-C handler, how to start
//! the Troupe SUB, the default run folder, resolving a config, reading a `--config` file,
//! finding the project root for a set of runtimes, the run summary, and the mapping of lab
//! errors and sweep/comparison tallies to the exit codes listed in main.rs.
//!
//! Below every subcommand module (`lab::*`, `micro::*`); it imports none of them.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use troupe_lab::child::Stop;
use troupe_lab::config::{Config, ConfigBuilder};
use troupe_lab::manifest::Status;
use troupe_lab::run::{RunOutcome, TroupeExe};
use troupe_lab::workload::Workload;
use troupe_lab::{machine, report, root, Error, ErrorKind};

use crate::code;

/// Prints a line to stdout, ignoring a closed pipe (`troupe lab run ... | head`).
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}
pub(crate) use say;

/// Maps a lab error to an exit code.
pub(crate) fn exit_code(e: &anyhow::Error) -> i32 {
    match e.downcast_ref::<Error>().map(Error::kind) {
        Some(ErrorKind::InvalidConfig(_)) | Some(ErrorKind::Unsupported(_)) => code::USAGE,
        Some(ErrorKind::MissingToolchain { .. }) => code::TOOLCHAIN,
        Some(ErrorKind::Io { .. })
        | Some(ErrorKind::NotARun(_))
        | Some(ErrorKind::NoProjectRoot)
        | Some(ErrorKind::SweepMismatch(_))
        | Some(ErrorKind::Malformed { .. }) => code::FILES,
        _ => code::FAILED,
    }
}

/// The workload's defaults, then `file`'s keys, then each `--set`, checked.
pub(crate) fn resolve(workload: &'static dyn Workload, file: Option<&Path>, sets: &[String]) -> anyhow::Result<Config> {
    let mut b = ConfigBuilder::new(workload);
    if let Some(f) = file {
        let text = std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?;
        b.apply_toml(&text, &f.display().to_string());
    }
    for s in sets {
        b.apply_set(s);
    }
    Ok(b.build()?)
}

/// A `--config` file as a sweep or comparison takes it: (its name, its text).
pub(crate) fn read_config_file(file: Option<&Path>) -> anyhow::Result<Option<(String, String)>> {
    Ok(match file {
        Some(f) => Some((f.display().to_string(), std::fs::read_to_string(f).map_err(|e| Error::io(f, e))?)),
        None => None,
    })
}

/// The project root: required when a runtime other than `troupe` is asked for (its program
/// lives under `peers/`), optional otherwise.
pub(crate) fn project_root_for(runtimes: &[String]) -> anyhow::Result<Option<PathBuf>> {
    match root::project_root() {
        Ok(r) => Ok(Some(r)),
        Err(e) if runtimes.iter().any(|r| r != "troupe") => Err(e.into()),
        Err(_) => Ok(None),
    }
}

/// Installs the Ctrl-C handler: the first Ctrl-C sets `stop`, a second one exits at once.
pub(crate) fn ctrl_c(stop: &Stop) {
    let stop = stop.clone();
    let spawned = std::thread::Builder::new().name("ctrl-c".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        rt.block_on(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                eprintln!("\ntroupe lab: stopping (Ctrl-C again to quit at once)");
                stop.trigger();
            }
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(code::INTERRUPTED);
            }
        });
    });
    if spawned.is_err() {
        eprintln!("troupe lab: cannot install the Ctrl-C handler; Ctrl-C will not stop runs cleanly");
    }
}

/// How to start the Troupe SUB of `workload`: this program, `lab exec <its first role>`.
pub(crate) fn troupe_exe(workload: &dyn Workload) -> anyhow::Result<TroupeExe> {
    let program = std::env::current_exe().context("cannot find this program's path")?;
    let role = workload.roles().first().copied().unwrap_or(workload.name());
    Ok(TroupeExe { program, args: vec!["lab".into(), "exec".into(), role.into()] })
}

/// `lab-runs/<name>-<UTC stamp>`, or `...-2`, `-3`, ... when a run started in the same second
/// already has that folder (back-to-back runs from a script).
pub(crate) fn default_out(name: &str) -> PathBuf {
    free_dir(Path::new("lab-runs"), &format!("{name}-{}", machine::folder_stamp(machine::now_unix_ms())))
}

/// `dir/base`, or the first of `dir/base-2`, `dir/base-3`, ... that does not exist.
fn free_dir(dir: &Path, base: &str) -> PathBuf {
    let first = dir.join(base);
    if !first.exists() {
        return first;
    }
    (2..10_000).map(|i| dir.join(format!("{base}-{i}"))).find(|p| !p.exists()).unwrap_or(first)
}

/// Prints a run's summary: its folder, status, runtime, statistics and files, aligned.
pub(crate) fn print_summary(o: &RunOutcome) {
    let m = &o.manifest;
    let mut rows: Vec<(String, String)> = vec![
        ("run".into(), o.dir.display().to_string()),
        (
            "status".into(),
            match m.status {
                Status::Ok => "ok".into(),
                Status::Degraded => {
                    let r = m.reason.as_deref().unwrap_or_default();
                    format!("DEGRADED: {}", r.strip_prefix("degraded: ").unwrap_or(r))
                }
                _ => format!("FAILED: {}", m.reason.clone().unwrap_or_default()),
            },
        ),
        ("runtime".into(), m.runtime_version.clone()),
    ];
    match &o.stats {
        Some(st) => {
            rows.extend(st.summary_rows());
            rows.push(("summary".into(), o.dir.join(report::SUMMARY).display().to_string()));
        }
        None => rows.push(("statistics".into(), "none: the run recorded no events (events.jsonl is missing)".into())),
    }
    rows.push(("report".into(), o.dir.join("report.html").display().to_string()));
    if m.status != Status::Ok {
        rows.push(("stderr".into(), o.dir.join("stderr.txt").display().to_string()));
    }
    let w = rows.iter().map(|r| r.0.len()).max().unwrap_or(0);
    for (k, v) in rows {
        say!("{k:<w$}  {v}");
    }
}

/// What a sweep or a comparison did with its runs.
#[derive(Default)]
pub(crate) struct Tally {
    ok: usize,
    failed: usize,
    skipped: usize,
    degraded: usize,
    pub(crate) interrupted: bool,
}

impl From<&troupe_lab::sweep::SweepSummary> for Tally {
    fn from(s: &troupe_lab::sweep::SweepSummary) -> Self {
        Tally { ok: s.ok, failed: s.failed, skipped: s.skipped, degraded: s.degraded, interrupted: s.interrupted }
    }
}

impl From<&troupe_lab::compare::CompareSummary> for Tally {
    fn from(s: &troupe_lab::compare::CompareSummary) -> Self {
        Tally { ok: s.ok, failed: s.failed, skipped: s.skipped, degraded: s.degraded, interrupted: s.interrupted }
    }
}

impl Tally {
    /// Adds one more sweep's runs (`troupe lab reproduce`: one sweep per figure).
    pub(crate) fn add(&mut self, s: &troupe_lab::sweep::SweepSummary) {
        self.ok += s.ok;
        self.failed += s.failed;
        self.skipped += s.skipped;
        self.degraded += s.degraded;
        self.interrupted |= s.interrupted;
    }

    /// Prints `<what> <out>: N ok, N failed, N already complete[; N degraded][, interrupted ...]`.
    pub(crate) fn say(&self, what: &str, out: &Path) {
        say!(
            "{what} {}: {} ok, {} failed, {} already complete{}{}",
            out.display(),
            self.ok,
            self.failed,
            self.skipped,
            if self.degraded > 0 { format!("; {} degraded", self.degraded) } else { String::new() },
            if self.interrupted { ", interrupted (run the same command again to resume)" } else { "" }
        );
    }

    /// The exit code: interrupted, else failed runs, else degraded runs, else 0.
    pub(crate) fn code(&self) -> i32 {
        if self.interrupted {
            code::INTERRUPTED
        } else if self.failed > 0 {
            code::FAILED
        } else if self.degraded > 0 {
            code::DEGRADED
        } else {
            0
        }
    }
}

#[cfg(test)]
mod out_tests {
    use super::*;

    #[test]
    fn back_to_back_runs_in_one_second_get_their_own_folders() {
        let tmp = std::env::temp_dir().join(format!("troupe-free-dir-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).unwrap();
        assert_eq!(free_dir(&tmp, "latency-1"), tmp.join("latency-1"));
        std::fs::create_dir(tmp.join("latency-1")).unwrap();
        assert_eq!(free_dir(&tmp, "latency-1"), tmp.join("latency-1-2"));
        std::fs::create_dir(tmp.join("latency-1-2")).unwrap();
        assert_eq!(free_dir(&tmp, "latency-1"), tmp.join("latency-1-3"));
        std::fs::remove_dir_all(&tmp).unwrap();
    }
}
