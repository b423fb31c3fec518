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
//! 5. The report: `sweep.csv` (one row per run), per-run reports rebuilt against their
//!    baseline, and `report.html` with throughput vs failure rate per pattern (one line per
//!    ratio), pattern comparison at 1:1 and 1:64, and throughput normalised to each ratio's
//!    baseline.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::child::Stop;
use crate::config::scp::{self, ScpConfig};
use crate::config::{Config, ConfigBuilder};
use crate::error::{ConfigIssue, Error, ErrorKind, Result};
use crate::manifest::{Manifest, Status};
use crate::report::{self, html, plot};
use crate::run::{self, RunOutcome, RunRequest, TroupeExe};

/// What to sweep.
#[derive(Debug, Clone)]
pub struct SweepSpec {
    /// Workload name.
    pub workload: String,
    /// A TOML config file's (path, text), applied before the overrides.
    pub config_file: Option<(String, String)>,
    /// `key=value[,value...]` overrides.
    pub sets: Vec<String>,
    /// Runtimes to run every point on.
    pub runtimes: Vec<String>,
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
}

/// `sweep.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepFile {
    /// Format version.
    pub format: u32,
    /// Workload.
    pub workload: String,
    /// Runtimes.
    pub runtimes: Vec<String>,
    /// Config before the axes are applied (defaults, file, fixed overrides; not validated).
    pub base_config: serde_json::Value,
    /// The axes: key and values as given.
    pub axes: Vec<(String, Vec<String>)>,
    /// Point folder names, in run order.
    pub points: Vec<String>,
}

/// The expanded grid.
#[derive(Debug, Clone)]
pub struct Grid {
    /// What `sweep.json` records.
    pub file: SweepFile,
    /// The runs.
    pub points: Vec<Point>,
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Expands and validates the grid (rules 1-2).
pub fn expand(spec: &SweepSpec) -> Result<Grid> {
    let mut fixed = Vec::new();
    let mut axes: Vec<(String, Vec<String>)> = Vec::new();
    for s in &spec.sets {
        match s.split_once('=') {
            Some((k, v)) if v.contains(',') => axes.push((
                k.trim().to_string(),
                v.split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect(),
            )),
            _ => fixed.push(s.clone()),
        }
    }
    let base_builder = |extra: &[String]| -> Result<ConfigBuilder> {
        let mut b = ConfigBuilder::new(&spec.workload)?;
        if let Some((origin, text)) = &spec.config_file {
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
    let mut points = Vec::new();
    let mut seen = BTreeSet::new();
    for runtime in &spec.runtimes {
        for combo in &combos {
            match base_builder(combo)?.build() {
                Ok(cfg) => {
                    let cfg = if cfg.workload() == "scp" {
                        scp::canonical(&cfg)
                    } else {
                        cfg
                    };
                    let key = format!("{runtime}|{}", cfg.to_json());
                    if !seen.insert(key) {
                        continue;
                    }
                    let mut name = sanitize(runtime);
                    for (k, _) in &axes {
                        let v = cfg.get(k).map(|v| v.to_string()).unwrap_or_default();
                        let _ = write!(name, "_{}-{}", sanitize(k), sanitize(v.trim_matches('"')));
                    }
                    points.push(Point {
                        name,
                        runtime: runtime.clone(),
                        config: cfg,
                    });
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
    }
    if !issues.is_empty() {
        return Err(Error::new(ErrorKind::InvalidConfig(issues)));
    }
    let file = SweepFile {
        format: 1,
        workload: spec.workload.clone(),
        runtimes: spec.runtimes.clone(),
        base_config: base,
        axes,
        points: points.iter().map(|p| p.name.clone()).collect(),
    };
    Ok(Grid { file, points })
}

/// Progress callbacks (the CLI draws a progress bar from them).
pub trait SweepObserver {
    /// The sweep is about to start: `total` points, `done` already complete from before.
    fn planned(&mut self, total: usize, done: usize);
    /// A point starts.
    fn started(&mut self, point: &Point);
    /// A point ended (ok or failed).
    fn finished(&mut self, point: &Point, outcome: &RunOutcome);
}

/// Whether `dir` holds a completed (ok) run.
pub fn is_complete(dir: &Path) -> bool {
    Manifest::read(dir)
        .map(|m| m.status == Status::Ok && !m.interrupted)
        .unwrap_or(false)
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
        let old: SweepFile = serde_json::from_str(&text)
            .map_err(|e| Error::malformed(&sweep_json, e.to_string()))?;
        if old != grid.file {
            return Err(Error::new(ErrorKind::SweepMismatch(dir.to_path_buf())));
        }
    } else {
        let text =
            serde_json::to_string_pretty(&grid.file).map_err(|e| Error::other(e.to_string()))?;
        std::fs::write(&sweep_json, text + "\n").map_err(|e| Error::io(&sweep_json, e))?;
    }
    let done = grid
        .points
        .iter()
        .filter(|p| is_complete(&dir.join("runs").join(&p.name)))
        .count();
    obs.planned(grid.points.len(), done);
    let mut summary = SweepSummary {
        skipped: done,
        ..SweepSummary::default()
    };
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
        let req = RunRequest {
            config: p.config.clone(),
            runtime: p.runtime.clone(),
            out_dir: rdir,
            troupe: troupe.clone(),
            project_root: project_root.clone(),
            command: command.to_vec(),
            run_id: Some(p.name.clone()),
        };
        let outcome = run::run(&req, stop)?;
        obs.finished(p, &outcome);
        if outcome.manifest.interrupted {
            summary.interrupted = true;
            break;
        }
        match outcome.manifest.status {
            Status::Ok => summary.ok += 1,
            _ => summary.failed += 1,
        }
    }
    write_report(dir)?;
    Ok(summary)
}

/// How a sweep went.
#[derive(Debug, Default, Clone)]
pub struct SweepSummary {
    /// Runs completed now.
    pub ok: usize,
    /// Runs failed now.
    pub failed: usize,
    /// Runs already complete from an earlier invocation.
    pub skipped: usize,
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
}

/// One run's line in the sweep report.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Folder name.
    pub name: String,
    /// Runtime.
    pub runtime: String,
    /// Typed config.
    #[serde(skip)]
    pub cfg: Option<ScpConfig>,
    /// Status.
    pub status: String,
    /// Mean throughput.
    pub mean: Option<f64>,
    /// Percent of ceiling.
    pub pct_ceiling: Option<f64>,
    /// Same ratio's baseline mean.
    pub baseline: Option<f64>,
    /// Drop vs baseline, percent.
    pub drop_pct: Option<f64>,
    /// Kills.
    pub kills: u64,
    /// Restarts.
    pub restarts: u64,
    /// Recovery text.
    pub recovery: String,
}

fn ratio_key(rt: &str, c: &ScpConfig) -> (String, u32, u32, u64, usize) {
    (
        rt.to_string(),
        c.pairs,
        c.supervisors,
        c.delay_ms,
        c.payload_bytes,
    )
}

/// Reads every run of a sweep folder, with baselines and drops filled in.
pub fn load_rows(dir: &Path) -> Result<(SweepFile, Vec<Row>, Option<Manifest>)> {
    let sweep_json = dir.join("sweep.json");
    if !sweep_json.is_file() {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
    }
    let text = std::fs::read_to_string(&sweep_json).map_err(|e| Error::io(&sweep_json, e))?;
    let file: SweepFile =
        serde_json::from_str(&text).map_err(|e| Error::malformed(&sweep_json, e.to_string()))?;
    // First pass: baselines.
    let mut baselines: BTreeMap<(String, u32, u32, u64, usize), f64> = BTreeMap::new();
    let mut loaded = Vec::new();
    let mut first_manifest = None;
    for name in &file.points {
        let rdir = dir.join("runs").join(name);
        if !rdir.join("manifest.json").is_file() {
            loaded.push((name.clone(), None));
            continue;
        }
        let (m, cfg, st) = report::load_run(&rdir, None)?;
        let scp = ScpConfig::from_config(&cfg);
        if m.status == Status::Ok && scp.is_baseline() {
            if let Some(st) = &st {
                baselines.insert(ratio_key(&m.runtime, &scp), st.mean);
            }
        }
        first_manifest.get_or_insert_with(|| m.clone());
        loaded.push((name.clone(), Some((m, scp))));
    }
    let mut rows = Vec::new();
    for (name, l) in loaded {
        let Some((m, scp)) = l else {
            rows.push(Row {
                name,
                runtime: String::new(),
                cfg: None,
                status: "not run".into(),
                mean: None,
                pct_ceiling: None,
                baseline: None,
                drop_pct: None,
                kills: 0,
                restarts: 0,
                recovery: String::new(),
            });
            continue;
        };
        let base = baselines.get(&ratio_key(&m.runtime, &scp)).copied();
        let rdir = dir.join("runs").join(&name);
        let (m, st) = report::rebuild_run(&rdir, base)?;
        let ok = m.status == Status::Ok;
        let mean = st.as_ref().filter(|_| ok).map(|s| s.mean);
        rows.push(Row {
            name,
            runtime: m.runtime.clone(),
            cfg: Some(scp),
            status: match (&m.status, m.interrupted) {
                (_, true) => "interrupted".into(),
                (Status::Ok, _) => "ok".into(),
                (Status::Failed, _) => format!("failed: {}", m.reason.clone().unwrap_or_default()),
                (Status::Running, _) => "running or abandoned".into(),
            },
            mean,
            pct_ceiling: st.as_ref().filter(|_| ok).map(|s| s.pct_ceiling),
            baseline: base,
            drop_pct: match (mean, base) {
                (Some(x), Some(b)) if b > 0.0 => Some(100.0 * (b - x) / b),
                _ => None,
            },
            kills: st.as_ref().map(|s| s.kills).unwrap_or(0),
            restarts: st.as_ref().map(|s| s.restarts).unwrap_or(0),
            recovery: st.as_ref().map(report::recovery_text).unwrap_or_default(),
        });
    }
    Ok((file, rows, first_manifest))
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map(|v| format!("{v:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// Writes `sweep.csv` and `report.html` for a sweep folder (rule 5).
pub fn write_report(dir: &Path) -> Result<Vec<Row>> {
    let (file, rows, first) = load_rows(dir)?;
    let mut csv = String::from(
        "run,runtime,pairs,supervisors,pairs_per_supervisor,delay_ms,pattern,failure_rate,\
         failure_basis,status,mean,pct_of_ceiling,baseline_mean,drop_pct,kills,restarts\n",
    );
    for r in &rows {
        let Some(c) = &r.cfg else { continue };
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.name,
            r.runtime,
            c.pairs,
            c.supervisors,
            c.pairs_per_supervisor(),
            c.delay_ms,
            c.pattern.as_str(),
            c.failure_rate,
            if c.basis_exchanges {
                "exchanges"
            } else {
                "pairs"
            },
            if r.status == "ok" { "ok" } else { "failed" },
            opt(r.mean, 2),
            opt(r.pct_ceiling, 3),
            opt(r.baseline, 2),
            opt(r.drop_pct, 3),
            r.kills,
            r.restarts
        );
    }
    let csv_path = dir.join("sweep.csv");
    std::fs::write(&csv_path, csv).map_err(|e| Error::io(&csv_path, e))?;

    let mut page = html::Page::new(&format!(
        "{} sweep: {}",
        file.workload.to_uppercase(),
        dir.display()
    ));
    let ok = rows.iter().filter(|r| r.status == "ok").count();
    page.p(&format!(
        "{} runs planned, {} ok, {} not ok or not run. Axes: {}. Runtimes: {}.",
        rows.len(),
        ok,
        rows.len() - ok,
        file.axes
            .iter()
            .map(|(k, v)| format!("{k} = {}", v.join(", ")))
            .collect::<Vec<_>>()
            .join("; "),
        file.runtimes.join(", ")
    ));
    for (i, (svg, caption)) in charts(&rows).into_iter().enumerate() {
        let name = format!("sweep-{i}.svg");
        let p = dir.join(&name);
        std::fs::write(&p, &svg).map_err(|e| Error::io(&p, e))?;
        page.figure(&svg, &caption);
    }
    page.h2("Runs");
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let c = r.cfg.as_ref();
            vec![
                html::link(&format!("runs/{}/report.html", r.name), &r.name),
                r.runtime.clone(),
                c.map(|c| format!("1:{}", c.pairs_per_supervisor()))
                    .unwrap_or_default(),
                c.map(|c| c.pattern.as_str().to_string())
                    .unwrap_or_default(),
                c.map(|c| c.failure_rate.to_string()).unwrap_or_default(),
                opt(r.mean, 1),
                opt(r.pct_ceiling, 2),
                opt(r.drop_pct, 2),
                r.kills.to_string(),
                r.restarts.to_string(),
                r.recovery.clone(),
                r.status.clone(),
            ]
        })
        .collect();
    page.table(
        &[
            "run",
            "runtime",
            "ratio",
            "pattern",
            "rate %",
            "mean/s",
            "% ceiling",
            "drop vs 0% %",
            "kills",
            "restarts",
            "recovery after bursts",
            "status",
        ],
        &table,
    );
    page.p(
        "Drop = (baseline mean - mean) / baseline mean, where the baseline is the same \
            runtime and ratio at 0% failures in this sweep.",
    );
    page.h2("Base config");
    let base: Vec<(String, String)> = file
        .base_config
        .as_object()
        .map(|o| o.iter().map(|(k, v)| (k.clone(), v.to_string())).collect())
        .unwrap_or_default();
    page.kv(&base);
    if let Some(m) = first {
        page.h2("Provenance (first run)");
        page.kv(&report::provenance_rows(&m));
    }
    let rp = dir.join("report.html");
    std::fs::write(&rp, page.finish()).map_err(|e| Error::io(&rp, e))?;
    Ok(rows)
}

type Line = (String, Vec<(f64, f64)>);

fn lines_by<F, G>(
    rows: &[Row],
    mut key: F,
    mut y: G,
    include: &dyn Fn(&Row, &ScpConfig) -> bool,
) -> Vec<Line>
where
    F: FnMut(&Row, &ScpConfig) -> String,
    G: FnMut(&Row) -> Option<f64>,
{
    let mut m: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
    for r in rows {
        let Some(c) = &r.cfg else { continue };
        if !include(r, c) {
            continue;
        }
        if let Some(v) = y(r) {
            m.entry(key(r, c)).or_default().push((c.failure_rate, v));
        }
    }
    m.into_iter()
        .map(|(k, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, pts)
        })
        .collect()
}

fn chart_svg(title: String, y_label: &str, lines: Vec<Line>) -> String {
    let chart = plot::Chart {
        title,
        x_label: "failure rate (%)".into(),
        y_label: y_label.into(),
        series: lines
            .into_iter()
            .map(|(name, points)| plot::Series {
                name,
                points,
                dashed: false,
                markers: true,
            })
            .collect(),
        y_range: None,
    };
    plot::svg(&chart, 900, 420)
}

/// The sweep charts with their captions.
fn charts(rows: &[Row]) -> Vec<(String, String)> {
    let patterns: BTreeSet<scp::Pattern> = rows
        .iter()
        .filter_map(|r| r.cfg.as_ref())
        .filter(|c| !c.is_baseline())
        .map(|c| c.pattern)
        .collect();
    let runtimes: BTreeSet<&str> = rows
        .iter()
        .map(|r| r.runtime.as_str())
        .filter(|r| !r.is_empty())
        .collect();
    let multi_rt = runtimes.len() > 1;
    let label = |r: &Row, what: String| {
        if multi_rt {
            format!("{} {what}", r.runtime)
        } else {
            what
        }
    };
    let mut out = Vec::new();
    for &pat in &patterns {
        let include = move |_: &Row, c: &ScpConfig| c.pattern == pat || c.is_baseline();
        let lines = lines_by(
            rows,
            |r, c| label(r, format!("1:{}", c.pairs_per_supervisor())),
            |r| r.mean,
            &include,
        );
        out.push((
            chart_svg(
                format!("Throughput vs failure rate, {} failures", pat.as_str()),
                "mean exchanges/s",
                lines,
            ),
            format!(
                "Mean throughput against failure rate for the {} pattern, one line per ratio \
                 (pairs per supervisor); 0% is the ratio's baseline run (seed 001 figs 5-6).",
                pat.as_str()
            ),
        ));
    }
    let ratios: BTreeSet<u32> = rows
        .iter()
        .filter_map(|r| r.cfg.as_ref())
        .map(|c| c.pairs_per_supervisor())
        .collect();
    let mut compare: Vec<u32> = ratios
        .iter()
        .copied()
        .filter(|r| *r == 1 || *r == 64)
        .collect();
    if compare.is_empty() {
        compare = ratios.iter().copied().collect();
    }
    if patterns.len() > 1 {
        for pps in compare {
            let include = move |_: &Row, c: &ScpConfig| c.pairs_per_supervisor() == pps;
            let mut lines = Vec::new();
            for &pat in &patterns {
                let inc = move |r: &Row, c: &ScpConfig| {
                    include(r, c) && (c.pattern == pat || c.is_baseline())
                };
                for (k, pts) in lines_by(
                    rows,
                    |r, _| label(r, pat.as_str().to_string()),
                    |r| r.mean,
                    &inc,
                ) {
                    lines.push((k, pts));
                }
            }
            out.push((
                chart_svg(format!("Failure pattern comparison at 1:{pps}"), "mean exchanges/s", lines),
                format!("Mean throughput against failure rate at 1:{pps}, one line per pattern (seed 001 figs 7-8)."),
            ));
        }
    }
    for &pat in &patterns {
        let include = move |_: &Row, c: &ScpConfig| c.pattern == pat || c.is_baseline();
        let lines = lines_by(
            rows,
            |r, c| label(r, format!("1:{}", c.pairs_per_supervisor())),
            |r| match (r.mean, r.baseline) {
                (Some(m), Some(b)) if b > 0.0 => Some(100.0 * m / b),
                _ => None,
            },
            &include,
        );
        if lines.iter().any(|(_, p)| !p.is_empty()) {
            out.push((
                chart_svg(
                    format!(
                        "Throughput relative to the 0% baseline, {} failures",
                        pat.as_str()
                    ),
                    "% of baseline",
                    lines,
                ),
                format!(
                    "Each ratio's throughput as a percentage of its own 0% baseline, {} pattern \
                     (runtimes side by side when several were run; seed 001 fig 9).",
                    pat.as_str()
                ),
            ));
        }
    }
    out
}
