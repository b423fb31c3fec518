//! The `overlay-scale` reports: a run's traffic over simulated time, and the sweep or
//! comparison page that sets the overlays side by side over node counts, as seed 004 §6.3's
//! figure does (total bytes transmitted per overlay and cluster size).
//!
//! Files:
//! 1. run: `overlay_traffic.csv` (`second,bytes,messages,bytes_cumulative`), `traffic.svg`
//!    (cumulative MB over simulated time), `report.html`;
//! 2. sweep / compare: `overlay_scale.csv` (`runtime,overlay,nodes,seed,bytes_total,
//!    messages_total,convergence_ms,formed_ms,status,run,mode,rss_kb_per_node`, one row per
//!    run folder), `bytes.svg` (log10 of bytes_total against nodes, one line per overlay and
//!    mode), `convergence.svg`, and `report.html` with the check of issue 13's target (HyParView
//!    sends fewer bytes than the full mesh at every node count from 64 up), per mode;
//! 3. when the folder holds both modes: `overlay_scale_calibration.csv`
//!    (`overlay,nodes,bytes_sim,bytes_processes,bytes_ratio,messages_sim,messages_processes,
//!    messages_ratio,convergence_ms_sim,convergence_ms_processes,convergence_ratio`, ratio =
//!    processes / sim, one row per overlay and node count both modes reached with an `ok` run)
//!    and its table on the page: the simulated and the real curves side by side.
//!
//! The sweep and comparison pages read every `summary.json` below the folder, so they do not
//! depend on how the core names run folders.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::analysis::OverlayStats;
use troupe_lab::error::{Error, Result};
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::{self, Chart, Series};
use troupe_lab::report::{csv_text, page_footer, status_html, write};

/// Writes a run's CSV, plot and page (file 1).
pub(super) fn write_run_outputs(dir: &Path, m: &Manifest, st: &OverlayStats) -> Result<()> {
    let mut cumulative = 0u64;
    let rows: Vec<Vec<String>> = st
        .seconds
        .iter()
        .map(|&(s, b, msgs)| {
            cumulative += b;
            vec![s.to_string(), b.to_string(), msgs.to_string(), cumulative.to_string()]
        })
        .collect();
    write(dir, "overlay_traffic.csv", &csv_text(&["second", "bytes", "messages", "bytes_cumulative"], rows)?)?;
    let mut p = Page::new(&format!("overlay-scale run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.kv(&troupe_lab::workload::RunAnalysis::summary_rows(st));
    let mut total = 0u64;
    let points: Vec<(f64, f64)> = st
        .seconds
        .iter()
        .map(|&(s, b, _)| {
            total += b;
            ((s + 1) as f64, total as f64 / 1e6)
        })
        .collect();
    let mut series = vec![Series::line(format!("{} ({} nodes)", st.overlay, st.nodes), points)];
    if let Some(f) = st.formed_ms {
        let top = total as f64 / 1e6;
        let mut mark =
            Series::line("overlay formed, counter starts", vec![(f as f64 / 1000.0, 0.0), (f as f64 / 1000.0, top)]);
        mark.dashed = true;
        series.push(mark);
    }
    let real = st.mode == "processes";
    let chart = Chart {
        title: if real {
            "Bytes sent, cumulative (node layer, wall time)"
        } else {
            "Bytes sent, cumulative (simulated time)"
        }
        .into(),
        x_label: if real { "s since the first node started" } else { "simulated s" }.into(),
        y_label: "MB".into(),
        series,
        y_range: None,
    };
    let svg = plot::svg(&chart, 760, 380);
    write(dir, "traffic.svg", &svg)?;
    p.figure(&svg, "Every byte every node sent, membership included, over simulated time.");
    page_footer(&mut p, m, &["overlay_traffic.csv", "traffic.svg", "summary.json", "events.jsonl", "manifest.json"]);
    write(dir, "report.html", &p.finish())
}

/// One run folder's numbers, read back from its `summary.json`.
#[derive(Debug, Clone)]
struct Row {
    mode: String,
    runtime: String,
    overlay: String,
    nodes: u64,
    seed: i64,
    bytes_total: u64,
    messages_total: u64,
    convergence_ms: Option<u64>,
    formed_ms: Option<u64>,
    status: String,
    run: String,
    rss_kb_per_node: Option<u64>,
}

fn summaries(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() && depth > 0 {
            summaries(&p, depth - 1, out);
        } else if p.file_name().is_some_and(|n| n == "summary.json") {
            out.push(p);
        }
    }
}

fn read_rows(dir: &Path) -> Result<Vec<Row>> {
    let mut files = Vec::new();
    summaries(dir, 4, &mut files);
    files.sort();
    let mut rows = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).map_err(|e| Error::io(&f, e))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::malformed(&f, e.to_string()))?;
        if v.get("workload").and_then(|w| w.as_str()) != Some("overlay-scale") {
            continue;
        }
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
        let u = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
        let mode = s("mode");
        rows.push(Row {
            mode: if mode.is_empty() { "sim".into() } else { mode },
            runtime: s("runtime"),
            overlay: s("overlay"),
            nodes: u("nodes").unwrap_or(0),
            seed: v.get("seed").and_then(serde_json::Value::as_i64).unwrap_or(0),
            bytes_total: u("bytes_total").unwrap_or(0),
            messages_total: u("messages_total").unwrap_or(0),
            convergence_ms: u("convergence_ms"),
            formed_ms: u("formed_ms"),
            status: s("status"),
            run: s("run_id"),
            rss_kb_per_node: u("rss_kb_per_node"),
        });
    }
    rows.sort_by(|a, b| {
        (&a.mode, &a.runtime, &a.overlay, a.nodes, a.seed).cmp(&(&b.mode, &b.runtime, &b.overlay, b.nodes, b.seed))
    });
    Ok(rows)
}

/// Issue 13's target for each mode the folder holds (the simulator's first).
fn target_checks(rows: &[Row]) -> Vec<String> {
    let modes: std::collections::BTreeSet<&str> = rows.iter().map(|r| r.mode.as_str()).collect();
    if modes.len() <= 1 {
        return vec![target_check(rows)];
    }
    modes
        .into_iter()
        .rev()
        .map(|m| {
            let of: Vec<Row> = rows.iter().filter(|r| r.mode == m).cloned().collect();
            format!("[{m}] {}", target_check(&of))
        })
        .collect()
}

/// Processes over simulator for one metric; `-` when either is missing or zero.
fn ratio(real: Option<u64>, sim: Option<u64>) -> String {
    match (real, sim) {
        (Some(r), Some(s)) if s > 0 => format!("{:.2}", r as f64 / s as f64),
        _ => "-".into(),
    }
}

/// File 3: per overlay and node count both modes reached (`ok` runs; the first seed's), the
/// figures side by side and their ratios.
fn calibration(rows: &[Row]) -> Vec<Vec<String>> {
    let ok = |mode: &str| -> BTreeMap<(String, u64), &Row> {
        let mut m = BTreeMap::new();
        for r in rows.iter().filter(|r| r.mode == mode && r.status == "ok") {
            m.entry((r.overlay.clone(), r.nodes)).or_insert(r);
        }
        m
    };
    let (sim, real) = (ok("sim"), ok("processes"));
    let opt = |v: Option<u64>| v.map_or("-".to_string(), |x| x.to_string());
    sim.iter()
        .filter_map(|(k, s)| real.get(k).map(|r| (k, s, r)))
        .map(|((overlay, nodes), s, r)| {
            vec![
                overlay.clone(),
                nodes.to_string(),
                s.bytes_total.to_string(),
                r.bytes_total.to_string(),
                ratio(Some(r.bytes_total), Some(s.bytes_total)),
                s.messages_total.to_string(),
                r.messages_total.to_string(),
                ratio(Some(r.messages_total), Some(s.messages_total)),
                opt(s.convergence_ms),
                opt(r.convergence_ms),
                ratio(r.convergence_ms, s.convergence_ms),
            ]
        })
        .collect()
}

/// Whether HyParView sent fewer bytes than the full mesh at every node count from 64 up where
/// both ran (issue 13's target), as a sentence.
fn target_check(rows: &[Row]) -> String {
    let by = |overlay: &str| -> BTreeMap<u64, u64> {
        rows.iter().filter(|r| r.overlay == overlay && r.status == "ok").map(|r| (r.nodes, r.bytes_total)).collect()
    };
    let (hv, mesh) = (by("hyparview"), by("full_mesh"));
    let pairs: Vec<(u64, u64, u64)> =
        hv.iter().filter(|(n, _)| **n >= 64).filter_map(|(n, b)| mesh.get(n).map(|m| (*n, *b, *m))).collect();
    if pairs.is_empty() {
        return "Target (HyParView sends fewer bytes than the full mesh from 64 nodes up): not checked; \
                this folder has no HyParView and full-mesh runs at the same node count >= 64."
            .into();
    }
    let failed: Vec<String> = pairs.iter().filter(|p| p.1 >= p.2).map(|p| p.0.to_string()).collect();
    if failed.is_empty() {
        format!(
            "Target met: HyParView sent fewer bytes than the full mesh at every node count from 64 up ({}).",
            pairs
                .iter()
                .map(|p| format!("{}: {:.1}x less", p.0, p.2 as f64 / p.1.max(1) as f64))
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        format!(
            "Target NOT met: HyParView sent at least as many bytes as the full mesh at {} nodes.",
            failed.join(", ")
        )
    }
}

/// Writes the sweep or comparison page (file 2); the table as text lines, and the number of
/// runs it covers.
pub(super) fn write_grid_report(dir: &Path, title: &str) -> Result<(Vec<String>, usize)> {
    let rows = read_rows(dir)?;
    let conv = |r: &Row| r.convergence_ms.map_or(String::new(), |c| c.to_string());
    let csv_rows = rows.iter().map(|r| {
        vec![
            r.runtime.clone(),
            r.overlay.clone(),
            r.nodes.to_string(),
            r.seed.to_string(),
            r.bytes_total.to_string(),
            r.messages_total.to_string(),
            conv(r),
            r.formed_ms.map_or(String::new(), |f| f.to_string()),
            r.status.clone(),
            r.run.clone(),
            r.mode.clone(),
            r.rss_kb_per_node.map_or(String::new(), |k| k.to_string()),
        ]
    });
    let header = [
        "runtime",
        "overlay",
        "nodes",
        "seed",
        "bytes_total",
        "messages_total",
        "convergence_ms",
        "formed_ms",
        "status",
        "run",
        "mode",
        "rss_kb_per_node",
    ];
    write(dir, "overlay_scale.csv", &csv_text(&header, csv_rows)?)?;
    let mut by_overlay: BTreeMap<String, Vec<&Row>> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.status == "ok") {
        let name = match r.mode.as_str() {
            "sim" => format!("{} ({})", r.overlay, r.runtime),
            m => format!("{} ({}, {m})", r.overlay, r.runtime),
        };
        by_overlay.entry(name).or_default().push(r);
    }
    let line = |f: &dyn Fn(&Row) -> Option<f64>| -> Vec<Series> {
        by_overlay
            .iter()
            .map(|(name, rs)| {
                let mut s =
                    Series::line(name.clone(), rs.iter().map(|r| (r.nodes as f64, f(r).unwrap_or(f64::NAN))).collect());
                s.markers = true;
                s
            })
            .collect()
    };
    let bytes = Chart {
        title: "Total bytes transmitted (log10) vs nodes".into(),
        x_label: "nodes".into(),
        y_label: "log10(bytes)".into(),
        series: line(&|r| Some((r.bytes_total.max(1) as f64).log10())),
        y_range: None,
    };
    let convergence = Chart {
        title: "Time to convergence vs nodes (simulated, or wall-clock for processes)".into(),
        x_label: "nodes".into(),
        y_label: "ms".into(),
        series: line(&|r| r.convergence_ms.map(|c| c as f64)),
        y_range: None,
    };
    let (bytes_svg, conv_svg) = (plot::svg(&bytes, 760, 380), plot::svg(&convergence, 760, 380));
    write(dir, "bytes.svg", &bytes_svg)?;
    write(dir, "convergence.svg", &conv_svg)?;
    let checks = target_checks(&rows);
    let cal = calibration(&rows);
    let cal_header = [
        "overlay",
        "nodes",
        "bytes_sim",
        "bytes_processes",
        "bytes_ratio",
        "messages_sim",
        "messages_processes",
        "messages_ratio",
        "convergence_ms_sim",
        "convergence_ms_processes",
        "convergence_ratio",
    ];
    if !cal.is_empty() {
        write(dir, "overlay_scale_calibration.csv", &csv_text(&cal_header, cal.clone())?)?;
    }
    let mut p = Page::new(title);
    for c in &checks {
        p.p(c);
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.mode.clone(),
                r.runtime.clone(),
                r.overlay.clone(),
                r.nodes.to_string(),
                format!("{:.2}", r.bytes_total as f64 / 1e6),
                r.messages_total.to_string(),
                r.convergence_ms.map_or("-".into(), |c| c.to_string()),
                r.rss_kb_per_node.map_or("-".into(), |k| format!("{:.1}", k as f64 / 1024.0)),
                r.status.clone(),
            ]
        })
        .collect();
    p.table(
        &["mode", "runtime", "overlay", "nodes", "MB sent", "messages", "convergence ms", "MB RSS per node", "status"],
        &table,
    );
    if !cal.is_empty() {
        p.p("Simulated and real side by side (ratio = processes / sim), for every overlay and node count both \
             modes reached with an ok run (overlay_scale_calibration.csv):");
        p.table(&cal_header, &cal);
    }
    p.figure(&bytes_svg, "Every byte sent (membership included), log10, per overlay and node count.");
    p.figure(&conv_svg, "Simulated ms from the increments until every node holds every increment.");
    p.p("mode sim: simulated network (deterministic: same config and seed, same numbers); mode processes: \
         real node processes on loopback (wall-clock times, the node layer's bytes and frames). Files: \
         overlay_scale.csv, bytes.svg, convergence.svg.");
    write(dir, "report.html", &p.finish())?;
    let mut lines = vec![format!(
        "{:<9} {:<10} {:<14} {:>6} {:>14} {:>12} {:>14}",
        "mode", "runtime", "overlay", "nodes", "bytes", "messages", "convergence_ms"
    )];
    lines.extend(rows.iter().map(|r| {
        format!(
            "{:<9} {:<10} {:<14} {:>6} {:>14} {:>12} {:>14}",
            r.mode,
            r.runtime,
            r.overlay,
            r.nodes,
            r.bytes_total,
            r.messages_total,
            r.convergence_ms.map_or("-".into(), |c| c.to_string())
        )
    }));
    lines.extend(checks);
    if !cal.is_empty() {
        lines.push("processes / sim: overlay nodes bytes messages convergence".into());
        lines.extend(cal.iter().map(|c| format!("  {} {} {} {} {}", c[0], c[1], c[4], c[7], c[10])));
    }
    Ok((lines, rows.len()))
}
