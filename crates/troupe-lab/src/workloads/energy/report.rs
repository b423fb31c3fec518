//! One energy run's outputs: `energy.csv` (one row per measured repetition, the seed's columns
//! plus `runtime,meter`), `resources-cpu.svg` and `resources-rss.svg` (the process tree's CPU and RSS
//! over the run, from `resources.jsonl`), `energy.svg` (energy and time per repetition) and `report.html`.

use std::path::Path;

use super::analysis::EnergyStats;
use super::post;
use crate::config::Config;
use crate::error::Result;
use crate::manifest::Manifest;
use crate::meter::sampler;
use crate::report::html::Page;
use crate::report::plot::{svg, Chart, Series};
use crate::report::{page_footer, status_html, write};
use crate::workload::RunAnalysis;

/// The CPU (cores busy) and RSS (MiB) of the process tree over time, from a run folder's
/// `resources.jsonl`: two SVG charts; `None` without samples.
pub fn resources_svg(dir: &Path) -> Option<[String; 2]> {
    let samples = sampler::read_samples(&dir.join(sampler::FILE)).ok()?;
    let t0 = samples.first()?.ts_us;
    let mut cores = Vec::new();
    for w in samples.windows(2) {
        let dt_ms = (w[1].ts_us - w[0].ts_us) as f64 / 1000.0;
        if dt_ms > 0.0 {
            cores.push(((w[1].ts_us - t0) as f64 / 1e6, (w[1].cpu_ms - w[0].cpu_ms) / dt_ms));
        }
    }
    let rss: Vec<(f64, f64)> = samples
        .iter()
        .filter(|s| !s.last)
        .map(|s| ((s.ts_us - t0) as f64 / 1e6, s.rss_bytes as f64 / 1048576.0))
        .collect();
    let cpu = svg(
        &Chart {
            title: "Process tree CPU (cores busy)".into(),
            x_label: "s since the child started".into(),
            y_label: "cores".into(),
            series: vec![Series::line("CPU", cores)],
            y_range: None,
        },
        640,
        260,
    );
    let mem = svg(
        &Chart {
            title: "Process tree resident memory".into(),
            x_label: "s since the child started".into(),
            y_label: "MiB".into(),
            series: vec![Series::line("RSS", rss)],
            y_range: None,
        },
        640,
        260,
    );
    Some([cpu, mem])
}

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
    if let Some([cpu, mem]) = resources_svg(dir) {
        write(dir, "resources-cpu.svg", &cpu)?;
        write(dir, "resources-rss.svg", &mem)?;
        p.figure(&cpu, "CPU of the run's process tree, sampled by the lab (resources.jsonl).");
        p.figure(&mem, "Resident memory of the run's process tree, sampled by the lab (resources.jsonl).");
    }
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
