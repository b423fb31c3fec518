//! What a profile's figures took on this machine (study rule 7): read back from the run folders
//! a `troupe lab reproduce` left, so `--list` can set the model's estimate (rule 5) beside the
//! time measured here.
//!
//! Rules:
//! 1. A figure counts only when every run of its plan completed (`sweep::is_complete`) and each
//!    manifest has both stamps; a figure half run, or from another grid, is left out.
//! 2. A figure took the sum of its runs' own times (`ended_at - started_at`) plus the gaps
//!    between one run's end and the next one's start up to [`MAX_GAP`] (starting the program,
//!    writing the folder); a longer gap is an interruption (the command resumed later) and is
//!    left out.
//! 3. The ratio is measured / estimated over the counted figures together; applied to a whole
//!    profile it assumes the other figures err as the counted ones did, which the listing says.

use std::path::Path;
use std::time::Duration;

use super::{LoadedStudy, Plan};
use crate::machine::parse_rfc3339;
use crate::manifest::Manifest;
use crate::registry::Registry;
use crate::report::grid::sweep_runs;
use crate::sweep;

/// The longest pause between two runs of one figure still counted as the lab's own work
/// (rule 2).
pub const MAX_GAP: Duration = Duration::from_secs(120);

/// The figures of one profile that ran to the end in a folder, and what they took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measured {
    /// Figures counted (rule 1).
    pub figures: usize,
    /// Their runs.
    pub runs: usize,
    /// What they took here (rule 2).
    pub took: Duration,
    /// What the model estimated for them (rule 5 of the study module).
    pub estimated: Duration,
}

impl Measured {
    /// Measured over estimated (rule 3).
    pub fn ratio(&self) -> f64 {
        self.took.as_secs_f64() / self.estimated.as_secs_f64().max(1e-9)
    }

    /// An estimate scaled by the measured ratio.
    pub fn scale(&self, estimate: Duration) -> Duration {
        Duration::from_secs_f64(estimate.as_secs_f64() * self.ratio())
    }
}

/// What the runnable figures of `study` under `profile` took in `profile_dir`
/// (`<out>/<profile>`); `None` when no figure there ran to the end.
pub fn measured(study: &LoadedStudy, registry: &Registry, profile_dir: &Path, profile: &str) -> Option<Measured> {
    let mut m = Measured { figures: 0, runs: 0, took: Duration::ZERO, estimated: Duration::ZERO };
    for fig in study.study.figures.iter().filter(|f| f.runnable()) {
        let Ok(plan) = study.plan(registry, fig, profile) else { continue };
        if let Some(took) = figure_took(&profile_dir.join(&fig.id), &plan) {
            m.figures += 1;
            m.runs += plan.runs();
            m.took += took;
            m.estimated += plan.estimate();
        }
    }
    (m.figures > 0).then_some(m)
}

/// One figure folder's time (rules 1-2), or `None` when it does not count.
fn figure_took(dir: &Path, plan: &Plan) -> Option<Duration> {
    let (_, runs) = sweep_runs(dir).ok()?;
    if runs.len() != plan.runs() || !runs.iter().all(|r| sweep::is_complete(&r.dir)) {
        return None;
    }
    let mut spans = runs
        .iter()
        .map(|r| {
            let m = Manifest::read(&r.dir).ok()?;
            let start = parse_rfc3339(&m.started_at)?;
            let end = parse_rfc3339(m.ended_at.as_deref()?)?;
            (end >= start).then_some((start, end))
        })
        .collect::<Option<Vec<(u64, u64)>>>()?;
    spans.sort_unstable();
    Some(took(&spans))
}

/// Rule 2 over runs sorted by start, as (start, end) in Unix ms.
fn took(spans: &[(u64, u64)]) -> Duration {
    let max_gap = MAX_GAP.as_millis() as u64;
    let own: u64 = spans.iter().map(|(s, e)| e - s).sum();
    let gaps: u64 = spans.windows(2).map(|w| w[1].0.saturating_sub(w[0].1)).filter(|&g| g <= max_gap).sum();
    Duration::from_millis(own + gaps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_takes_its_runs_and_the_short_gaps_between_them() {
        // 10 s + 2 s gap + 5 s; then a 10-minute pause (an interruption) and 3 s more.
        let spans = [(0, 10_000), (12_000, 17_000), (617_000, 620_000)];
        assert_eq!(took(&spans), Duration::from_secs(20));
        assert_eq!(took(&[]), Duration::ZERO);
    }

    #[test]
    fn the_ratio_scales_an_estimate() {
        let m = Measured { figures: 2, runs: 10, took: Duration::from_secs(60), estimated: Duration::from_secs(120) };
        assert!((m.ratio() - 0.5).abs() < 1e-9);
        assert_eq!(m.scale(Duration::from_secs(600)), Duration::from_secs(300));
    }
}
