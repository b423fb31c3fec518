//! One energy run's outputs: `energy.csv` (one row per measured repetition, the seed's columns
//! plus `runtime,meter`), `energy.svg` (energy and time per repetition) and `report.html` (the
//! process tree's CPU and RSS charts are added by `troupe_lab::meter::charts` for every workload).

use std::path::Path;

use super::analysis::EnergyStats;
use super::post;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::{svg, Chart, Series};
use troupe_lab::report::{page_footer, status_html, write};
use troupe_lab::workload::RunAnalysis;

/// Writes the run's CSV, plots and report.
pub fn write_run_outputs(dir: &Path, m: &Manifest, _cfg: &Config, st: &EnergyStats) -> Result<()> {
    let rows = st.rows();
    write(dir, "energy.csv", &post::csv(&rows)?)?;
    let mut p = Page::new(&format!("Energy run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "{} ({}) with parameter \"{}\", {} repetitions; meter: {}.",
        st.cfg.workload,
        st.mode(),
        st.cfg.parameter(),
        st.cfg.reps,
        if st.meter == "estimate" {
            "estimate: the process tree's CPU time x watts per core (see meter.json); an estimate, not a measurement"
                .to_string()
        } else {
            format!("{} (the host's energy x the process tree's share of busy CPU time)", st.meter)
        }
    ));
    p.h2("Results");
    p.kv(&st.summary_rows());
    let table: Vec<Vec<String>> = st
        .reps
        .iter()
        .map(|r| {
            vec![
                r.rep.to_string(),
                format!("{:.4}", r.runtime_s),
                r.uj.map(|u| format!("{:.4}", u / 1e6)).unwrap_or_else(|| "-".into()),
                format!("{:.4}", r.cpu_s),
                r.samples.to_string(),
                format!("{:.1}", r.peak_rss_bytes as f64 / 1048576.0),
                r.result.to_string(),
                r.error.clone().unwrap_or_default(),
            ]
        })
        .collect();
    p.table(
        &["rep", "time s", &format!("energy J ({})", st.meter), "CPU s", "samples", "peak RSS MiB", "result", "error"],
        &table,
    );
    let energy: Vec<(f64, f64)> = st.reps.iter().map(|r| (r.rep as f64, r.uj.map_or(f64::NAN, |u| u / 1e6))).collect();
    let time: Vec<(f64, f64)> = st.reps.iter().map(|r| (r.rep as f64, r.runtime_s)).collect();
    let chart = svg(
        &Chart {
            title: format!("Energy ({}) and time per repetition", st.meter),
            x_label: "repetition".into(),
            y_label: "J / s".into(),
            series: vec![
                Series { markers: true, ..Series::line(format!("energy J ({})", st.meter), energy) },
                Series { markers: true, ..Series::line("time s", time) },
            ],
            y_range: None,
        },
        640,
        300,
    );
    write(dir, "energy.svg", &chart)?;
    p.figure(&chart, "Energy and time of each repetition.");
    page_footer(
        &mut p,
        m,
        &[
            "manifest.json",
            "config.json",
            "events.jsonl",
            "energy.csv",
            "resources.jsonl",
            "meter.json",
            "summary.json",
            "stderr.txt",
        ],
    );
    write(dir, "report.html", &p.finish())
}
