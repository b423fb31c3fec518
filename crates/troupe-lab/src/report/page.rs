//! The pieces of every report page: writing files, a run's status in words and HTML, the
//! provenance and file links that close a run page, CSV text, the run folders of a grid, and
//! the generic page of a run (the default of [`crate::workload::Reports::run_outputs`]).

use std::path::{Path, PathBuf};

use super::html::{self, link, Page};
use crate::analysis::RunAnalysis;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::manifest::{Manifest, Status};

/// The name of the per-run statistics file.
pub const SUMMARY: &str = "summary.json";

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

/// The page of a run that recorded no events.
pub fn no_events_page(m: &Manifest) -> String {
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
