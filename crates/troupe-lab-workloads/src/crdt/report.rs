//! The crdt run's outputs: `history.jsonl` (`troupe_lab::history` rule 2) and `report.html`
//! (the checker's rows and the replicas' final values).

use std::path::Path;

use super::analysis::CrdtAnalysis;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::{page_footer, status_html, write};
use troupe_lab::workload::RunAnalysis;

/// Writes the run's history and report.
pub(super) fn write_run_outputs(dir: &Path, m: &Manifest, a: &CrdtAnalysis) -> Result<()> {
    troupe_lab::history::write(dir, &a.ops)?;
    let mut p = Page::new(&format!("crdt run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "{} node processes with a replicator; {} clients for {} s at {}; nemesis: {}.",
        a.cfg.nodes,
        a.cfg.concurrency,
        a.cfg.duration_s,
        a.cfg.write_consistency,
        if a.cfg.nemesis.is_empty() { "none" } else { &a.cfg.nemesis }
    ));
    p.h2("Checker");
    p.kv(&a.summary_rows());
    p.h2("Final values");
    let rows: Vec<(String, String)> = a
        .finals
        .iter()
        .map(|f| {
            let v = match (f.counter, &f.set) {
                (Some(c), Some(s)) => format!("counter {c}, set of {} elements", s.len()),
                _ => "no answer".into(),
            };
            (format!("node-{}", f.node), v)
        })
        .collect();
    p.kv(&rows);
    page_footer(
        &mut p,
        m,
        &["manifest.json", "config.json", "events.jsonl", "history.jsonl", "summary.json", "stderr.txt"],
    );
    write(dir, "report.html", &p.finish())
}
