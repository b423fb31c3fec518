//! The iot sweep and comparison reports: one row per run (`sweep.csv` / `compare.csv`), charts
//! of reports/s and MTTR against the swept key, one line per runtime, and the expected shapes of
//! seed 003 ch. 5 checked and stated: reports/s against `drop_probability` monotone decreasing
//! and concave up; against `client_mttf_s` monotone decreasing as the MTTF shortens (0, no
//! kills, counts as the longest).
//!
//! Shape rules ([`monotone_decreasing`], [`concave_up`]), on the points sorted by x:
//! 1. Monotone decreasing: no point is above its predecessor by more than `tol` (a share of
//!    the largest value, absorbing run-to-run noise).
//! 2. Concave up: the slopes between consecutive points never fall by more than `tol` x the
//!    largest value per unit of x (each slope is at least the one before, within noise).

use std::collections::BTreeMap;
use std::path::Path;

use super::analysis::IotStats;
use troupe_lab::error::Result;
use troupe_lab::report::grid::GridRun;
use troupe_lab::report::html::{link, Page};
use troupe_lab::report::plot::{self, Chart, Series};
use troupe_lab::report::{csv_text, status_word, write};
use troupe_lab::run_folder::load_typed;

/// The noise allowance of the shape checks: 2% of the largest value.
pub const SHAPE_TOLERANCE: f64 = 0.02;

/// Rule 1 on points sorted by x.
pub fn monotone_decreasing(points: &[(f64, f64)], tol: f64) -> bool {
    let top = points.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
    points.windows(2).all(|w| w[1].1 <= w[0].1 + tol * top)
}

/// Rule 2 on points sorted by x (fewer than three points cannot show a curvature: `false`).
pub fn concave_up(points: &[(f64, f64)], tol: f64) -> bool {
    if points.len() < 3 {
        return false;
    }
    let top = points.iter().map(|p| p.1.abs()).fold(0.0, f64::max);
    let slopes: Vec<f64> = points.windows(2).map(|w| (w[1].1 - w[0].1) / (w[1].0 - w[0].0).max(1e-12)).collect();
    let span = (points[points.len() - 1].0 - points[0].0).max(1e-12);
    slopes.windows(2).all(|s| s[1] >= s[0] - tol * top / span)
}

struct Row {
    runtime: String,
    point: String,
    status: String,
    drop: f64,
    client_mttf: f64,
    server_mttf: f64,
    stats: Option<IotStats>,
}

fn read(r: &GridRun) -> Row {
    let mut row = Row {
        runtime: r.runtime.clone(),
        point: r.point.clone(),
        status: "missing".into(),
        drop: f64::NAN,
        client_mttf: f64::NAN,
        server_mttf: f64::NAN,
        stats: None,
    };
    if let Ok((m, cfg, st)) = load_typed(&super::Iot, &r.dir, None) {
        row.status = status_word(&m).into();
        row.drop = cfg.float("drop_probability");
        row.client_mttf = cfg.int("client_mttf_s") as f64;
        row.server_mttf = cfg.int("server_mttf_s") as f64;
        row.stats = st;
    }
    row
}

/// The shape statements of one runtime's runs against one key.
/// Points of a chart: (x, reports/s).
type Points = Vec<(f64, f64)>;

fn shape_lines(rows: &[&Row], runtime: &str) -> (Vec<String>, Points, Points) {
    let ok = |r: &&&Row| r.runtime == runtime && r.status == "ok" && r.stats.is_some();
    let rps = |r: &Row| r.stats.as_ref().map_or(f64::NAN, |s| s.reports_per_s);
    // Drop sweep: the points with no kills, by drop probability.
    let mut drops: BTreeMap<u64, f64> = BTreeMap::new();
    let mut mttfs: BTreeMap<u64, f64> = BTreeMap::new();
    for r in rows.iter().filter(ok) {
        if r.client_mttf == 0.0 && r.server_mttf == 0.0 {
            drops.insert((r.drop * 1e6).round() as u64, rps(r));
        }
        if r.drop == 0.0 && r.server_mttf == 0.0 {
            // 0 = no kills = the longest MTTF; x is the kill rate 1/MTTF so "shortening" grows x.
            let rate = if r.client_mttf == 0.0 { 0.0 } else { 1.0 / r.client_mttf };
            mttfs.insert((rate * 1e9).round() as u64, rps(r));
        }
    }
    let d: Vec<(f64, f64)> = drops.into_iter().map(|(k, v)| (k as f64 / 1e6, v)).collect();
    let m: Vec<(f64, f64)> = mttfs.into_iter().map(|(k, v)| (k as f64 / 1e9, v)).collect();
    let mut lines = Vec::new();
    let yes = |b: bool| if b { "holds" } else { "does NOT hold" };
    if d.len() >= 2 {
        lines.push(format!(
            "{runtime}: reports/s vs drop_probability ({} points): monotone decreasing {}; concave up {}",
            d.len(),
            yes(monotone_decreasing(&d, SHAPE_TOLERANCE)),
            if d.len() >= 3 { yes(concave_up(&d, SHAPE_TOLERANCE)) } else { "needs 3 points" }
        ));
    }
    if m.len() >= 2 {
        lines.push(format!(
            "{runtime}: reports/s vs client_mttf_s ({} points): monotone decreasing as the MTTF shortens {}",
            m.len(),
            yes(monotone_decreasing(&m, SHAPE_TOLERANCE))
        ));
    }
    (lines, d, m)
}

/// Writes `csv_name`, the charts and `report.html` of a sweep or comparison; the table lines.
pub(super) fn write_grid(dir: &Path, csv_name: &str, title: &str, runs: &[GridRun]) -> Result<Vec<String>> {
    let rows: Vec<Row> = runs.iter().map(read).collect();
    let num = |v: f64| if v.is_finite() { format!("{v}") } else { "-".into() };
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let (rps, med, p99) = match &r.stats {
                Some(s) => (
                    format!("{:.1}", s.reports_per_s),
                    s.mttr_ms.as_ref().map_or("-".into(), |d| format!("{:.1}", d.median)),
                    s.mttr_ms.as_ref().map_or("-".into(), |d| format!("{:.1}", d.p99)),
                ),
                None => ("-".into(), "-".into(), "-".into()),
            };
            vec![
                r.runtime.clone(),
                r.point.clone(),
                r.status.clone(),
                num(r.drop),
                num(r.client_mttf),
                num(r.server_mttf),
                rps,
                med,
                p99,
            ]
        })
        .collect();
    let header = [
        "runtime",
        "point",
        "status",
        "drop_probability",
        "client_mttf_s",
        "server_mttf_s",
        "reports_per_s",
        "mttr_median_ms",
        "mttr_p99_ms",
    ];
    write(dir, csv_name, &csv_text(&header, table.clone())?)?;
    let mut page = Page::new(title);
    // Each runtime once, in the order it first ran (a compare interleaves them).
    let mut runtimes: Vec<String> = Vec::new();
    for r in &rows {
        if !runtimes.contains(&r.runtime) {
            runtimes.push(r.runtime.clone());
        }
    }
    let refs: Vec<&Row> = rows.iter().collect();
    let (mut statements, mut drop_series, mut mttf_series) = (Vec::new(), Vec::new(), Vec::new());
    for rt in &runtimes {
        let (lines, d, m) = shape_lines(&refs, rt);
        statements.extend(lines);
        if d.len() >= 2 {
            drop_series.push(Series { name: rt.clone(), points: d, dashed: false, markers: true });
        }
        if m.len() >= 2 {
            mttf_series.push(Series { name: rt.clone(), points: m, dashed: false, markers: true });
        }
    }
    page.h2("Expected shapes (seed 003 ch. 5)");
    if statements.is_empty() {
        page.p("No sweep over drop_probability (without kills) or client_mttf_s (without drops) with two or more ok runs: no shape to check.");
    }
    for s in &statements {
        page.p(&format!("{s} (noise allowance {:.0}% of the largest value).", SHAPE_TOLERANCE * 100.0));
    }
    if !drop_series.is_empty() {
        let svg = plot::svg(
            &Chart {
                title: "Reports/s vs drop probability".into(),
                x_label: "drop_probability".into(),
                y_label: "reports/s".into(),
                series: drop_series,
                y_range: None,
            },
            800,
            320,
        );
        write(dir, "iot-drop.svg", &svg)?;
        page.figure(&svg, "Expected: monotone decreasing, concave up.");
    }
    if !mttf_series.is_empty() {
        let svg = plot::svg(
            &Chart {
                title: "Reports/s vs device kill rate (1 / client_mttf_s)".into(),
                x_label: "1 / client_mttf_s (0: no kills)".into(),
                y_label: "reports/s".into(),
                series: mttf_series,
                y_range: None,
            },
            800,
            320,
        );
        write(dir, "iot-mttf.svg", &svg)?;
        page.figure(&svg, "Expected: decreasing as the MTTF shortens (the kill rate grows).");
    }
    page.h2("All runs");
    let linked: Vec<Vec<String>> = table
        .iter()
        .zip(runs)
        .map(|(t, r)| {
            let mut t = t.clone();
            let rel = r.dir.strip_prefix(dir).unwrap_or(&r.dir).join("report.html");
            t[1] = link(&rel.to_string_lossy(), &r.point);
            t
        })
        .collect();
    page.table(&header, &linked);
    write(dir, "report.html", &page.finish())?;
    let mut out = vec![header.join("  ")];
    out.extend(table.iter().map(|t| t.join("  ")));
    out.extend(statements);
    Ok(out)
}
