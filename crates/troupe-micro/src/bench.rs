//! The benchmark catalogue shared by every runtime: names, Savina default parameters, the
//! JSON line every result is printed as, and the small pieces of work several runtimes share
//! (the per-message computation of `fjthrput`, the chameneos colour rule, the seeded generator
//! of `big`). Keeping these in one place is what makes the runtimes' numbers comparable.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Serialize;

use crate::{Error, ErrorKind};

/// One micro-benchmark of the peer-program contract (workloads.md §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Bench {
    /// Two actors exchange `n` ping/pong round trips.
    PingPong,
    /// A producer sends `n` increments to a counter, then asks for the total.
    Count,
    /// `n` messages to each of `actors` actors, round-robin, a tiny computation each.
    FjThrput,
    /// Create `n` actors, one message each, each replies and stops.
    FjCreate,
    /// A token passed `n` hops around a ring of `actors` actors.
    ThreadRing,
    /// Savina chameneos: a mall pairs `chameneos` creatures for `n` meetings.
    Chameneos,
    /// `actors` actors each send `n` pings to random peers; every ping gets a pong.
    Big,
    /// Naive recursive fib(`n`) with one actor per computation with k > 1.
    Fib,
    /// A `width`-ary tree of depth `depth`; leaves return their index, parents sum.
    Skynet,
    /// Spawn `n` idle actors, measure resident memory per actor and spawn time.
    Memory,
    /// `n` actors each arm one timer (Troupe's `send_after`, and tokio's sleep for reference):
    /// arm rate and lateness. Troupe only (`crate::timers`).
    Timers,
}

impl Bench {
    /// Every benchmark: the contract's ten in its order, then `timers`, which is Troupe's own
    /// (no peer program implements it; see [`Bench::runs_on`]).
    pub const ALL: [Bench; 11] = [
        Bench::PingPong,
        Bench::Count,
        Bench::FjThrput,
        Bench::FjCreate,
        Bench::ThreadRing,
        Bench::Chameneos,
        Bench::Big,
        Bench::Fib,
        Bench::Skynet,
        Bench::Memory,
        Bench::Timers,
    ];

    /// The contract's name of the benchmark, e.g. `pingpong`.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Bench::PingPong => "pingpong",
            Bench::Count => "count",
            Bench::FjThrput => "fjthrput",
            Bench::FjCreate => "fjcreate",
            Bench::ThreadRing => "threadring",
            Bench::Chameneos => "chameneos",
            Bench::Big => "big",
            Bench::Fib => "fib",
            Bench::Skynet => "skynet",
            Bench::Memory => "memory",
            Bench::Timers => "timers",
        }
    }

    /// Looks a benchmark up by its contract name.
    pub fn from_name(name: &str) -> Result<Bench, Error> {
        Bench::ALL.into_iter().find(|b| b.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Bench::ALL.iter().map(|b| b.name()).collect();
            Error::new(
                ErrorKind::Usage,
                format!(
                    "unknown micro-benchmark `{name}`{}; known: {}",
                    crate::did_you_mean(name, &known),
                    known.join(", ")
                ),
            )
        })
    }

    /// The Savina default parameters of the benchmark, by the contract's key names.
    #[must_use]
    pub fn defaults(self) -> &'static [(&'static str, u64)] {
        match self {
            Bench::PingPong => &[("n", 40_000)],
            Bench::Count => &[("n", 1_000_000)],
            Bench::FjThrput => &[("n", 10_000), ("actors", 60)],
            Bench::FjCreate => &[("n", 40_000)],
            Bench::ThreadRing => &[("actors", 100), ("n", 100_000)],
            Bench::Chameneos => &[("chameneos", 100), ("n", 200_000)],
            Bench::Big => &[("n", 20_000), ("actors", 120)],
            Bench::Fib => &[("n", 25)],
            Bench::Skynet => &[("depth", 6), ("width", 10)],
            Bench::Memory => &[("n", 1_000_000)],
            Bench::Timers => &[("n", 50_000)],
        }
    }

    /// Whether `runtime` implements this benchmark: every runtime implements the contract's ten;
    /// `timers` measures Troupe's own timer and runs on `troupe` only (the driver reports the
    /// others as "not implemented for timers", with no row).
    #[must_use]
    pub fn runs_on(self, runtime: &str) -> bool {
        self != Bench::Timers || runtime == "troupe"
    }

    /// Resolves the benchmark's parameters: defaults, replaced by any override whose key the
    /// benchmark uses (other keys are ignored, so one override map serves every benchmark). A
    /// key scoped as `<bench>.<key>` (e.g. `fib.n`) applies to that benchmark only and wins
    /// over the plain key.
    pub fn params(self, overrides: &BTreeMap<String, u64>) -> Result<Params, Error> {
        let mut values = BTreeMap::new();
        for &(key, default) in self.defaults() {
            let scoped = overrides.get(&format!("{}.{key}", self.name()));
            let v = scoped.or_else(|| overrides.get(key)).copied().unwrap_or(default);
            values.insert(key, v);
        }
        let p = Params { bench: self, values };
        p.validate()?;
        Ok(p)
    }
}

impl fmt::Display for Bench {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The resolved parameters of one benchmark.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    bench: Bench,
    values: BTreeMap<&'static str, u64>,
}

impl Params {
    /// The value of `key`; panics on a key the benchmark does not have (a programming error).
    #[must_use]
    pub fn get(&self, key: &str) -> u64 {
        match self.values.get(key) {
            Some(v) => *v,
            None => panic!("benchmark {} has no parameter `{key}`", self.bench),
        }
    }

    /// `get` as a `usize`, for counts of actors and messages.
    #[must_use]
    pub fn count(&self, key: &str) -> usize {
        usize::try_from(self.get(key)).unwrap_or(usize::MAX)
    }

    /// The parameters as `key=value` arguments for a peer program.
    #[must_use]
    pub fn as_args(&self) -> Vec<String> {
        self.values.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// The parameters plus `reps`, as printed in a result line.
    #[must_use]
    pub fn with_reps(&self, reps: u32) -> BTreeMap<String, u64> {
        let mut m: BTreeMap<String, u64> = self.values.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
        m.insert("reps".into(), u64::from(reps));
        m
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |msg: String| Err(Error::new(ErrorKind::Usage, msg));
        let b = self.bench;
        for (k, v) in &self.values {
            if *v == 0 {
                return bad(format!("{b}: parameter {k} must be at least 1"));
            }
        }
        match b {
            Bench::ThreadRing if self.get("actors") < 2 => bad("threadring: actors must be at least 2".into()),
            Bench::Big if self.get("actors") < 2 => bad("big: actors must be at least 2".into()),
            Bench::Chameneos if self.get("chameneos") < 2 => bad("chameneos: chameneos must be at least 2".into()),
            Bench::Fib if !(2..=40).contains(&self.get("n")) => {
                bad("fib: n must be in 2..=40 (the root is an actor; above 40 is billions of actors)".into())
            }
            Bench::Skynet if self.get("width").checked_pow(self.get("depth") as u32).is_none_or(|l| l > 50_000_000) => {
                bad("skynet: width^depth must stay at most 50,000,000 leaves".into())
            }
            Bench::Timers if self.get("n") > crate::timers::MAX_N => {
                bad(format!("timers: n must be at most {} (one actor per timer)", crate::timers::MAX_N))
            }
            _ => Ok(()),
        }
    }
}

/// One result line of the contract:
/// `{"bench","runtime","metric","value","unit","params"}`, and, in the lines `troupe lab micro`
/// prints, what it measured over the repetitions: `min`, `max`, `samples` (every measured
/// repetition's value in the order they ran), `spread_pct` and `threads`. A peer program prints
/// the first six fields only; the driver adds the rest.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct Record {
    /// Benchmark name.
    pub bench: String,
    /// Runtime name.
    pub runtime: String,
    /// `time_ms`, `msgs_per_s`, `bytes_per_actor`, `spawn_ms`, or one of `timers`' (see
    /// `crate::timers`: `arm_per_s`, `late_p50_us`, ...).
    pub metric: String,
    /// The median over the measured repetitions.
    pub value: f64,
    /// `ms`, `msg/s`, `B`, `timer/s` or `us`.
    pub unit: String,
    /// The parameters the run used, `reps` included.
    pub params: BTreeMap<String, u64>,
    /// The smallest repetition's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    /// The largest repetition's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    /// Every measured repetition's value, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<f64>,
    /// `(max - min) / median` in percent; above [`SPREAD_FLAG_PCT`] the figure is flagged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread_pct: Option<f64>,
    /// The worker threads the runtime ran its actors on (see [`crate::threads`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// The core-to-core round trip in ns timed just before each repetition, in the order of
    /// `samples` (`null` where it could not be timed); empty when the run timed none
    /// ([`crate::MicroOptions::rep_probe`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub core_rtt_ns: Vec<Option<u32>>,
}

/// A spread (`(max - min) / median`) above this many percent flags a figure as unsteady.
pub const SPREAD_FLAG_PCT: f64 = 10.0;

impl Record {
    /// The record as one JSON line (no trailing newline).
    #[must_use]
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a record always serialises")
    }

    /// Whether a larger value is better for this metric (rates) or a smaller one (times, bytes).
    #[must_use]
    pub fn higher_is_better(metric: &str) -> bool {
        metric == "msgs_per_s" || metric.ends_with("arm_per_s")
    }

    /// Sets `value` to the median of `samples` and fills `min`, `max`, `samples` and
    /// `spread_pct` from them (`samples` in the order the repetitions ran).
    pub fn set_samples(&mut self, samples: Vec<f64>) {
        let s = Spread::of(&samples);
        // To 0.001 like the samples (ms to the microsecond; rates and bytes are whole): the mean
        // of two middle values would otherwise print as 3.903000000000001.
        self.value = round3(s.median);
        self.min = Some(s.min);
        self.max = Some(s.max);
        self.spread_pct = s.pct();
        self.samples = samples;
    }

    /// Whether the repetitions spread over [`SPREAD_FLAG_PCT`].
    #[must_use]
    pub fn unsteady(&self) -> bool {
        self.spread_pct.is_some_and(|p| p > SPREAD_FLAG_PCT)
    }
}

/// Min, median and max of a set of repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// The smallest value.
    pub min: f64,
    /// The median (mean of the two middle values for an even count).
    pub median: f64,
    /// The largest value.
    pub max: f64,
}

impl Spread {
    /// The spread of `samples` (NaN everywhere when there are none).
    #[must_use]
    pub fn of(samples: &[f64]) -> Spread {
        let min = samples.iter().copied().fold(f64::NAN, f64::min);
        let max = samples.iter().copied().fold(f64::NAN, f64::max);
        Spread { min, median: median(samples), max }
    }

    /// `(max - min) / |median|` in percent, rounded to 0.1; `None` for a zero or NaN median.
    #[must_use]
    pub fn pct(&self) -> Option<f64> {
        let m = self.median.abs();
        (m > 0.0 && m.is_finite()).then(|| ((self.max - self.min) / m * 1000.0).round() / 10.0)
    }
}

/// The number of messages a benchmark's rate is computed from, or `None` for time-only ones.
#[must_use]
pub fn messages(p: &Params) -> Option<f64> {
    let f = |k: &str| p.get(k) as f64;
    match p.bench {
        Bench::PingPong => Some(2.0 * f("n")),
        Bench::Count => Some(f("n")),
        Bench::FjThrput => Some(f("n") * f("actors")),
        Bench::ThreadRing => Some(f("n")),
        Bench::Chameneos => Some(f("n")),
        Bench::Big => Some(2.0 * f("n") * f("actors")),
        Bench::FjCreate | Bench::Fib | Bench::Skynet | Bench::Memory | Bench::Timers => None,
    }
}

/// The median of the samples (mean of the two middle ones for an even count; NaN when
/// empty): [`troupe::stats::median`], the one quantile module of the project.
#[must_use]
pub fn median(samples: &[f64]) -> f64 {
    troupe::stats::median(samples)
}

/// Turns the measured iteration times into the contract's result lines: `time_ms` and, for
/// benchmarks with a natural rate, `msgs_per_s` (each the median over the measured reps, with
/// min, max and every rep's value).
#[must_use]
pub fn records(runtime: &str, p: &Params, reps: u32, times: &[Duration]) -> Vec<Record> {
    let ms: Vec<f64> = times.iter().map(|d| round3(d.as_secs_f64() * 1e3)).collect();
    let params = p.with_reps(reps);
    let line = |metric: &str, unit: &str, samples: Vec<f64>| {
        let mut r = Record {
            bench: p.bench.name().into(),
            runtime: runtime.into(),
            metric: metric.into(),
            unit: unit.into(),
            params: params.clone(),
            ..Record::default()
        };
        r.set_samples(samples);
        r
    };
    let mut out = vec![line("time_ms", "ms", ms)];
    if let Some(msgs) = messages(p) {
        let rates: Vec<f64> = times.iter().map(|d| (msgs / d.as_secs_f64().max(1e-9)).round()).collect();
        out.push(line("msgs_per_s", "msg/s", rates));
    }
    out
}

/// Merges one benchmark's result lines from several repetitions of one runtime (each a
/// `Vec<Record>` from one run with `reps=1`, in the order they ran) into one line per metric:
/// the median of the repetitions' values, with min, max, samples and spread, and
/// `params.reps` = the number of repetitions. A metric missing from a repetition is left out of
/// that repetition's samples.
#[must_use]
pub fn merge_reps(reps: &[Vec<Record>]) -> Vec<Record> {
    let Some(first) = reps.first() else { return Vec::new() };
    first
        .iter()
        .map(|head| {
            let lines: Vec<&Record> =
                reps.iter().filter_map(|rep| rep.iter().find(|r| r.metric == head.metric)).collect();
            let samples: Vec<f64> = lines.iter().map(|r| r.value).collect();
            // One probe per repetition, or none kept (they would not line up with the samples).
            let core_rtt_ns = if lines.iter().all(|r| r.core_rtt_ns.len() == 1) {
                lines.iter().map(|r| r.core_rtt_ns[0]).collect()
            } else {
                Vec::new()
            };
            let mut r = Record { samples: Vec::new(), core_rtt_ns, ..head.clone() };
            r.params.insert("reps".into(), samples.len() as u64);
            r.set_samples(samples);
            r
        })
        .collect()
}

fn round3(x: f64) -> f64 {
    (x * 1e3).round() / 1e3
}

/// A failed correctness check: the benchmark computed the wrong total.
pub fn wrong_total(bench: Bench, runtime: &str, what: &str, got: u64, want: u64) -> Error {
    Error::new(ErrorKind::Failed, format!("{runtime} {bench}: wrong {what}: got {got}, expected {want}"))
}

/// Checks a total, failing loudly on a mismatch.
pub fn check(bench: Bench, runtime: &str, what: &str, got: u64, want: u64) -> Result<(), Error> {
    if got == want {
        Ok(())
    } else {
        Err(wrong_total(bench, runtime, what, got, want))
    }
}

/// The per-message work of `fjthrput` (Savina's `performComputation`): one sine, squared.
/// Returns 1 so callers can count processed messages through it.
#[inline]
#[must_use]
pub fn fj_compute(theta: f64) -> u64 {
    let s = std::hint::black_box(theta).sin();
    let r = s * s;
    u64::from(std::hint::black_box(r) >= 0.0)
}

/// The three chameneos colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Colour {
    /// Blue.
    Blue,
    /// Red.
    Red,
    /// Yellow.
    Yellow,
}

impl Colour {
    /// The classic rule: two equal colours stay; two different ones both become the third.
    #[must_use]
    pub fn complement(self, other: Colour) -> Colour {
        use Colour::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Blue, Red) | (Red, Blue) => Yellow,
            (Blue, Yellow) | (Yellow, Blue) => Red,
            _ => Blue,
        }
    }

    /// The starting colour of creature `i` (cycling through the three).
    #[must_use]
    pub fn initial(i: usize) -> Colour {
        [Colour::Blue, Colour::Red, Colour::Yellow][i % 3]
    }
}

/// The seeded generator `big` picks its targets with (SplitMix64: small, fast, the same
/// sequence on every runtime).
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

/// The base seed of `big`; actor `i` uses `BIG_SEED + i`.
pub const BIG_SEED: u64 = 0x05EE_DB16;

impl SplitMix {
    /// A generator started from `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A random index in `0..n` other than `me` (`n` is at least 2).
    pub fn other(&mut self, me: usize, n: usize) -> usize {
        let r = (self.next_u64() % (n as u64 - 1)) as usize;
        if r >= me {
            r + 1
        } else {
            r
        }
    }
}

/// fib(k) computed directly, for the correctness check.
#[must_use]
pub fn fib_value(k: u64) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..k {
        (a, b) = (b, a + b);
    }
    a
}

/// The skynet total: the sum of the leaf indices 0..width^depth.
#[must_use]
pub fn skynet_value(depth: u64, width: u64) -> u64 {
    let leaves = width.pow(depth as u32);
    leaves * (leaves - 1) / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn totals_match_the_contract() {
        assert_eq!(fib_value(25), 75025);
        assert_eq!(skynet_value(6, 10), 499_999_500_000);
    }

    #[test]
    fn colour_rule_is_symmetric_and_closed() {
        use Colour::*;
        for a in [Blue, Red, Yellow] {
            for b in [Blue, Red, Yellow] {
                assert_eq!(a.complement(b), b.complement(a));
                if a != b {
                    assert!(a.complement(b) != a && a.complement(b) != b);
                }
            }
        }
    }

    #[test]
    fn a_wrong_total_is_a_failure_naming_runtime_and_bench() {
        assert!(check(Bench::Count, "kameo", "total", 5, 5).is_ok());
        let e = check(Bench::Count, "kameo", "total", 4, 5).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Failed);
        assert_eq!(e.message, "kameo count: wrong total: got 4, expected 5");
    }

    #[test]
    fn other_never_picks_self() {
        let mut r = SplitMix::new(1);
        for me in 0..5 {
            for _ in 0..1000 {
                let o = r.other(me, 5);
                assert!(o != me && o < 5);
            }
        }
    }

    #[test]
    fn overrides_apply_only_to_known_keys() {
        let mut o = BTreeMap::new();
        o.insert("n".to_string(), 7);
        o.insert("width".to_string(), 3);
        let p = Bench::PingPong.params(&o).unwrap();
        assert_eq!(p.get("n"), 7);
        assert_eq!(p.as_args(), vec!["n=7".to_string()]);
        assert!(Bench::ThreadRing.params(&BTreeMap::from([("actors".into(), 1)])).is_err());
        o.insert("fib.n".to_string(), 12);
        assert_eq!(Bench::Fib.params(&o).unwrap().get("n"), 12);
        assert_eq!(Bench::Count.params(&o).unwrap().get("n"), 7);
    }

    #[test]
    fn record_line_has_the_contract_field_order() {
        let p = Bench::PingPong.params(&BTreeMap::new()).unwrap();
        let r = records("actix", &p, 1, &[Duration::from_millis(10)]);
        assert_eq!(r.len(), 2);
        assert!(r[0].to_json().starts_with(r#"{"bench":"pingpong","runtime":"actix","metric":"time_ms","value":10.0,"unit":"ms","params":{"n":40000,"reps":1},"min":10.0,"max":10.0,"samples":[10.0],"spread_pct":0.0}"#), "{}", r[0].to_json());
        assert_eq!(r[1].value, 8_000_000.0);
        // A peer program's line (the first six fields) still parses.
        let peer: Record = serde_json::from_str(
            r#"{"bench":"fib","runtime":"caf","metric":"time_ms","value":2.5,"unit":"ms","params":{"n":25,"reps":1}}"#,
        )
        .unwrap();
        assert_eq!((peer.min, peer.samples.len(), peer.threads), (None, 0, None));
    }

    #[test]
    fn min_median_max_and_the_spread_flag() {
        let s = Spread::of(&[10.0, 12.0, 9.0, 11.0, 10.5]);
        assert_eq!((s.min, s.median, s.max), (9.0, 10.5, 12.0));
        assert_eq!(s.pct(), Some(28.6));
        let mut r = Record::default();
        r.set_samples(vec![100.0, 104.0, 96.0]);
        assert_eq!((r.min, r.value, r.max, r.spread_pct), (Some(96.0), 100.0, Some(104.0), Some(8.0)));
        assert!(!r.unsteady(), "8% is within the 10% flag");
        r.set_samples(vec![100.0, 111.0, 100.0]);
        assert!(r.unsteady(), "11% is flagged");
        assert_eq!(r.samples, vec![100.0, 111.0, 100.0], "in the order the repetitions ran");
        assert_eq!(Spread::of(&[0.0, 0.0]).pct(), None);
    }

    #[test]
    fn repetitions_merge_per_metric() {
        let p = Bench::PingPong.params(&BTreeMap::new()).unwrap();
        let reps: Vec<Vec<Record>> =
            [10u64, 20, 40].iter().map(|&ms| records("troupe", &p, 1, &[Duration::from_millis(ms)])).collect();
        let m = merge_reps(&reps);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].metric.as_str(), m[0].value, m[0].min, m[0].max), ("time_ms", 20.0, Some(10.0), Some(40.0)));
        assert_eq!(m[0].samples, vec![10.0, 20.0, 40.0]);
        assert_eq!(m[0].params["reps"], 3);
        assert_eq!(m[1].value, 4_000_000.0, "the median rate is the rate of the median time");
        assert!(m[0].unsteady());
    }
}
