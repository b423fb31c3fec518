//! The `memory` benchmark: spawn `n` idle actors, report resident memory per actor and the
//! spawn time, then stop them all.
//!
//! Why a child process: the resident-set delta of a process that already ran other benchmarks
//! (or another runtime's memory run) is polluted by what its allocator kept. So the driver
//! re-executes the current binary once per runtime with [`CHILD_ENV`] set to
//! `memory:<runtime>:<n>` and the same command-line arguments (or
//! [`crate::MicroOptions::child_args`]). The child's `main` reaches [`crate::run`] as usual;
//! `run` sees the variable first thing, measures only that, prints the result lines on its
//! output and returns. The parent reads the child's JSON lines from its stdout and ignores any
//! other line (a test harness's chatter, say).
//!
//! Rules: (1) resident memory is read from `/proc/self/status` (`VmRSS`) right before the first
//! spawn and after every actor has started; (2) `bytes_per_actor` = (after - before) / n (signed:
//! a negative value is an artefact, shown as such) and
//! `spawn_ms` = time from the first spawn until all have started; (3) no warm-up and reps=1:
//! a warm-up would leave freed memory in the allocator and hide the cost being measured;
//! (4) for runtimes that report it (Troupe), `bytes_per_actor_after_stop` = (resident after all
//! stopped and the allocator was asked to return its free pages - before) / n: glibc's
//! `malloc_trim`, and the binary's own allocator through [`set_release_hook`] (the `troupe`
//! binary: mimalloc's `mi_collect(true)`); what is left is what the runtime or the allocator
//! keeps of the peak; (5) for those runtimes, a second round of the same spawn-and-stop follows, and
//! `bytes_per_actor_leaked` = (resident after the second round - after the first) / n, the leak
//! check: memory an actor leaves behind grows it by that much per round, while pages the
//! allocator keeps from the first round are reused by the second.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::bench::{Bench, Record};
use crate::util::ITERATION_DEADLINE;
use crate::{Error, ErrorKind};

/// The environment variable that turns a process into a `memory` child:
/// `TROUPE_MICRO_CHILD=memory:<runtime>:<n>`, e.g. `memory:kameo:1000000`.
pub const CHILD_ENV: &str = "TROUPE_MICRO_CHILD";

/// Reads the resident set around the spawn of the idle actors.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    before: Option<u64>,
    after: Option<u64>,
    released: Option<u64>,
    again: Option<u64>,
}

impl Probe {
    /// Records the resident set before the first spawn.
    pub(crate) fn before(&mut self) {
        self.before = rss_bytes();
    }

    /// Records the resident set once every actor has started.
    pub(crate) fn after(&mut self) {
        self.after = rss_bytes();
    }

    /// Records the resident set after every actor has stopped and its refs are dropped, once
    /// the C allocator has been asked to return free pages (glibc keeps them otherwise, which
    /// would hide whether the runtime released anything).
    pub(crate) fn released(&mut self) {
        self.released = trimmed_rss_bytes();
    }

    /// Records the resident set after a second round of the same spawn-and-stop (rule 5).
    pub(crate) fn released_again(&mut self) {
        self.again = trimmed_rss_bytes();
    }
}

static RELEASE_HOOK: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Rule 4: what the measurement calls, besides glibc's `malloc_trim`, to make the process's
/// global allocator return its free pages before reading the resident set after a stop. A
/// binary with its own allocator sets it once at start (later calls are ignored).
///
/// ```
/// troupe_micro::set_release_hook(|| {});
/// ```
pub fn set_release_hook(f: fn()) {
    let _ = RELEASE_HOOK.set(f);
}

/// The resident set once the allocators have been asked to return their free pages.
fn trimmed_rss_bytes() -> Option<u64> {
    if let Some(f) = RELEASE_HOOK.get() {
        f();
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap pages; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
    rss_bytes()
}

/// This process's resident set size in bytes (Linux `VmRSS`), if it can be read.
pub(crate) fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The request this process was started with, when it is a `memory` child.
pub(crate) fn child_request() -> Option<String> {
    std::env::var(CHILD_ENV).ok()
}

/// The child side: parse the request, measure, print the lines.
pub(crate) fn child_main(spec: &str, out: &mut dyn Write) -> Result<(), Error> {
    let bad = || {
        Error::new(
            ErrorKind::Usage,
            format!("{CHILD_ENV}={spec}: expected memory:<runtime>:<n>, e.g. memory:kameo:1000"),
        )
    };
    let mut parts = spec.split(':');
    let (Some("memory"), Some(rt), Some(n), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let n: u64 = n.parse().map_err(|_| bad())?;
    for r in measure(rt, n)? {
        writeln!(out, "{}", r.to_json())
            .and_then(|_| out.flush())
            .map_err(|e| Error::new(ErrorKind::Failed, format!("cannot write result: {e}")))?;
    }
    Ok(())
}

/// Measures `memory` for an in-process runtime in this process.
pub(crate) fn measure(runtime: &str, n: u64) -> Result<Vec<Record>, Error> {
    if n == 0 {
        return Err(Error::new(ErrorKind::Usage, "memory: n must be at least 1"));
    }
    let mut probe = Probe::default();
    let spawn = match runtime {
        "kameo" => crate::kameo::memory::spawn_idle(n, &mut probe)?,
        "ractor" => crate::ractor::memory::spawn_idle(n, &mut probe)?,
        "actix" => crate::actix::memory::spawn_idle(n, &mut probe)?,
        "troupe" => crate::troupe_rt::memory::spawn_idle(n, &mut probe)?,
        other => return Err(crate::unknown_runtime(other)),
    };
    let (Some(before), Some(after)) = (probe.before, probe.after) else {
        return Err(Error::new(
            ErrorKind::Failed,
            "memory: cannot read resident memory (no VmRSS in /proc/self/status)",
        ));
    };
    let params: std::collections::BTreeMap<String, u64> =
        [("n".to_string(), n), ("reps".to_string(), 1)].into_iter().collect();
    // Signed on purpose: a resident set that shrank while the actors were spawned (the
    // allocator returned pages) is a measurement artefact to show, not a clamped 0 that would
    // read as "actors cost nothing".
    let delta = |to: u64| (to as f64 - before as f64) / n as f64;
    let per_actor = delta(after);
    let mut records = Vec::new();
    if let Some(released) = probe.released {
        // What stays resident per actor after all stopped (rule 4): near 0 means no leak.
        let kept = delta(released);
        records.push(Record {
            bench: Bench::Memory.name().into(),
            runtime: runtime.into(),
            metric: "bytes_per_actor_after_stop".into(),
            value: (kept * 10.0).round() / 10.0,
            unit: "B".into(),
            params: params.clone(),
            ..Record::default()
        });
        if let Some(again) = probe.again {
            // Rule 5: growth from one round of spawn-and-stop to the next.
            let leaked = (again as f64 - released as f64) / n as f64;
            records.push(Record {
                bench: Bench::Memory.name().into(),
                runtime: runtime.into(),
                metric: "bytes_per_actor_leaked".into(),
                value: (leaked * 10.0).round() / 10.0,
                unit: "B".into(),
                params: params.clone(),
                ..Record::default()
            });
        }
    }
    records.extend(vec![
        Record {
            bench: Bench::Memory.name().into(),
            runtime: runtime.into(),
            metric: "bytes_per_actor".into(),
            value: (per_actor * 10.0).round() / 10.0,
            unit: "B".into(),
            params: std::collections::BTreeMap::clone(&params),
            ..Record::default()
        },
        Record {
            bench: Bench::Memory.name().into(),
            runtime: runtime.into(),
            metric: "spawn_ms".into(),
            value: (spawn.as_secs_f64() * 1e6).round() / 1e3,
            unit: "ms".into(),
            params,
            ..Record::default()
        },
    ]);
    Ok(records)
}

/// The parent side: runs `memory` for `runtime` in a fresh child process and returns the
/// child's result lines.
pub(crate) fn run_child(runtime: &str, n: u64, child_args: Option<&[String]>) -> Result<Vec<Record>, Error> {
    let failed = |m: String| Error::new(ErrorKind::Failed, format!("{runtime} memory: {m}"));
    if child_request().is_some() {
        return Err(failed(format!("{CHILD_ENV} is set here already; refusing to nest children")));
    }
    let exe = std::env::current_exe().map_err(|e| failed(format!("no current executable: {e}")))?;
    let args: Vec<String> = match child_args {
        Some(a) => a.to_vec(),
        None => std::env::args().skip(1).collect(),
    };
    let mut child = Command::new(&exe)
        .args(&args)
        .env(CHILD_ENV, format!("memory:{runtime}:{n}"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| failed(format!("cannot start {}: {e}", exe.display())))?;
    let stdout = child.stdout.take().expect("stdout is piped");
    let reader =
        std::thread::spawn(move || BufReader::new(stdout).lines().map_while(Result::ok).collect::<Vec<String>>());
    let deadline = Instant::now() + ITERATION_DEADLINE;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(failed(format!("child did not finish within {ITERATION_DEADLINE:?}")));
            }
            Err(e) => return Err(failed(format!("cannot wait for the child: {e}"))),
        }
    };
    let lines = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(failed(format!("child exited with {status}")));
    }
    let records: Vec<Record> = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Record>(l).ok())
        .filter(|r| r.bench == "memory" && r.runtime == runtime)
        .collect();
    if records.is_empty() {
        return Err(failed(format!(
            "the child ({} {}) printed no result line; its main must call troupe_micro::run \
             first thing so that {CHILD_ENV} is handled",
            exe.display(),
            args.join(" ")
        )));
    }
    Ok(records)
}
