//! The sweep report (sweep rule 5): every run of a sweep folder read back with its ratio's
//! baseline, `sweep.csv` with one row per run, per-run reports rebuilt against the baseline,
//! and `report.html` with the cross-run charts of seed 001 (figs 5-9).
//!
//! With repetitions (`--reps N`, sweep rule 6): a ratio's baseline is the mean of its ok 0%
//! runs; `sweep.csv` gains a `rep` column; `sweep-mean.csv` and a table give each point's mean
//! throughput and drop with a 95% confidence interval and N ([`troupe_lab::stats::MeanCi`]); the
//! charts plot the means, with a box from the interval's low to high end and whiskers from the
//! smallest to the largest repetition. With N = 1 the outputs are those of a single run.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::config::{self as scp, ScpConfig};
use super::report as scp_report;
use troupe_lab::error::{Error, ErrorKind, Result};
use troupe_lab::manifest::Manifest;
use troupe_lab::report::{self, html, plot};
use troupe_lab::stats::MeanCi;
use troupe_lab::sweep::SweepFile;

mod means;
use means::{mean_rows, means_csv, means_table};

/// One run's line in the sweep report.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Folder name.
    pub name: String,
    /// The point (the folder name without its `_rep-<k>` suffix).
    pub point: String,
    /// Repetition, 1-based.
    pub rep: u32,
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
    (rt.to_string(), c.pairs, c.supervisors, c.delay_ms, c.payload_bytes)
}

/// Reads every run of a sweep folder, with baselines and drops filled in.
pub fn load_rows(dir: &Path) -> Result<(SweepFile, Vec<Row>, Option<Manifest>)> {
    let sweep_json = dir.join("sweep.json");
    if !sweep_json.is_file() {
        return Err(Error::new(ErrorKind::NotARun(dir.to_path_buf())));
    }
    let text = std::fs::read_to_string(&sweep_json).map_err(|e| Error::io(&sweep_json, e))?;
    let file: SweepFile = serde_json::from_str(&text).map_err(|e| Error::malformed(&sweep_json, e.to_string()))?;
    // First pass: baselines.
    let mut baselines: BTreeMap<(String, u32, u32, u64, usize), Vec<f64>> = BTreeMap::new();
    let mut loaded = Vec::new();
    let mut first_manifest = None;
    for name in &file.points {
        let rdir = dir.join("runs").join(name);
        if !rdir.join("manifest.json").is_file() {
            loaded.push((name.clone(), None));
            continue;
        }
        let (m, cfg, st) = scp_report::load_run(&rdir, None)?;
        let scp = ScpConfig::from_config(&cfg);
        if m.status.completed() && scp.is_baseline() {
            if let Some(st) = &st {
                baselines.entry(ratio_key(&m.runtime, &scp)).or_default().push(st.mean);
            }
        }
        first_manifest.get_or_insert_with(|| m.clone());
        loaded.push((name.clone(), Some((m, scp))));
    }
    let mut rows = Vec::new();
    for (name, l) in loaded {
        let (point, rep) = troupe_lab::sweep::split_rep(&name);
        let (point, rep) = (point.to_string(), rep);
        let Some((m, scp)) = l else {
            rows.push(Row {
                name,
                point,
                rep,
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
        let base = baselines.get(&ratio_key(&m.runtime, &scp)).and_then(|v| MeanCi::of(v)).map(|c| c.mean);
        let rdir = dir.join("runs").join(&name);
        let (m, st) = scp_report::rebuild_run(&rdir, base)?;
        let ok = m.status.completed();
        let mean = st.as_ref().filter(|_| ok).map(|s| s.mean);
        rows.push(Row {
            name,
            point,
            rep,
            runtime: m.runtime.clone(),
            cfg: Some(scp),
            status: troupe_lab::report::status_text(&m),
            mean,
            pct_ceiling: st.as_ref().filter(|_| ok).map(|s| s.pct_ceiling),
            baseline: base,
            drop_pct: match (mean, base) {
                (Some(x), Some(b)) if b > 0.0 => Some(100.0 * (b - x) / b),
                _ => None,
            },
            kills: st.as_ref().map(|s| s.kills).unwrap_or(0),
            restarts: st.as_ref().map(|s| s.restarts).unwrap_or(0),
            recovery: st.as_ref().map(super::analysis::recovery_text).unwrap_or_default(),
        });
    }
    Ok((file, rows, first_manifest))
}

fn opt(x: Option<f64>, prec: usize) -> String {
    x.map(|v| format!("{v:.prec$}")).unwrap_or_else(|| "-".into())
}

/// Writes `sweep.csv` and `report.html` for a sweep folder (rule 5).
pub fn write_report(dir: &Path) -> Result<Vec<Row>> {
    let (file, rows, first) = load_rows(dir)?;
    let reps = file.reps > 1;
    let mut csv = String::from(
        "run,runtime,pairs,supervisors,pairs_per_supervisor,delay_ms,pattern,failure_rate,\
         failure_basis,status,mean,pct_of_ceiling,baseline_mean,drop_pct,kills,restarts",
    );
    csv.push_str(if reps { ",rep\n" } else { "\n" });
    for r in &rows {
        let Some(c) = &r.cfg else { continue };
        let _ = writeln!(
            csv,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}{}",
            r.name,
            r.runtime,
            c.pairs,
            c.supervisors,
            c.pairs_per_supervisor(),
            c.delay_ms,
            c.pattern.as_str(),
            c.failure_rate,
            if c.basis_exchanges { "exchanges" } else { "pairs" },
            if r.status == "ok" { "ok" } else { "failed" },
            opt(r.mean, 2),
            opt(r.pct_ceiling, 3),
            opt(r.baseline, 2),
            opt(r.drop_pct, 3),
            r.kills,
            r.restarts,
            if reps { format!(",{}", r.rep) } else { String::new() }
        );
    }
    let csv_path = dir.join("sweep.csv");
    std::fs::write(&csv_path, csv).map_err(|e| Error::io(&csv_path, e))?;
    let means = if reps { Some(mean_rows(&rows)) } else { None };
    if let Some(means) = &means {
        let p = dir.join("sweep-mean.csv");
        std::fs::write(&p, means_csv(means)?).map_err(|e| Error::io(&p, e))?;
    }

    let mut page = html::Page::new(&format!("{} sweep: {}", file.workload.to_uppercase(), dir.display()));
    let ok = rows.iter().filter(|r| r.status == "ok").count();
    page.p(&format!(
        "{} runs planned, {} ok, {} not ok or not run. Axes: {}. Runtimes: {}.",
        rows.len(),
        ok,
        rows.len() - ok,
        file.axes.iter().map(|(k, v)| format!("{k} = {}", v.join(", "))).collect::<Vec<_>>().join("; "),
        file.runtimes.join(", ")
    ));
    if let Some(means) = &means {
        means_table(&mut page, means, file.reps);
    }
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
                c.map(|c| format!("1:{}", c.pairs_per_supervisor())).unwrap_or_default(),
                c.map(|c| c.pattern.as_str().to_string()).unwrap_or_default(),
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
    page.p("Drop = (baseline mean - mean) / baseline mean, where the baseline is the same \
            runtime and ratio at 0% failures in this sweep.");
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

/// A line: its name and, per x (failure rate), the values of the runs there (one per
/// repetition).
type Line = (String, Vec<(f64, Vec<f64>)>);

fn lines_by<F, G>(rows: &[Row], mut key: F, mut y: G, include: &dyn Fn(&Row, &ScpConfig) -> bool) -> Vec<Line>
where
    F: FnMut(&Row, &ScpConfig) -> String,
    G: FnMut(&Row) -> Option<f64>,
{
    let mut m: BTreeMap<String, Vec<(f64, Vec<f64>)>> = BTreeMap::new();
    for r in rows {
        let Some(c) = &r.cfg else { continue };
        if !include(r, c) {
            continue;
        }
        if let Some(v) = y(r) {
            let line = m.entry(key(r, c)).or_default();
            match line.iter_mut().find(|(x, _)| *x == c.failure_rate) {
                Some((_, vs)) => vs.push(v),
                None => line.push((c.failure_rate, vec![v])),
            }
        }
    }
    let mut lines: Vec<Line> = m
        .into_iter()
        .map(|(k, mut pts)| {
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            (k, pts)
        })
        .collect();
    lines.sort_by_key(|l| natural(&l.0));
    lines
}

/// A sort key that orders numbers inside labels by value ("1:64" before "1:1024").
fn natural(s: &str) -> String {
    let mut out = String::new();
    let mut digits = String::new();
    for c in s.chars().chain(std::iter::once('\0')) {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        if !digits.is_empty() {
            out.push_str(&format!("{digits:0>12}"));
            digits.clear();
        }
        out.push(c);
    }
    out
}

/// Draws the lines through the mean at each x; where an x has several runs (repetitions), a
/// box spans the mean's 95% confidence interval and whiskers the smallest to largest run.
fn chart_svg(title: String, y_label: &str, lines: Vec<Line>) -> String {
    let xs: Vec<f64> = lines.iter().flat_map(|l| l.1.iter().map(|p| p.0)).collect();
    let span = xs.iter().copied().fold(f64::MIN, f64::max) - xs.iter().copied().fold(f64::MAX, f64::min);
    let half_width = if span > 0.0 { span / 80.0 } else { 0.05 };
    let mut boxes = Vec::new();
    let mut series = Vec::new();
    for (i, (name, pts)) in lines.into_iter().enumerate() {
        let mut points = Vec::new();
        for (x, vs) in pts {
            let Some(ci) = MeanCi::of(&vs) else { continue };
            points.push((x, ci.mean));
            if vs.len() > 1 {
                let (lo, hi) =
                    (vs.iter().copied().fold(f64::MAX, f64::min), vs.iter().copied().fold(f64::MIN, f64::max));
                boxes.push(plot::BoxItem {
                    series: i,
                    x,
                    half_width,
                    lo,
                    q1: ci.lo(),
                    median: ci.mean,
                    q3: ci.hi(),
                    hi,
                });
            }
        }
        series.push(plot::Series { name, points, dashed: false, markers: true });
    }
    let chart =
        plot::Chart { title, x_label: "failure rate (%)".into(), y_label: y_label.into(), series, y_range: None };
    plot::svg_with_boxes(&chart, &boxes, 900, 420)
}

/// The sweep charts with their captions.
fn charts(rows: &[Row]) -> Vec<(String, String)> {
    let patterns: BTreeSet<scp::Pattern> =
        rows.iter().filter_map(|r| r.cfg.as_ref()).filter(|c| !c.is_baseline()).map(|c| c.pattern).collect();
    let runtimes: BTreeSet<&str> = rows.iter().map(|r| r.runtime.as_str()).filter(|r| !r.is_empty()).collect();
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
        let lines = lines_by(rows, |r, c| label(r, format!("1:{}", c.pairs_per_supervisor())), |r| r.mean, &include);
        out.push((
            chart_svg(format!("Throughput vs failure rate, {} failures", pat.as_str()), "mean exchanges/s", lines),
            format!(
                "Mean throughput against failure rate for the {} pattern, one line per ratio \
                 (pairs per supervisor); 0% is the ratio's baseline run (seed 001 figs 5-6).",
                pat.as_str()
            ),
        ));
    }
    let ratios: BTreeSet<u32> = rows.iter().filter_map(|r| r.cfg.as_ref()).map(|c| c.pairs_per_supervisor()).collect();
    let mut compare: Vec<u32> = ratios.iter().copied().filter(|r| *r == 1 || *r == 64).collect();
    if compare.is_empty() {
        compare = ratios.iter().copied().collect();
    }
    if patterns.len() > 1 {
        for pps in compare {
            let include = move |_: &Row, c: &ScpConfig| c.pairs_per_supervisor() == pps;
            let mut lines = Vec::new();
            for &pat in &patterns {
                let inc = move |r: &Row, c: &ScpConfig| include(r, c) && (c.pattern == pat || c.is_baseline());
                lines.extend(lines_by(rows, |r, _| label(r, pat.as_str().to_string()), |r| r.mean, &inc));
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
                    format!("Throughput relative to the 0% baseline, {} failures", pat.as_str()),
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
