//! The SCP sweep report's means over repetitions (sweep rule 6): one row per (runtime, point)
//! with the mean throughput, percent of ceiling and drop against the ratio's baseline, each
//! with its 95% confidence interval and N, as `sweep-mean.csv` and a table on the page. Only
//! written when the sweep was run with `--reps N`, N > 1.

use super::super::config::ScpConfig;
use super::Row;
use troupe_lab::error::Result;
use troupe_lab::report::grid::figure_cell as num;
use troupe_lab::report::html::Page;
use troupe_lab::stats::{show_mean_ci as show, MeanCi};

/// One point of the grid on one runtime, over its repetitions.
#[derive(Debug, Clone)]
pub(super) struct MeanRow {
    runtime: String,
    point: String,
    cfg: ScpConfig,
    /// Repetitions with a folder (run or failed).
    planned: usize,
    mean: Option<MeanCi>,
    pct_ceiling: Option<MeanCi>,
    drop_pct: Option<MeanCi>,
}

/// Groups the runs by (runtime, point), in first-seen order; only ok runs count.
pub(super) fn mean_rows(rows: &[Row]) -> Vec<MeanRow> {
    let mut keys: Vec<(&str, &str)> = Vec::new();
    for r in rows.iter().filter(|r| r.cfg.is_some()) {
        if !keys.contains(&(r.runtime.as_str(), r.point.as_str())) {
            keys.push((r.runtime.as_str(), r.point.as_str()));
        }
    }
    keys.into_iter()
        .filter_map(|(rt, point)| {
            let group: Vec<&Row> = rows.iter().filter(|r| r.runtime == rt && r.point == point).collect();
            let cfg = group.iter().find_map(|r| r.cfg.clone())?;
            let of = |f: fn(&Row) -> Option<f64>| MeanCi::of(&group.iter().filter_map(|r| f(r)).collect::<Vec<_>>());
            Some(MeanRow {
                runtime: rt.to_string(),
                point: point.to_string(),
                cfg,
                planned: group.len(),
                mean: of(|r| r.mean),
                pct_ceiling: of(|r| r.pct_ceiling),
                drop_pct: of(|r| r.drop_pct),
            })
        })
        .collect()
}

/// `sweep-mean.csv`: per (runtime, point) the mean, the interval's half width and ends, and N.
pub(super) fn means_csv(rows: &[MeanRow]) -> Result<String> {
    let header = [
        "point",
        "runtime",
        "pairs",
        "supervisors",
        "pairs_per_supervisor",
        "delay_ms",
        "pattern",
        "failure_rate",
        "n_ok",
        "n_runs",
        "mean",
        "mean_ci95_half",
        "mean_ci95_low",
        "mean_ci95_high",
        "pct_of_ceiling",
        "drop_pct",
        "drop_pct_ci95_half",
    ];
    let lines = rows.iter().map(|m| {
        let c = &m.cfg;
        vec![
            m.point.clone(),
            m.runtime.clone(),
            c.pairs.to_string(),
            c.supervisors.to_string(),
            c.pairs_per_supervisor().to_string(),
            c.delay_ms.to_string(),
            c.pattern.as_str().into(),
            c.failure_rate.to_string(),
            m.mean.map_or(0, |c| c.n).to_string(),
            m.planned.to_string(),
            num(m.mean.map(|c| c.mean), 2),
            num(m.mean.and_then(|c| c.half_width), 2),
            num(m.mean.filter(|c| c.n > 1).map(|c| c.lo()), 2),
            num(m.mean.filter(|c| c.n > 1).map(|c| c.hi()), 2),
            num(m.pct_ceiling.map(|c| c.mean), 3),
            num(m.drop_pct.map(|c| c.mean), 3),
            num(m.drop_pct.and_then(|c| c.half_width), 3),
        ]
    });
    troupe_lab::report::csv_text(&header, lines)
}

/// The page's table of means, with what the intervals and the charts' boxes mean.
pub(super) fn means_table(page: &mut Page, rows: &[MeanRow], reps: u32) {
    page.h2(&format!("Means over {reps} repetitions"));
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|m| {
            let c = &m.cfg;
            vec![
                m.point.clone(),
                m.runtime.clone(),
                format!("1:{}", c.pairs_per_supervisor()),
                c.pattern.as_str().into(),
                c.failure_rate.to_string(),
                show(m.mean, 1),
                show(m.pct_ceiling, 2),
                show(m.drop_pct, 2),
                format!("{} of {}", m.mean.map_or(0, |c| c.n), m.planned),
            ]
        })
        .collect();
    page.table(
        &["point", "runtime", "ratio", "pattern", "rate %", "mean/s", "% ceiling", "drop vs 0% %", "N (ok of runs)"],
        &table,
    );
    page.p("Each figure is the mean over the point's ok repetitions ± the half width of its 95% confidence \
         interval (Student's t with N - 1 degrees of freedom); with N = 1 there is no interval. Every \
         repetition ran the same config and seed. In the charts below each point is such a mean; where \
         it has several runs, a box spans the 95% interval and whiskers the smallest to the largest run.");
}
