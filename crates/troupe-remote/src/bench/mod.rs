//! The distribution benchmarks as library functions, for `troupe lab micro --only <name>`:
//! [`remote_pingpong`], [`remote_latency`], [`contention`] and [`detection`]. Each starts the
//! far node as a separate OS process (a [`Launcher`]: the `troupe-node` binary, or
//! `troupe node` of the CLI), runs one unmeasured warm-up iteration and `reps` measured ones,
//! and returns rows in the micro-benchmark JSON line format (median over the reps).

mod child;
mod contention;
mod detection;
mod latency;
mod pingpong;

use std::path::PathBuf;

use serde::Serialize;

pub use child::ChildNode;
pub use contention::{contention, ContentionParams};
pub use detection::{detection, DetectionParams};
pub use latency::{remote_latency, LatencyParams};
pub use pingpong::{remote_pingpong, shape, PingPongParams};

use crate::error::Error;

/// One result line: `{"bench","runtime":"troupe","metric","value","unit","params"}`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    /// The benchmark's name (`remote-pingpong`, ...).
    pub bench: String,
    /// Always `troupe`.
    pub runtime: String,
    /// What was measured.
    pub metric: String,
    /// The median over the measured repetitions.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// The parameters of the run.
    pub params: serde_json::Value,
    /// The smallest repetition's value, when repetitions were merged ([`Row::merge`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest repetition's value, when repetitions were merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Every repetition's value in the order they ran, when repetitions were merged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
}

impl Row {
    pub(crate) fn new(bench: &str, metric: &str, value: f64, unit: &str, params: serde_json::Value) -> Self {
        Row::of("troupe", bench, metric, value, unit, params)
    }

    /// A row of `runtime` with no repetitions merged into it.
    #[must_use]
    pub fn of(runtime: &str, bench: &str, metric: &str, value: f64, unit: &str, params: serde_json::Value) -> Self {
        Row {
            bench: bench.into(),
            runtime: runtime.into(),
            metric: metric.into(),
            value,
            unit: unit.into(),
            params,
            min: None,
            max: None,
            samples: Vec::new(),
        }
    }

    /// Merges the rows of several runs of one benchmark on one runtime (each a run with
    /// `reps=1`, in the order they ran) into one row per metric and variant (rows whose params
    /// differ only in `reps`): the median as `value`, with `min`, `max` and `samples`, and
    /// `params.reps` = the number of runs.
    #[must_use]
    pub fn merge(runs: &[Vec<Row>]) -> Vec<Row> {
        let same = |a: &Row, b: &Row| {
            let strip = |r: &Row| {
                let mut p = r.params.clone();
                if let Some(o) = p.as_object_mut() {
                    o.remove("reps");
                }
                p
            };
            a.metric == b.metric && strip(a) == strip(b)
        };
        let Some(first) = runs.first() else { return Vec::new() };
        first
            .iter()
            .map(|head| {
                let samples: Vec<f64> =
                    runs.iter().filter_map(|run| run.iter().find(|r| same(r, head))).map(|r| r.value).collect();
                let mut r = head.clone();
                if let Some(o) = r.params.as_object_mut() {
                    o.insert("reps".into(), samples.len().into());
                }
                r.value = median(samples.clone());
                r.min = Some(samples.iter().copied().fold(f64::NAN, f64::min));
                r.max = Some(samples.iter().copied().fold(f64::NAN, f64::max));
                r.samples = samples;
                r
            })
            .collect()
    }

    /// The row as one JSON line.
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// How to start the far node: `program [args...] --config FILE`.
#[derive(Clone, Debug)]
pub struct Launcher {
    /// The executable.
    pub program: PathBuf,
    /// Arguments before `--config FILE` (e.g. `["node"]` for the `troupe` CLI).
    pub args: Vec<String>,
}

impl Launcher {
    /// `troupe-node` from the directory of the running executable (or its parent, for test
    /// and bench binaries under `deps/`), or `TROUPE_NODE_BIN` when set.
    pub fn troupe_node() -> Result<Launcher, Error> {
        if let Ok(p) = std::env::var("TROUPE_NODE_BIN") {
            return Ok(Launcher { program: p.into(), args: vec![] });
        }
        let exe = std::env::current_exe().map_err(|e| Error::io("cannot find the running executable", e))?;
        let mut dir = exe.parent().map(PathBuf::from);
        for _ in 0..2 {
            let Some(d) = dir else { break };
            let cand = d.join("troupe-node");
            if cand.is_file() {
                return Ok(Launcher { program: cand, args: vec![] });
            }
            dir = d.parent().map(PathBuf::from);
        }
        Err(Error::config(
            "troupe-node not found next to this executable; build it with \
             `cargo build --release -p troupe-remote --bin troupe-node` or set TROUPE_NODE_BIN",
        ))
    }

    /// Runs `program args... --config FILE`.
    #[must_use]
    pub fn command(program: impl Into<PathBuf>, args: &[&str]) -> Launcher {
        Launcher { program: program.into(), args: args.iter().map(|s| (*s).to_owned()).collect() }
    }
}

/// The median of `v` ([`troupe::stats::median`]: the one quantile module of the project).
pub fn median(v: Vec<f64>) -> f64 {
    troupe::stats::median(&v)
}

/// The `q` quantile (0..=1) of sorted samples, interpolated ([`troupe::stats::quantile_sorted`]).
pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    troupe::stats::quantile_sorted(sorted, q)
}

pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, Error> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("cannot start a tokio runtime", e))
}

pub(crate) const SECRET: &str = "troupe-bench";
