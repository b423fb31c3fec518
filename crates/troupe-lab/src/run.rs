//! One lab run end to end: prepare the run folder (config, schedule, manifest), build and start
//! the runtime's SUB as a child process with the environment contract (TROUPE_CONFIG,
//! TROUPE_SCHEDULE, TROUPE_EVENTS, TROUPE_RUN_ID), wait for it under a deadline, check and merge
//! its events, then write statistics, CSV, report and the final manifest.
//!
//! Rules:
//! 1. An unwritable or already used `--out` fails before anything starts.
//! 2. Troupe and peers are run the same way: always a child process, same files, same checks.
//! 3. A run is `ok` only if the child exited 0 before `warmup_s + duration_s + 60 s`, every
//!    event line is well formed, `ready`, `run_finished` and one `throughput` per window
//!    second are present; otherwise it is `failed` with the reason, and `stderr.txt` is kept.
//! 4. Ctrl-C (the [`Stop`] flag) stops the child, keeps what was recorded and marks the
//!    manifest `interrupted: true`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child::{self, ChildSpec, Ending, Stop};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::machine::{self, Machine};
use crate::manifest::{Manifest, Status};
use crate::{analysis, events, schedule};

/// Slack added to warm-up plus window before a child counts as hung.
pub const DEADLINE_SLACK: Duration = Duration::from_secs(60);

/// How to start the Troupe SUB: this program with these arguments.
#[derive(Debug, Clone)]
pub struct TroupeExe {
    /// The `troupe` binary.
    pub program: PathBuf,
    /// Arguments before nothing else, e.g. `["lab", "exec", "scp"]`.
    pub args: Vec<String>,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The resolved config (it names the workload).
    pub config: Config,
    /// `troupe` or a peer runtime name.
    pub runtime: String,
    /// The run folder to create.
    pub out_dir: PathBuf,
    /// How to start the Troupe SUB.
    pub troupe: TroupeExe,
    /// The project root, needed for peers; also gives the git commit.
    pub project_root: Option<PathBuf>,
    /// The lab's command line, recorded in the manifest.
    pub command: Vec<String>,
    /// The run id (defaults to the folder name).
    pub run_id: Option<String>,
}

/// How a run went.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run folder.
    pub dir: PathBuf,
    /// The final manifest.
    pub manifest: Manifest,
    /// Statistics, when the events could be read.
    pub stats: Option<analysis::RunStats>,
}

/// Checks that `dir` can be used as a new run folder: creatable, writable, not a run already.
pub fn prepare_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    if dir.join(crate::manifest::FILE).exists() {
        return Err(Error::io(
            dir,
            std::io::Error::new(std::io::ErrorKind::AlreadyExists, "already holds a run; choose another --out"),
        ));
    }
    let probe = dir.join(".write-probe");
    std::fs::write(&probe, b"").map_err(|e| Error::io(&probe, e))?;
    std::fs::remove_file(&probe).map_err(|e| Error::io(&probe, e))
}

/// Builds a peer's program: `peers/<rt>/<workload>/build`. Exit 3 is a missing toolchain.
fn build_peer(root: &Path, runtime: &str, workload: &str, dir: &Path, stop: &Stop) -> Result<PathBuf> {
    let wdir = root.join("peers").join(runtime).join(workload);
    let build = wdir.join("build");
    let run = wdir.join("run");
    if !build.is_file() || !run.is_file() {
        return Err(Error::new(ErrorKind::Unsupported(format!(
            "runtime {runtime:?} has no {workload} program ({} and run are missing)",
            build.display()
        ))));
    }
    let spec = ChildSpec {
        program: build,
        args: vec![],
        env: vec![],
        cwd: Some(wdir.clone()),
        stdout: dir.join("build-stdout.txt"),
        stderr: dir.join("build-stderr.txt"),
    };
    match child::run(&spec, Duration::from_secs(1800), stop)? {
        Ending::Exited(s) if s.success() => Ok(run),
        Ending::Exited(s) if s.code() == Some(3) => {
            let msg = std::fs::read_to_string(dir.join("build-stderr.txt")).unwrap_or_default();
            Err(Error::new(ErrorKind::MissingToolchain { runtime: runtime.into(), message: msg.trim().to_string() }))
        }
        other => Err(Error::other(format!(
            "building the {runtime} {workload} program failed ({}); see {}",
            other.failure().unwrap_or_default(),
            dir.join("build-stderr.txt").display()
        ))),
    }
}

/// Performs one run (rules 1-4).
pub fn run(req: &RunRequest, stop: &Stop) -> Result<RunOutcome> {
    let dir = req.out_dir.clone();
    prepare_dir(&dir)?;
    let workload = req.config.workload();
    let run_id = req
        .run_id
        .clone()
        .unwrap_or_else(|| dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into()));
    let cfg_json = req.config.to_json();
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, format!("{cfg_json}\n")).map_err(|e| Error::io(&config_path, e))?;
    let schedule_path = dir.join("schedule.jsonl");
    let actions = analysis::schedule_for(&req.config)?;
    schedule::write(&schedule_path, &actions)?;

    let git = machine::git_commit_near(req.project_root.as_deref());
    let mut manifest = Manifest {
        format: 1,
        run_id: run_id.clone(),
        workload: workload.into(),
        runtime: req.runtime.clone(),
        runtime_version: if req.runtime == "troupe" {
            format!("troupe {}", env!("CARGO_PKG_VERSION"))
        } else {
            "unknown".into()
        },
        lab_version: env!("CARGO_PKG_VERSION").into(),
        config: cfg_json,
        seed: req.config.int("seed") as u64,
        machine: Machine::detect(),
        git_commit: git.as_ref().map(|g| g.0.clone()),
        git_dirty: git.as_ref().map(|g| g.1),
        command: req.command.clone(),
        started_at: machine::rfc3339(machine::now_unix_ms()),
        ended_at: None,
        interrupted: false,
        status: Status::Running,
        reason: None,
        loadavg_start: machine::loadavg(),
        loadavg_end: None,
    };
    manifest.write(&dir)?;

    let (program, args) = if req.runtime == "troupe" {
        (req.troupe.program.clone(), req.troupe.args.clone())
    } else {
        let root = req.project_root.as_deref().ok_or_else(|| Error::new(ErrorKind::NoProjectRoot))?;
        match build_peer(root, &req.runtime, workload, &dir, stop) {
            Ok(p) => (p, vec![]),
            Err(e) => {
                finish_failed(&mut manifest, &dir, e.to_string(), stop.is_set())?;
                return Err(e);
            }
        }
    };
    let raw_events = dir.join("events.raw.jsonl");
    let spec = ChildSpec {
        program,
        args,
        env: vec![
            ("TROUPE_CONFIG".into(), config_path.display().to_string()),
            ("TROUPE_SCHEDULE".into(), schedule_path.display().to_string()),
            ("TROUPE_EVENTS".into(), raw_events.display().to_string()),
            ("TROUPE_RUN_ID".into(), run_id),
        ],
        cwd: None,
        stdout: dir.join("stdout.txt"),
        stderr: dir.join("stderr.txt"),
    };
    let window = Duration::from_secs((req.config.int("warmup_s") + req.config.int("duration_s")) as u64);
    let ending = child::run(&spec, window + DEADLINE_SLACK, stop)?;
    let mut reason = ending.failure();
    manifest.interrupted = matches!(ending, Ending::Interrupted);

    // Check and merge the events (a malformed line fails the run, rule 3).
    let merged = dir.join("events.jsonl");
    let mut stats = None;
    if !raw_events.exists() {
        std::fs::write(&raw_events, b"").map_err(|e| Error::io(&raw_events, e))?;
    }
    match events::merge(&[&raw_events], &merged) {
        Ok(evs) => {
            let _ = std::fs::remove_file(&raw_events);
            if let Some(v) = evs.iter().find(|e| e.ev == "run_started").and_then(|e| e.raw.get("version")) {
                if let Some(v) = v.as_str() {
                    manifest.runtime_version = v.to_string();
                }
            }
            let st = analysis::RunStats::compute(&req.config, &evs, &actions, None);
            if reason.is_none() {
                reason = st.completeness_problem(&req.config);
            }
            stats = Some(st);
        }
        Err(e) => {
            let _ = std::fs::remove_file(&merged);
            reason.get_or_insert_with(|| format!("malformed events: {e}"));
        }
    }
    manifest.status = if reason.is_some() { Status::Failed } else { Status::Ok };
    manifest.reason = reason;
    manifest.ended_at = Some(machine::rfc3339(machine::now_unix_ms()));
    manifest.loadavg_end = machine::loadavg();
    manifest.write(&dir)?;
    if let Some(st) = &stats {
        crate::report::write_run_outputs(&dir, &manifest, &req.config, st)?;
    }
    Ok(RunOutcome { dir, manifest, stats })
}

fn finish_failed(m: &mut Manifest, dir: &Path, reason: String, interrupted: bool) -> Result<()> {
    m.status = Status::Failed;
    m.reason = Some(reason);
    m.interrupted = interrupted;
    m.ended_at = Some(machine::rfc3339(machine::now_unix_ms()));
    m.write(dir)
}
