//! The latency reports: one run's `latency.csv`, `latency_cdf.svg` and `report.html`; a sweep's
//! or comparison's table, plots and ratio table, from the run folders below it.
//!
//! Rules:
//! 1. A run's `latency.csv` has one row per message: `pair,seq,latency_us`.
//! 2. The grid's CSV (`sweep.csv` or `compare.csv`) has one row per run folder: runtime,
//!    transport, overlay (`full_mesh` for a folder from before the key), pairs, payload, rtt,
//!    messages, the latency figures, throughput, status and reason (with the last line of the
//!    run's stderr); a failed run keeps its row with empty figures.
//! 3. Plots: per (payload, rtt), p99 latency against log2(pairs), one line per runtime and
//!    transport and overlay (Distributed Erlang's is its one connection, full mesh); a missing
//!    figure is a gap.
//! 4. The ratio table: per (pairs, payload, rtt) and Troupe transport and overlay, Distributed
//!    Erlang's (full mesh) p99 over Troupe's (the mean over repetitions of each), and the same
//!    for throughput (Troupe's over Erlang's): above 1 Troupe is better. The target is
//!    checked where both have a figure at 128 pairs, 8 MiB, 1 ms RTT on a full mesh: Erlang's
//!    p99 at least 2x Troupe's.

use std::path::Path;

use super::analysis::LatencyStats;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::overlay_net::FULL_MESH;
use troupe_lab::report::grid::{
    figure_cell as fmt, group_lines, log2_chart, run_rows, with_stderr, write_runs_report, Column,
};
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::{mean, svg, Chart, Series};
use troupe_lab::report::{page_footer, status_html, write};
use troupe_lab::workload::RunAnalysis;

/// Writes the run's CSV, plot and report (rule 1).
pub fn write_run_outputs(dir: &Path, m: &Manifest, _cfg: &Config, st: &LatencyStats) -> Result<()> {
    write(dir, "latency.csv", &st.csv()?)?;
    let mut p = Page::new(&format!("Latency run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "{} actor pairs, {} bytes per message, {} messages, simulated RTT {} ms through the lab's relay; \
         transport {}.",
        st.cfg.pairs, st.cfg.payload_bytes, st.cfg.messages, st.cfg.rtt_ms, st.cfg.transport
    ));
    p.h2("Results");
    p.kv(&st.summary_rows());
    let mut ms: Vec<f64> = st.samples.iter().map(|s| s.latency_us as f64 / 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let n = ms.len().max(1) as f64;
    let cdf: Vec<(f64, f64)> = ms.iter().enumerate().map(|(i, v)| (*v, (i + 1) as f64 / n)).collect();
    let chart = svg(
        &Chart {
            title: "Latency distribution (send to ack)".into(),
            x_label: "latency ms".into(),
            y_label: "fraction of messages".into(),
            series: vec![Series::line(format!("{} {}", m.runtime, st.cfg.transport), cdf)],
            y_range: Some((0.0, 1.0)),
        },
        640,
        300,
    );
    write(dir, "latency_cdf.svg", &chart)?;
    p.figure(&chart, "Cumulative distribution of the per-message latency.");
    page_footer(
        &mut p,
        m,
        &["manifest.json", "config.json", "events.jsonl", "latency.csv", "summary.json", "stderr.txt"],
    );
    write(dir, "report.html", &p.finish())
}

/// One run folder of a grid.
struct Row {
    rel: String,
    runtime: String,
    status: String,
    reason: String,
    transport: String,
    overlay: String,
    pairs: u64,
    payload: u64,
    rtt: u64,
    messages: u64,
    p50: Option<f64>,
    p99: Option<f64>,
    mean: Option<f64>,
    max: Option<f64>,
    msgs_s: Option<f64>,
    mb_s: Option<f64>,
}

fn load(dir: &Path) -> Vec<Row> {
    run_rows(dir)
        .into_iter()
        .map(|r| {
            // A failed run's reason with the last line its program wrote to stderr (the Erlang
            // peer's refusal of a transport names the key there).
            let reason = match r.last_stderr_line() {
                Some(last) if !r.ok && !r.reason.contains(&last) => with_stderr(&r.reason, &last),
                _ => r.reason.clone(),
            };
            Row {
                transport: r.cfg_str("transport"),
                overlay: troupe_lab::overlay_net::recorded(r.cfg_str("overlay")),
                pairs: r.cfg_u64("pairs"),
                payload: r.cfg_u64("payload_bytes"),
                rtt: r.cfg_u64("rtt_ms"),
                messages: r.cfg_u64("messages"),
                p50: r.figure(&["latency_ms", "p50"]),
                p99: r.figure(&["latency_ms", "p99"]),
                mean: r.figure(&["latency_ms", "mean"]),
                max: r.figure(&["latency_ms", "max"]),
                msgs_s: r.figure(&["throughput_msgs_per_s"]),
                mb_s: r.figure(&["throughput_mb_per_s"]),
                rel: r.rel,
                runtime: r.runtime,
                status: r.status,
                reason,
            }
        })
        .collect()
}

/// The line a run belongs to in the plots (rule 3).
fn line_name(r: &Row) -> String {
    if r.runtime == "troupe" {
        format!("troupe {}", r.variant())
    } else {
        format!("{} (one connection)", r.runtime)
    }
}

impl Row {
    /// Troupe's transport, and its overlay when it is not a full mesh.
    fn variant(&self) -> String {
        troupe_lab::overlay_net::variant(&self.transport, &self.overlay)
    }
}

/// The grid's columns (rule 2).
const COLUMNS: &[Column<Row>] = &[
    ("runtime", |r| r.runtime.clone()),
    ("transport", |r| r.transport.clone()),
    ("overlay", |r| r.overlay.clone()),
    ("pairs", |r| r.pairs.to_string()),
    ("payload_bytes", |r| r.payload.to_string()),
    ("rtt_ms", |r| r.rtt.to_string()),
    ("messages", |r| r.messages.to_string()),
    ("p50_ms", |r| fmt(r.p50, 3)),
    ("p99_ms", |r| fmt(r.p99, 3)),
    ("mean_ms", |r| fmt(r.mean, 3)),
    ("max_ms", |r| fmt(r.max, 3)),
    ("msgs_per_s", |r| fmt(r.msgs_s, 1)),
    ("mb_per_s", |r| fmt(r.mb_s, 1)),
    ("status", |r| r.status.clone()),
    ("reason", |r| r.reason.clone()),
    ("folder", |r| r.rel.clone()),
];

/// Writes the grid report into `dir` (rules 2-4): the number of runs and the ratio table as
/// text lines.
pub fn write_grid(dir: &Path, csv_name: &str, title: &str) -> Result<(usize, Vec<String>)> {
    let mut rows = load(dir);
    rows.sort_by(|a, b| {
        (a.payload, a.rtt, a.pairs, &a.runtime, &a.transport, &a.overlay).cmp(&(
            b.payload,
            b.rtt,
            b.pairs,
            &b.runtime,
            &b.transport,
            &b.overlay,
        ))
    });
    let intro = "Each actor on node A sends its messages to its partner on node B one after another, waiting for \
                 each ack; every connection between the nodes runs through the lab's delaying relay (docs/latency.md). \
                 Distributed Erlang has one connection per node pair; each Troupe transport is compared with it.";
    let lines = ratio_lines(&rows);
    write_runs_report(dir, csv_name, title, intro, &rows, COLUMNS, |p| {
        // Rule 3: per (payload, rtt), p99 against pairs.
        for ((payload, rtt), lines) in group_lines(&rows, |r| ((r.payload, r.rtt), line_name(r), r.pairs, r.p99)) {
            // Pairs grow by factors (1, 8, 32, 128): a log2 axis spaces them out.
            let chart = log2_chart(
                format!("p99 latency vs actor pairs: {} KiB payload, RTT {rtt} ms", payload / 1024),
                "log2(actor pairs): 0 = 1, 3 = 8, 5 = 32, 7 = 128",
                "p99 latency ms",
                lines,
            );
            let name = format!("p99_vs_pairs_{payload}b_{rtt}ms.svg");
            write(dir, &name, &chart)?;
            p.figure(
                &chart,
                &format!("{name}: p99 latency against the number of actor pairs (mean over repetitions)."),
            );
        }
        p.h2("Troupe next to Distributed Erlang");
        if lines.len() > 1 {
            p.raw(&format!("<pre>{}</pre>", troupe_lab::report::html::escape(&lines.join("\n"))));
        } else {
            p.p("No point has both a Troupe and an Erlang figure.");
        }
        Ok(())
    })?;
    Ok((rows.len(), lines))
}

/// The ratio table (rule 4) as aligned text lines, header first.
fn ratio_lines(rows: &[Row]) -> Vec<String> {
    let mut out = vec![format!(
        "{:>5} {:>9} {:>4}  {:<32} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}  target",
        "pairs",
        "payload",
        "rtt",
        "troupe transport",
        "troupe p99",
        "erlang p99",
        "p99 x",
        "troupe/s",
        "erlang/s",
        "tput x"
    )];
    let mut keys: Vec<(u64, u64, u64, String, String)> = rows
        .iter()
        .filter(|r| r.runtime == "troupe")
        .map(|r| (r.payload, r.rtt, r.pairs, r.transport.clone(), r.overlay.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    for (payload, rtt, pairs, transport, overlay) in keys {
        let at = |rt: &str, tr: &str, ov: &str| -> Vec<&Row> {
            rows.iter()
                .filter(|r| r.runtime == rt && r.payload == payload && r.rtt == rtt && r.pairs == pairs)
                .filter(|r| r.transport == tr && r.overlay == ov)
                .collect()
        };
        let t = at("troupe", &transport, &overlay);
        let e = at("erlang", super::config::ERLANG_TRANSPORT, FULL_MESH);
        if e.is_empty() {
            continue;
        }
        let (tp, ep) = (mean(t.iter().map(|r| r.p99)), mean(e.iter().map(|r| r.p99)));
        let (tt, et) = (mean(t.iter().map(|r| r.msgs_s)), mean(e.iter().map(|r| r.msgs_s)));
        let p99x = match (tp, ep) {
            (Some(a), Some(b)) if a > 0.0 => Some(b / a),
            _ => None,
        };
        let tputx = match (tt, et) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        let target = if pairs == 128 && payload == 8_388_608 && rtt == 1 && overlay == FULL_MESH {
            match p99x {
                Some(x) if x >= 2.0 => "met (p99 >= 2x lower)",
                Some(_) => "not met (needs p99 >= 2x lower)",
                None => "no figure",
            }
        } else {
            "-"
        };
        out.push(format!(
            "{:>5} {:>8}K {:>4}  {:<32} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}  {}",
            pairs,
            payload / 1024,
            rtt,
            troupe_lab::overlay_net::variant(&transport, &overlay),
            fmt(tp, 2),
            fmt(ep, 2),
            fmt(p99x, 2),
            fmt(tt, 1),
            fmt(et, 1),
            fmt(tputx, 2),
            target
        ));
    }
    out
}
