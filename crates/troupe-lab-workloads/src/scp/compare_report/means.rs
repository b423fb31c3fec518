//! The comparison's figures over repetitions (rule 5 of the parent module): each (point,
//! runtime) cell's mean throughput, percent of ceiling, percent of its own baseline and drop,
//! each a [`MeanCi`] over the cell's ok repetitions; `compare-mean.csv`; and the printed
//! table's lines with `mean ± half width` and N.

use super::{Loaded, Row};
use troupe_lab::error::Result;
use troupe_lab::report::grid::figure_cell as num;
use troupe_lab::stats::{show_mean_ci as show, MeanCi};

/// One (point, runtime) cell over its repetitions.
#[derive(Debug, Clone, Default)]
pub(super) struct Cell {
    /// Runs with a folder or planned.
    pub(super) runs: usize,
    /// Mean throughput of the ok runs.
    pub(super) mean: Option<MeanCi>,
    /// Percent of ceiling.
    pub(super) pct_ceiling: Option<MeanCi>,
    /// Percent of the runtime's own baseline.
    pub(super) pct_baseline: Option<MeanCi>,
    /// Drop against that baseline.
    pub(super) drop_pct: Option<MeanCi>,
    /// Kill-to-restart median of the runs, ms.
    pub(super) restart_p50: Option<MeanCi>,
}

impl Cell {
    /// Ok runs.
    pub(super) fn n(&self) -> usize {
        self.mean.map_or(0, |c| c.n)
    }

    /// Whether the fault point scored above the runtime's own baseline: its mean with one
    /// run, the low end of its 95% interval with several (an interval reaching down to 100%
    /// is no evidence that the baseline is low).
    pub(super) fn baseline_below(&self, first: &Row) -> bool {
        !first.cfg.is_baseline() && self.pct_baseline.is_some_and(|c| c.lo() > 100.0)
    }
}

/// The cell of `point` on `runtime`.
pub(super) fn cell(rows: &[Row], point: &str, runtime: &str) -> Cell {
    let group: Vec<&Row> = rows.iter().filter(|r| r.point == point && r.runtime == runtime).collect();
    let of = |f: fn(&Row) -> Option<f64>| {
        MeanCi::of(&group.iter().filter(|r| r.ok).filter_map(|r| f(r)).collect::<Vec<_>>())
    };
    Cell {
        runs: group.len(),
        mean: of(|r| r.mean),
        pct_ceiling: of(|r| r.pct_ceiling),
        pct_baseline: of(|r| r.pct_baseline),
        drop_pct: of(|r| r.drop_pct),
        restart_p50: of(|r| r.restart_ms.map(|x| x.0)),
    }
}

/// The (point, runtime) pairs in report order, with the first row of each.
pub(super) fn cells(l: &Loaded) -> Vec<(&Row, Cell)> {
    let mut out: Vec<(&Row, Cell)> = Vec::new();
    for p in &l.file.points {
        for rt in &l.file.runtimes {
            if let Some(first) = l.rows.iter().find(|r| &r.point == p && &r.runtime == rt) {
                out.push((first, cell(&l.rows, p, rt)));
            }
        }
    }
    out
}

/// `compare-mean.csv`: one row per (point, runtime) with means, interval half widths and N.
pub(super) fn means_csv(l: &Loaded) -> Result<String> {
    let header = [
        "point",
        "runtime",
        "pairs_per_supervisor",
        "pattern",
        "failure_rate",
        "n_ok",
        "n_runs",
        "mean",
        "mean_ci95_half",
        "mean_ci95_low",
        "mean_ci95_high",
        "pct_of_ceiling",
        "pct_of_baseline",
        "pct_of_baseline_ci95_half",
        "drop_pct",
        "baseline_below_fault_run",
        "restart_p50_ms",
        "restart_p50_ms_ci95_half",
    ];
    let lines = cells(l).into_iter().map(|(r, c)| {
        vec![
            r.point.clone(),
            r.runtime.clone(),
            r.cfg.pairs_per_supervisor().to_string(),
            r.cfg.pattern.as_str().into(),
            r.cfg.failure_rate.to_string(),
            c.n().to_string(),
            c.runs.to_string(),
            num(c.mean.map(|m| m.mean), 2),
            num(c.mean.and_then(|m| m.half_width), 2),
            num(c.mean.filter(|m| m.n > 1).map(|m| m.lo()), 2),
            num(c.mean.filter(|m| m.n > 1).map(|m| m.hi()), 2),
            num(c.pct_ceiling.map(|m| m.mean), 3),
            num(c.pct_baseline.map(|m| m.mean), 3),
            num(c.pct_baseline.and_then(|m| m.half_width), 3),
            num(c.drop_pct.map(|m| m.mean), 3),
            c.baseline_below(r).to_string(),
            num(c.restart_p50.map(|m| m.mean), 3),
            num(c.restart_p50.and_then(|m| m.half_width), 3),
        ]
    });
    troupe_lab::report::csv_text(&header, lines)
}

/// The printed side-by-side table with repetitions: one line per (point, runtime).
pub(super) fn table_lines(l: &Loaded) -> Vec<String> {
    let mut out = vec![format!(
        "{:<8} {:<11} {:>6}  {:<12} {:>20} {:>9} {:>16} {:>7}  status",
        "ratio", "pattern", "rate%", "runtime", "mean/s ± 95% CI", "%ceiling", "%own 0%", "N"
    )];
    for (r, c) in cells(l) {
        let failed: Vec<String> = l
            .rows
            .iter()
            .filter(|x| x.point == r.point && x.runtime == r.runtime && !x.ok)
            .map(|x| format!("rep {}: {}", x.rep, x.status.chars().take(50).collect::<String>()))
            .collect();
        let status = if failed.is_empty() { "ok".to_string() } else { failed.join("; ") };
        out.push(format!(
            "{:<8} {:<11} {:>6}  {:<12} {:>20} {:>9} {:>16} {:>7}  {status}",
            format!("1:{}", r.cfg.pairs_per_supervisor()),
            r.cfg.pattern.as_str(),
            r.cfg.failure_rate,
            r.runtime,
            show(c.mean, 1),
            c.pct_ceiling.map_or_else(|| "-".into(), |m| format!("{:.2}", m.mean)),
            show(c.pct_baseline, 1),
            format!("{}/{}", c.n(), c.runs)
        ));
    }
    out
}
