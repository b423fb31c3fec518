//! The chat report across many runs, for sweeps (`runs/<point>/`) and comparisons
//! (`<runtime>/<point>/`) alike: one CSV row per run, the per-run reports rebuilt, and the
//! plots of seed 000 ch. 5 with one line per runtime.
//!
//! What the page shows:
//! 1. A table, one row per run: runtime, scale, fault pause, throughput (and % of ceiling;
//!    `-` in a test where clients do not send), detection and reconnection mean and p99
//!    (`>= X` where unreconnected clients make it a lower bound), % of the window all clients
//!    were connected, detections not rejoined, faults skipped or missing, status (a degraded
//!    run says what it failed to do; a failed run is a gap with its reason, never dropped).
//!    The CSV adds every count: skipped, missing, expected and logged detections,
//!    reconnections, unreconnected, clients that gave up, errors.
//! 2. When `fault_pause_ms` varies: throughput against the fault pause (x on a log scale), one
//!    line per runtime, and a box plot of the per-second throughput at each pause.
//! 3. When the scale varies (clients per chat, or chats): mean and p99 detection and
//!    reconnection against it (log scale), one line per runtime.
//! 4. Repetitions (`--reps N`, N > 1): the CSV gains a `rep` column; `<csv>-mean.csv`, a table
//!    and the printed lines give each (runtime, point) its mean throughput, detection and
//!    reconnection with the 95% confidence interval over its ok repetitions and N
//!    ([`troupe_lab::stats::MeanCi`]); the charts' lines go through those means. With N = 1 the
//!    outputs are a single run's.
//! 5. One point (a comparison of runtimes at one setting): the runtimes' detection and
//!    reconnection times overlaid as cumulative distributions, one line per runtime, each over
//!    every detection (a line that stops below 100% left clients unreconnected).

use std::collections::BTreeMap;
use std::path::Path;

use super::analysis::ChatStats;
use super::config::ChatConfig;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::grid::GridRun;
use troupe_lab::report::html::{escape, link, Page};
use troupe_lab::report::plot::{self, BoxItem, Chart, Series};
use troupe_lab::report::{provenance_rows, write};
use troupe_lab::stats::MeanCi;

/// Points sorted by x, those sharing an x (repetitions) replaced by their mean.
fn mean_by_x(mut pts: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, Vec<f64>)> = Vec::new();
    for (x, y) in pts {
        match out.last_mut() {
            Some((lx, ys)) if *lx == x => ys.push(y),
            _ => out.push((x, vec![y])),
        }
    }
    out.into_iter().filter_map(|(x, ys)| Some((x, MeanCi::of(&ys)?.mean))).collect()
}

struct Row {
    runtime: String,
    point: String,
    rep: u32,
    rel: String,
    cfg: Option<ChatConfig>,
    status: String,
    ok: bool,
    st: Option<ChatStats>,
    manifest: Option<Manifest>,
}

fn load(base: &Path, r: &GridRun) -> Result<Row> {
    let rel = r.dir.strip_prefix(base).unwrap_or(&r.dir).display().to_string();
    let mut row = Row {
        runtime: r.runtime.clone(),
        point: r.point.clone(),
        rep: r.rep,
        rel,
        cfg: None,
        status: "not run".into(),
        ok: false,
        st: None,
        manifest: None,
    };
    if !r.dir.join(troupe_lab::manifest::FILE).is_file() {
        return Ok(row);
    }
    let (m, cfg, st) = troupe_lab::run_folder::rebuild_typed(&super::Chat, &r.dir, None)?;
    row.cfg = Some(ChatConfig::from_config(&cfg));
    row.ok = m.status.completed() && !m.interrupted;
    row.status = troupe_lab::report::status_text(&m);
    row.st = st;
    row.manifest = Some(m);
    Ok(row)
}

fn f(x: Option<f64>, p: usize) -> String {
    x.map(|v| format!("{v:.p$}")).unwrap_or_else(|| "-".into())
}

/// The table's figures of a run (`-` where it has none or where the test type does not
/// measure it, e.g. msg/s in a detection test): msg/s, % of ceiling, detection mean and p99,
/// reconnection mean and p99 (`>= X` where unreconnected clients make it a lower bound), %
/// of the window all clients were connected, detections not rejoined, faults skipped or
/// missing.
fn figures(r: &Row) -> [String; 9] {
    let st = r.st.as_ref().filter(|_| r.ok);
    let sends = st.filter(|s| s.ceiling > 0.0);
    let dist = |d: Option<&super::analysis::Dist>, k: &str| d.map(|d| d.show(k, 2)).unwrap_or_else(|| "-".into());
    let det = st.and_then(|s| s.detection_ms.as_ref());
    let rec = st.and_then(|s| s.reconnection_ms.as_ref());
    [
        f(sends.map(|s| s.msg_per_s_mean), 1),
        f(sends.and_then(|s| s.pct_ceiling), 2),
        dist(det, "mean"),
        dist(det, "p99"),
        dist(rec, "mean"),
        dist(rec, "p99"),
        f(st.map(|s| s.all_connected_pct), 2),
        st.map(|s| s.unreconnected.to_string()).unwrap_or_else(|| "-".into()),
        st.map(|s| (s.skipped_faults + s.missing_faults).to_string()).unwrap_or_else(|| "-".into()),
    ]
}

/// A figure of a run that counts toward the means (ok runs only).
type Pick = fn(&ChatStats) -> Option<f64>;

/// The (runtime, point) groups in first-seen order, each with its rows.
fn groups(rows: &[Row]) -> Vec<Vec<&Row>> {
    let mut out: Vec<Vec<&Row>> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|g| g[0].runtime == r.runtime && g[0].point == r.point) {
            Some(g) => g.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

fn ci_of(g: &[&Row], pick: Pick) -> Option<MeanCi> {
    MeanCi::of(&g.iter().filter(|r| r.ok).filter_map(|r| r.st.as_ref().and_then(pick)).collect::<Vec<_>>())
}

const MEAN_PICKS: [(&str, Pick, usize); 4] = [
    ("msg_per_s", |s| Some(s.msg_per_s_mean), 1),
    ("pct_ceiling", |s| s.pct_ceiling, 2),
    ("detection_mean_ms", |s| s.detection_ms.as_ref().map(|d| d.mean), 2),
    ("reconnection_mean_ms", |s| s.reconnection_ms.as_ref().map(|d| d.mean), 2),
];

/// Rule 4: the means CSV, the page's table and the printed lines.
fn write_means(base: &Path, csv_name: &str, rows: &[Row], page: &mut Page) -> Result<Vec<String>> {
    let mut header = vec!["point".to_string(), "runtime".to_string(), "n_ok".to_string(), "n_runs".to_string()];
    for (k, _, _) in MEAN_PICKS {
        header.extend([k.to_string(), format!("{k}_ci95_half")]);
    }
    let mut csv_rows = Vec::new();
    let mut table = Vec::new();
    let mut lines = vec![format!(
        "{:<12} {:<34} {:>20} {:>18} {:>18} {:>7}  status",
        "runtime", "point", "msg/s ± 95% CI", "det mean ms", "rec mean ms", "N"
    )];
    for g in groups(rows) {
        let n_ok = g.iter().filter(|r| r.ok).count();
        let mut line = vec![g[0].point.clone(), g[0].runtime.clone(), n_ok.to_string(), g.len().to_string()];
        let mut cells = vec![g[0].runtime.clone(), g[0].point.clone()];
        for (_, pick, prec) in MEAN_PICKS {
            let c = ci_of(&g, pick);
            line.push(f(c.map(|c| c.mean), prec + 1));
            line.push(f(c.and_then(|c| c.half_width), prec + 1));
            cells.push(c.map_or_else(|| "-".into(), |c| c.show(prec)));
        }
        cells.push(format!("{n_ok} of {}", g.len()));
        let failed: Vec<String> = g
            .iter()
            .filter(|r| !r.ok)
            .map(|r| format!("rep {}: {}", r.rep, r.status.chars().take(50).collect::<String>()))
            .collect();
        let status = if failed.is_empty() { "ok".to_string() } else { failed.join("; ") };
        lines.push(format!(
            "{:<12} {:<34} {:>20} {:>18} {:>18} {:>7}  {status}",
            g[0].runtime,
            g[0].point,
            cells[2],
            cells[4],
            cells[5],
            format!("{n_ok}/{}", g.len())
        ));
        csv_rows.push(line);
        table.push(cells);
    }
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let name = csv_name.replace(".csv", "-mean.csv");
    write(base, &name, &troupe_lab::report::csv_text(&header_refs, csv_rows)?)?;
    page.h2("Means over repetitions");
    page.table(
        &["runtime", "point", "msg/s", "% ceiling", "detection mean ms", "reconnection mean ms", "N (ok of runs)"],
        &table,
    );
    page.p(&format!(
        "Each figure is the mean over the point's ok repetitions ± the half width of its 95% confidence \
         interval (Student's t, N - 1 degrees of freedom); without ± it had one ok run. Every repetition \
         ran the same config and seed. {name} has the numbers; the charts' lines go through these means."
    ));
    Ok(lines)
}

/// Writes `<csv_name>` and `report.html` into `base`; returns the table as text lines.
pub(crate) fn write_grid(base: &Path, csv_name: &str, title: &str, runs: &[GridRun]) -> Result<Vec<String>> {
    let rows: Vec<Row> = runs.iter().map(|r| load(base, r)).collect::<Result<_>>()?;
    let reps = rows.iter().any(|r| r.rep > 1);
    let header = [
        "point",
        "runtime",
        "test_type",
        "deployment",
        "num_supervisor",
        "chats_per_sup",
        "clients_per_server",
        "clients",
        "msg_type",
        "fault_pause_ms",
        "status",
        "msg_per_s_mean",
        "ceiling",
        "pct_ceiling",
        "detection_mean_ms",
        "detection_p99_ms",
        "reconnection_mean_ms",
        "reconnection_p99_ms",
        "all_connected_pct",
        "bytes_per_client",
        "injected",
        "planned_faults",
        "reason",
        "skipped_faults",
        "missing_faults",
        "expected_detections",
        "detections",
        "reconnections",
        "unreconnected",
        "gave_up",
        "errors",
    ];
    let mut csv_rows: Vec<Vec<String>> = Vec::new();
    let mut lines = vec![format!(
        "{:<12} {:<34} {:>10} {:>8} {:>10} {:>10} {:>11} {:>11} {:>9} {:>7} {:>7}  status",
        "runtime",
        "point",
        "msg/s",
        "%ceil",
        "det mean",
        "det p99",
        "rec mean",
        "rec p99",
        "%all conn",
        "unrec",
        "skip"
    )];
    for r in &rows {
        let st = r.st.as_ref().filter(|_| r.ok);
        let det = st.and_then(|s| s.detection_ms.clone());
        let rec = st.and_then(|s| s.reconnection_ms.clone());
        let c = r.cfg.as_ref();
        let reason = r.status.strip_prefix("failed: ").or_else(|| r.status.strip_prefix("degraded: ")).unwrap_or("");
        let mut csv_row = vec![
            r.point.clone(),
            r.runtime.clone(),
            c.map(|c| format!("{:?}", c.test_type).to_lowercase()).unwrap_or_default(),
            c.map(|c| if c.distributed { "distributed" } else { "single" }).unwrap_or_default().to_owned(),
            c.map(|c| c.num_supervisor.to_string()).unwrap_or_default(),
            c.map(|c| c.chats_per_sup.to_string()).unwrap_or_default(),
            c.map(|c| c.clients_per_server.to_string()).unwrap_or_default(),
            c.map(|c| c.total_clients().to_string()).unwrap_or_default(),
            c.map(|c| c.msg_type_word.clone()).unwrap_or_default(),
            c.map(|c| c.fault_pause_ms.to_string()).unwrap_or_default(),
            if r.ok && r.status.starts_with("degraded") {
                "degraded"
            } else if r.ok {
                "ok"
            } else if r.status == "not run" {
                "not run"
            } else {
                "failed"
            }
            .to_owned(),
            f(st.map(|s| s.msg_per_s_mean), 2),
            f(st.map(|s| s.ceiling), 1),
            f(st.and_then(|s| s.pct_ceiling), 3),
            f(det.as_ref().map(|d| d.mean), 3),
            f(det.as_ref().map(|d| d.p99), 3),
            f(rec.as_ref().map(|d| d.mean), 3),
            f(rec.as_ref().map(|d| d.p99), 3),
            f(st.map(|s| s.all_connected_pct), 3),
            f(st.and_then(|s| s.bytes_per_client), 0),
            st.map(|s| s.injected).unwrap_or(0).to_string(),
            st.map(|s| s.planned_faults).unwrap_or(0).to_string(),
            reason.to_owned(),
        ];
        // Counts that say what the figures leave out (empty for a run without statistics).
        let count = |pick: fn(&ChatStats) -> u64| st.map(|s| pick(s).to_string()).unwrap_or_default();
        csv_row.extend([
            count(|s| s.skipped_faults),
            count(|s| s.missing_faults),
            count(|s| s.expected_detections),
            count(|s| s.detections as u64),
            count(|s| s.reconnections as u64),
            count(|s| s.unreconnected as u64),
            count(|s| s.gave_up),
            count(|s| s.errors),
        ]);
        if reps {
            csv_row.push(r.rep.to_string());
        }
        csv_rows.push(csv_row);
        let status: String = r.status.chars().take(70).collect();
        let [m, pc, dm, dp, rm, rp, ac, un, sk] = figures(r);
        lines.push(format!(
            "{:<12} {:<34} {m:>10} {pc:>8} {dm:>10} {dp:>10} {rm:>11} {rp:>11} {ac:>9} {un:>7} {sk:>7}  {status}",
            r.runtime, r.point,
        ));
    }
    let mut header = header.to_vec();
    if reps {
        header.push("rep");
    }
    let csv = troupe_lab::report::csv_text(&header, csv_rows)?;
    write(base, csv_name, &csv)?;
    let mut page = Page::new(title);
    if reps {
        lines = write_means(base, csv_name, &rows, &mut page)?;
    }
    page.h2("Runs");
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut cells = vec![r.runtime.clone(), r.point.clone()];
            cells.extend(figures(r));
            cells.push(if r.manifest.is_some() {
                link(&format!("{}/report.html", r.rel), &escape(&r.status))
            } else {
                escape(&r.status)
            });
            cells
        })
        .collect();
    page.table(
        &[
            "runtime",
            "point",
            "msg/s",
            "% ceiling",
            "detection mean ms",
            "detection p99 ms",
            "reconnection mean ms",
            "reconnection p99 ms",
            "% all connected",
            "detections not rejoined",
            "faults skipped or missing",
            "status",
        ],
        &table,
    );
    for (svg, caption) in charts(&rows) {
        page.figure(&svg, &caption);
    }
    if let Some(m) = rows.iter().find_map(|r| r.manifest.as_ref()) {
        page.h2("Provenance (first run)");
        page.kv(&provenance_rows(m));
    }
    page.p(&format!("Every run: {csv_name} (one row per run) and each run folder's own report."));
    write(base, "report.html", &page.finish())?;
    Ok(lines)
}

/// Rule 5: detection and reconnection CDFs, one line per runtime (its repetitions pooled).
fn cdf_charts(ok: &[(&Row, &ChatConfig, &ChatStats)], rts: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    type Samples = fn(&ChatStats) -> (Vec<f64>, usize);
    let kinds: [(&str, Samples); 2] = [
        // Over the detections due: a runtime whose clients missed some stops below 100%.
        ("Detection", |s| {
            (
                s.detection_rows.iter().map(|d| d.ms).collect(),
                s.detection_rows.len().max(s.expected_detections as usize),
            )
        }),
        ("Reconnection", |s| (s.reconnection_rows.iter().map(|r| r.ms).collect(), s.detections)),
    ];
    for (what, samples) in kinds {
        let series: Vec<Series> = rts
            .iter()
            .filter_map(|rt| {
                let (mut v, mut total) = (Vec::new(), 0);
                for (_, _, st) in ok.iter().filter(|(r, _, _)| &r.runtime == rt) {
                    let (x, n) = samples(st);
                    v.extend(x);
                    total += n;
                }
                (total > 0).then(|| Series::line(rt.clone(), plot::cdf(v, total)))
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let chart = Chart {
            title: format!("{what} times, cumulative, per runtime"),
            x_label: "ms".into(),
            y_label: "% of due detections at or below".into(),
            series,
            y_range: Some((0.0, 101.0)),
        };
        out.push((
            plot::svg(&chart, 900, 400),
            format!(
                "{what} time of every client after every detected fault, per runtime; over every detection, so a \
                 line that stops below 100% left clients unreconnected at the window's end."
            ),
        ));
    }
    out
}

/// Runtimes in first-seen order.
fn runtimes(rows: &[Row]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in rows {
        if !out.contains(&r.runtime) {
            out.push(r.runtime.clone());
        }
    }
    out
}

fn charts(rows: &[Row]) -> Vec<(String, String)> {
    let ok: Vec<(&Row, &ChatConfig, &ChatStats)> =
        rows.iter().filter(|r| r.ok).filter_map(|r| Some((r, r.cfg.as_ref()?, r.st.as_ref()?))).collect();
    let rts = runtimes(rows);
    let mut out = Vec::new();
    let varies = |key: &dyn Fn(&ChatConfig) -> u64| {
        let mut v: Vec<u64> = ok.iter().map(|(_, c, _)| key(c)).collect();
        v.sort_unstable();
        v.dedup();
        v.len() > 1
    };
    // Rule 2.
    if varies(&|c| c.fault_pause_ms) && ok.iter().any(|(_, c, _)| c.clients_send()) {
        let mut series = Vec::new();
        let mut boxes = Vec::new();
        let n = rts.len().max(1) as f64;
        for (i, rt) in rts.iter().enumerate() {
            // The mean over repetitions at each pause (rule 4).
            let mut pts: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
            for (_, c, st) in ok.iter().filter(|(r, c, _)| &r.runtime == rt && c.clients_send()) {
                pts.entry(c.fault_pause_ms).or_default().push(st.msg_per_s_mean);
                let mut v: Vec<f64> = st.seconds.iter().map(|&(_, n)| n as f64).collect();
                if let Some(d) = super::analysis::Dist::of(&mut v) {
                    let x = (c.fault_pause_ms as f64).log10() + (i as f64 - (n - 1.0) / 2.0) * 0.04;
                    boxes.push(BoxItem {
                        series: i,
                        x,
                        half_width: 0.015,
                        lo: d.min,
                        q1: d.q1,
                        median: d.median,
                        q3: d.q3,
                        hi: d.max,
                    });
                }
            }
            series.push(Series {
                name: rt.clone(),
                points: pts.iter().filter_map(|(&p, m)| Some(((p as f64).log10(), MeanCi::of(m)?.mean))).collect(),
                dashed: false,
                markers: true,
            });
        }
        let chart = Chart {
            title: "Throughput under failure vs fault pause".into(),
            x_label: "log10(fault_pause_ms)".into(),
            y_label: "messages received per second (mean)".into(),
            series: series.clone(),
            y_range: None,
        };
        out.push((
            plot::svg(&chart, 900, 420),
            "Mean throughput against the pause between two faults of a chat (seed 000 fig. 5.1).".into(),
        ));
        let chart = Chart {
            title: "Throughput per second at each fault pause".into(),
            y_label: "messages received per second".into(),
            ..chart
        };
        out.push((
            plot::svg_with_boxes(&chart, &boxes, 900, 420),
            "The spread of the per-second throughput of each run: box q1-q3, bar at the median, whiskers min-max (seed 000 fig. 5.2).".into(),
        ));
    }
    // Rule 5.
    let mut points: Vec<&str> = ok.iter().map(|(r, _, _)| r.point.as_str()).collect();
    points.dedup();
    if points.len() == 1 {
        out.extend(cdf_charts(&ok, &rts));
    }
    // Rule 3.
    let by_clients = varies(&|c| u64::from(c.clients_per_server)) && !varies(&|c| c.total_chats());
    let by_chats = varies(&|c| c.total_chats());
    if by_clients || by_chats {
        let x_label = if by_clients { "log10(clients per chat)" } else { "log10(chats)" };
        let key = |c: &ChatConfig| {
            if by_clients {
                f64::from(c.clients_per_server).log10()
            } else {
                (c.total_chats() as f64).log10()
            }
        };
        for (what, pick) in [
            (
                "Reconnection",
                (|s: &ChatStats| s.reconnection_ms.clone()) as fn(&ChatStats) -> Option<super::analysis::Dist>,
            ),
            ("Detection", |s: &ChatStats| s.detection_ms.clone()),
        ] {
            let mut series = Vec::new();
            for rt in &rts {
                let mut mean: Vec<(f64, f64)> = Vec::new();
                let mut p99: Vec<(f64, f64)> = Vec::new();
                for (_, c, st) in ok.iter().filter(|(r, _, _)| &r.runtime == rt) {
                    if let Some(d) = pick(st) {
                        mean.push((key(c), d.mean));
                        p99.push((key(c), d.p99));
                    }
                }
                let (mean, p99) = (mean_by_x(mean), mean_by_x(p99));
                series.push(Series { name: format!("{rt} mean"), points: mean, dashed: false, markers: true });
                series.push(Series { name: format!("{rt} p99"), points: p99, dashed: true, markers: true });
            }
            let chart = Chart {
                title: format!("{what} time vs scale"),
                x_label: x_label.into(),
                y_label: "ms".into(),
                series,
                y_range: None,
            };
            out.push((
                plot::svg(&chart, 900, 420),
                format!("{what} time per client event against the scale (seed 000 figs. 5.3-5.6)."),
            ));
        }
    }
    out
}
