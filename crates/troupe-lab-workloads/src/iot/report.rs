//! The iot run report, from the run folder's recorded files: `iot.csv` (one row per window
//! second), `iot_mttr.csv` (one row per MTTR sample), `throughput.svg` (reports per second
//! over the window with the kills marked), `mttr.svg` (the MTTR distribution, cumulative) and
//! `report.html`.

use std::fmt::Write as _;
use std::path::Path;

use super::analysis::IotStats;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::{self, Chart, Series};
use troupe_lab::report::{page_footer, status_html, write};

fn throughput_chart(st: &IotStats) -> String {
    let pts: Vec<(f64, f64)> = st.seconds.iter().map(|&(s, c)| (s as f64 + 0.5, c as f64)).collect();
    let top = pts.iter().map(|p| p.1).fold(1.0, f64::max) * 1.1;
    let mut series = vec![Series::line("reports completed per second", pts)];
    // Kills as vertical ticks at the bottom of the chart (devices) or full height (servers).
    for (kind, name, height) in [("kill", "device kill", top * 0.08), ("node_kill", "server kill", top)] {
        let mut marks = Vec::new();
        for m in st.marks.iter().filter(|m| m.kind == kind) {
            marks.extend([(m.at_s, f64::NAN), (m.at_s, 0.0), (m.at_s, height)]);
        }
        if !marks.is_empty() {
            series.push(Series { name: name.into(), points: marks, dashed: kind == "node_kill", markers: false });
        }
    }
    let chart = Chart {
        title: "Reports per second over the window (kills marked)".into(),
        x_label: "window second".into(),
        y_label: "reports/s".into(),
        series,
        y_range: Some((0.0, top)),
    };
    plot::svg(&chart, 900, 360)
}

fn mttr_chart(st: &IotStats) -> String {
    let chart = Chart {
        title: "MTTR: restarted device current on every server (cumulative)".into(),
        x_label: "ms from the device's restart".into(),
        y_label: "% of restarts".into(),
        series: vec![Series::line(
            "MTTR",
            plot::cdf(st.mttr_samples.clone(), st.mttr_samples.len() + st.unrecovered as usize),
        )],
        y_range: Some((0.0, 100.0)),
    };
    plot::svg(&chart, 900, 320)
}

/// Writes the CSVs, plots and `report.html` of an iot run.
pub fn write_run_outputs(dir: &Path, m: &Manifest, _cfg: &Config, st: &IotStats) -> Result<()> {
    let mut csv = String::from("test_id,second,reports\n");
    for &(s, c) in &st.seconds {
        let _ = writeln!(csv, "{},{s},{c}", m.run_id);
    }
    write(dir, "iot.csv", &csv)?;
    let mut mttr = String::from("test_id,mttr_ms\n");
    for v in &st.mttr_samples {
        let _ = writeln!(mttr, "{},{v:.3}", m.run_id);
    }
    write(dir, "iot_mttr.csv", &mttr)?;
    let tp = throughput_chart(st);
    write(dir, "throughput.svg", &tp)?;
    let mut p = Page::new(&format!("IoT run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p("Devices report 1..=report_len to the server the hash ring picks as their owner; the collector \
         polls every server's total each second. MTTR is from a killed device's restart until its new \
         incarnation's first report is summed by its owner and acknowledged by every live server.");
    p.h2("Summary");
    p.kv(&troupe_lab::workload::RunAnalysis::summary_rows(st));
    p.figure(&tp, "Reports completed cluster-wide per window second; short ticks: device kills; dashed: server kills.");
    let mut files = vec!["iot.csv", "iot_mttr.csv", "throughput.svg", "summary.json", "events.jsonl", "schedule.jsonl"];
    if !st.mttr_samples.is_empty() {
        let mt = mttr_chart(st);
        write(dir, "mttr.svg", &mt)?;
        p.figure(&mt, "Distribution of MTTR samples (one per restarted device that became current).");
        files.push("mttr.svg");
    }
    page_footer(&mut p, m, &files);
    write(dir, "report.html", &p.finish())
}
