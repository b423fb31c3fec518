//! What a run was measured on: CPU model, cores, memory, kernel, OS (from /proc and
//! /etc/os-release), the git commit of the project, and UTC timestamps (calendar arithmetic by
//! the `time` crate), so numbers always travel with their machine and versions (house style 7).

use std::path::Path;
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// The machine a run was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name (`/proc/cpuinfo`).
    pub cpu_model: String,
    /// Logical cores available to the process.
    pub cores: usize,
    /// Total memory, bytes (`/proc/meminfo` MemTotal).
    pub memory_bytes: u64,
    /// Kernel release.
    pub kernel: String,
    /// Operating system (`/etc/os-release` PRETTY_NAME).
    pub os: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

impl Machine {
    /// Describes this machine (fields it cannot read are `unknown` or 0).
    ///
    /// Read by hand rather than through `sysinfo`: the lab runs on Linux only, the four facts
    /// are one line each of `/proc/cpuinfo`, `/proc/meminfo`, `/proc/sys/kernel/osrelease` and
    /// `/etc/os-release` (cores come from the standard library), and `/proc/stat` must be read
    /// by hand anyway for the hypervisor's steal time ([`CpuTimes`]), which `sysinfo` does not
    /// report. A dependency of that size for these few lines was not judged worth it (not
    /// measured: no build time or behaviour was compared).
    pub fn detect() -> Machine {
        let cpuinfo = read("/proc/cpuinfo");
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("cpu model"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let memory_bytes = read("/proc/meminfo")
            .lines()
            .find(|l| l.starts_with("MemTotal:"))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .unwrap_or(0);
        let kernel = read("/proc/sys/kernel/osrelease").trim().to_string();
        let os = read("/etc/os-release")
            .lines()
            .find_map(|l| l.strip_prefix("PRETTY_NAME="))
            .map(|v| v.trim_matches('"').to_string())
            .unwrap_or_else(|| "unknown".into());
        Machine {
            cpu_model,
            cores: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
            memory_bytes,
            kernel: if kernel.is_empty() { "unknown".into() } else { kernel },
            os,
        }
    }

    /// One line for tables and reports.
    pub fn summary(&self) -> String {
        format!(
            "{}, {} cores, {:.1} GiB, Linux {}, {}",
            self.cpu_model,
            self.cores,
            self.memory_bytes as f64 / (1u64 << 30) as f64,
            self.kernel,
            self.os
        )
    }
}

/// The git commit this program was built from and whether tracked files had changes then
/// (embedded by `build.rs`; `None` for a build outside a git checkout). A binary copied out of
/// the checkout still knows it.
pub fn build_commit() -> Option<(String, bool)> {
    let commit = option_env!("TROUPE_BUILD_COMMIT")?;
    Some((commit.to_string(), option_env!("TROUPE_BUILD_DIRTY") == Some("true")))
}

/// The git commit of the project at `root` and whether the tree has changes, if it is a repo.
pub fn git_commit(root: &Path) -> Option<(String, bool)> {
    let out = Command::new("git").arg("-C").arg(root).args(["rev-parse", "HEAD"]).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let dirty = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    Some((commit, dirty))
}

/// The git commit of the project: the one this program was built from ([`build_commit`]),
/// else (a build outside a checkout) the checkout's at `root` (when known), the current
/// directory, or the folder of this program.
pub fn git_commit_near(root: Option<&Path>) -> Option<(String, bool)> {
    if let Some(c) = build_commit() {
        return Some(c);
    }
    let mut places: Vec<std::path::PathBuf> = root.into_iter().map(Path::to_path_buf).collect();
    places.extend(std::env::current_dir().ok());
    places.extend(std::env::current_exe().ok().and_then(|p| p.parent().map(Path::to_path_buf)));
    places.iter().find_map(|p| git_commit(p))
}

/// The 1, 5 and 15 minute load averages (`/proc/loadavg`), if readable.
pub fn loadavg() -> Option<String> {
    let s = read("/proc/loadavg");
    let f: Vec<&str> = s.split_whitespace().take(3).collect();
    (f.len() == 3).then(|| f.join(" "))
}

/// The machine's aggregate CPU time counters (the `cpu` line of `/proc/stat`, in clock ticks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// Every counter summed: user, nice, system, idle, iowait, irq, softirq, steal.
    pub total: u64,
    /// Idle plus iowait.
    pub idle: u64,
    /// Time a hypervisor gave this VM's CPUs to others.
    pub steal: u64,
}

impl CpuTimes {
    /// Reads `/proc/stat`, if it can.
    pub fn now() -> Option<CpuTimes> {
        CpuTimes::parse(&read("/proc/stat"))
    }

    fn parse(stat: &str) -> Option<CpuTimes> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let f: Vec<u64> = line.split_whitespace().skip(1).take(8).map(|v| v.parse().unwrap_or(0)).collect();
        (f.len() == 8).then(|| CpuTimes { total: f.iter().sum(), idle: f[3] + f[4], steal: f[7] })
    }
}

/// How loaded the machine was while something was measured: the load averages at both ends and,
/// from `/proc/stat` before and after, the share of all cores' time that was busy (this program
/// included: on a shared machine, busy well above what the measurement needs is others' work)
/// and stolen by the hypervisor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// `/proc/loadavg` (1, 5, 15 minutes) before.
    pub loadavg_start: Option<String>,
    /// `/proc/loadavg` after.
    pub loadavg_end: Option<String>,
    /// Busy share of all cores' time in between, percent.
    pub busy_pct: Option<f64>,
    /// Stolen share of all cores' time in between, percent.
    pub steal_pct: Option<f64>,
    /// [`core_round_trip_ns`] before, in ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_rtt_start_ns: Option<u32>,
    /// [`core_round_trip_ns`] after, in ns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_rtt_end_ns: Option<u32>,
}

/// A measurement's start: call [`LoadProbe::finish`] at its end.
#[derive(Debug, Clone)]
pub struct LoadProbe {
    loadavg: Option<String>,
    cpu: Option<CpuTimes>,
    core_rtt: Option<u32>,
}

impl LoadProbe {
    /// Reads the counters now, and times the core-to-core round trip ([`core_round_trip_ns`]).
    pub fn start() -> LoadProbe {
        // Timed first, so its spinning stays out of the CPU counters.
        let core_rtt = core_round_trip_ns();
        LoadProbe { loadavg: loadavg(), cpu: CpuTimes::now(), core_rtt }
    }

    /// Reads them again and gives the load in between.
    pub fn finish(&self) -> Load {
        let end = Load::between(self.loadavg.clone(), self.cpu, loadavg(), CpuTimes::now());
        end.with_core_rtt(self.core_rtt, core_round_trip_ns())
    }
}

impl Load {
    /// The load between two readings of `/proc/loadavg` and `/proc/stat`.
    pub fn between(la0: Option<String>, c0: Option<CpuTimes>, la1: Option<String>, c1: Option<CpuTimes>) -> Load {
        let pct = |part: fn(&CpuTimes) -> u64| {
            let (a, b) = (c0?, c1?);
            let total = b.total.checked_sub(a.total).filter(|t| *t > 0)?;
            let p = part(&b).checked_sub(part(&a))?;
            Some((p as f64 * 1000.0 / total as f64).round() / 10.0)
        };
        Load {
            loadavg_start: la0,
            loadavg_end: la1,
            busy_pct: pct(|c| c.total - c.idle),
            steal_pct: pct(|c| c.steal),
            core_rtt_start_ns: None,
            core_rtt_end_ns: None,
        }
    }

    /// The same load with the core-to-core round trips timed before and after.
    #[must_use]
    pub fn with_core_rtt(mut self, start: Option<u32>, end: Option<u32>) -> Load {
        (self.core_rtt_start_ns, self.core_rtt_end_ns) = (start, end);
        self
    }

    /// One line for tables and reports.
    pub fn summary(&self) -> String {
        let f = |v: Option<f64>| v.map_or("?".into(), |p| format!("{p:.1}%"));
        let mut line = format!(
            "loadavg {} -> {}; cpu busy {}, steal {} (all cores, /proc/stat, this program included)",
            self.loadavg_start.as_deref().unwrap_or("?"),
            self.loadavg_end.as_deref().unwrap_or("?"),
            f(self.busy_pct),
            f(self.steal_pct)
        );
        if self.core_rtt_start_ns.is_some() || self.core_rtt_end_ns.is_some() {
            let ns = |v: Option<u32>| v.map_or("?".into(), |n| n.to_string());
            line.push_str(&format!(
                "; core-to-core round trip {} -> {} ns",
                ns(self.core_rtt_start_ns),
                ns(self.core_rtt_end_ns)
            ));
        }
        line
    }
}

/// Round trips a batch of [`core_round_trip_ns`] times; batches it takes at most.
const RTT_TRIPS: u64 = 1_000;
const RTT_BATCHES: usize = 9;

/// How long a cache line takes to go from one core to another and back, in ns: two threads
/// pinned to the first two CPUs this process may run on pass a counter back and forth through
/// one atomic, in batches of 1,000 round trips (at most 9 batches and about 100 ms); the median
/// batch's time per round trip. `None` with fewer than two CPUs, where pinning fails, or when
/// not one batch finished in time.
///
/// The same cloud VM can read about 70 ns at one time and over 300 ns at another (its virtual
/// CPUs placed on cores that share a cache, or not), and a benchmark whose actors message
/// each other across workers runs up to three times slower in the second case, so a run
/// records it at both ends ([`LoadProbe`]).
///
/// ```
/// // Linux with two CPUs or more: a figure; otherwise None, never a panic.
/// if let Some(ns) = troupe_lab::machine::core_round_trip_ns() {
///     assert!(ns > 0);
/// }
/// ```
pub fn core_round_trip_ns() -> Option<u32> {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::time::{Duration, Instant};
    /// The value that tells the echoing thread to stop.
    const STOP: u64 = u64::MAX;
    let cpus = allowed_cpus();
    let (&a, &b) = (cpus.first()?, cpus.get(1)?);
    let line = std::sync::Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_millis(100);
    let echo = {
        let line = line.clone();
        std::thread::Builder::new()
            .name("core-rtt".into())
            .spawn(move || {
                if !pin_to(b) {
                    line.store(STOP, Ordering::Release);
                    return;
                }
                let mut spins = 0u32;
                loop {
                    let v = line.load(Ordering::Acquire);
                    if v == STOP {
                        return;
                    }
                    if v % 2 == 1 {
                        line.store(v + 1, Ordering::Release);
                    } else {
                        spins = spins.wrapping_add(1);
                        // Bounded in time even if the other side never writes again.
                        if spins % 4096 == 0 && Instant::now() > deadline + Duration::from_millis(50) {
                            return;
                        }
                        std::hint::spin_loop();
                    }
                }
            })
            .ok()?
    };
    let timed = std::thread::Builder::new()
        .name("core-rtt".into())
        .spawn({
            let line = line.clone();
            move || -> Vec<u128> {
                // Each batch's ns per round trip; a batch cut short by the deadline counts the
                // round trips it finished (a loaded machine reads slow, not absent).
                let mut batches = Vec::new();
                if !pin_to(a) {
                    return batches;
                }
                let mut next = 1u64;
                'batches: while batches.len() < RTT_BATCHES && Instant::now() < deadline {
                    let t0 = Instant::now();
                    let mut trips = 0u64;
                    while trips < RTT_TRIPS {
                        if line.compare_exchange(next - 1, next, Ordering::AcqRel, Ordering::Acquire).is_err() {
                            break 'batches; // the echo gave up (pinning failed)
                        }
                        let mut spins = 0u32;
                        while line.load(Ordering::Acquire) != next + 1 {
                            spins = spins.wrapping_add(1);
                            if spins % 4096 == 0 && Instant::now() > deadline {
                                if trips > 0 {
                                    batches.push(t0.elapsed().as_nanos() / u128::from(trips));
                                }
                                break 'batches;
                            }
                            std::hint::spin_loop();
                        }
                        next += 2;
                        trips += 1;
                    }
                    batches.push(t0.elapsed().as_nanos() / u128::from(RTT_TRIPS));
                }
                line.store(STOP, Ordering::Release);
                batches
            }
        })
        .ok();
    let mut batches = timed.and_then(|t| t.join().ok()).unwrap_or_default();
    line.store(STOP, Ordering::Release);
    let _ = echo.join();
    batches.sort_unstable();
    u32::try_from(*batches.get(batches.len() / 2)?).ok()
}

/// The CPUs this process may run on, lowest first (`sched_getaffinity`).
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; zeroed is the empty set, and sched_getaffinity writes at
    // most the size passed.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    if unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) } != 0 {
        return Vec::new();
    }
    // SAFETY: CPU_ISSET reads the set within its bounds (the index is below CPU_SETSIZE).
    (0..libc::CPU_SETSIZE as usize).filter(|&c| unsafe { libc::CPU_ISSET(c, &set) }).collect()
}

/// Pins the calling thread to `cpu`; false if the kernel refused.
fn pin_to(cpu: usize) -> bool {
    // SAFETY: as in `allowed_cpus`; CPU_SET writes within the set's bounds (cpu came from it).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the calling thread.
    unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 }
}

/// Milliseconds since the Unix epoch.
pub fn now_unix_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

/// Unix milliseconds as a UTC calendar date and time (`time` does the calendar arithmetic); the
/// epoch for a value `time` cannot represent (beyond the year 9999).
fn utc(unix_ms: u64) -> time::OffsetDateTime {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// Formats Unix milliseconds as RFC 3339 UTC, e.g. `2026-11-22T06:34:45.123Z` (always three
/// fraction digits, so the stamps of a run sort as text).
pub fn rfc3339(unix_ms: u64) -> String {
    let t = utc(unix_ms);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// Reads a stamp [`rfc3339`] wrote (`2026-11-22T06:34:45.123Z`, the fraction optional) back as
/// Unix milliseconds; `None` for any other shape.
///
/// ```
/// use troupe_lab::machine::{parse_rfc3339, rfc3339};
/// assert_eq!(parse_rfc3339(&rfc3339(1_795_000_123_456)), Some(1_795_000_123_456));
/// assert_eq!(parse_rfc3339("1970-01-01T00:00:01Z"), Some(1000));
/// assert_eq!(parse_rfc3339("yesterday"), None);
/// ```
pub fn parse_rfc3339(s: &str) -> Option<u64> {
    let s = s.strip_suffix('Z')?;
    let (date, clock) = s.split_once('T')?;
    let num = |t: &str| -> Option<u32> { t.bytes().all(|b| b.is_ascii_digit()).then(|| t.parse().ok()).flatten() };
    let mut d = date.split('-');
    let (y, mo, da) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
    let (hms, frac) = clock.split_once('.').unwrap_or((clock, "0"));
    let mut c = hms.split(':');
    let (h, mi, se) = (num(c.next()?)?, num(c.next()?)?, num(c.next()?)?);
    if d.next().is_some() || c.next().is_some() || frac.is_empty() || frac.len() > 3 {
        return None;
    }
    let ms = num(frac)? * 10u32.pow(3 - frac.len() as u32);
    let date = time::Date::from_calendar_date(
        i32::try_from(y).ok()?,
        time::Month::try_from(u8::try_from(mo).ok()?).ok()?,
        u8::try_from(da).ok()?,
    )
    .ok()?;
    let t = time::Time::from_hms_milli(
        u8::try_from(h).ok()?,
        u8::try_from(mi).ok()?,
        u8::try_from(se).ok()?,
        u16::try_from(ms).ok()?,
    )
    .ok()?;
    let unix = time::PrimitiveDateTime::new(date, t).assume_utc().unix_timestamp_nanos() / 1_000_000;
    u64::try_from(unix).ok()
}

/// Formats Unix milliseconds as a compact stamp for folder names, e.g. `20261122-063445`.
pub fn folder_stamp(unix_ms: u64) -> String {
    let t = utc(unix_ms);
    format!("{:04}{:02}{:02}-{:02}{:02}{:02}", t.year(), u8::from(t.month()), t.day(), t.hour(), t.minute(), t.second())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_steal_shares_from_two_stat_readings() {
        let a = CpuTimes::parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3").unwrap();
        let b = CpuTimes::parse("cpu  400 0 100 1150 50 0 0 300 0 0\n").unwrap();
        assert_eq!((a.total, a.idle, a.steal), (1000, 850, 0));
        let l = Load::between(Some("1.00 0.50 0.25".into()), Some(a), None, Some(b));
        assert_eq!((l.busy_pct, l.steal_pct), (Some(65.0), Some(30.0)));
        assert!(l.summary().starts_with("loadavg 1.00 0.50 0.25 -> ?; cpu busy 65.0%, steal 30.0%"), "{}", l.summary());
        assert_eq!(Load::between(None, Some(a), None, Some(a)).busy_pct, None, "no time passed");
        assert!(!l.summary().contains("core-to-core"), "not timed, not said");
        let timed = l.with_core_rtt(Some(70), None);
        assert!(timed.summary().ends_with("; core-to-core round trip 70 -> ? ns"), "{}", timed.summary());
    }

    #[test]
    fn the_core_round_trip_is_timed_where_two_cpus_are_allowed() {
        let t0 = std::time::Instant::now();
        let rtt = core_round_trip_ns();
        // Bounded whatever the load: 100 ms of batches plus the threads' start and join.
        assert!(t0.elapsed() < std::time::Duration::from_secs(5), "{:?}", t0.elapsed());
        // A loaded machine may keep a spinning thread off its CPU for the whole 100 ms, so
        // two CPUs do not promise a figure; one is never a free round trip.
        assert!(rtt.is_none_or(|ns| ns > 0), "{rtt:?}");
        // A thread allowed one CPU (its helpers inherit that) has no second core to time.
        let one = std::thread::spawn(|| {
            let cpu = *allowed_cpus().first().expect("this thread may run somewhere");
            assert!(pin_to(cpu), "pinning to an allowed CPU");
            (allowed_cpus(), core_round_trip_ns())
        });
        let (cpus, rtt) = one.join().expect("the one-CPU thread ran");
        assert_eq!((cpus.len(), rtt), (1, None));
    }

    #[test]
    fn the_build_commit_is_embedded() {
        // This crate is built from a git checkout in development and CI.
        let (commit, _) = build_commit().expect("build.rs embedded a commit");
        assert_eq!(commit.len(), 40, "{commit}");
    }

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339(1_662_854_400_123), "2022-09-11T00:00:00.123Z");
        assert_eq!(folder_stamp(1_662_854_461_000), "20220911-000101");
    }
}
