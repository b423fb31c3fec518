//! The kv reports: one run's `kv.csv` and `report.html`; a sweep's or comparison's table and
//! side-by-side lines from the run folders below it.
//!
//! Rules:
//! 1. A run's `kv.csv` has one row per operation: `client,seq,op,latency_us,ok`.
//! 2. The grid's CSV (`sweep.csv` or `compare.csv`) has one row per run folder: runtime,
//!    service, transport, overlay (`full_mesh` for a folder from before the key),
//!    concurrency, object bytes, ops/s, p50, p99, mean, ops, failed ops, status and reason; a
//!    failed run keeps its row with empty figures.
//! 3. The side-by-side lines: per (service, object bytes, concurrency), each runtime's
//!    throughput and p99 (the mean over repetitions), Troupe's transports (and overlays) each
//!    on their own line, Erlang's beside each.
//! 4. The grid's plots, as seed 004's figures 6-7 and 9-10 draw them: per (service, object
//!    bytes), throughput against concurrency, one line per runtime and Troupe transport and
//!    overlay (the mean over repetitions), `ops_vs_concurrency_<service>_<object>b.svg`, also
//!    in the report.

use std::collections::BTreeMap;
use std::path::Path;

use super::analysis::KvStats;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::grid::{
    figure_cell as fmt, group_lines, log2_chart, run_rows, with_stderr, write_runs_report, Column,
};
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::mean;
use troupe_lab::report::{page_footer, status_html, write};
use troupe_lab::workload::RunAnalysis;

/// Writes the run's CSV and report (rule 1).
pub fn write_run_outputs(dir: &Path, m: &Manifest, _cfg: &Config, st: &KvStats) -> Result<()> {
    write(dir, "kv.csv", &st.csv()?)?;
    let mut p = Page::new(&format!("kv run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "Service {} on 3 node processes, {} vnodes, N={} R={} W={}; {} clients, {} bytes per object, {} s; \
         transport {}.",
        st.cfg.service,
        st.cfg.vnodes,
        st.cfg.n,
        st.cfg.r,
        st.cfg.w,
        st.cfg.concurrency,
        st.cfg.object_bytes,
        st.cfg.duration_s,
        st.cfg.transport
    ));
    p.h2("Results");
    p.kv(&st.summary_rows());
    let mut files = vec!["manifest.json", "config.json", "events.jsonl", "kv.csv", "summary.json", "stderr.txt"];
    if !st.history.is_empty() {
        troupe_lab::history::write(dir, &st.history)?;
        files.push("history.jsonl");
    }
    if let Some(c) = st.verdict.as_ref().and_then(|v| v.counterexample.as_ref()) {
        p.h2("Counterexample");
        p.p(c);
    }
    if let Some(n) = &st.cfg.nemesis {
        p.p(&format!("Nemesis: {} every {} ms (schedule.jsonl).", n.kinds.join(", "), n.interval_ms));
    }
    page_footer(&mut p, m, &files);
    write(dir, "report.html", &p.finish())
}

/// One run folder of a grid.
struct Row {
    rel: String,
    runtime: String,
    status: String,
    reason: String,
    service: String,
    transport: String,
    overlay: String,
    concurrency: u64,
    object: u64,
    ops_s: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    mean: Option<f64>,
    ops: Option<f64>,
    failed: Option<f64>,
}

fn load(dir: &Path) -> Vec<Row> {
    run_rows(dir)
        .into_iter()
        .map(|r| {
            let reason = match r.last_stderr_line() {
                Some(last) if !r.ok => with_stderr(&r.reason, &last),
                _ => r.reason.clone(),
            };
            Row {
                service: r.cfg_str("service"),
                transport: r.cfg_str("transport"),
                overlay: troupe_lab::overlay_net::recorded(r.cfg_str("overlay")),
                concurrency: r.cfg_u64("concurrency"),
                object: r.cfg_u64("object_bytes"),
                ops_s: r.figure(&["ops_per_s"]),
                p50: r.figure(&["latency_ms", "p50"]),
                p99: r.figure(&["latency_ms", "p99"]),
                mean: r.figure(&["latency_ms", "mean"]),
                ops: r.figure(&["ops"]),
                failed: r.figure(&["failed_ops"]),
                rel: r.rel,
                runtime: r.runtime,
                status: r.status,
                reason,
            }
        })
        .collect()
}

/// The grid's columns (rule 2).
const COLUMNS: &[Column<Row>] = &[
    ("runtime", |r| r.runtime.clone()),
    ("service", |r| r.service.clone()),
    ("transport", |r| r.transport.clone()),
    ("overlay", |r| r.overlay.clone()),
    ("concurrency", |r| r.concurrency.to_string()),
    ("object_bytes", |r| r.object.to_string()),
    ("ops_per_s", |r| fmt(r.ops_s, 1)),
    ("p50_ms", |r| fmt(r.p50, 3)),
    ("p99_ms", |r| fmt(r.p99, 3)),
    ("mean_ms", |r| fmt(r.mean, 3)),
    ("ops", |r| fmt(r.ops, 0)),
    ("failed_ops", |r| fmt(r.failed, 0)),
    ("status", |r| r.status.clone()),
    ("reason", |r| r.reason.clone()),
    ("folder", |r| r.rel.clone()),
];

/// Writes the grid report into `dir` (rules 2-3): the number of runs and the side-by-side lines.
pub fn write_grid(dir: &Path, csv_name: &str, title: &str) -> Result<(usize, Vec<String>)> {
    let mut rows = load(dir);
    rows.sort_by(|a, b| {
        (&a.service, a.object, a.concurrency, &a.runtime, &a.transport, &a.overlay).cmp(&(
            &b.service,
            b.object,
            b.concurrency,
            &b.runtime,
            &b.transport,
            &b.overlay,
        ))
    });
    let lines = side_by_side(&rows);
    let intro = "Clients in the orchestrator run one operation at a time against a 3-node store (N=3, R=W=2 by \
                 default) or an echo service (docs/kv.md); throughput and p99 latency per concurrency level.";
    write_runs_report(dir, csv_name, title, intro, &rows, COLUMNS, |p| {
        p.raw(&format!("<pre>{}</pre>", troupe_lab::report::html::escape(&lines.join("\n"))));
        for (name, chart) in plots(&rows) {
            write(dir, &name, &chart)?;
            p.figure(&chart, &format!("{name}: throughput against concurrency (mean over repetitions)."));
        }
        Ok(())
    })?;
    Ok((rows.len(), lines))
}

/// The name of a runtime's line: Troupe's per transport and overlay.
fn line_name(r: &Row) -> String {
    if r.runtime == "troupe" {
        format!("troupe {}", troupe_lab::overlay_net::variant(&r.transport, &r.overlay))
    } else {
        r.runtime.clone()
    }
}

/// Rule 4: per (service, object bytes), a file name and its chart.
fn plots(rows: &[Row]) -> Vec<(String, String)> {
    let measured = rows.iter().filter(|r| r.ops_s.is_some());
    group_lines(measured, |r| ((r.service.clone(), r.object), line_name(r), r.concurrency, r.ops_s))
        .into_iter()
        .map(|((service, object), lines)| {
            // Concurrency grows by factors (1, 4, 16, 64): a log2 axis spaces it out.
            let chart = log2_chart(
                format!("{service}: throughput vs concurrency, {} KiB objects", object / 1024),
                "log2(concurrent clients): 0 = 1, 2 = 4, 4 = 16, 6 = 64",
                "operations per second",
                lines,
            );
            (format!("ops_vs_concurrency_{service}_{object}b.svg"), chart)
        })
        .collect()
}

/// Rule 3 as aligned text lines, header first.
fn side_by_side(rows: &[Row]) -> Vec<String> {
    type Point = (String, u64, u64);
    let mut points: BTreeMap<Point, BTreeMap<String, Vec<&Row>>> = BTreeMap::new();
    for r in rows {
        points
            .entry((r.service.clone(), r.object, r.concurrency))
            .or_default()
            .entry(line_name(r))
            .or_default()
            .push(r);
    }
    let mut out = vec![format!(
        "{:<5} {:>9} {:>5}  {:<40} {:>10} {:>10} {:>7}",
        "svc", "object", "conc", "runtime", "ops/s", "p99 ms", "failed"
    )];
    for ((svc, obj, conc), lines) in &points {
        for (name, rs) in lines {
            out.push(format!(
                "{:<5} {:>9} {:>5}  {:<40} {:>10} {:>10} {:>7}",
                svc,
                obj,
                conc,
                name,
                fmt(mean(rs.iter().map(|r| r.ops_s)), 1),
                fmt(mean(rs.iter().map(|r| r.p99)), 2),
                fmt(mean(rs.iter().map(|r| r.failed)), 0)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(runtime: &str, transport: &str, concurrency: u64, object: u64, ops_s: Option<f64>) -> Row {
        Row {
            rel: String::new(),
            runtime: runtime.into(),
            status: "ok".into(),
            reason: String::new(),
            service: "kv".into(),
            transport: transport.into(),
            overlay: "full_mesh".into(),
            concurrency,
            object,
            ops_s,
            p50: None,
            p99: None,
            mean: None,
            ops: None,
            failed: None,
        }
    }

    #[test]
    fn rule4_one_plot_per_service_and_object_size_one_line_per_runtime_and_transport() {
        let rows = vec![
            row("erlang", "one_connection", 1, 1 << 20, Some(400.0)),
            row("erlang", "one_connection", 4, 1 << 20, Some(410.0)),
            row("troupe", "channels", 1, 1 << 20, Some(900.0)),
            row("troupe", "channels", 1, 1 << 20, Some(700.0)),
            row("troupe", "one_connection", 4, 1 << 20, Some(600.0)),
            row("troupe", "channels", 1, 8 << 20, Some(75.0)),
            // A failed run draws nothing.
            row("erlang", "channels", 1, 8 << 20, None),
        ];
        let plots = plots(&rows);
        let names: Vec<&str> = plots.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["ops_vs_concurrency_kv_1048576b.svg", "ops_vs_concurrency_kv_8388608b.svg"]);
        let one_mib = &plots[0].1;
        for line in ["erlang", "troupe channels", "troupe one_connection"] {
            assert!(one_mib.contains(&format!("\n{line}\n")), "no line {line:?} in the 1 MiB plot");
        }
        assert!(!plots[1].1.contains("erlang"), "the failed Erlang run made a line");
    }
}
