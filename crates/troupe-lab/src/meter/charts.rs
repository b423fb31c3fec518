//! The charts of the lab's sampler, shared by every run report: the run's process tree's CPU
//! (cores busy between readings) and resident memory over time, from `resources.jsonl`.
//!
//! Rules:
//! 1. Cores busy at a reading = the tree's CPU ms since the previous reading / the wall ms
//!    between them; the x axis is seconds since the first reading.
//! 2. The lines without a live tree (the one before the spawn, and `last`, after the child was
//!    reaped) are left out of the memory chart (their RSS is 0 by construction).
//! 3. [`add_to_report`] appends both charts to a run's `report.html` once, before `</body>`,
//!    for workloads whose own page does not show them.

use std::path::Path;

use super::sampler;
use crate::report::plot::{svg, Chart, Series};

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
        .filter(|s| !s.last && s.procs > 0)
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

/// The marker [`add_to_report`] looks for, so a page gets the charts once.
const MARK: &str = "<!-- lab resources -->";

/// Rule 3: writes `resources-cpu.svg` and `resources-rss.svg` into the run folder and appends
/// them to its `report.html` unless the page already shows them. Does nothing without samples.
pub fn add_to_report(dir: &Path) -> crate::error::Result<()> {
    let Some([cpu, mem]) = resources_svg(dir) else { return Ok(()) };
    crate::report::write(dir, "resources-cpu.svg", &cpu)?;
    crate::report::write(dir, "resources-rss.svg", &mem)?;
    let page = dir.join("report.html");
    let Ok(html) = std::fs::read_to_string(&page) else { return Ok(()) };
    if html.contains(MARK) || html.contains("resources-cpu.svg") {
        return Ok(());
    }
    let Some(at) = html.rfind("</body>") else { return Ok(()) };
    let strip = |s: &str| s.find("<svg").map(|i| s[i..].to_string()).unwrap_or_default();
    let section = format!(
        "{MARK}<h2>Resources</h2>\n<figure>{}<figcaption>CPU of the run's process tree, sampled by the lab \
         (resources.jsonl).</figcaption></figure>\n<figure>{}<figcaption>Resident memory of the run's process \
         tree.</figcaption></figure>\n",
        strip(&cpu),
        strip(&mem)
    );
    let out = format!("{}{section}{}", &html[..at], &html[at..]);
    crate::report::write(dir, "report.html", &out)
}
