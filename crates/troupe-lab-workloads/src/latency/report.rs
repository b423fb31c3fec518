//! The latency reports: one run's `latency.csv`, `latency_cdf.svg` and `report.html`; a sweep's
//! or comparison's table, plots and ratio table, from the run folders below it.
//!
//! Rules:
//! 1. A run's `latency.csv` has one row per message: `pair,seq,latency_us`.
//! 2. The grid's CSV (`sweep.csv` or `compare.csv`) has one row per run folder: runtime,
//!    transport, pairs, payload, rtt, messages, the latency figures, throughput, status and
//!    reason (with the last line of the run's stderr); a failed run keeps its row with empty
//!    figures.
//! 3. Plots: per (payload, rtt), p99 latency against log2(pairs), one line per runtime and
//!    transport (Distributed Erlang's is its one connection); a missing figure is a gap.
//! 4. The ratio table: per (pairs, payload, rtt) and Troupe transport, Distributed Erlang's p99
//!    over Troupe's (the mean over repetitions of each), and the same for throughput (Troupe's
//!    over Erlang's): above 1 Troupe is better. The target is checked where both have a
//!    figure at 128 pairs, 8 MiB, 1 ms RTT: Erlang's p99 at least 2x Troupe's.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::analysis::LatencyStats;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::{link, Page};
use troupe_lab::report::plot::{mean, svg, Chart, Series};
use troupe_lab::report::{csv_text, page_footer, status_html, status_word, write};
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
    troupe_lab::report::grid_runs(dir)
        .into_iter()
        .map(|(d, m, s)| {
            let c = &m.config;
            let ci = |k: &str| c.get(k).and_then(Value::as_u64).unwrap_or(0);
            let f = |path: &[&str]| {
                let mut v = &s;
                for k in path {
                    v = v.get(*k)?;
                }
                v.as_f64()
            };
            let ok = m.status.completed();
            let g = |path: &[&str]| if ok { f(path) } else { None };
            Row {
                rel: d.strip_prefix(dir).unwrap_or(&d).display().to_string(),
                runtime: m.runtime.clone(),
                status: status_word(&m).to_string(),
                reason: with_stderr(m.reason.clone().unwrap_or_default(), &d, ok),
                transport: c.get("transport").and_then(Value::as_str).unwrap_or("").to_string(),
                pairs: ci("pairs"),
                payload: ci("payload_bytes"),
                rtt: ci("rtt_ms"),
                messages: ci("messages"),
                p50: g(&["latency_ms", "p50"]),
                p99: g(&["latency_ms", "p99"]),
                mean: g(&["latency_ms", "mean"]),
                max: g(&["latency_ms", "max"]),
                msgs_s: g(&["throughput_msgs_per_s"]),
                mb_s: g(&["throughput_mb_per_s"]),
            }
        })
        .collect()
}

/// A failed run's reason with the last line its program wrote to stderr (the Erlang peer's
/// refusal of a transport names the key there).
fn with_stderr(reason: String, dir: &Path, ok: bool) -> String {
    if ok {
        return reason;
    }
    let text = std::fs::read_to_string(dir.join("stderr.txt")).unwrap_or_default();
    match text.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(last) if !reason.contains(last) => {
            let last: String = last.chars().take(240).collect();
            format!("{reason} (stderr: {last})")
        }
        _ => reason,
    }
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|x| format!("{x:.digits$}")).unwrap_or_default()
}

/// The line a run belongs to in the plots (rule 3).
fn line_name(r: &Row) -> String {
    if r.runtime == "troupe" {
        format!("troupe {}", r.transport)
    } else {
        format!("{} (one connection)", r.runtime)
    }
}

/// Writes the grid report into `dir` (rules 2-4): the number of runs and the ratio table as
/// text lines.
pub fn write_grid(dir: &Path, csv_name: &str, title: &str) -> Result<(usize, Vec<String>)> {
    let mut rows = load(dir);
    rows.sort_by(|a, b| {
        (a.payload, a.rtt, a.pairs, &a.runtime, &a.transport).cmp(&(
            b.payload,
            b.rtt,
            b.pairs,
            &b.runtime,
            &b.transport,
        ))
    });
    let header = [
        "runtime",
        "transport",
        "pairs",
        "payload_bytes",
        "rtt_ms",
        "messages",
        "p50_ms",
        "p99_ms",
        "mean_ms",
        "max_ms",
        "msgs_per_s",
        "mb_per_s",
        "status",
        "reason",
        "folder",
    ];
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.runtime.clone(),
                r.transport.clone(),
                r.pairs.to_string(),
                r.payload.to_string(),
                r.rtt.to_string(),
                r.messages.to_string(),
                fmt(r.p50, 3),
                fmt(r.p99, 3),
                fmt(r.mean, 3),
                fmt(r.max, 3),
                fmt(r.msgs_s, 1),
                fmt(r.mb_s, 1),
                r.status.clone(),
                r.reason.clone(),
                r.rel.clone(),
            ]
        })
        .collect();
    write(dir, csv_name, &csv_text(&header, table.clone())?)?;

    let mut p = Page::new(title);
    p.p("Each actor on node A sends its messages to its partner on node B one after another, waiting for \
         each ack; every connection between the nodes runs through the lab's delaying relay (docs/latency.md). \
         Distributed Erlang has one connection per node pair; each Troupe transport is compared with it.");
    // Rule 3: per (payload, rtt), p99 against pairs.
    let groups: BTreeMap<(u64, u64), Vec<&Row>> = rows.iter().fold(BTreeMap::new(), |mut m, r| {
        m.entry((r.payload, r.rtt)).or_insert_with(Vec::new).push(r);
        m
    });
    for ((payload, rtt), rs) in &groups {
        let mut lines: BTreeMap<String, BTreeMap<u64, Vec<Option<f64>>>> = BTreeMap::new();
        for r in rs {
            lines.entry(line_name(r)).or_default().entry(r.pairs).or_default().push(r.p99);
        }
        // Pairs grow by factors (1, 8, 32, 128): a log2 axis spaces them out.
        let series: Vec<Series> = lines.into_iter().map(|(name, pts)| Series::log2_means(name, pts)).collect();
        let chart = svg(
            &Chart {
                title: format!("p99 latency vs actor pairs: {} KiB payload, RTT {rtt} ms", payload / 1024),
                x_label: "log2(actor pairs): 0 = 1, 3 = 8, 5 = 32, 7 = 128".into(),
                y_label: "p99 latency ms".into(),
                series,
                y_range: None,
            },
            720,
            340,
        );
        let name = format!("p99_vs_pairs_{payload}b_{rtt}ms.svg");
        write(dir, &name, &chart)?;
        p.figure(&chart, &format!("{name}: p99 latency against the number of actor pairs (mean over repetitions)."));
    }
    let lines = ratio_lines(&rows);
    p.h2("Troupe next to Distributed Erlang");
    if lines.len() > 1 {
        p.raw(&format!("<pre>{}</pre>", troupe_lab::report::html::escape(&lines.join("\n"))));
    } else {
        p.p("No point has both a Troupe and an Erlang figure.");
    }
    p.h2("Runs");
    p.table(&header, &table);
    p.raw(&format!("<p>{}</p>", link(csv_name, csv_name)));
    write(dir, "report.html", &p.finish())?;
    Ok((rows.len(), lines))
}

/// The ratio table (rule 4) as aligned text lines, header first.
fn ratio_lines(rows: &[Row]) -> Vec<String> {
    let mut out = vec![format!(
        "{:>5} {:>9} {:>4}  {:<18} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}  target",
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
    let mut keys: Vec<(u64, u64, u64, String)> = rows
        .iter()
        .filter(|r| r.runtime == "troupe")
        .map(|r| (r.payload, r.rtt, r.pairs, r.transport.clone()))
        .collect();
    keys.sort();
    keys.dedup();
    for (payload, rtt, pairs, transport) in keys {
        let at = |rt: &str, tr: Option<&str>| -> Vec<&Row> {
            rows.iter()
                .filter(|r| r.runtime == rt && r.payload == payload && r.rtt == rtt && r.pairs == pairs)
                .filter(|r| tr.is_none_or(|t| r.transport == t))
                .collect()
        };
        let t = at("troupe", Some(&transport));
        let e = at("erlang", Some(super::config::ERLANG_TRANSPORT));
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
        let target = if pairs == 128 && payload == 8_388_608 && rtt == 1 {
            match p99x {
                Some(x) if x >= 2.0 => "met (p99 >= 2x lower)",
                Some(_) => "not met (needs p99 >= 2x lower)",
                None => "no figure",
            }
        } else {
            "-"
        };
        out.push(format!(
            "{:>5} {:>8}K {:>4}  {:<18} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}  {}",
            pairs,
            payload / 1024,
            rtt,
            transport,
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
