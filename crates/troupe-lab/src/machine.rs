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
}

/// A measurement's start: call [`LoadProbe::finish`] at its end.
#[derive(Debug, Clone)]
pub struct LoadProbe {
    loadavg: Option<String>,
    cpu: Option<CpuTimes>,
}

impl LoadProbe {
    /// Reads the counters now.
    pub fn start() -> LoadProbe {
        LoadProbe { loadavg: loadavg(), cpu: CpuTimes::now() }
    }

    /// Reads them again and gives the load in between.
    pub fn finish(&self) -> Load {
        Load::between(self.loadavg.clone(), self.cpu, loadavg(), CpuTimes::now())
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
        Load { loadavg_start: la0, loadavg_end: la1, busy_pct: pct(|c| c.total - c.idle), steal_pct: pct(|c| c.steal) }
    }

    /// One line for tables and reports.
    pub fn summary(&self) -> String {
        let f = |v: Option<f64>| v.map_or("?".into(), |p| format!("{p:.1}%"));
        format!(
            "loadavg {} -> {}; cpu busy {}, steal {} (all cores, /proc/stat, this program included)",
            self.loadavg_start.as_deref().unwrap_or("?"),
            self.loadavg_end.as_deref().unwrap_or("?"),
            f(self.busy_pct),
            f(self.steal_pct)
        )
    }
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
