//! Run reports, shared by every workload: a run folder is read back (manifest, config, events,
//! schedule), its workload computes the statistics, and the core writes `summary.json` beside
//! the workload's own CSV tables, plots and `report.html`, so `troupe lab report` can rebuild
//! them at any time. Also the pieces every workload's page uses: status, provenance, files.

pub mod grid;
pub mod html;
pub mod plot;

use std::path::{Path, PathBuf};

use crate::config::{Config, ConfigBuilder};
use crate::error::{Error, Result};
use crate::manifest::{Manifest, Status};
use crate::workload::RunAnalysis;
use crate::workload::{Checker, Workload};
use crate::{events, schedule};
use html::{link, Page};

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
        let sched = if sched_path.is_file() { schedule::read(&sched_path)? } else { schedule::for_config(&cfg) };
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
pub fn judge_complete(stats: Option<&dyn RunAnalysis>, cfg: &Config) -> (Status, Option<String>) {
    let lines = stats.map(|st| st.degradations(cfg)).unwrap_or_default();
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
        let (status, reason) = judge_complete(stats.as_deref(), &cfg);
        if (status, &reason) != (m.status, &m.reason) {
            (m.status, m.reason) = (status, reason);
            m.write(dir)?;
        }
    }
    match &stats {
        Some(st) => write_run_outputs(dir, &m, &cfg, st.as_ref())?,
        None => {
            let _ = std::fs::remove_file(dir.join(SUMMARY));
            write(dir, "report.html", &no_events_page(&m))?;
        }
    }
    Ok((m, cfg, stats))
}

/// The name of the per-run statistics file.
pub const SUMMARY: &str = "summary.json";

/// Writes `summary.json` and the workload's own outputs (tables, plots, `report.html`).
pub fn write_run_outputs(dir: &Path, m: &Manifest, cfg: &Config, st: &dyn RunAnalysis) -> Result<()> {
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
            o.extend(crate::netfaults::summary(&events::read(&ev_path)?));
        }
    }
    let text = serde_json::to_string_pretty(&summary).map_err(|e| Error::other(e.to_string()))?;
    write(dir, SUMMARY, &(text + "\n"))?;
    cfg.plugin().write_run_outputs(dir, m, cfg, st)?;
    // Every run's page shows its process tree's CPU and memory (the lab's sampler).
    crate::meter::charts::add_to_report(dir)
}

/// The page of a run whose workload writes none of its own (the default of
/// [`crate::workload::Reports::run_outputs`]): status, the analysis's summary rows, and the
/// config, provenance and files every run page closes with.
pub fn generic_run_page(dir: &Path, m: &Manifest, _cfg: &Config, st: &dyn RunAnalysis) -> Result<()> {
    let mut p = Page::new(&format!("{} run {} ({})", m.workload, m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.h2("Summary");
    p.kv(&st.summary_rows());
    page_footer(&mut p, m, &["manifest.json", "config.json", "schedule.jsonl", "events.jsonl", SUMMARY, "stderr.txt"]);
    write(dir, "report.html", &p.finish())
}

/// Writes `text` to `dir/name`.
pub fn write(dir: &Path, name: &str, text: &str) -> Result<()> {
    let p = dir.join(name);
    std::fs::write(&p, text).map_err(|e| Error::io(&p, e))
}

/// `ok`, `failed` or `running` (a run that never ended).
pub fn status_word(m: &Manifest) -> &'static str {
    match m.status {
        Status::Ok if !m.interrupted => "ok",
        Status::Ok => "interrupted",
        Status::Degraded if !m.interrupted => "degraded",
        Status::Degraded => "interrupted",
        Status::Failed => "failed",
        Status::Running => "running",
    }
}

/// A run's status for a table cell: `ok`, `interrupted`, `running or abandoned`, or
/// `degraded: ...` / `failed: ...` with the reason.
pub fn status_text(m: &Manifest) -> String {
    match (m.status, m.interrupted) {
        (_, true) => "interrupted".into(),
        (Status::Ok, _) => "ok".into(),
        (Status::Degraded, _) => {
            let r = m.reason.as_deref().unwrap_or_default();
            if r.starts_with("degraded") {
                r.to_string()
            } else {
                format!("degraded: {r}")
            }
        }
        (Status::Failed, _) => format!("failed: {}", m.reason.clone().unwrap_or_default()),
        (Status::Running, _) => "running or abandoned".into(),
    }
}

/// The status paragraph of a run page.
pub fn status_html(m: &Manifest) -> String {
    let status = match m.status {
        Status::Ok => "<span class=\"ok\">ok</span>".to_string(),
        Status::Degraded => {
            format!("<span class=\"failed\">degraded</span>: {}", html::escape(m.reason.as_deref().unwrap_or("")))
        }
        Status::Failed => {
            format!("<span class=\"failed\">failed</span>: {}", html::escape(m.reason.as_deref().unwrap_or("")))
        }
        Status::Running => "<span class=\"failed\">running or abandoned</span>".into(),
    };
    format!("<p>Status: {status}{}</p>", if m.interrupted { " (interrupted by Ctrl-C)" } else { "" })
}

/// Adds the config, provenance and file links that close every run page.
pub fn page_footer(p: &mut Page, m: &Manifest, files: &[&str]) {
    p.h2("Config");
    let cfg_rows: Vec<(String, String)> =
        m.config.as_object().map(|o| o.iter().map(|(k, v)| (k.clone(), v.to_string())).collect()).unwrap_or_default();
    p.kv(&cfg_rows);
    p.h2("Provenance");
    p.kv(&provenance_rows(m));
    p.h2("Files");
    p.raw(&format!("<p>{}</p>", files.iter().map(|f| link(f, f)).collect::<Vec<_>>().join(" &middot; ")));
}

fn no_events_page(m: &Manifest) -> String {
    let mut p = Page::new(&format!("{} run {} ({})", m.workload, m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p("No events were recorded for this run (events.jsonl is missing): there are no statistics.");
    page_footer(&mut p, m, &["manifest.json", "config.json", "schedule.jsonl", "stderr.txt"]);
    p.finish()
}

/// Provenance lines (machine, versions, commit, times).
pub fn provenance_rows(m: &Manifest) -> Vec<(String, String)> {
    vec![
        ("runtime".into(), format!("{} ({})", m.runtime, m.runtime_version)),
        ("lab version".into(), m.lab_version.clone()),
        ("seed".into(), m.seed.to_string()),
        ("machine".into(), m.machine.summary()),
        (
            "git commit".into(),
            match (&m.git_commit, m.git_dirty) {
                (Some(c), Some(true)) => format!("{c} (built with uncommitted changes)"),
                (Some(c), _) => c.clone(),
                (None, _) => "none (not a git checkout)".into(),
            },
        ),
        (
            "load average (1/5/15 min) at start / end".into(),
            format!("{} / {}", m.loadavg_start.as_deref().unwrap_or("-"), m.loadavg_end.as_deref().unwrap_or("-")),
        ),
        (
            "machine load over the run".into(),
            m.load.as_ref().map_or_else(|| "not recorded".into(), crate::machine::Load::summary),
        ),
        ("started".into(), m.started_at.clone()),
        ("ended".into(), m.ended_at.clone().unwrap_or_else(|| "-".into())),
        ("command".into(), m.command.join(" ")),
    ]
}

/// CSV text: a header line, then one line per row, written by the `csv` crate (a field is quoted
/// where it holds a comma, a quote or a line break).
pub fn csv_text(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> crate::error::Result<String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let bad = |e: csv::Error| crate::error::Error::other(format!("cannot write CSV: {e}"));
    w.write_record(header).map_err(bad)?;
    for r in rows {
        w.write_record(&r).map_err(bad)?;
    }
    let bytes = w.into_inner().map_err(|e| crate::error::Error::other(format!("cannot write CSV: {e}")))?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The run folders of a sweep or comparison folder (any folder holding a manifest, at most
/// three levels below `dir`, in path order), each with its manifest and its `summary.json`
/// (`null` when absent or unreadable); folders whose manifest cannot be read are left out.
/// Workloads' grid reports read their rows from it.
pub fn grid_runs(dir: &Path) -> Vec<(PathBuf, Manifest, serde_json::Value)> {
    let mut found = Vec::new();
    let mut todo = vec![(dir.to_path_buf(), 0)];
    // Bounded: at most 3 levels below the grid folder.
    while let Some((d, depth)) = todo.pop() {
        if depth > 0 && d.join(crate::manifest::FILE).exists() {
            found.push(d);
            continue;
        }
        if depth < 3 {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                if e.path().is_dir() {
                    todo.push((e.path(), depth + 1));
                }
            }
        }
    }
    found.sort();
    found
        .into_iter()
        .filter_map(|d| {
            let m = Manifest::read(&d).ok()?;
            let summary = std::fs::read_to_string(d.join(SUMMARY))
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(serde_json::Value::Null);
            Some((d, m, summary))
        })
        .collect()
}
