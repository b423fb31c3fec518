//! A run folder read back and its outputs written: the manifest, config, events and schedule
//! are read, the workload computes the statistics, and the core writes `summary.json` beside
//! the workload's own tables, plots and `report.html`, so `troupe lab report` can rebuild them
//! at any time (rule 4 of [`crate::workload`]); and a completed run's status judged from them.

use std::path::Path;

use crate::config::{Config, ConfigBuilder};
use crate::error::{Error, Result};
use crate::manifest::{Manifest, Status};
use crate::report::{no_events_page, status_word, write, SUMMARY};
use crate::workload::{schedule_of, Checker, RunAnalysis, Workload};
use crate::{events, schedule};

/// A run folder read back: its manifest, its config, and its statistics (none when the run
/// recorded no events).
pub type LoadedRun = (Manifest, Config, Option<Box<dyn RunAnalysis>>);

/// Reads a run folder of workload `w` back: manifest, config, statistics (against `baseline`
/// when known). A folder of another workload is an error naming both.
pub fn load_run(w: &'static dyn Workload, dir: &Path, baseline: Option<f64>) -> Result<LoadedRun> {
    let m = Manifest::read(dir)?;
    if m.workload != w.name() {
        return Err(Error::malformed(
            dir.join(crate::manifest::FILE),
            format!("a run of workload {:?}, read as one of {:?}", m.workload, w.name()),
        ));
    }
    let mut b = ConfigBuilder::new(w);
    b.apply_json(&m.config);
    let cfg = b.build().map_err(|e| Error::malformed(dir.join("manifest.json"), e.to_string()))?;
    let ev_path = dir.join("events.jsonl");
    let stats = if ev_path.is_file() {
        let evs = events::read(&ev_path)?;
        let sched_path = dir.join("schedule.jsonl");
        let sched = if sched_path.is_file() { schedule::read(&sched_path)? } else { schedule_of(w, &cfg) };
        Some(w.analyse(&cfg, &evs, &sched, baseline))
    } else {
        None
    };
    Ok((m, cfg, stats))
}

/// [`load_run`] with the workload's own statistics type.
pub fn load_typed<W: Workload + Checker>(
    w: &'static W,
    dir: &Path,
    baseline: Option<f64>,
) -> Result<(Manifest, Config, Option<W::Analysis>)> {
    let (m, cfg, st) = load_run(w, dir, baseline)?;
    Ok((m, cfg, st.map(|a| crate::workload::typed(w, a)).transpose()?))
}

/// [`rebuild_run`] with the workload's own statistics type.
pub fn rebuild_typed<W: Workload + Checker>(
    w: &'static W,
    dir: &Path,
    baseline: Option<f64>,
) -> Result<(Manifest, Config, Option<W::Analysis>)> {
    let (m, cfg, st) = rebuild_run(w, dir, baseline)?;
    Ok((m, cfg, st.map(|a| crate::workload::typed(w, a)).transpose()?))
}

/// The status of a run whose events are complete: `ok`, or `degraded` with the failures its
/// statistics count ([`RunAnalysis::degradations`]) as the reason.
pub fn judge_complete(
    stats: Option<&dyn RunAnalysis>,
    cfg: &Config,
    net_missed: &[String],
) -> (Status, Option<String>) {
    let mut lines = stats.map(|st| st.degradations(cfg)).unwrap_or_default();
    lines.extend(net_missed.iter().cloned());
    if lines.is_empty() {
        (Status::Ok, None)
    } else {
        (Status::Degraded, Some(format!("degraded: {}", lines.join("; "))))
    }
}

/// Rebuilds a run folder's tables, plots, summary and report from its recorded files. A run
/// without events gets a page saying so (and no `summary.json`). A completed run whose events
/// are there is judged again by today's statistics: `ok` and `degraded` follow
/// [`judge_complete`] and the manifest is rewritten when that changes them (a `failed` run
/// stays failed; without events the recorded status stands).
pub fn rebuild_run(w: &'static dyn Workload, dir: &Path, baseline: Option<f64>) -> Result<LoadedRun> {
    let (mut m, cfg, stats) = load_run(w, dir, baseline)?;
    if m.status.completed() && !m.interrupted && stats.is_some() {
        let ev_path = dir.join("events.jsonl");
        let missed = match crate::netlayer::wanted(&cfg) && ev_path.is_file() {
            true => crate::netfaults::missed(&cfg, &events::read(&ev_path)?),
            false => Vec::new(),
        };
        let (status, reason) = judge_complete(stats.as_deref(), &cfg, &missed);
        if (status, &reason) != (m.status, &m.reason) {
            (m.status, m.reason) = (status, reason);
            m.write(dir)?;
        }
    }
    match &stats {
        Some(st) => write_run_outputs(w, dir, &m, &cfg, st.as_ref())?,
        None => {
            let _ = std::fs::remove_file(dir.join(SUMMARY));
            write(dir, "report.html", &no_events_page(&m))?;
        }
    }
    Ok((m, cfg, stats))
}

/// Writes `summary.json` and the workload's own outputs (tables, plots, `report.html`).
pub fn write_run_outputs(w: &dyn Workload, dir: &Path, m: &Manifest, cfg: &Config, st: &dyn RunAnalysis) -> Result<()> {
    let mut summary = st.summary_json();
    if let serde_json::Value::Object(o) = &mut summary {
        o.insert("run_id".into(), m.run_id.clone().into());
        o.insert("workload".into(), m.workload.clone().into());
        o.insert("runtime".into(), m.runtime.clone().into());
        o.insert("status".into(), status_word(m).into());
        o.insert("degraded".into(), st.degradations(cfg).into());
        // The lab's sampler: CPU, wall time and peak RSS of the run's process tree.
        if let Some(r) = crate::meter::sampler::run_totals(dir) {
            o.insert("resources".into(), r);
        }
        // `[net_faults]`: the frames the node processes dropped and delayed (crate::netfaults).
        let ev_path = dir.join("events.jsonl");
        if cfg.net_faults().is_some() && ev_path.is_file() {
            let evs = events::read(&ev_path)?;
            o.extend(crate::netfaults::summary(&evs));
            // The network layer's lines not carried out degrade the run (crate::netlayer rule 8).
            let missed = crate::netfaults::missed(cfg, &evs);
            if let Some(serde_json::Value::Array(d)) = o.get_mut("degraded") {
                d.extend(missed.into_iter().map(serde_json::Value::from));
            }
        }
    }
    let text = serde_json::to_string_pretty(&summary).map_err(|e| Error::other(e.to_string()))?;
    write(dir, SUMMARY, &(text + "\n"))?;
    w.write_run_outputs(dir, m, cfg, st)?;
    // Every run's page shows its process tree's CPU and memory (the lab's sampler).
    crate::meter::charts::add_to_report(dir)
}
