//! The cluster run's outputs: `history.jsonl` (`troupe_lab::history` rule 2) and `report.html`
//! (the checker's rows).

use std::path::Path;

use super::analysis::ClusterAnalysis;
use troupe_lab::error::Result;
use troupe_lab::manifest::Manifest;
use troupe_lab::report::html::Page;
use troupe_lab::report::{page_footer, status_html, write};
use troupe_lab::workload::RunAnalysis;

/// Writes the run's history and report.
pub(super) fn write_run_outputs(dir: &Path, m: &Manifest, a: &ClusterAnalysis) -> Result<()> {
    troupe_lab::history::write(dir, &a.ops)?;
    let mut p = Page::new(&format!("cluster run {} ({})", m.run_id, m.runtime));
    p.raw(&status_html(m));
    p.p(&format!(
        "{} troupe-cluster node processes (fast failure detector, downing {}); tables polled every {} ms for {} s; \
         nemesis: {}.",
        a.cfg.nodes,
        a.cfg.downing,
        a.cfg.poll_ms,
        a.cfg.duration_s,
        if a.cfg.nemesis.is_empty() { "none" } else { &a.cfg.nemesis }
    ));
    p.h2("Checker");
    p.kv(&a.summary_rows());
    page_footer(
        &mut p,
        m,
        &["manifest.json", "config.json", "events.jsonl", "history.jsonl", "summary.json", "stderr.txt"],
    );
    write(dir, "report.html", &p.finish())
}
