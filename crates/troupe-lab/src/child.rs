//! Supervising one child process of a run: started in its own process group with stdout and
//! stderr going to files, waited for with a deadline, and stopped on request (Ctrl-C) with
//! SIGTERM then SIGKILL to the whole group, so a peer's `run` script and the VM it starts go
//! together. After the child ends, stragglers left in its group are killed.

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use crate::error::{Error, ErrorKind, Result};

/// A request to stop, shared between the Ctrl-C handler and the running lab.
#[derive(Debug, Clone, Default)]
pub struct Stop(Arc<AtomicBool>);

impl Stop {
    /// A fresh, unset flag.
    pub fn new() -> Stop {
        Stop::default()
    }

    /// Asks everything watching this flag to stop.
    pub fn trigger(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether a stop was asked for.
    pub fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// How a child ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// It exited on its own with this status.
    Exited(ExitStatus),
    /// It ran past its deadline and was killed.
    TimedOut(Duration),
    /// A stop was asked for and it was stopped.
    Interrupted,
}

impl Ending {
    /// `None` for a clean exit 0, else why not.
    pub fn failure(&self) -> Option<String> {
        match self {
            Ending::Exited(s) if s.success() => None,
            Ending::Exited(s) => Some(match (s.code(), s.signal()) {
                (Some(c), _) => format!("the child exited with status {c}"),
                (None, Some(sig)) => format!("the child was killed by signal {sig}"),
                _ => "the child ended abnormally".into(),
            }),
            Ending::TimedOut(d) => {
                Some(format!("the child hung past its deadline of {} s and was killed", d.as_secs()))
            }
            Ending::Interrupted => Some("interrupted (Ctrl-C)".into()),
        }
    }
}

/// What to start.
#[derive(Debug, Clone)]
pub struct ChildSpec {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Where stdout goes.
    pub stdout: PathBuf,
    /// Where stderr goes.
    pub stderr: PathBuf,
}

fn open_out(p: &Path) -> Result<std::fs::File> {
    std::fs::File::create(p).map_err(|e| Error::io(p, e))
}

/// Runs `spec` to its end, its deadline or a stop request, whichever comes first.
pub fn run(spec: &ChildSpec, deadline: Duration, stop: &Stop) -> Result<Ending> {
    run_observed(spec, deadline, stop, |_, _| {})
}

/// [`run`], calling `started` with the child's pid and the wall-clock µs taken just before it
/// was spawned, as soon as it is started (the lab's meter follows its process tree from there).
pub fn run_observed(
    spec: &ChildSpec,
    deadline: Duration,
    stop: &Stop,
    started: impl FnOnce(u32, i64),
) -> Result<Ending> {
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(open_out(&spec.stdout)?)
        .stderr(open_out(&spec.stderr)?)
        .process_group(0);
    if let Some(d) = &spec.cwd {
        cmd.current_dir(d);
    }
    let spawned_us = crate::events::writer::now_us();
    let mut child =
        cmd.spawn().map_err(|e| Error::new(ErrorKind::Spawn { program: spec.program.clone(), cause: e }))?;
    let pgid = Pid::from_raw(child.id() as i32);
    started(child.id(), spawned_us);
    let (tx, rx) = mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let started = Instant::now();
    let tick = Duration::from_millis(50);
    let ending = loop {
        match rx.recv_timeout(tick) {
            Ok(Ok(status)) => break Ending::Exited(status),
            Ok(Err(e)) => return Err(Error::other(format!("waiting for the child failed: {e}"))),
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Error::other("the child's waiter thread died")),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if stop.is_set() {
            // Give it a chance to flush its events, then make sure.
            let _ = killpg(pgid, Signal::SIGTERM);
            if rx.recv_timeout(Duration::from_secs(5)).is_err() {
                let _ = killpg(pgid, Signal::SIGKILL);
                let _ = rx.recv();
            }
            break Ending::Interrupted;
        }
        if started.elapsed() > deadline {
            let _ = killpg(pgid, Signal::SIGKILL);
            let _ = rx.recv();
            break Ending::TimedOut(deadline);
        }
    };
    let _ = waiter.join();
    // Stragglers in the child's group (a VM its script started) go with it.
    let _ = killpg(pgid, Signal::SIGKILL);
    Ok(ending)
}
