//! The SCP run report: `scp.csv` (one row per window second), the SVG plots, and a
//! self-contained `report.html`, all computed from the run folder's recorded files so
//! `troupe lab report` can rebuild them at any time.

use std::fmt::Write as _;
use std::path::Path;

use super::analysis::{summary_rows, RunStats};
use super::config::{Pattern, ScpConfig};
use super::schedule::PROGRESSIVE_STEP_MS;
use troupe_lab::config::Config;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::plot::{self, Chart, Series};
use troupe_lab::report::{page_footer, status_html, write};

/// `scp.csv`: one row per window second.
pub fn scp_csv(m: &Manifest, cfg: &ScpConfig, st: &RunStats) -> String {
    let mut s = String::from(
        "run_id,runtime,pattern,failure_rate,pairs,supervisors,pairs_per_supervisor,delay_ms,\
         second,count,ceiling,pct_of_ceiling,kills,restarts\n",
    );
    for r in &st.seconds {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{},{:.1},{:.3},{},{}",
            m.run_id,
            m.runtime,
            cfg.pattern.as_str(),
            cfg.failure_rate,
            cfg.pairs,
            cfg.supervisors,
            cfg.pairs_per_supervisor(),
            cfg.delay_ms,
            r.second,
            r.count,
            st.ceiling,
            100.0 * r.count as f64 / st.ceiling,
            r.kills,
            r.restarts
        );
    }
    s
}

/// The throughput-over-time chart of one run.
pub fn throughput_chart(cfg: &ScpConfig, st: &RunStats, title: &str) -> Chart {
    let mut series =
        vec![Series::line("exchanges/s", st.seconds.iter().map(|r| (f64::from(r.second), r.count as f64)).collect())];
    let last = cfg.duration_s as f64;
    series.push(Series {
        name: format!("ceiling {:.0}/s", st.ceiling),
        points: vec![(0.0, st.ceiling), (last, st.ceiling)],
        dashed: true,
        markers: false,
    });
    if !st.steps.is_empty() {
        let step_s = (PROGRESSIVE_STEP_MS / 1000) as f64;
        let mut pts = Vec::new();
        for s in &st.steps {
            let x = f64::from(s.index) * step_s;
            pts.push((x, s.expected));
            pts.push(((x + step_s).min(last), s.expected));
        }
        series.push(Series { name: "expected (alive pairs)".into(), points: pts, dashed: true, markers: false });
    }
    let range = plot::zoomed_range(st.seconds.iter().map(|r| r.count as f64), st.ceiling);
    Chart {
        title: format!("{title}{}", plot::ZOOMED),
        x_label: "second of the measurement window".into(),
        y_label: "exchanges per second".into(),
        series,
        y_range: Some(range),
    }
}

fn faults_chart(st: &RunStats) -> Chart {
    Chart {
        title: "Kills and restarts per second".into(),
        x_label: "second of the measurement window".into(),
        y_label: "events per second".into(),
        series: vec![
            Series::line("kills", st.seconds.iter().map(|r| (f64::from(r.second), r.kills as f64)).collect()),
            Series::line("restarts", st.seconds.iter().map(|r| (f64::from(r.second), r.restarts as f64)).collect()),
        ],
        y_range: None,
    }
}

fn run_page(m: &Manifest, cfg: &Config, st: Option<(&RunStats, &str, &str)>) -> String {
    let scp = ScpConfig::from_config(cfg);
    let mut p = Page::new(&format!("SCP run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "{} pairs under {} sub-supervisors (1:{}), delay {} ms, payload {} B; pattern {} at {}% \
         ({} basis), recovery {}; window {} s after {} s warm-up; seed {}.",
        scp.pairs,
        scp.supervisors,
        scp.pairs_per_supervisor(),
        scp.delay_ms,
        scp.payload_bytes,
        scp.pattern.as_str(),
        scp.failure_rate,
        if scp.basis_exchanges { "exchanges" } else { "pairs" },
        scp.recovery,
        scp.duration_s,
        scp.warmup_s,
        scp.seed
    ));
    if let Some((st, tp_svg, faults_svg)) = st {
        p.h2("Results");
        p.kv(&summary_rows(st));
        p.figure(tp_svg, "Exchanges completed per second of the window, with the theoretical ceiling.");
        if st.planned_kills > 0 {
            p.figure(faults_svg, "Kills (by planned second) and restarts (by time stamp) per second.");
        }
        if !st.steps.is_empty() {
            p.h2("Progressive steps");
            let rows: Vec<Vec<String>> = st
                .steps
                .iter()
                .map(|s| {
                    vec![
                        s.index.to_string(),
                        s.alive.to_string(),
                        format!("{:.1}", s.measured),
                        format!("{:.1}", s.expected),
                        format!("{:+.2}", s.deviation_points),
                    ]
                })
                .collect();
            p.table(&["step", "alive pairs", "measured/s", "expected/s", "deviation (points)"], &rows);
            p.p("Each step is 5 s; its mean skips the first second, in which the kills land. \
                 Expected = step 0's mean x alive/pairs.");
        }
    } else {
        p.p("No events were recorded for this run.");
    }
    let files =
        ["manifest.json", "config.json", "schedule.jsonl", "events.jsonl", "scp.csv", "summary.json", "stderr.txt"];
    page_footer(&mut p, m, &files);
    p.finish()
}

/// Writes `scp.csv`, the plots (`throughput.svg`, `faults.svg`) and `report.html`.
pub fn write_run_outputs(dir: &Path, m: &Manifest, cfg: &Config, st: &RunStats) -> Result<()> {
    let scp = ScpConfig::from_config(cfg);
    write(dir, "scp.csv", &scp_csv(m, &scp, st))?;
    let title = format!(
        "{} SCP, {} pairs 1:{}, {} {}%",
        m.runtime,
        scp.pairs,
        scp.pairs_per_supervisor(),
        scp.pattern.as_str(),
        scp.failure_rate
    );
    let tp = plot::svg(&throughput_chart(&scp, st, &title), 900, 420);
    let faults = plot::svg(&faults_chart(st), 900, 300);
    write(dir, "throughput.svg", &tp)?;
    if scp.pattern != Pattern::None && st.planned_kills > 0 {
        write(dir, "faults.svg", &faults)?;
    }
    write(dir, "report.html", &run_page(m, cfg, Some((st, &tp, &faults))))
}

/// [`troupe_lab::run_folder::load_run`] with the SCP statistics typed.
pub(crate) fn load_run(dir: &Path, baseline: Option<f64>) -> Result<(Manifest, Config, Option<RunStats>)> {
    troupe_lab::run_folder::load_typed(&super::Scp, dir, baseline)
}

/// [`troupe_lab::run_folder::rebuild_run`] with the SCP statistics typed.
pub(crate) fn rebuild_run(dir: &Path, baseline: Option<f64>) -> Result<(Manifest, Option<RunStats>)> {
    let (m, _, st) = troupe_lab::run_folder::rebuild_typed(&super::Scp, dir, baseline)?;
    Ok((m, st))
}
