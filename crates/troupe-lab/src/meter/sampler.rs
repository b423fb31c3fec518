//! The sampler: a thread the lab starts with every run's child, which follows the child's
//! process tree every `sample_ms` and writes `resources.jsonl` in the run folder, and
//! [`run_child`], the lab's one call that probes the meter, starts the child with the sampler
//! beside it and writes `meter.json`.
//!
//! Rules:
//! 1. One line per sample: `ts_us` (CLOCK_REALTIME, the events' clock), `cpu_ms` (the tree's
//!    CPU time, rule 2 of [`super::procfs`]), `rss_bytes`, `procs`, `host_busy_ms`, and
//!    `energy_uj` (cumulative since the run started) when the source is RAPL.
//! 2. A line at the instant just before the child was spawned records its CPU time as 0
//!    (`procs: 0`, no RSS: nothing ran yet), so a repetition that ends before the first reading
//!    on a loaded machine still gets its share of the CPU time between the two.
//!    The first reading is taken as soon as the child is started, then one every `sample_ms`
//!    until it ends; a last sample (`"last": true`) is taken after it was reaped, its CPU time
//!    from the lab's own accounting of reaped children (`getrusage`), so the end of the last
//!    repetition is always covered. `cpu_ms` never decreases from one sample to the next (a
//!    child that exits between readings leaves the tree before its parent reaps it).
//! 3. A RAPL reading that fails is recorded in the sample as `error` and the sampler goes on
//!    with CPU and RSS; no other source stands in (rule 5 of [`super`]).
//! 4. Every run gets the sampler, whatever the workload; its interval is the config's
//!    `sample_ms` when the workload has that key, else [`DEFAULT_SAMPLE_MS`].
//! 5. The runtime's own metrics: [`run_child`] gives the child
//!    `TROUPE_OBSERVE_LISTEN=127.0.0.1:PORT` (a port free when it was picked) unless the child
//!    runs in a network namespace, where the lab's loopback cannot reach it. Every sample but
//!    the first zero line (rule 2) and the last one GETs `http://127.0.0.1:PORT/metrics`
//!    (within [`prom::TIMEOUT`], at most [`prom::MAX_BYTES`]) and writes its `troupe_*` series
//!    as `runtime: {"<name>{<labels>}": value, ...}`, at most [`prom::MAX_SERIES`] of them
//!    (`runtime_series_dropped` counts the rest). A runtime that serves nothing gets no
//!    `runtime` key; a scrape that fails otherwise never fails the run: the sample says why in
//!    `runtime_scrape_error`, and `runtime_scrape_errors` counts the failures so far (the last
//!    sample holds the run's total).
//! 6. Given the run's events file, the sampler also reads the tree within about
//!    [`WATCH_STEP`] of every `work` line the program appends ([`super::watch`]), marked
//!    `"work": true` and not scraped: the end of each repetition then has a reading while its
//!    processes still live, however short the repetition and however soon the program exits
//!    after it (a far node stopped right after the last repetition took its CPU time with it).
//!    The tree's CPU time across readings follows rule 6 of [`super::procfs`].

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{procfs, prom, Counter, ProbePaths, Source};
use crate::child::{self, ChildSpec, Ending, Stop};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::events::writer::now_us;

/// The sampling interval of workloads without a `sample_ms` key.
pub const DEFAULT_SAMPLE_MS: u64 = 500;

/// How often the sampler looks for new `work` lines (rule 6).
pub const WATCH_STEP: Duration = Duration::from_millis(5);

/// The file the samples go to, in the run folder.
pub const FILE: &str = "resources.jsonl";

/// The file describing the meter of a run (source, probe findings, interval, power figure).
pub const METER_FILE: &str = "meter.json";

/// One sample (rules 1 and 5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// Wall-clock µs since the epoch.
    pub ts_us: i64,
    /// The tree's CPU time, ms.
    pub cpu_ms: f64,
    /// The tree's resident bytes.
    pub rss_bytes: u64,
    /// Live processes in the tree.
    #[serde(default)]
    pub procs: u32,
    /// The host's busy CPU time, ms.
    pub host_busy_ms: f64,
    /// RAPL energy since the run started, µJ (RAPL only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_uj: Option<f64>,
    /// Why the energy counter could not be read (rule 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The sample taken after the child was reaped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub last: bool,
    /// A reading taken because the program had just written a `work` line (rule 6).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub work: bool,
    /// The runtime's `troupe_*` series read at this sample (rule 5): a number, or `"NaN"`,
    /// `"+Inf"`, `"-Inf"`; absent when nothing served them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<BTreeMap<String, serde_json::Value>>,
    /// `troupe_*` series left out of `runtime` past [`prom::MAX_SERIES`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runtime_series_dropped: u64,
    /// Why this sample's scrape failed (rule 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_scrape_error: Option<String>,
    /// Failed scrapes so far in the run (rule 5).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runtime_scrape_errors: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What the sampler thread needs.
pub struct SamplerOptions {
    /// The root of the tree: the child's pid.
    pub pid: u32,
    /// Time between samples.
    pub interval: Duration,
    /// `/proc` (tests use a fake one).
    pub proc_root: PathBuf,
    /// Where the lines go.
    pub out: PathBuf,
    /// The host-wide energy counter (RAPL or perf), when that is the source.
    pub counter: Option<Counter>,
    /// Wall-clock µs just before the child was spawned (rule 2), when known.
    pub spawned_us: Option<i64>,
    /// Where the child serves its metrics (rule 5), when it was told to.
    pub scrape: Option<SocketAddr>,
    /// The run's events file, watched for `work` lines (rule 6).
    pub work_events: Option<PathBuf>,
}

/// What the sampler thread hands back when stopped: the tree's CPU ms, the failed scrapes,
/// and the energy counter.
type Ended = (f64, u64, Option<Counter>);

/// A running sampler; [`Sampler::finish`] stops it.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<std::result::Result<Ended, String>>,
    out: PathBuf,
    rusage0: f64,
}

struct State {
    ticks: f64,
    page: u64,
    tree: procfs::TreeTracker,
    scrape: Option<SocketAddr>,
    scrape_errors: u64,
}

impl State {
    /// Rule 5: the runtime's series into `s`, or why not.
    fn scrape_into(&mut self, s: &mut Sample) {
        let Some(addr) = self.scrape else { return };
        match prom::scrape(addr, prom::TIMEOUT) {
            Ok(r) => {
                s.runtime = Some(r.series);
                s.runtime_series_dropped = r.dropped;
            }
            Err(prom::ScrapeError::NotServing(_)) => {}
            Err(prom::ScrapeError::Failed(why)) => {
                self.scrape_errors += 1;
                s.runtime_scrape_error = Some(why);
            }
        }
        s.runtime_scrape_errors = self.scrape_errors;
    }
}

fn host_busy(ticks: f64) -> f64 {
    std::fs::read_to_string("/proc/stat").ok().and_then(|s| procfs::host_busy_ms(&s, ticks)).unwrap_or(0.0)
}

fn energy(pc: &mut Option<Counter>) -> (Option<f64>, Option<String>) {
    match pc.as_mut().map(Counter::read_uj) {
        None => (None, None),
        Some(Ok(uj)) => (Some(uj), None),
        Some(Err(e)) => (None, Some(e.to_string())),
    }
}

fn write_line(f: &mut std::fs::File, s: &Sample) -> std::result::Result<(), String> {
    let line = serde_json::to_string(s).map_err(|e| e.to_string())?;
    writeln!(f, "{line}").map_err(|e| format!("cannot write a sample: {e}"))
}

impl Sampler {
    /// Takes the first sample at once, on the caller's thread (so a child that ends before the
    /// thread is scheduled still has it), then starts the thread (rule 2).
    pub fn start(opts: SamplerOptions) -> Result<Sampler> {
        let mut file = std::fs::File::create(&opts.out).map_err(|e| Error::io(&opts.out, e))?;
        let rusage0 = procfs::children_cpu_ms();
        let mut pc = opts.counter;
        let mut st = State {
            ticks: procfs::clock_ticks(),
            page: procfs::page_size(),
            tree: procfs::TreeTracker::default(),
            scrape: opts.scrape,
            scrape_errors: 0,
        };
        if let Some(t) = opts.spawned_us {
            let zero = Sample {
                ts_us: t,
                host_busy_ms: host_busy(st.ticks),
                energy_uj: pc.as_ref().map(|_| 0.0),
                ..Sample::default()
            };
            write_line(&mut file, &zero).map_err(|e| Error::other(format!("{}: {e}", opts.out.display())))?;
        }
        let (pid, root) = (opts.pid, opts.proc_root);
        let take = move |st: &mut State, pc: &mut Option<Counter>, file: &mut std::fs::File, work: bool| {
            let Some(u) = st.tree.read(&root, pid, st.ticks, st.page) else { return Ok(()) };
            let (energy_uj, error) = energy(pc);
            let mut s = Sample {
                ts_us: now_us(),
                cpu_ms: u.cpu_ms,
                rss_bytes: u.rss_bytes,
                procs: u.procs,
                host_busy_ms: host_busy(st.ticks),
                energy_uj,
                error,
                work,
                ..Sample::default()
            };
            if !work {
                st.scrape_into(&mut s);
            }
            write_line(file, &s)
        };
        take(&mut st, &mut pc, &mut file, false).map_err(|e| Error::other(format!("{}: {e}", opts.out.display())))?;
        let (tx, rx) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("lab-sampler".into())
            .spawn(move || {
                let mut watch = opts.work_events.map(super::watch::WorkWatch::new);
                let mut next = Instant::now() + opts.interval;
                // Bounded by the stop message, sent when the child has ended.
                loop {
                    let until_next = next.saturating_duration_since(Instant::now());
                    let wait = if watch.is_some() { until_next.min(WATCH_STEP) } else { until_next };
                    if !matches!(rx.recv_timeout(wait), Err(mpsc::RecvTimeoutError::Timeout)) {
                        break;
                    }
                    if watch.as_mut().is_some_and(|w| w.poll()) {
                        take(&mut st, &mut pc, &mut file, true)?;
                    }
                    if Instant::now() >= next {
                        take(&mut st, &mut pc, &mut file, false)?;
                        next = Instant::now() + opts.interval;
                    }
                }
                Ok((st.tree.cpu_ms(), st.scrape_errors, pc))
            })
            .map_err(|e| Error::other(format!("cannot start the sampler thread: {e}")))?;
        Ok(Sampler { stop: tx, thread, out: opts.out, rusage0 })
    }

    /// Stops the thread and appends the last sample (rule 2). Call after the child was reaped.
    pub fn finish(self) -> Result<()> {
        let _ = self.stop.send(());
        let (cpu_ms, scrape_errors, mut pc) = self
            .thread
            .join()
            .map_err(|_| Error::other("the sampler thread panicked"))?
            .map_err(|e| Error::other(format!("{}: {e}", self.out.display())))?;
        let reaped = procfs::children_cpu_ms() - self.rusage0;
        let (energy_uj, error) = energy(&mut pc);
        let s = Sample {
            ts_us: now_us(),
            cpu_ms: cpu_ms.max(reaped),
            rss_bytes: 0,
            procs: 0,
            host_busy_ms: host_busy(procfs::clock_ticks()),
            energy_uj,
            error,
            last: true,
            runtime_scrape_errors: scrape_errors,
            ..Sample::default()
        };
        let mut f = std::fs::OpenOptions::new().append(true).open(&self.out).map_err(|e| Error::io(&self.out, e))?;
        write_line(&mut f, &s).map_err(|e| Error::other(format!("{}: {e}", self.out.display())))
    }
}

/// Reads `resources.jsonl`.
pub fn read_samples(path: &Path) -> Result<Vec<Sample>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| Error::malformed(path, format!("line {}: {e}", i + 1))))
        .collect()
}

/// The run's totals from its samples, for `summary.json` (every workload): `cpu_s` (the whole
/// tree's CPU time, start-up included), `wall_s` (first to last reading), `peak_rss_bytes`
/// (the largest tree RSS read), `samples`; `None` without samples.
pub fn run_totals(dir: &Path) -> Option<serde_json::Value> {
    let s = read_samples(&dir.join(FILE)).ok()?;
    let (first, last) = (s.first()?, s.last()?);
    Some(json!({
        "cpu_s": last.cpu_ms / 1000.0,
        "wall_s": (last.ts_us - first.ts_us) as f64 / 1e6,
        "peak_rss_bytes": s.iter().map(|x| x.rss_bytes).max().unwrap_or(0),
        "samples": s.len(),
    }))
}

/// The meter settings a config asks for: (sample interval, requested source, watts per core).
pub fn settings(cfg: &Config) -> (Duration, String, f64) {
    let ms = match cfg.get("sample_ms") {
        Some(crate::config::Value::Int(v)) if *v > 0 => *v as u64,
        _ => DEFAULT_SAMPLE_MS,
    };
    let asked = match cfg.get("meter") {
        Some(crate::config::Value::Str(s)) => s.clone(),
        _ => "auto".into(),
    };
    let watts =
        if cfg.get("watts_per_core").is_some() { cfg.float("watts_per_core") } else { super::DEFAULT_WATTS_PER_CORE };
    (Duration::from_millis(ms), asked, watts)
}

/// A loopback address whose port was free when asked (rule 5): the kernel picks it, the
/// listener is closed, and the child binds it again. `None` when no port could be had.
pub fn free_loopback_addr() -> Option<SocketAddr> {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).ok()
}

/// Runs a run's child with the meter beside it (rule 4): probes the sources, writes
/// `meter.json`, starts the sampler when the child starts, and finishes it when the child has
/// been reaped. A source asked for by name that does not work fails before the child starts.
/// With `observe` the child also gets [`prom::ENV_LISTEN`] and the sampler reads what it
/// serves there (rule 5), unless the lab runs with [`prom::ENV_SWITCH`]`=off`; the caller
/// leaves it off when the child cannot be reached on the lab's loopback (a network namespace).
/// The sampler also reads after each `work` line appended to `work_events`, the run's events
/// file (rule 6).
pub fn run_child(
    spec: &ChildSpec,
    deadline: Duration,
    stop: &Stop,
    dir: &Path,
    cfg: &Config,
    observe: bool,
    work_events: &Path,
) -> Result<Ending> {
    let (interval, asked, watts) = settings(cfg);
    let scrape = if observe && prom::wanted() { free_loopback_addr() } else { None };
    let mut spec = spec.clone();
    if let Some(addr) = scrape {
        spec.env.push((prom::ENV_LISTEN.into(), addr.to_string()));
    }
    let probe = super::probe(&ProbePaths::default(), || std::thread::sleep(Duration::from_millis(200)));
    let probe = super::choose(probe, &asked).map_err(|e| Error::other(e.to_string()))?;
    let info = json!({
        "source": probe.source.name(),
        "estimate": probe.source == Source::Estimate,
        "sample_ms": interval.as_millis() as u64,
        "watts_per_core": watts,
        "asked": asked,
        "findings": probe.findings,
        "runtime_metrics": scrape.map(|a| format!("http://{a}/metrics")),
    });
    let meter_path = dir.join(METER_FILE);
    std::fs::write(&meter_path, format!("{info:#}\n")).map_err(|e| Error::io(&meter_path, e))?;
    let mut counter = probe.counter;
    let mut sampler: Option<Result<Sampler>> = None;
    let ending = child::run_observed(&spec, deadline, stop, |pid, spawned_us| {
        sampler = Some(Sampler::start(SamplerOptions {
            pid,
            spawned_us: Some(spawned_us),
            interval,
            proc_root: PathBuf::from("/proc"),
            out: dir.join(FILE),
            counter: counter.take(),
            scrape,
            work_events: Some(work_events.to_path_buf()),
        }));
    });
    if let Some(s) = sampler {
        s?.finish()?;
    }
    ending
}
