//! Comparisons (`troupe lab compare`): the same grid of configs run on several runtimes, one
//! after another, each point on the very same schedule file, with one report putting the
//! runtimes side by side, normalised to each runtime's own 0% baseline (seed 001 fig. 9).
//!
//! Rules:
//! 1. The grid is a sweep's grid (`--set key=v1,v2`, validated all at once, canonicalised by
//!    the workload). When the workload normalises to a fault-free baseline (SCP: the same
//!    point at 0%), that point is added before each point that injects faults when the grid
//!    lacks it. Point names carry every axis plus the workload's point keys (SCP: pattern and
//!    failure rate).
//! 2. Runtimes are named once each; a peer must have `peers/<rt>/<workload>/{build,run}`.
//!    Before any run, every peer is built with its own tool (its script caches). Missing
//!    toolchains stop the comparison before it starts, every one named with the command that
//!    installs it. A peer whose build fails otherwise is kept: each of its runs is recorded as
//!    failed with the build's reason and output, and the others go on.
//! 3. Each point's schedule is computed once, into `schedules/<point>.jsonl`, and copied byte
//!    for byte into the run folder of every runtime; an existing file (from an interrupted
//!    comparison) is kept, so resumed runs get the bytes the earlier ones got.
//! 4. Points run in grid order, every runtime on a point before the next point, so slow drift
//!    of a shared machine falls on all runtimes alike. Run folders are `<rt>/<point>/`, each
//!    an ordinary run folder (manifest, events, ...).
//! 5. A run that crashes, hangs past its deadline, writes malformed or incomplete events, or
//!    cannot be started is a failed run of that runtime (stderr kept in its folder); the
//!    comparison goes on and the report marks the gap. Ctrl-C stops it (resumable).
//! 6. `compare.json` records the grid; running again into the same folder skips every run whose
//!    manifest says `ok`, redoes the others, and refuses a different grid. `--focus` (the point
//!    whose throughput over time is plotted) may change between invocations.
//! 7. `--reps N` runs every point N times on every runtime, each time on the point's one
//!    schedule (same config, same seed: a repetition measures run-to-run noise; sweep `seed` to
//!    vary it). Repetitions alternate the runtimes: for each point, repetition k runs every
//!    runtime, starting with runtime k (round robin), before repetition k + 1, so no runtime is
//!    always first after a build or always last on a warm machine. With N > 1 a run folder is
//!    `<rt>/<point>_rep-<k>/` and `compare.json` records `reps`; with N = 1 nothing changes.
//!    The reports show each point's mean over its repetitions with a 95% confidence interval
//!    ([`crate::stats::MeanCi`]) and N.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::child::Stop;
use crate::config::Config;
use crate::error::{ConfigIssue, Error, ErrorKind, Result};
pub use crate::folders::{CompareFile, RunFolder, FILE};
use crate::manifest::{Manifest, Status};
use crate::peer::{self, PreparedPeer};
use crate::registry::Registry;
use crate::run::{self, RunOutcome, RunRequest, TroupeExe};
use crate::schedule;
use crate::sweep::{self, Point, SweepObserver};
use crate::workload::Workload;

/// Writes a comparison folder's report through its workload, found in `registry`; the
/// side-by-side table as lines.
pub fn write_report(registry: &Registry, dir: &Path) -> Result<Vec<String>> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let file: CompareFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
    registry.get(&file.workload)?.write_compare_report(dir)
}

/// The file recording each runtime's version, settings and build.
pub const RUNTIMES_FILE: &str = "runtimes.json";
/// Folder names a runtime may not take.
const RESERVED: &[&str] = &["schedules", "builds"];

/// What to compare.
#[derive(Debug, Clone)]
pub struct CompareSpec {
    /// The workload.
    pub workload: &'static dyn Workload,
    /// A TOML config file's (path, text), applied before the overrides.
    pub config_file: Option<(String, String)>,
    /// `key=value[,value...]` overrides.
    pub sets: Vec<String>,
    /// Runtimes, in report order.
    pub runtimes: Vec<String>,
    /// The point whose throughput over time the report plots (default: chosen by the report).
    pub focus: Option<String>,
    /// Repetitions of every point on every runtime (rule 7); 1 for a single run.
    pub reps: u32,
}

/// One point of the grid, run on every runtime.
#[derive(Debug, Clone)]
pub struct PlanPoint {
    /// Folder name (under each runtime's folder and under `schedules/`).
    pub name: String,
    /// Resolved config.
    pub config: Config,
}

/// The expanded comparison.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload.
    pub workload: &'static dyn Workload,
    /// What `compare.json` records.
    pub file: CompareFile,
    /// The points, in run order.
    pub points: Vec<PlanPoint>,
}

impl Plan {
    /// Every (runtime, point, repetition) run as a sweep point named by its folder
    /// (`<rt>/<point>`, or `<rt>/<point>_rep-<k>`), in run order (rule 7).
    pub fn runs(&self) -> Vec<Point> {
        self.file
            .run_folders()
            .into_iter()
            .filter_map(|f| {
                let p = self.points.iter().find(|p| p.name == f.point)?;
                Some(Point { name: f.rel, runtime: f.runtime, config: p.config.clone(), rep: f.rep })
            })
            .collect()
    }

    /// The runs not yet complete in `dir`.
    pub fn pending(&self, dir: &Path) -> Vec<Point> {
        self.runs().into_iter().filter(|p| !sweep::is_complete(&dir.join(&p.name))).collect()
    }
}

fn issue(key: &str, value: &str, problem: String) -> Error {
    Error::new(ErrorKind::InvalidConfig(vec![ConfigIssue { key: key.into(), value: value.into(), problem }]))
}

/// Checks the runtime list (rule 2): named once each, usable as folder names, and each peer
/// with a program for the workload under `root`.
pub fn check_runtimes(runtimes: &[String], workload: &str, root: Option<&Path>) -> Result<()> {
    if runtimes.is_empty() {
        return Err(issue("runtimes", "", "name at least one runtime, e.g. troupe,erlang".into()));
    }
    let mut seen = BTreeSet::new();
    for rt in runtimes {
        if !seen.insert(rt.as_str()) {
            return Err(issue("runtimes", rt, "named twice; name each runtime once".into()));
        }
        if rt.is_empty() || rt.starts_with('.') || sweep::sanitize(rt) != *rt || RESERVED.contains(&rt.as_str()) {
            return Err(issue("runtimes", rt, "not a runtime name (letters, digits, . _ -)".into()));
        }
        if rt == "troupe" {
            continue;
        }
        let root = root.ok_or_else(|| Error::new(ErrorKind::NoProjectRoot))?;
        if !peer::has_program(root, rt, workload) {
            let mut have: Vec<String> = std::fs::read_dir(root.join("peers"))
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .filter(|e| peer::has_program(root, &e.file_name().to_string_lossy(), workload))
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            have.sort();
            have.insert(0, "troupe".into());
            let names: Vec<&str> = have.iter().map(String::as_str).collect();
            return Err(Error::new(ErrorKind::Unsupported(format!(
                "runtime {rt:?} has no {workload} program ({} has no build and run){}; \
                 runtimes with one: {}",
                peer::workload_dir(root, rt, workload).display(),
                crate::did_you_mean(rt, &names),
                have.join(", ")
            ))));
        }
    }
    Ok(())
}

/// Expands and validates the comparison (rule 1).
pub fn plan(spec: &CompareSpec) -> Result<Plan> {
    sweep::check_reps(spec.reps)?;
    let workload = spec.workload;
    let cg = sweep::expand_configs(workload, spec.config_file.as_ref(), &spec.sets)?;
    // `[net_faults]` only on runtimes that can apply it, refused before any run starts.
    for cfg in &cg.configs {
        for rt in &spec.runtimes {
            crate::netfaults::check_runtime(cfg, rt, crate::root::project_root().ok().as_deref())?;
        }
    }
    let mut keys: Vec<&str> = cg.axes.iter().map(|(k, _)| k.as_str()).collect();
    for &k in workload.point_keys() {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut seen = BTreeSet::new();
    let mut configs = Vec::new();
    for cfg in cg.configs {
        if let Some(base) = workload.baseline_of(&cfg) {
            if seen.insert(base.to_json().to_string()) {
                configs.push(base);
            }
        }
        if seen.insert(cfg.to_json().to_string()) {
            configs.push(cfg);
        }
    }
    let mut names = BTreeSet::new();
    let mut points = Vec::new();
    for (i, config) in configs.into_iter().enumerate() {
        let mut name = sweep::name_suffix(&config, &keys).trim_start_matches('_').to_string();
        if !names.insert(name.clone()) {
            name = format!("{name}_{i}");
            names.insert(name.clone());
        }
        points.push(PlanPoint { name, config });
    }
    if let Some(f) = &spec.focus {
        if !points.iter().any(|p| &p.name == f) {
            let all: Vec<&str> = points.iter().map(|p| p.name.as_str()).collect();
            return Err(issue("focus", f, format!("not a point of this grid; points: {}", all.join(", "))));
        }
    }
    let file = CompareFile {
        format: 1,
        workload: workload.name().into(),
        runtimes: spec.runtimes.clone(),
        base_config: cg.base,
        axes: cg.axes,
        points: points.iter().map(|p| p.name.clone()).collect(),
        configs: points.iter().map(|p| p.config.to_json()).collect(),
        focus: spec.focus.clone(),
        reps: spec.reps,
    };
    Ok(Plan { workload, file, points })
}

/// A runtime's line in `runtimes.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeInfo {
    /// Runtime name.
    pub name: String,
    /// Version and settings, when it could be prepared.
    pub prepared: Option<PreparedPeer>,
    /// Why its build failed.
    pub build_error: Option<String>,
}

/// How a comparison went.
#[derive(Debug, Default, Clone)]
pub struct CompareSummary {
    /// Runs completed now.
    pub ok: usize,
    /// Runs failed now.
    pub failed: usize,
    /// Runs completed now but degraded (their statistics count what did not recover).
    pub degraded: usize,
    /// Runs already complete from an earlier invocation.
    pub skipped: usize,
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
    /// The side-by-side table the final report wrote, one line per run.
    pub table: Vec<String>,
}

/// How to run: the Troupe program, the project root, the recorded command and the slack
/// before a child counts as hung.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// How to start the Troupe SUB.
    pub troupe: TroupeExe,
    /// The project root (needed for peers).
    pub project_root: Option<PathBuf>,
    /// The lab's command line.
    pub command: Vec<String>,
    /// Slack added to warm-up plus window.
    pub deadline_slack: Duration,
}

fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(v).map_err(|e| Error::other(e.to_string()))?;
    std::fs::write(path, text + "\n").map_err(|e| Error::io(path, e))
}

/// Writes or checks `compare.json` (rule 6).
fn claim_folder(plan: &Plan, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let path = dir.join(FILE);
    if path.is_file() {
        let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
        let old: CompareFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
        if !old.same_grid(&plan.file) {
            return Err(Error::new(ErrorKind::SweepMismatch(dir.to_path_buf())));
        }
    } else if dir.join("sweep.json").exists() || dir.join(crate::manifest::FILE).exists() {
        return Err(Error::new(ErrorKind::SweepMismatch(dir.to_path_buf())));
    }
    write_json(&path, &plan.file)
}

/// Writes each point's schedule once (rule 3); returns the file per point.
fn write_schedules(plan: &Plan, dir: &Path) -> Result<Vec<PathBuf>> {
    let sdir = dir.join("schedules");
    std::fs::create_dir_all(&sdir).map_err(|e| Error::io(&sdir, e))?;
    let mut out = Vec::new();
    for p in &plan.points {
        let path = sdir.join(format!("{}.jsonl", p.name));
        if !path.is_file() {
            schedule::write(&path, &crate::workload::schedule_of(plan.workload, &p.config))?;
        }
        out.push(path);
    }
    Ok(out)
}

/// Builds every peer and gathers versions (rule 2); writes `runtimes.json`.
fn prepare_all(
    plan: &Plan,
    dir: &Path,
    ctx: &RunContext,
    stop: &Stop,
    obs: &mut dyn SweepObserver,
) -> Result<Vec<RuntimeInfo>> {
    let mut infos = Vec::new();
    let mut missing: Vec<(String, String)> = Vec::new();
    for rt in &plan.file.runtimes {
        if rt == "troupe" {
            let prepared = PreparedPeer {
                program: ctx.troupe.program.clone(),
                version: format!("troupe {}", env!("CARGO_PKG_VERSION")),
                settings: peer::troupe_settings(),
            };
            infos.push(RuntimeInfo { name: rt.clone(), prepared: Some(prepared), build_error: None });
            continue;
        }
        let root = ctx.project_root.as_deref().ok_or_else(|| Error::new(ErrorKind::NoProjectRoot))?;
        let log_dir = dir.join("builds").join(rt);
        std::fs::create_dir_all(&log_dir).map_err(|e| Error::io(&log_dir, e))?;
        obs.note(&format!("building {rt} ({})", peer::workload_dir(root, rt, &plan.file.workload).display()));
        match peer::prepare(root, rt, &plan.file.workload, &log_dir, stop) {
            Ok(p) => {
                obs.note(&format!("{rt}: {}", p.version));
                infos.push(RuntimeInfo { name: rt.clone(), prepared: Some(p), build_error: None });
            }
            Err(e) => match e.kind() {
                ErrorKind::MissingToolchain { runtime, message } => missing.push((runtime.clone(), message.clone())),
                _ if stop.is_set() => return Err(Error::other("interrupted while building the peers")),
                _ => {
                    obs.note(&format!("{rt}: BUILD FAILED: {e}"));
                    infos.push(RuntimeInfo { name: rt.clone(), prepared: None, build_error: Some(e.to_string()) });
                }
            },
        }
    }
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|m| m.0.as_str()).collect();
        let lines: Vec<String> = missing.iter().map(|(rt, msg)| format!("{rt}: {msg}")).collect();
        return Err(Error::new(ErrorKind::MissingToolchain {
            runtime: names.join(", "),
            message: format!("nothing was run.\n  {}", lines.join("\n  ")),
        }));
    }
    write_json(&dir.join(RUNTIMES_FILE), &infos)?;
    Ok(infos)
}

/// Runs the comparison into `dir` (rules 2-6), then writes its report.
pub fn run(
    plan: &Plan,
    dir: &Path,
    ctx: &RunContext,
    stop: &Stop,
    obs: &mut dyn SweepObserver,
) -> Result<CompareSummary> {
    check_runtimes(&plan.file.runtimes, &plan.file.workload, ctx.project_root.as_deref())?;
    claim_folder(plan, dir)?;
    let schedules = write_schedules(plan, dir)?;
    let infos = prepare_all(plan, dir, ctx, stop, obs)?;
    let runs = plan.runs();
    let done = runs.iter().filter(|p| sweep::is_complete(&dir.join(&p.name))).count();
    obs.planned(runs.len(), done);
    let mut summary = CompareSummary { skipped: done, ..CompareSummary::default() };
    'points: for f in plan.file.run_folders() {
        let Some(idx) = plan.points.iter().position(|p| p.name == f.point) else { continue };
        let (p, sched) = (&plan.points[idx], &schedules[idx]);
        let Some(info) = infos.iter().find(|i| i.name == f.runtime) else { continue };
        if stop.is_set() {
            summary.interrupted = true;
            break 'points;
        }
        let point = Point { name: f.rel.clone(), runtime: f.runtime.clone(), config: p.config.clone(), rep: f.rep };
        let rdir = dir.join(&point.name);
        if sweep::is_complete(&rdir) {
            continue;
        }
        if rdir.exists() {
            std::fs::remove_dir_all(&rdir).map_err(|e| Error::io(&rdir, e))?;
        }
        obs.started(&point);
        let mut req = RunRequest::new(plan.workload, p.config.clone(), &info.name, rdir.clone(), ctx.troupe.clone());
        req.project_root = ctx.project_root.clone();
        req.command = ctx.command.clone();
        req.run_id = Some(point.name.replace('/', "-"));
        req.schedule_file = Some(sched.clone());
        req.peer = info.prepared.clone();
        req.deadline_slack = ctx.deadline_slack;
        let outcome = match (&info.prepared, &info.build_error) {
            (None, Some(reason)) => {
                let log = std::fs::read_to_string(dir.join("builds").join(&info.name).join("build-stderr.txt"))
                    .unwrap_or_default();
                run::record_failed(&req, &format!("build failed: {reason}"), &log)?;
                RunOutcome { dir: rdir.clone(), manifest: Manifest::read(&rdir)?, stats: None }
            }
            _ => match run::run(&req, stop) {
                Ok(o) => o,
                // A run that could not start is a failed run of this runtime when it left a
                // manifest saying so (rule 5); anything else (an unusable folder) stops.
                Err(e) => match Manifest::read(&rdir) {
                    Ok(m) if m.status == Status::Failed => RunOutcome { dir: rdir.clone(), manifest: m, stats: None },
                    _ => {
                        let _ = plan.workload.write_compare_report(dir);
                        return Err(e);
                    }
                },
            },
        };
        obs.finished(&point, &outcome);
        if outcome.manifest.interrupted {
            summary.interrupted = true;
            break 'points;
        }
        match outcome.manifest.status {
            Status::Ok => summary.ok += 1,
            Status::Degraded => summary.degraded += 1,
            _ => summary.failed += 1,
        }
    }
    summary.table = plan.workload.write_compare_report(dir)?;
    Ok(summary)
}
