//! The comparison report, rebuilt from the folder alone: every run read back with its own
//! runtime's 0% baseline (the same config at 0%: same ratio, seed, window), `compare.csv` (one row per run), per-run reports refreshed against
//! that baseline, and `report.html` with the runtimes side by side.
//!
//! What the page shows:
//! 1. Tables: one row per (ratio, pattern, rate) with each runtime's mean and its percentage
//!    of its own 0% baseline, and whether every runtime that completed the point injected the
//!    same `fault_injected` ids; then one row per run with all the numbers.
//! 2. Plots: per ratio and pattern, throughput as a percentage of each runtime's own baseline
//!    against failure rate (seed 001 fig. 9), one line per runtime; per ratio, mean throughput
//!    against failure rate with the ceiling; the focus point's throughput per second, one line
//!    per runtime.
//! 3. Gaps: a run that is not `ok` is a gap (a break in its line, `-` in the tables) listed
//!    with its reason and a link to its stderr.
//! 4. Versions and settings of each runtime (`runtimes.json`, run manifests), the base config
//!    and axes, the machine, git commit and command; and whether every run folder holds its
//!    point's shared schedule byte for byte.
//! 5. Repetitions (`--reps N`, compare rule 7): a runtime's baseline is the mean of its ok 0%
//!    runs at the ratio; every figure of the side-by-side table and the charts is the mean
//!    over a point's ok repetitions, shown as `mean ± half width` of its 95% confidence
//!    interval with N ([`troupe_lab::stats::MeanCi`]), and the charts draw the interval as a box;
//!    `compare.csv` gains a `rep` column and `compare-mean.csv` holds the means; the printed
//!    table has one line per (point, runtime). With N = 1 every output is a single run's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::config::{Pattern, ScpConfig};
use super::report as scp_report;
use troupe_lab::compare::{CompareFile, RuntimeInfo, FILE, RUNTIMES_FILE};
use troupe_lab::config::ConfigBuilder;
use troupe_lab::error::{Error, ErrorKind, Result};
use troupe_lab::manifest::Manifest;
use troupe_lab::report::plot;

mod means;
mod page;

/// One run of a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Point name.
    pub point: String,
    /// Runtime.
    pub runtime: String,
    /// Repetition, 1-based.
    pub rep: u32,
    /// The run folder, relative to the comparison's.
    pub dir: String,
    /// Typed config.
    #[serde(skip)]
    pub cfg: ScpConfig,
    /// Whether the run is `ok`.
    pub ok: bool,
    /// `ok`, `failed: reason`, `interrupted` or `not run`.
    pub status: String,
    /// Runtime version from the run's manifest.
    pub version: String,
    /// The project's git commit the run was made from (with `+dirty` for uncommitted changes).
    pub git: Option<String>,
    /// Mean throughput (ok runs).
    pub mean: Option<f64>,
    /// Percent of ceiling (ok runs).
    pub pct_ceiling: Option<f64>,
    /// The same runtime's baseline mean at this ratio.
    pub baseline: Option<f64>,
    /// Mean as a percentage of the baseline.
    pub pct_baseline: Option<f64>,
    /// Drop vs baseline, percent.
    pub drop_pct: Option<f64>,
    /// Kills carried out.
    pub kills: u64,
    /// Kills planned.
    pub planned_kills: u64,
    /// Restarts.
    pub restarts: u64,
    /// Faults skipped by the runtime.
    pub skipped_faults: u64,
    /// Kill-to-restart latency, median and p99, ms (`restart_ms` of the run's summary).
    pub restart_ms: Option<(f64, f64)>,
    /// The same as a table cell, `p50 / p99`, each `>= X` where a kill never restarted makes
    /// it a lower bound.
    pub restart_text: String,
    /// Ids of the `fault_injected` events, when the events could be read.
    #[serde(skip)]
    pub fault_ids: Option<BTreeSet<String>>,
    /// Exchanges per window second.
    #[serde(skip)]
    pub seconds: Vec<(u32, u64)>,
    /// Whether the run folder's schedule is the shared one byte for byte (`None`: no folder).
    pub same_schedule: Option<bool>,
}

/// Everything the report reads.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// `compare.json`.
    pub file: CompareFile,
    /// `runtimes.json` (empty when the builds never finished).
    pub runtimes: Vec<RuntimeInfo>,
    /// One row per (point, runtime), in run order.
    pub rows: Vec<Row>,
    /// The first manifest found (machine, commit, command).
    pub first: Option<Manifest>,
}

/// What makes a ratio: pairs, supervisors, delay, payload.
type RatioKey = (u32, u32, u64, usize);

fn ratio_key(c: &ScpConfig) -> RatioKey {
    (c.pairs, c.supervisors, c.delay_ms, c.payload_bytes)
}

fn fault_ids(dir: &Path) -> Option<BTreeSet<String>> {
    let p = dir.join("events.jsonl");
    let evs = troupe_lab::events::read(&p).ok()?;
    Some(evs.iter().filter(|e| e.ev == "fault_injected").map(|e| e.str("id").to_string()).collect())
}

/// Reads a comparison folder: every run with its own runtime's baseline.
pub fn load_rows(dir: &Path) -> Result<Loaded> {
    let path = dir.join(FILE);
    if !path.is_file() {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    let file: CompareFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&path, e.to_string()))?;
    let rpath = dir.join(RUNTIMES_FILE);
    let runtimes: Vec<RuntimeInfo> = match std::fs::read_to_string(&rpath) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| Error::malformed(&rpath, e.to_string()))?,
        Err(_) => Vec::new(),
    };
    // Each point with the key of its baseline: the same config at 0% (seed and all).
    let mut cfgs = Vec::new();
    for (name, json) in file.points.iter().zip(&file.configs) {
        let mut b = ConfigBuilder::new(&super::Scp);
        b.apply_json(json);
        let cfg = b.build().map_err(|e| Error::malformed(&path, format!("point {name}: {e}")))?;
        cfgs.push((ScpConfig::from_config(&cfg), super::config::baseline_of(&cfg).to_json().to_string()));
    }
    // First pass: each runtime's baselines.
    let folders = file.run_folders();
    let cfg_of = |point: &str| file.points.iter().position(|p| p == point).map(|i| &cfgs[i]);
    let mut baseline_runs: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut first = None;
    for f in &folders {
        let Some((cfg, key)) = cfg_of(&f.point) else { continue };
        if !cfg.is_baseline() {
            continue;
        }
        if let Ok((m, _, Some(st))) = scp_report::load_run(&dir.join(&f.rel), None) {
            if m.status.completed() && !m.interrupted {
                baseline_runs.entry((f.runtime.clone(), key.clone())).or_default().push(st.mean);
            }
        }
    }
    let baselines: BTreeMap<(String, String), f64> =
        baseline_runs.into_iter().filter_map(|(k, v)| Some((k, troupe_lab::stats::MeanCi::of(&v)?.mean))).collect();
    let mut rows = Vec::new();
    for f in &folders {
        let Some((cfg, key)) = cfg_of(&f.point) else { continue };
        let (name, rt) = (&f.point, &f.runtime);
        let shared = std::fs::read(dir.join("schedules").join(format!("{name}.jsonl"))).ok();
        let rdir = dir.join(&f.rel);
        let base = baselines.get(&(rt.clone(), key.clone())).copied();
        let mut row = Row {
            point: name.clone(),
            runtime: rt.clone(),
            rep: f.rep,
            dir: f.rel.clone(),
            cfg: cfg.clone(),
            ok: false,
            status: "not run".into(),
            version: String::new(),
            git: None,
            mean: None,
            pct_ceiling: None,
            baseline: base,
            pct_baseline: None,
            drop_pct: None,
            kills: 0,
            planned_kills: 0,
            restarts: 0,
            skipped_faults: 0,
            restart_ms: None,
            restart_text: "-".into(),
            fault_ids: None,
            seconds: Vec::new(),
            same_schedule: None,
        };
        if rdir.join(troupe_lab::manifest::FILE).is_file() {
            let (m, st) = scp_report::rebuild_run(&rdir, base)?;
            first.get_or_insert_with(|| m.clone());
            row.ok = m.status.completed() && !m.interrupted;
            row.status = troupe_lab::report::status_text(&m);
            row.version = m.runtime_version.clone();
            row.git = m.git_commit.as_ref().map(|c| {
                let short: String = c.chars().take(12).collect();
                if m.git_dirty == Some(true) {
                    format!("{short}+dirty")
                } else {
                    short
                }
            });
            row.same_schedule = Some(match (&shared, std::fs::read(rdir.join("schedule.jsonl")).ok()) {
                (Some(a), Some(b)) => *a == b,
                _ => false,
            });
            if let Some(st) = st {
                row.kills = st.kills;
                row.planned_kills = st.planned_kills;
                row.restarts = st.restarts;
                row.skipped_faults = st.skipped_faults;
                row.restart_ms = st.restart_ms.as_ref().map(|r| (r.p50, r.p99));
                if let Some(r) = &st.restart_ms {
                    row.restart_text = format!("{} / {}", r.show("p50", 2), r.show("p99", 2));
                }
                row.seconds = st.seconds.iter().map(|s| (s.second, s.count)).collect();
                row.fault_ids = fault_ids(&rdir);
                if row.ok {
                    row.mean = Some(st.mean);
                    row.pct_ceiling = Some(st.pct_ceiling);
                    if let Some(b) = base.filter(|b| *b > 0.0) {
                        row.pct_baseline = Some(100.0 * st.mean / b);
                        row.drop_pct = Some(100.0 * (b - st.mean) / b);
                    }
                }
            }
        }
        rows.push(row);
    }
    Ok(Loaded { file, runtimes, rows, first })
}

impl Row {
    /// Whether this fault run scored above its runtime's own 0% baseline (more than 100% of
    /// it): the baseline is then no ceiling for the run, a sign of noise or of a bad baseline,
    /// and the report flags it.
    pub fn baseline_below(&self) -> bool {
        self.cfg.pattern != Pattern::None && self.cfg.failure_rate > 0.0 && self.pct_baseline.is_some_and(|p| p > 100.0)
    }
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map(|v| format!("{v:.prec$}")).unwrap_or_else(|| "-".into())
}

/// The point plotted over time: the one asked for, else the first with the highest failure
/// rate (the first point when none injects faults).
pub fn focus_point(l: &Loaded) -> Option<String> {
    if let Some(f) = l.file.focus.as_ref().filter(|f| l.file.points.contains(f)) {
        return Some(f.clone());
    }
    let mut best: Option<(&str, f64)> = None;
    for r in &l.rows {
        let rate = if r.cfg.pattern == Pattern::None { 0.0 } else { r.cfg.failure_rate };
        if best.is_none_or(|(_, b)| rate > b) {
            best = Some((r.point.as_str(), rate));
        }
    }
    best.map(|b| b.0.to_string())
}

/// Writes `compare.csv`, refreshed per-run reports and `report.html`; returns the rows.
pub fn write_report(dir: &Path) -> Result<Vec<Row>> {
    let l = load_rows(dir)?;
    let header = [
        "point",
        "runtime",
        "pairs",
        "supervisors",
        "pairs_per_supervisor",
        "delay_ms",
        "pattern",
        "failure_rate",
        "failure_basis",
        "status",
        "mean",
        "pct_of_ceiling",
        "baseline_mean",
        "pct_of_baseline",
        "drop_pct",
        "baseline_below_fault_run",
        "kills",
        "planned_kills",
        "restarts",
        "skipped_faults",
        "same_schedule",
        "runtime_version",
        "reason",
        "restart_p50_ms",
        "restart_p99_ms",
    ];
    let reps = l.file.reps > 1;
    let lines = l.rows.iter().map(|r| {
        let c = &r.cfg;
        let reason = r.status.strip_prefix("failed: ").unwrap_or("");
        let status = if r.ok {
            "ok"
        } else if r.status == "not run" {
            "not run"
        } else {
            "failed"
        };
        let mut line = vec![
            r.point.clone(),
            r.runtime.clone(),
            c.pairs.to_string(),
            c.supervisors.to_string(),
            c.pairs_per_supervisor().to_string(),
            c.delay_ms.to_string(),
            c.pattern.as_str().into(),
            c.failure_rate.to_string(),
            if c.basis_exchanges { "exchanges" } else { "pairs" }.into(),
            status.into(),
            opt(r.mean, 2),
            opt(r.pct_ceiling, 3),
            opt(r.baseline, 2),
            opt(r.pct_baseline, 3),
            opt(r.drop_pct, 3),
            r.baseline_below().to_string(),
            r.kills.to_string(),
            r.planned_kills.to_string(),
            r.restarts.to_string(),
            r.skipped_faults.to_string(),
            r.same_schedule.map(|b| b.to_string()).unwrap_or_default(),
            r.version.clone(),
            reason.to_owned(),
            opt(r.restart_ms.map(|x| x.0), 3),
            opt(r.restart_ms.map(|x| x.1), 3),
        ];
        if reps {
            line.push(r.rep.to_string());
        }
        line
    });
    let mut header = header.to_vec();
    if reps {
        header.push("rep");
    }
    let csv = troupe_lab::report::csv_text(&header, lines)?;
    let csv_path = dir.join("compare.csv");
    std::fs::write(&csv_path, csv).map_err(|e| Error::io(&csv_path, e))?;
    if reps {
        let p = dir.join("compare-mean.csv");
        std::fs::write(&p, means::means_csv(&l)?).map_err(|e| Error::io(&p, e))?;
    }
    let focus = focus_point(&l);
    let (html, svgs) = page::render(dir, &l, focus.as_deref());
    for (i, svg) in svgs.iter().enumerate() {
        let p = dir.join(format!("compare-{i}.svg"));
        std::fs::write(&p, svg).map_err(|e| Error::io(&p, e))?;
    }
    let rp = dir.join("report.html");
    std::fs::write(&rp, html).map_err(|e| Error::io(&rp, e))?;
    Ok(l.rows)
}

/// The side-by-side table of a comparison folder, one line per run (what `troupe lab compare`
/// prints).
pub fn table(dir: &Path) -> Result<Vec<String>> {
    let l = load_rows(dir)?;
    if l.file.reps > 1 {
        return Ok(means::table_lines(&l));
    }
    let f = |x: Option<f64>, p: usize| x.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "-".into());
    let mut out = vec![format!(
        "{:<8} {:<11} {:>6}  {:<12} {:>10} {:>9} {:>10} {:>8}  status",
        "ratio", "pattern", "rate%", "runtime", "mean/s", "%ceiling", "%own 0%", "kills"
    )];
    for r in &l.rows {
        let c = &r.cfg;
        let status = if r.ok { "ok".to_string() } else { r.status.chars().take(70).collect() };
        out.push(format!(
            "{:<8} {:<11} {:>6}  {:<12} {:>10} {:>9} {:>10} {:>8}  {status}",
            format!("1:{}", c.pairs_per_supervisor()),
            c.pattern.as_str(),
            c.failure_rate,
            r.runtime,
            f(r.mean, 1),
            f(r.pct_ceiling, 2),
            f(r.pct_baseline, 1),
            r.kills
        ));
    }
    Ok(out)
}

/// A ratio's label: `1:PPS`, with the pair count.
fn ratio_label(c: &ScpConfig) -> String {
    format!("1:{} ({} pairs)", c.pairs_per_supervisor(), c.pairs)
}

/// A point's short description: ratio, pattern, rate.
fn point_label(c: &ScpConfig) -> String {
    if c.is_baseline() {
        format!("{} at 0%", ratio_label(c))
    } else {
        format!("{} {} {}%", ratio_label(c), c.pattern.as_str(), c.failure_rate)
    }
}

/// A chart whose x axis is the failure rate, with the repetitions' intervals as boxes.
fn rate_chart(title: String, y_label: &str, series: Vec<plot::Series>, boxes: &[plot::BoxItem]) -> String {
    let chart =
        plot::Chart { title, x_label: "failure rate (%)".into(), y_label: y_label.into(), series, y_range: None };
    plot::svg_with_boxes(&chart, boxes, 900, 420)
}
