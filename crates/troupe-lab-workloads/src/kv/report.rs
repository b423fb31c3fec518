//! The kv reports: one run's `kv.csv` and `report.html`; a sweep's or comparison's table and
//! side-by-side lines from the run folders below it.
//!
//! Rules:
//! 1. A run's `kv.csv` has one row per operation: `client,seq,op,latency_us,ok`.
//! 2. The grid's CSV (`sweep.csv` or `compare.csv`) has one row per run folder: runtime,
//!    service, transport, concurrency, object bytes, ops/s, p50, p99, mean, ops, failed ops,
//!    status and reason; a failed run keeps its row with empty figures.
//! 3. The side-by-side lines: per (service, object bytes, concurrency), each runtime's
//!    throughput and p99 (the mean over repetitions), Troupe's transports each on their own
//!    line, Erlang's beside each.
//! 4. The grid's plots, as seed 004's figures 6-7 and 9-10 draw them: per (service, object
//!    bytes), throughput against concurrency, one line per runtime and Troupe transport (the
//!    mean over repetitions), `ops_vs_concurrency_<service>_<object>b.svg`, also in the report.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::analysis::KvStats;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::{link, Page};
use troupe_lab::report::plot::{mean, svg, Chart, Series};
use troupe_lab::report::{csv_text, page_footer, status_html, status_word, write};
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
    page_footer(&mut p, m, &["manifest.json", "config.json", "events.jsonl", "kv.csv", "summary.json", "stderr.txt"]);
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
    troupe_lab::report::grid_runs(dir)
        .into_iter()
        .map(|(d, m, s)| {
            let c = &m.config;
            let ok = m.status.completed();
            let g = |a: &str, b: Option<&str>| {
                let v = s.get(a)?;
                let v = match b {
                    Some(b) => v.get(b)?,
                    None => v,
                };
                v.as_f64().filter(|_| ok)
            };
            let cs = |k: &str| c.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            let mut reason = m.reason.clone().unwrap_or_default();
            if !ok {
                let text = std::fs::read_to_string(d.join("stderr.txt")).unwrap_or_default();
                if let Some(last) = text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
                    reason = format!("{reason} (stderr: {})", last.chars().take(240).collect::<String>());
                }
            }
            Row {
                rel: d.strip_prefix(dir).unwrap_or(&d).display().to_string(),
                runtime: m.runtime.clone(),
                status: status_word(&m).to_string(),
                reason,
                service: cs("service"),
                transport: cs("transport"),
                concurrency: c.get("concurrency").and_then(Value::as_u64).unwrap_or(0),
                object: c.get("object_bytes").and_then(Value::as_u64).unwrap_or(0),
                ops_s: g("ops_per_s", None),
                p50: g("latency_ms", Some("p50")),
                p99: g("latency_ms", Some("p99")),
                mean: g("latency_ms", Some("mean")),
                ops: g("ops", None),
                failed: g("failed_ops", None),
            }
        })
        .collect()
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

/// Writes the grid report into `dir` (rules 2-3): the number of runs and the side-by-side lines.
pub fn write_grid(dir: &Path, csv_name: &str, title: &str) -> Result<(usize, Vec<String>)> {
    let mut rows = load(dir);
    rows.sort_by(|a, b| {
        (&a.service, a.object, a.concurrency, &a.runtime, &a.transport).cmp(&(
            &b.service,
            b.object,
            b.concurrency,
            &b.runtime,
            &b.transport,
        ))
    });
    let header = [
        "runtime",
        "service",
        "transport",
        "concurrency",
        "object_bytes",
        "ops_per_s",
        "p50_ms",
        "p99_ms",
        "mean_ms",
        "ops",
        "failed_ops",
        "status",
        "reason",
        "folder",
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.runtime.clone(),
                r.service.clone(),
                r.transport.clone(),
                r.concurrency.to_string(),
                r.object.to_string(),
                fmt(r.ops_s, 1),
                fmt(r.p50, 3),
                fmt(r.p99, 3),
                fmt(r.mean, 3),
                fmt(r.ops, 0),
                fmt(r.failed, 0),
                r.status.clone(),
                r.reason.clone(),
                r.rel.clone(),
            ]
        })
        .collect();
    write(dir, csv_name, &csv_text(&header, table.clone())?)?;
    let lines = side_by_side(&rows);
    let mut p = Page::new(title);
    p.p("Clients in the orchestrator run one operation at a time against a 3-node store (N=3, R=W=2 by \
         default) or an echo service (docs/kv.md); throughput and p99 latency per concurrency level.");
    p.raw(&format!("<pre>{}</pre>", troupe_lab::report::html::escape(&lines.join("\n"))));
    for (name, chart) in plots(&rows) {
        write(dir, &name, &chart)?;
        p.figure(&chart, &format!("{name}: throughput against concurrency (mean over repetitions)."));
    }
    p.h2("Runs");
    p.table(&header, &table);
    p.raw(&format!("<p>{}</p>", link(csv_name, csv_name)));
    write(dir, "report.html", &p.finish())?;
    Ok((rows.len(), lines))
}

/// The name of a runtime's line: Troupe's per transport.
fn line_name(r: &Row) -> String {
    if r.runtime == "troupe" {
        format!("troupe {}", r.transport)
    } else {
        r.runtime.clone()
    }
}

/// Per line name, per concurrency, the throughputs of its runs.
type Lines = BTreeMap<String, BTreeMap<u64, Vec<Option<f64>>>>;

/// Rule 4: per (service, object bytes), a file name and its chart.
fn plots(rows: &[Row]) -> Vec<(String, String)> {
    let mut groups: BTreeMap<(String, u64), Lines> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.ops_s.is_some()) {
        groups
            .entry((r.service.clone(), r.object))
            .or_default()
            .entry(line_name(r))
            .or_default()
            .entry(r.concurrency)
            .or_default()
            .push(r.ops_s);
    }
    groups
        .into_iter()
        .map(|((service, object), lines)| {
            // Concurrency grows by factors (1, 4, 16, 64): a log2 axis spaces it out.
            let series = lines.into_iter().map(|(name, pts)| Series::log2_means(name, pts)).collect();
            let chart = svg(
                &Chart {
                    title: format!("{service}: throughput vs concurrency, {} KiB objects", object / 1024),
                    x_label: "log2(concurrent clients): 0 = 1, 2 = 4, 4 = 16, 6 = 64".into(),
                    y_label: "operations per second".into(),
                    series,
                    y_range: None,
                },
                720,
                340,
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
        let line = if r.runtime == "troupe" { format!("troupe {}", r.transport) } else { r.runtime.clone() };
        points.entry((r.service.clone(), r.object, r.concurrency)).or_default().entry(line).or_default().push(r);
    }
    let mut out = vec![format!(
        "{:<5} {:>9} {:>5}  {:<24} {:>10} {:>10} {:>7}",
        "svc", "object", "conc", "runtime", "ops/s", "p99 ms", "failed"
    )];
    for ((svc, obj, conc), lines) in &points {
        for (name, rs) in lines {
            out.push(format!(
                "{:<5} {:>9} {:>5}  {:<24} {:>10} {:>10} {:>7}",
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
