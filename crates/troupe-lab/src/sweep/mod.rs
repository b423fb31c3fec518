//! Sweeps: a grid of runs (keys given several values x runtimes), run one after another into
//! one folder, resumable, with one report across the grid.
//!
//! Rules:
//! 1. `--set key=v1,v2,...` with two or more values makes `key` an axis; one value is a
//!    fixed override. Every grid point is validated before the first run starts, and every
//!    problem of every point is reported at once.
//! 2. Points that inject nothing (`failure_rate = 0` or `pattern = none`) are the same run
//!    whatever the pattern: they are canonicalised and run once, as the ratio's baseline.
//! 3. The folder holds `sweep.json` (workload, runtimes, base config, axes, point names) and
//!    `runs/<point>/` run folders. Running again into the same folder skips every point whose
//!    manifest says `ok` and reruns the others (failed, interrupted, never finished); a folder
//!    made for a different grid is refused.
//! 4. A failed run does not stop the sweep; a missing toolchain, an unstartable program or
//!    Ctrl-C does.
//! 5. The report is the workload's ([`crate::workload::Workload::write_sweep_report`]):
//!    `sweep.csv` (one row per run), per-run reports rebuilt, and `report.html` with the
//!    workload's cross-run plots (SCP: throughput vs failure rate per pattern and ratio; chat:
//!    throughput vs fault pause, detection and reconnection vs scale).
//! 6. `--reps N` runs every point N times, each time with the point's own config (its seed
//!    included: a repetition measures the run-to-run noise of the same schedule; to vary the
//!    seed, sweep `seed` as an axis). Repetitions go round the whole grid: repetition 1 of every
//!    point, then repetition 2, ..., so slow drift of a shared machine spreads over all points.
//!    With N > 1 a run folder is `runs/<point>_rep-<k>/` (k = 1..=N) and `sweep.json` records
//!    `reps`; with N = 1 nothing changes (no suffix, no `reps` in `sweep.json`), so folders made
//!    before repetitions existed resume as they are. The reports give every point the mean of
//!    its repetitions with a 95% confidence interval ([`crate::stats::MeanCi`]) and N.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::child::Stop;
use crate::config::{Config, ConfigBuilder};
use crate::error::{ConfigIssue, Error, ErrorKind, Result};
pub use crate::folders::{is_one, one, rep_name, sanitize, split_rep, SweepFile};
use crate::manifest::{Manifest, Status};
use crate::registry::Registry;
use crate::run::{self, RunOutcome, RunRequest, TroupeExe};
use crate::workload::Workload;

/// Writes a sweep folder's report through its workload, found in `registry` (rule 5); the
/// number of runs.
pub fn write_report(registry: &Registry, dir: &Path) -> Result<usize> {
    let path = dir.join("sweep.json");
    if !path.is_file() {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let file: SweepFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
    registry.get(&file.workload)?.write_sweep_report(dir)
}

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// The workload.
    pub workload: &'static dyn Workload,
    /// A TOML config file's (path, text), applied before the overrides.
    pub config_file: Option<(String, String)>,
    /// `key=value[,value...]` overrides.
    pub sets: Vec<String>,
    /// Runtimes to run every point on.
    pub runtimes: Vec<String>,
    /// Repetitions of every point (rule 6); 1 for a single run.
    pub reps: u32,
}

/// One run of the grid.
#[derive(Debug, Clone)]
pub struct Point {
    /// Folder name under `runs/`.
    pub name: String,
    /// Runtime.
    pub runtime: String,
    /// Resolved config.
    pub config: Config,
    /// Which repetition (1-based; rule 6).
    pub rep: u32,
}

/// The most repetitions `--reps` accepts.
pub const MAX_REPS: u32 = 100;

/// Checks a `--reps` value: 1..=[`MAX_REPS`].
pub fn check_reps(reps: u32) -> Result<()> {
    if (1..=MAX_REPS).contains(&reps) {
        Ok(())
    } else {
        Err(Error::new(ErrorKind::InvalidConfig(vec![ConfigIssue {
            key: "reps".into(),
            value: reps.to_string(),
            problem: format!("repetitions must be 1..={MAX_REPS}; use --reps 3 for three runs of every point"),
        }])))
    }
}

/// The expanded grid.
#[derive(Debug, Clone)]
pub struct Grid {
    /// The workload.
    pub workload: &'static dyn Workload,
    /// What `sweep.json` records.
    pub file: SweepFile,
    /// The runs.
    pub points: Vec<Point>,
}

/// The grid's configs, before runtimes are applied.
#[derive(Debug, Clone)]
pub struct ConfigGrid {
    /// Config before the axes are applied (defaults, file, fixed overrides; not validated).
    pub base: serde_json::Value,
    /// The axes: key and values as given.
    pub axes: Vec<(String, Vec<String>)>,
    /// The points, validated, canonicalised and deduplicated, in grid order (first axis
    /// outermost).
    pub configs: Vec<Config>,
}

/// Splits `--set` arguments into fixed overrides and axes (rule 1).
fn split_sets(sets: &[String]) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let mut fixed = Vec::new();
    let mut axes: Vec<(String, Vec<String>)> = Vec::new();
    for s in sets {
        match s.split_once('=') {
            // A TOML list or table (`net_faults.delay_ms=[1, 20]`) is one value, not an axis.
            Some((k, v)) if v.contains(',') && !v.trim_start().starts_with(['[', '{']) => axes.push((
                k.trim().to_string(),
                v.split(',').map(|x| x.trim().to_string()).filter(|x| !x.is_empty()).collect(),
            )),
            _ => fixed.push(s.clone()),
        }
    }
    (fixed, axes)
}

/// Expands and validates the configs of a grid (rules 1-2), every problem reported at once.
pub fn expand_configs(
    workload: &'static dyn Workload,
    config_file: Option<&(String, String)>,
    sets: &[String],
) -> Result<ConfigGrid> {
    let (fixed, axes) = split_sets(sets);
    let base_builder = |extra: &[String]| -> Result<ConfigBuilder> {
        let mut b = ConfigBuilder::new(workload);
        if let Some((origin, text)) = config_file {
            b.apply_toml(text, origin);
        }
        for s in fixed.iter().chain(extra) {
            b.apply_set(s);
        }
        Ok(b)
    };
    // The base is recorded as given; it is validated only as part of each grid point, since
    // an axis may override the keys that make it invalid on its own.
    let base = base_builder(&[])?.values_json();
    // The cartesian product of the axes, first axis outermost.
    let mut combos: Vec<Vec<String>> = vec![vec![]];
    for (k, vals) in &axes {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                vals.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push(format!("{k}={v}"));
                    c
                })
            })
            .collect();
    }
    let mut issues: Vec<ConfigIssue> = Vec::new();
    let mut configs = Vec::new();
    let mut seen = BTreeSet::new();
    for combo in &combos {
        match base_builder(combo)?.build() {
            Ok(cfg) => {
                let cfg = workload.canonical(&cfg);
                if seen.insert(cfg.to_json().to_string()) {
                    configs.push(cfg);
                }
            }
            Err(e) => match e.kind() {
                ErrorKind::InvalidConfig(list) => {
                    for i in list {
                        if !issues.contains(i) {
                            issues.push(i.clone());
                        }
                    }
                }
                _ => return Err(e),
            },
        }
    }
    if !issues.is_empty() {
        return Err(Error::new(ErrorKind::InvalidConfig(issues)));
    }
    Ok(ConfigGrid { base, axes, configs })
}

/// A point's name part: `_<key>-<value>` for each key, sanitised for a folder name.
pub fn name_suffix(cfg: &Config, keys: &[&str]) -> String {
    let mut name = String::new();
    for k in keys {
        let v = match k.strip_prefix("net_faults.") {
            Some(sub) => cfg.net_faults().map(|nf| nf.to_json()[sub].to_string()).unwrap_or_default(),
            None => cfg.get(k).map(|v| v.to_string()).unwrap_or_default(),
        };
        let _ = write!(name, "_{}-{}", sanitize(k), sanitize(v.trim_matches('"')));
    }
    name
}

/// Expands and validates the grid (rules 1-2).
pub fn expand(spec: &SweepSpec) -> Result<Grid> {
    let cg = expand_configs(spec.workload, spec.config_file.as_ref(), &spec.sets)?;
    let keys: Vec<&str> = cg.axes.iter().map(|(k, _)| k.as_str()).collect();
    check_reps(spec.reps)?;
    let mut points = Vec::new();
    for rep in 1..=spec.reps {
        for runtime in &spec.runtimes {
            for cfg in &cg.configs {
                // `[net_faults]` only on runtimes that can apply it, before any run starts.
                crate::netfaults::check_runtime(cfg, runtime, crate::root::project_root().ok().as_deref())?;
                let name = rep_name(&(sanitize(runtime) + &name_suffix(cfg, &keys)), rep, spec.reps);
                points.push(Point { name, runtime: runtime.clone(), config: cfg.clone(), rep });
            }
        }
    }
    let file = SweepFile {
        format: 1,
        workload: spec.workload.name().into(),
        runtimes: spec.runtimes.clone(),
        base_config: cg.base,
        axes: cg.axes,
        points: points.iter().map(|p| p.name.clone()).collect(),
        reps: spec.reps,
    };
    Ok(Grid { workload: spec.workload, file, points })
}

/// Progress callbacks (the CLI draws a progress bar from them).
pub trait SweepObserver {
    /// The sweep is about to start: `total` points, `done` already complete from before.
    fn planned(&mut self, total: usize, done: usize);
    /// A point starts.
    fn started(&mut self, point: &Point);
    /// A point ended (ok or failed).
    fn finished(&mut self, point: &Point, outcome: &RunOutcome);
    /// A line of news that is not about one point (a comparison's builds).
    fn note(&mut self, _text: &str) {}
}

/// Whether `dir` holds a completed (ok or degraded) run.
pub fn is_complete(dir: &Path) -> bool {
    Manifest::read(dir).map(|m| m.status.completed() && !m.interrupted).unwrap_or(false)
}

/// Runs the grid into `dir` (rules 3-4), then writes the sweep report.
pub fn run(
    grid: &Grid,
    dir: &Path,
    troupe: &TroupeExe,
    project_root: Option<PathBuf>,
    command: &[String],
    stop: &Stop,
    obs: &mut dyn SweepObserver,
) -> Result<SweepSummary> {
    std::fs::create_dir_all(dir.join("runs")).map_err(|e| Error::io(dir, e))?;
    let sweep_json = dir.join("sweep.json");
    if sweep_json.is_file() {
        let text = std::fs::read_to_string(&sweep_json).map_err(|e| Error::io(&sweep_json, e))?;
        let old: SweepFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&sweep_json, e.to_string()))?;
        if old != grid.file {
            return Err(Error::new(ErrorKind::SweepMismatch(dir.to_path_buf())));
        }
    } else {
        let text = serde_json::to_string_pretty(&grid.file).map_err(|e| Error::other(e.to_string()))?;
        std::fs::write(&sweep_json, text + "\n").map_err(|e| Error::io(&sweep_json, e))?;
    }
    let done = grid.points.iter().filter(|p| is_complete(&dir.join("runs").join(&p.name))).count();
    obs.planned(grid.points.len(), done);
    let mut summary = SweepSummary { skipped: done, ..SweepSummary::default() };
    for p in &grid.points {
        if stop.is_set() {
            summary.interrupted = true;
            break;
        }
        let rdir = dir.join("runs").join(&p.name);
        if is_complete(&rdir) {
            continue;
        }
        if rdir.exists() {
            std::fs::remove_dir_all(&rdir).map_err(|e| Error::io(&rdir, e))?;
        }
        obs.started(p);
        let mut req = RunRequest::new(grid.workload, p.config.clone(), &p.runtime, rdir, troupe.clone());
        req.project_root = project_root.clone();
        req.command = command.to_vec();
        req.run_id = Some(p.name.clone());
        let outcome = match run::run(&req, stop) {
            Ok(o) => o,
            Err(e) => {
                // Keep the report of what did run; the error (e.g. a missing toolchain) wins.
                let _ = grid.workload.write_sweep_report(dir);
                return Err(e);
            }
        };
        obs.finished(p, &outcome);
        if outcome.manifest.interrupted {
            summary.interrupted = true;
            break;
        }
        summary.count(outcome.manifest.status);
    }
    grid.workload.write_sweep_report(dir)?;
    Ok(summary)
}

impl SweepSummary {
    /// Counts one run that ended with `status`.
    pub fn count(&mut self, status: Status) {
        match status {
            Status::Ok => self.ok += 1,
            Status::Degraded => self.degraded += 1,
            _ => self.failed += 1,
        }
    }
}

/// How a sweep went.
#[derive(Debug, Default, Clone)]
pub struct SweepSummary {
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
}
