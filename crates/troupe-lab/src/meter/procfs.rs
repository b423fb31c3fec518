//! Reading a process tree and the host from `/proc`: the CPU time and resident memory of a
//! process and all its descendants, and the host's busy CPU time.
//!
//! Rules:
//! 1. The tree is the root process and every process whose parent chain (`ppid`) reaches it,
//!    found by one pass over `/proc/<pid>/stat`.
//! 2. CPU time of the tree = for every live process in it, its own time plus `cutime + cstime`
//!    (its children it has already waited for), in milliseconds. Its own time is the larger of
//!    `utime + stime` (all its threads, dead ones included, in clock ticks: 10 ms steps) and
//!    the sum of its live threads' run time in `/proc/<pid>/task/<tid>/schedstat`
//!    (nanoseconds), so short intervals are not lost to the tick's granularity.
//! 3. RSS of the tree = the sum of each process's resident pages times the page size.
//! 4. Host busy time = the `cpu` line of `/proc/stat` less idle, iowait and steal, in ms.
//! 5. Every function takes the `/proc` folder as an argument, so tests read a fake one.
//! 6. Across readings ([`TreeTracker`]) the tree's CPU time is a running sum of what each
//!    process (known by pid and start time) gained since it was last read: its own time's
//!    growth, plus its reaped children's time's growth less what its children that vanished
//!    had already been counted with (carried until the parent's reaped time shows them). A
//!    process that leaves the tree keeps what it was counted with, so the sum never drops
//!    when a descendant that nobody in the tree waits for exits (a detached helper, a far
//!    node whose parent went first); only its CPU time since its last reading is lost. A
//!    parent that vanishes drops its children's credit: a child whose parent exits is most
//!    often orphaned (reaped outside the tree), so its parent's parent never sees its time.
//!    The rarer case, a parent that reaps a child already read and exits within one interval,
//!    counts that child's read time twice.
//!    Reading a parent before its children (pid order) keeps a child reaped mid-pass from
//!    being counted twice; a pid that wrapped around can break that order once.

use std::collections::HashMap;
use std::path::Path;

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`), 100 when unknown.
pub fn clock_ticks() -> f64 {
    // SAFETY: sysconf has no preconditions; it only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// The page size in bytes (`sysconf(_SC_PAGESIZE)`), 4096 when unknown.
pub fn page_size() -> u64 {
    // SAFETY: as above.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// One process's line of `/proc/<pid>/stat`, the fields the meter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// The process id.
    pub pid: u32,
    /// Its parent.
    pub ppid: u32,
    /// User + system ticks of all its threads.
    pub own_ticks: u64,
    /// User + system ticks of its waited-for children.
    pub child_ticks: u64,
    /// Resident pages.
    pub rss_pages: u64,
    /// Start time after boot, in clock ticks (with the pid, it names the process).
    pub start: u64,
}

/// Parses `/proc/<pid>/stat` (the command name may hold spaces and parentheses: fields are
/// counted after the last `)`).
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let pid = text.split_whitespace().next()?.parse().ok()?;
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let n = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
    Some(ProcStat {
        pid,
        ppid: n(1)? as u32,
        own_ticks: n(11)? + n(12)?,
        child_ticks: n(13)? + n(14)?,
        rss_pages: n(21)?,
        start: n(19).unwrap_or(0),
    })
}

/// What one reading of a tree found.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TreeUsage {
    /// CPU time of the tree, ms (rule 2).
    pub cpu_ms: f64,
    /// Resident bytes of the tree (rule 3).
    pub rss_bytes: u64,
    /// Live processes in the tree.
    pub procs: u32,
}

/// Reads every process under `proc_root` (rule 1).
pub fn all_stats(proc_root: &Path) -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir(proc_root) else { return Vec::new() };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|t| parse_stat(&t))
        .collect()
}

/// The usage of `root` and its descendants (rules 1-3); `None` when `root` is gone.
pub fn tree_usage(proc_root: &Path, root: u32, ticks_per_s: f64, page: u64) -> Option<TreeUsage> {
    let members = tree_members(proc_root, root, ticks_per_s)?;
    let mut usage = TreeUsage::default();
    for m in &members {
        usage.cpu_ms += m.own_ms + m.child_ms;
        usage.rss_bytes += m.stat.rss_pages * page;
        usage.procs += 1;
    }
    Some(usage)
}

/// One live process of a tree, its times in ms (rule 2).
struct Member {
    stat: ProcStat,
    own_ms: f64,
    child_ms: f64,
}

/// The live processes of `root`'s tree in pid order (rule 1); `None` when `root` is gone.
fn tree_members(proc_root: &Path, root: u32, ticks_per_s: f64) -> Option<Vec<Member>> {
    let stats = all_stats(proc_root);
    let by_pid: HashMap<u32, &ProcStat> = stats.iter().map(|s| (s.pid, s)).collect();
    by_pid.get(&root)?;
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for s in &stats {
        children.entry(s.ppid).or_default().push(s.pid);
    }
    let mut members = Vec::new();
    let mut todo = vec![root];
    let tick_ms = 1000.0 / ticks_per_s;
    // Bounded: each pid is visited once (a pid is its parent's child exactly once).
    while let Some(pid) = todo.pop() {
        if let Some(s) = by_pid.get(&pid) {
            let own_ms = (s.own_ticks as f64 * tick_ms).max(threads_run_ms(proc_root, pid).unwrap_or(0.0));
            members.push(Member { stat: **s, own_ms, child_ms: s.child_ticks as f64 * tick_ms });
        }
        if let Some(c) = children.get(&pid) {
            todo.extend(c.iter().copied().filter(|&c| c != pid));
        }
        if members.len() > stats.len() {
            break;
        }
    }
    members.sort_by_key(|m| m.stat.pid);
    Some(members)
}

/// What the tracker last read of one process.
#[derive(Debug, Clone, Copy)]
struct Seen {
    ppid: u32,
    own_ms: f64,
    child_ms: f64,
}

/// Follows a tree across readings (rule 6), so its CPU time never loses what a process that
/// left it had used.
///
/// ```
/// use troupe_lab::meter::procfs::TreeTracker;
/// let mut t = TreeTracker::default();
/// assert!(t.read("/nonexistent".as_ref(), 1, 100.0, 4096).is_none());
/// assert_eq!(t.cpu_ms(), 0.0);
/// ```
#[derive(Debug, Default)]
pub struct TreeTracker {
    seen: HashMap<(u32, u64), Seen>,
    /// Per parent pid: the time its vanished children were counted with, not yet seen in its
    /// reaped time.
    credit: HashMap<u32, f64>,
    cpu_ms: f64,
}

impl TreeTracker {
    /// The tree's CPU time so far (rule 6), ms.
    pub fn cpu_ms(&self) -> f64 {
        self.cpu_ms
    }

    /// Reads the tree once; its usage with `cpu_ms` the running sum (rule 6). `None` when
    /// `root` is gone (the sum is kept).
    pub fn read(&mut self, proc_root: &Path, root: u32, ticks_per_s: f64, page: u64) -> Option<TreeUsage> {
        let members = tree_members(proc_root, root, ticks_per_s)?;
        let live: std::collections::HashSet<(u32, u64)> = members.iter().map(|m| (m.stat.pid, m.stat.start)).collect();
        let gone: Vec<(u32, u64)> = self.seen.keys().filter(|k| !live.contains(k)).copied().collect();
        for k in gone {
            if let Some(s) = self.seen.remove(&k) {
                *self.credit.entry(s.ppid).or_default() += s.own_ms + s.child_ms;
            }
        }
        let mut usage = TreeUsage::default();
        for m in &members {
            let key = (m.stat.pid, m.stat.start);
            let prev = self.seen.get(&key).copied();
            let (own0, child0) = prev.map_or((0.0, 0.0), |p| (p.own_ms, p.child_ms));
            let grew_child = (m.child_ms - child0).max(0.0);
            let credit = self.credit.get(&m.stat.pid).copied().unwrap_or(0.0);
            let used = credit.min(grew_child);
            if used > 0.0 {
                self.credit.insert(m.stat.pid, credit - used);
            }
            self.cpu_ms += (m.own_ms - own0).max(0.0) + (grew_child - used);
            self.seen
                .insert(key, Seen { ppid: m.stat.ppid, own_ms: own0.max(m.own_ms), child_ms: child0.max(m.child_ms) });
            usage.rss_bytes += m.stat.rss_pages * page;
            usage.procs += 1;
        }
        // A parent that is gone takes its credit with it: nothing can show those children now.
        self.credit.retain(|pid, c| *c > 0.0 && members.iter().any(|m| m.stat.pid == *pid));
        usage.cpu_ms = self.cpu_ms;
        Some(usage)
    }
}

/// The run time of a process's live threads from their `schedstat` (first field, ns), in ms;
/// `None` when the kernel does not provide it.
pub fn threads_run_ms(proc_root: &Path, pid: u32) -> Option<f64> {
    let tasks = std::fs::read_dir(proc_root.join(pid.to_string()).join("task")).ok()?;
    let mut ns = 0u64;
    let mut any = false;
    for t in tasks.flatten() {
        if let Some(v) = std::fs::read_to_string(t.path().join("schedstat"))
            .ok()
            .and_then(|s| s.split_whitespace().next().and_then(|f| f.parse::<u64>().ok()))
        {
            ns += v;
            any = true;
        }
    }
    any.then_some(ns as f64 / 1e6)
}

/// Host busy CPU time in ms from a `/proc/stat` text (rule 4).
pub fn host_busy_ms(stat: &str, ticks_per_s: f64) -> Option<f64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
    if f.len() < 4 {
        return None;
    }
    let total: u64 = f.iter().take(8).sum();
    let idle = f[3] + f.get(4).copied().unwrap_or(0) + f.get(7).copied().unwrap_or(0);
    Some(total.saturating_sub(idle) as f64 * 1000.0 / ticks_per_s)
}

/// CPU time, ms, of every child of this process that has been waited for
/// (`getrusage(RUSAGE_CHILDREN)`): after the run's child is reaped, the difference from a
/// reading taken before it started is its whole tree's CPU time, threads and waited-for
/// descendants included.
pub fn children_cpu_ms() -> f64 {
    // SAFETY: getrusage writes only into the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    if rc != 0 {
        return 0.0;
    }
    let ms = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    ms(ru.ru_utime) + ms(ru.ru_stime)
}
