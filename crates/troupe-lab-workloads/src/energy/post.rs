//! The energy rows (the seed's columns plus `runtime,meter`) and the seed's post-processing
//! (seed 002 §3, "Data processing").
//!
//! Rules:
//! 1. A row is one repetition: `Module` = the workload (`ping_pong`, ...), `Function` = the
//!    mode (`native`, `distributed`), `Parameter` = the program's arguments separated by
//!    spaces, `Runtime (s)`, `Samples`, `Average (uW)` = µJ / s, `Consumption (uJ)`,
//!    `Sampling interval (ns)`, `File` = `<run id>#<rep>`, then `runtime` and `meter`.
//! 2. Post-processing, per group of (runtime, module, function, parameter, meter), in order:
//!    drop rows whose runtime or energy is <= 0; drop rows whose energy lies outside
//!    [Q1 - 1.5 IQR, Q3 + 1.5 IQR] (quartiles interpolated linearly); keep the `keep` (10)
//!    rows closest to the group's median energy (ties: the earlier row); average every number.
//! 3. Meters are never mixed: the meter is part of the group.

use serde::{Deserialize, Serialize};

/// The CSV header (rule 1).
pub const HEADER: &[&str] = &[
    "Module",
    "Function",
    "Parameter",
    "Runtime (s)",
    "Samples",
    "Average (uW)",
    "Consumption (uJ)",
    "Sampling interval (ns)",
    "File",
    "runtime",
    "meter",
];

/// Rows kept per group (the seed's default).
pub const KEEP: usize = 10;

/// One repetition's row (rule 1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Workload.
    #[serde(rename = "Module")]
    pub module: String,
    /// Mode.
    #[serde(rename = "Function")]
    pub function: String,
    /// Program arguments.
    #[serde(rename = "Parameter")]
    pub parameter: String,
    /// Seconds.
    #[serde(rename = "Runtime (s)")]
    pub runtime_s: f64,
    /// Meter samples in the interval.
    #[serde(rename = "Samples")]
    pub samples: u64,
    /// Mean power, µW.
    #[serde(rename = "Average (uW)")]
    pub avg_uw: f64,
    /// Energy, µJ.
    #[serde(rename = "Consumption (uJ)")]
    pub uj: f64,
    /// Sampling interval, ns.
    #[serde(rename = "Sampling interval (ns)")]
    pub interval_ns: u64,
    /// `<run id>#<rep>`.
    #[serde(rename = "File")]
    pub file: String,
    /// Runtime name.
    pub runtime: String,
    /// `rapl` or `estimate`.
    pub meter: String,
}

impl Row {
    fn values(&self) -> Vec<String> {
        vec![
            self.module.clone(),
            self.function.clone(),
            self.parameter.clone(),
            self.runtime_s.to_string(),
            self.samples.to_string(),
            self.avg_uw.to_string(),
            self.uj.to_string(),
            self.interval_ns.to_string(),
            self.file.clone(),
            self.runtime.clone(),
            self.meter.clone(),
        ]
    }
}

/// The rows as CSV text.
pub fn csv(rows: &[Row]) -> troupe_lab::error::Result<String> {
    troupe_lab::report::csv_text(HEADER, rows.iter().map(Row::values))
}

/// Reads an `energy.csv`.
pub fn read_csv(path: &std::path::Path) -> troupe_lab::error::Result<Vec<Row>> {
    let mut r = ::csv::Reader::from_path(path).map_err(|e| troupe_lab::error::Error::malformed(path, e.to_string()))?;
    r.deserialize().map(|row| row.map_err(|e| troupe_lab::error::Error::malformed(path, e.to_string()))).collect()
}

/// One group's averages (rule 2).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Averaged {
    /// Runtime name.
    pub runtime: String,
    /// Workload.
    pub module: String,
    /// Mode.
    pub function: String,
    /// Program arguments.
    pub parameter: String,
    /// Meter source.
    pub meter: String,
    /// Rows in the group before filtering.
    pub rows_in: usize,
    /// Rows averaged.
    pub n: usize,
    /// Mean seconds.
    pub runtime_s: f64,
    /// Mean samples.
    pub samples: f64,
    /// Mean power, µW.
    pub avg_uw: f64,
    /// Mean energy, µJ.
    pub uj: f64,
}

/// The `q` quantile (0..=1) of sorted values, interpolated linearly (the lab's one quantile).
pub use troupe_lab::stats::quantile_sorted as quantile;

/// Rule 2 on one group's rows: the rows kept.
pub fn filter_group(rows: &[Row], keep: usize) -> Vec<Row> {
    let valid: Vec<&Row> = rows.iter().filter(|r| r.runtime_s > 0.0 && r.uj > 0.0).collect();
    let mut e: Vec<f64> = valid.iter().map(|r| r.uj).collect();
    e.sort_by(f64::total_cmp);
    let (q1, q3) = (quantile(&e, 0.25), quantile(&e, 0.75));
    let iqr = q3 - q1;
    let inliers: Vec<&Row> = valid.into_iter().filter(|r| r.uj >= q1 - 1.5 * iqr && r.uj <= q3 + 1.5 * iqr).collect();
    let mut e: Vec<f64> = inliers.iter().map(|r| r.uj).collect();
    e.sort_by(f64::total_cmp);
    let median = quantile(&e, 0.5);
    let mut idx: Vec<usize> = (0..inliers.len()).collect();
    idx.sort_by(|&a, &b| (inliers[a].uj - median).abs().total_cmp(&(inliers[b].uj - median).abs()).then(a.cmp(&b)));
    idx.truncate(keep);
    idx.sort_unstable();
    idx.into_iter().map(|i| inliers[i].clone()).collect()
}

/// Rules 2-3 over every group, in the order groups first appear.
pub fn postprocess(rows: &[Row], keep: usize) -> Vec<Averaged> {
    let key = |r: &Row| (r.runtime.clone(), r.module.clone(), r.function.clone(), r.parameter.clone(), r.meter.clone());
    let mut keys = Vec::new();
    for r in rows {
        let k = key(r);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .filter_map(|k| {
            let group: Vec<Row> = rows.iter().filter(|r| key(r) == k).cloned().collect();
            let kept = filter_group(&group, keep);
            if kept.is_empty() {
                return None;
            }
            let n = kept.len() as f64;
            let mean = |f: fn(&Row) -> f64| kept.iter().map(f).sum::<f64>() / n;
            Some(Averaged {
                runtime: k.0,
                module: k.1,
                function: k.2,
                parameter: k.3,
                meter: k.4,
                rows_in: group.len(),
                n: kept.len(),
                runtime_s: mean(|r| r.runtime_s),
                samples: mean(|r| r.samples as f64),
                avg_uw: mean(|r| r.avg_uw),
                uj: mean(|r| r.uj),
            })
        })
        .collect()
}
