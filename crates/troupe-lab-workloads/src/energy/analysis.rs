//! The statistics of one energy run, from its events alone: each repetition's `work` event (the
//! program's interval and result) joined with the lab's `energy` event for it.
//!
//! Rules:
//! 1. A run is complete when it has `run_started`, a `work` event for every repetition whose
//!    result is the expected one (clients x msgs pongs, or pi(range) checked by a sieve), an
//!    `energy` event for each without an error and with energy above 0 µJ (a meter that read
//!    nothing fails the run; it never becomes a 0 J row that post-processing drops unseen),
//!    and `run_finished` with no errors.
//! 2. Every figure names its meter source; an estimate says `estimate` in the summary line.
//! 3. `summary.json`: `energy_uj` (mean per repetition), `runtime_s`, `uj_per_round_trip` (ping
//!    workloads), `cpu_s`, `peak_rss_bytes`, `meter`, `estimate`, and the seed's post-processed
//!    means (`post`).

use serde_json::{json, Value};

use super::config::EnergyConfig;
use super::post::{self, Row};
use troupe_lab::config::Config;
use troupe_lab::events::Event;
use troupe_lab::workload::RunAnalysis;

/// One repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct Rep {
    /// Its index.
    pub rep: i64,
    /// Seconds.
    pub runtime_s: f64,
    /// What the program reported.
    pub result: i64,
    /// Energy, µJ (none when the meter failed).
    pub uj: Option<f64>,
    /// Meter samples inside the interval.
    pub samples: u64,
    /// The process tree's CPU seconds over the interval.
    pub cpu_s: f64,
    /// The tree's largest RSS in the interval.
    pub peak_rss_bytes: u64,
    /// The meter's error, when it failed.
    pub error: Option<String>,
}

/// The statistics of an energy run.
#[derive(Debug, Clone)]
pub struct EnergyStats {
    /// The typed config.
    pub cfg: EnergyConfig,
    /// The runtime (`rt` of the events).
    pub runtime: String,
    /// The run id.
    pub run_id: String,
    /// The meter source (`rapl`, `estimate`; `none` without energy events).
    pub meter: String,
    /// Sampling interval, ms.
    pub sample_ms: u64,
    /// The repetitions in order.
    pub reps: Vec<Rep>,
    problems: Vec<String>,
}

impl EnergyStats {
    /// Reads the events (rule 1).
    pub fn compute(c: &Config, events: &[Event]) -> EnergyStats {
        let cfg = EnergyConfig::from_config(c);
        let mut problems = Vec::new();
        let started = events.iter().find(|e| e.ev == "run_started");
        if started.is_none() {
            problems.push("no run_started event".to_string());
        }
        match events.iter().find(|e| e.ev == "run_finished" && e.node != "lab") {
            None => problems.push("no run_finished event (the program did not end cleanly)".into()),
            Some(f) if f.int("errors") > 0 => {
                let nodes = f.raw.get("failed_nodes").map(|v| v.to_string()).unwrap_or_default();
                problems.push(format!("the program reported {} error(s) {nodes}", f.int("errors")));
            }
            _ => {}
        }
        let expected = cfg.expected_result() as i64;
        let mut reps = Vec::new();
        let mut meter = "none".to_string();
        for r in 0..cfg.reps as i64 {
            let Some(w) = events.iter().find(|e| e.ev == "work" && e.int("rep") == r) else {
                problems.push(format!("no work event for repetition {r}"));
                continue;
            };
            let result = w.int("result");
            if result != expected {
                problems.push(format!("repetition {r}: result {result}, expected {expected}"));
            }
            let runtime_s = (w.int("end_us") - w.int("start_us")) as f64 / 1e6;
            let en = events.iter().find(|e| e.ev == "energy" && e.int("rep") == r);
            let mut rep =
                Rep { rep: r, runtime_s, result, uj: None, samples: 0, cpu_s: 0.0, peak_rss_bytes: 0, error: None };
            match en {
                None => {
                    problems.push(format!("no energy for repetition {r} (was the lab's meter running?)"));
                    rep.error = Some("no energy event".into());
                }
                Some(e) => {
                    meter = e.str("source").to_string();
                    let f = |k: &str| e.raw.get(k).and_then(Value::as_f64);
                    rep.uj = f("uj");
                    rep.samples = f("samples").unwrap_or(0.0) as u64;
                    rep.cpu_s = f("cpu_s").unwrap_or(0.0);
                    rep.peak_rss_bytes = f("peak_rss_bytes").unwrap_or(0.0) as u64;
                    if let Some(err) = e.raw.get("error").and_then(Value::as_str) {
                        problems.push(format!("repetition {r}: meter failed: {err}"));
                        rep.error = Some(err.to_string());
                        rep.uj = None;
                    } else if rep.uj.is_none_or(|uj| uj <= 0.0) {
                        // Never a silent 0 J: post-processing would drop the row unseen.
                        problems.push(format!(
                            "repetition {r}: the meter read {} ({} samples inside it): not a measurement",
                            rep.uj.map_or_else(|| "no energy".to_string(), |uj| format!("{uj} uJ")),
                            rep.samples
                        ));
                        rep.error = Some("no energy measured".into());
                        rep.uj = None;
                    }
                }
            }
            reps.push(rep);
        }
        EnergyStats {
            cfg,
            runtime: started.map(|e| e.rt.clone()).unwrap_or_default(),
            run_id: started.map(|e| e.str("run").to_string()).unwrap_or_default(),
            meter,
            sample_ms: c.int("sample_ms").max(0) as u64,
            reps,
            problems,
        }
    }

    /// The rows of `energy.csv`: measured repetitions only.
    pub fn rows(&self) -> Vec<Row> {
        self.reps
            .iter()
            .filter_map(|r| {
                let uj = r.uj?;
                Some(Row {
                    module: self.cfg.workload.clone(),
                    function: if self.cfg.distributed { "distributed" } else { "native" }.into(),
                    parameter: self.cfg.parameter(),
                    runtime_s: r.runtime_s,
                    samples: r.samples,
                    avg_uw: if r.runtime_s > 0.0 { uj / r.runtime_s } else { 0.0 },
                    uj,
                    interval_ns: self.sample_ms * 1_000_000,
                    file: format!("{}#{}", self.run_id, r.rep),
                    runtime: self.runtime.clone(),
                    meter: self.meter.clone(),
                })
            })
            .collect()
    }

    fn mean(&self, f: impl Fn(&Rep) -> Option<f64>) -> Option<f64> {
        troupe_lab::stats::mean(self.reps.iter().map(f))
    }

    /// Mean µJ per repetition.
    pub fn energy_uj(&self) -> Option<f64> {
        self.mean(|r| r.uj)
    }

    /// Mean seconds per repetition.
    pub fn runtime_s(&self) -> Option<f64> {
        self.mean(|r| Some(r.runtime_s))
    }

    /// µJ per round trip (ping workloads).
    pub fn uj_per_round_trip(&self) -> Option<f64> {
        (self.cfg.is_ping()).then(|| self.energy_uj().map(|e| e / self.cfg.round_trips() as f64)).flatten()
    }

    fn meter_label(&self) -> String {
        if self.meter == "estimate" {
            "estimate (CPU time x watts per core; not a measurement)".into()
        } else {
            self.meter.clone()
        }
    }
}

impl RunAnalysis for EnergyStats {
    fn completeness_problem(&self, _: &Config) -> Option<String> {
        (!self.problems.is_empty()).then(|| self.problems.join("; "))
    }

    fn summary_rows(&self) -> Vec<(String, String)> {
        let f = |v: Option<f64>, unit: &str| v.map(|x| format!("{x:.3} {unit}")).unwrap_or_else(|| "-".into());
        let mut rows = vec![
            ("program".to_string(), format!("{} {} ({})", self.cfg.workload, self.cfg.parameter(), self.mode())),
            ("meter".to_string(), self.meter_label()),
            ("energy per repetition".to_string(), f(self.energy_uj().map(|u| u / 1e6), "J")),
            ("time per repetition".to_string(), f(self.runtime_s(), "s")),
            ("CPU per repetition".to_string(), f(self.mean(|r| Some(r.cpu_s)), "s")),
            (
                "peak RSS".to_string(),
                format!("{:.1} MiB", self.reps.iter().map(|r| r.peak_rss_bytes).max().unwrap_or(0) as f64 / 1048576.0),
            ),
            ("repetitions measured".to_string(), format!("{} of {}", self.rows().len(), self.cfg.reps)),
        ];
        if let Some(u) = self.uj_per_round_trip() {
            rows.insert(3, ("energy per round trip".into(), format!("{u:.4} uJ")));
        }
        rows
    }

    fn summary_json(&self) -> Value {
        let post: Vec<Value> = post::postprocess(&self.rows(), post::KEEP)
            .iter()
            .map(|a| serde_json::to_value(a).unwrap_or(Value::Null))
            .collect();
        json!({
            "program": self.cfg.workload,
            "mode": self.mode(),
            "parameter": self.cfg.parameter(),
            "meter": self.meter,
            "estimate": self.meter == "estimate",
            "reps": self.cfg.reps,
            "reps_measured": self.rows().len(),
            "energy_uj": self.energy_uj(),
            "runtime_s": self.runtime_s(),
            "uj_per_round_trip": self.uj_per_round_trip(),
            "round_trips": if self.cfg.is_ping() { Some(self.cfg.round_trips()) } else { None },
            "cpu_s": self.mean(|r| Some(r.cpu_s)),
            "peak_rss_bytes": self.reps.iter().map(|r| r.peak_rss_bytes).max(),
            "results": self.reps.iter().map(|r| r.result).collect::<Vec<_>>(),
            "post": post,
        })
    }

    fn headline(&self) -> String {
        match (self.energy_uj(), self.runtime_s()) {
            (Some(e), Some(t)) => format!("{:.3} J in {t:.3} s per repetition ({})", e / 1e6, self.meter),
            _ => format!("no energy figure ({})", self.meter),
        }
    }
}

impl EnergyStats {
    /// `native` or `distributed`.
    pub fn mode(&self) -> &'static str {
        if self.cfg.distributed {
            "distributed"
        } else {
            "native"
        }
    }
}
