//! The energy of an interval from a run's samples, and the lab's `energy` events: for every
//! `work {rep, start_us, end_us}` event a program wrote, the lab appends
//! `energy {source, uj, runtime_s, samples, rep, cpu_s, share, peak_rss_bytes}` (events.md).
//!
//! Rules:
//! 1. A cumulative quantity (CPU ms, host busy ms, host µJ) at an instant is interpolated
//!    linearly between the samples either side of it; before the first sample it is the first
//!    sample's value, after the last the last's.
//! 2. `estimate`: µJ = the tree's CPU seconds over the interval x watts per core x 10^6.
//! 3. `rapl` and `perf` (host-wide): µJ = the host's µJ over the interval x share, share = the tree's CPU
//!    time / the host's busy CPU time over the interval, at most 1 (Scaphandre's rule).
//! 4. `samples` = samples taken inside the interval; `peak_rss_bytes` = the largest tree RSS
//!    among them (or the nearest reading's of a live tree when none falls inside).
//! 5. Rule 5 of [`super`]: when a sample records a counter error, every interval that ends
//!    after the last good sample before it fails with that error, as
//!    `energy {source, rep, uj: null, error}`.

use std::io::Write;
use std::path::Path;

use serde_json::json;

use super::sampler::{self, Sample};
use super::{MeterError, Source};
use crate::error::{Error, Result};

/// The energy of one interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalEnergy {
    /// The source.
    pub source: Source,
    /// Microjoules.
    pub uj: f64,
    /// Seconds.
    pub runtime_s: f64,
    /// Samples inside the interval.
    pub samples: usize,
    /// The tree's CPU seconds.
    pub cpu_s: f64,
    /// The tree's share of host busy time (1 for the estimate).
    pub share: f64,
    /// Peak tree RSS.
    pub peak_rss_bytes: u64,
}

/// Rule 1 for the quantity `f` of the samples at `t`.
pub fn value_at(samples: &[Sample], t: i64, f: impl Fn(&Sample) -> f64) -> f64 {
    let Some(first) = samples.first() else { return 0.0 };
    if t <= first.ts_us {
        return f(first);
    }
    for w in samples.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        if t <= b.ts_us {
            let span = (b.ts_us - a.ts_us) as f64;
            let frac = if span > 0.0 { (t - a.ts_us) as f64 / span } else { 1.0 };
            return f(a) + (f(b) - f(a)) * frac;
        }
    }
    samples.last().map(f).unwrap_or(0.0)
}

/// Rules 1-5: the energy over `[start_us, end_us]`.
///
/// ```
/// use troupe_lab::meter::{energy::energy_over, sampler::Sample, Source};
/// let s = |ts_us, cpu_ms| Sample { ts_us, cpu_ms, procs: 1, ..Sample::default() };
/// let e = energy_over(&[s(0, 0.0), s(1_000_000, 1000.0)], Source::Estimate, 0, 1_000_000, 4.0).unwrap();
/// assert!((e.uj - 4_000_000.0).abs() < 1e-6); // one CPU second at 4 W
/// ```
pub fn energy_over(
    samples: &[Sample],
    source: Source,
    start_us: i64,
    end_us: i64,
    watts_per_core: f64,
) -> std::result::Result<IntervalEnergy, MeterError> {
    let good_until = samples.iter().position(|s| s.error.is_some());
    if let Some(bad) = good_until {
        let last_good = if bad == 0 { i64::MIN } else { samples[bad - 1].ts_us };
        if end_us > last_good {
            let cause = samples[bad].error.clone().unwrap_or_default();
            return Err(MeterError::Counter { path: "(rapl)".into(), cause });
        }
    }
    let usable = &samples[..good_until.unwrap_or(samples.len())];
    let delta = |f: &dyn Fn(&Sample) -> f64| (value_at(usable, end_us, f) - value_at(usable, start_us, f)).max(0.0);
    let cpu_ms = delta(&|s: &Sample| s.cpu_ms);
    let inside: Vec<&Sample> = usable.iter().filter(|s| s.ts_us >= start_us && s.ts_us <= end_us).collect();
    let peak_rss_bytes = match inside.iter().map(|s| s.rss_bytes).max() {
        Some(m) => m,
        None => usable
            .iter()
            .filter(|s| !s.last && s.procs > 0)
            .min_by_key(|s| (s.ts_us - start_us).abs())
            .map(|s| s.rss_bytes)
            .unwrap_or(0),
    };
    let (uj, share) = match source {
        Source::Rapl | Source::Perf => {
            let host_uj = delta(&|s: &Sample| s.energy_uj.unwrap_or(0.0));
            let busy = delta(&|s: &Sample| s.host_busy_ms);
            let share = if busy > 0.0 { (cpu_ms / busy).min(1.0) } else { 0.0 };
            (host_uj * share, share)
        }
        Source::Estimate => (cpu_ms / 1000.0 * watts_per_core * 1e6, 1.0),
    };
    Ok(IntervalEnergy {
        source,
        uj,
        runtime_s: (end_us - start_us) as f64 / 1e6,
        samples: inside.len(),
        cpu_s: cpu_ms / 1000.0,
        share,
        peak_rss_bytes,
    })
}

/// Appends an `energy` event to `events` (a raw events file) for each `work` event in it,
/// computed from the run folder's `resources.jsonl` and `meter.json`; the number appended.
/// Does nothing when there is no `work` event.
pub fn append_energy_events(dir: &Path, events: &Path, run: &str, rt: &str) -> Result<usize> {
    let Ok(text) = std::fs::read_to_string(events) else { return Ok(0) };
    let works: Vec<serde_json::Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v.get("ev").and_then(|e| e.as_str()) == Some("work"))
        .collect();
    if works.is_empty() {
        return Ok(0);
    }
    let meter_path = dir.join(sampler::METER_FILE);
    let meter: serde_json::Value = std::fs::read_to_string(&meter_path)
        .map_err(|e| Error::io(&meter_path, e))
        .and_then(|t| serde_json::from_str(&t).map_err(|e| Error::malformed(&meter_path, e.to_string())))?;
    let source = match meter["source"].as_str() {
        Some("rapl") => Source::Rapl,
        Some("perf") => Source::Perf,
        _ => Source::Estimate,
    };
    let watts = meter["watts_per_core"].as_f64().unwrap_or(super::DEFAULT_WATTS_PER_CORE);
    let samples = sampler::read_samples(&dir.join(sampler::FILE))?;
    let mut out = String::new();
    for w in &works {
        let (rep, start, end) =
            (w["rep"].as_i64().unwrap_or(-1), w["start_us"].as_i64().unwrap_or(0), w["end_us"].as_i64().unwrap_or(0));
        let body = match energy_over(&samples, source, start, end, watts) {
            Ok(e) => json!({"source": source.name(), "rep": rep, "uj": e.uj, "runtime_s": e.runtime_s,
                "samples": e.samples, "cpu_s": e.cpu_s, "share": e.share, "peak_rss_bytes": e.peak_rss_bytes}),
            Err(err) => json!({"source": source.name(), "rep": rep, "uj": null, "error": err.to_string()}),
        };
        let mut line = json!({"ts_us": end, "run": run, "rt": rt, "node": "lab", "ev": "energy"});
        if let (Some(l), Some(b)) = (line.as_object_mut(), body.as_object()) {
            l.extend(b.clone());
        }
        out.push_str(&format!("{line}\n"));
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(events).map_err(|e| Error::io(events, e))?;
    f.write_all(out.as_bytes()).map_err(|e| Error::io(events, e))?;
    Ok(works.len())
}
