//! One lab run end to end: prepare the run folder (config, schedule, manifest), build and start
//! the runtime's SUB as a child process with the environment contract (TROUPE_CONFIG,
//! TROUPE_SCHEDULE, TROUPE_EVENTS, TROUPE_RUN_ID, and TROUPE_OBSERVE_LISTEN from the meter:
//! rule 5 of [`crate::meter::sampler`]), wait for it under a deadline, check and merge
//! its events, then write statistics, CSV, report and the final manifest.
//!
//! Rules:
//! 1. An unwritable or already used `--out` fails before anything starts.
//! 2. Troupe and peers are run the same way: always a child process, same files, same checks.
//! 3. A run is `ok` only if the child exited 0 before the workload's expected duration plus
//!    the slack (60 s by default), every event line is well formed, and the workload finds
//!    the events complete ([`RunAnalysis::completeness_problem`]); otherwise it is `failed`
//!    with the reason, and `stderr.txt` is kept. An `ok` run whose statistics count failures
//!    ([`RunAnalysis::degradations`]) is `degraded` instead, the failures as its reason.
//! 4. Ctrl-C (the [`Stop`] flag) stops the child, keeps what was recorded and marks the
//!    manifest `interrupted: true`.
//! 5. Once the run folder exists, every way the run can end leaves a final manifest in it: a
//!    peer that cannot be built or started is a `failed` run with the reason (and the build's
//!    output) kept, even when the error is also returned.
//! 6. A schedule given in [`RunRequest::schedule_file`] is copied byte for byte (a comparison
//!    hands every runtime the same file); otherwise it is computed from the config.
//! 7. A config whose `events` key is an `amqp://` URL gets its events through RabbitMQ: the
//!    lab's collector binds a queue to the run id on the exchange `troupe.events` before the
//!    child starts (an unreachable broker fails the run within 5 s, before anything starts),
//!    the child gets the URL in `TROUPE_EVENTS`, and the collected lines go through the same
//!    checks and merge as a file's. Lines lost on the way fail the run.
//! 8. A config with `[net_faults]` at `layer = "network"` runs in the network layer's
//!    namespaces ([`crate::netlayer`]): they are made before the child starts (a failure there
//!    fails the run), the child runs inside the coordinator's namespace with `TROUPE_NETNS` and
//!    a schedule of the workload's own lines, the layer's controller carries out the network
//!    lines in the hub and its events are merged with the run's; its namespaces are removed when
//!    the child has ended.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::child::{ChildSpec, Ending, Stop};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::machine::{self, Machine};
use crate::manifest::{Manifest, Status};
use crate::peer::{self, PreparedPeer};
use crate::workload::{schedule_of, RunAnalysis, Workload};
use crate::{events, schedule};

/// How long the RabbitMQ collector may take to drain after the child ended.
const AMQP_DRAIN: Duration = Duration::from_secs(15);

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
    /// The workload, resolved once for the run.
    pub workload: &'static dyn Workload,
    /// The resolved config (validated against the workload's keys).
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
    /// A schedule file to copy into the run folder instead of computing one (rule 6).
    pub schedule_file: Option<PathBuf>,
    /// A peer built beforehand ([`peer::prepare`]); when `None` a peer is built now.
    pub peer: Option<PreparedPeer>,
    /// Slack added to warm-up plus window before the child counts as hung.
    pub deadline_slack: Duration,
}

impl RunRequest {
    /// A request with the defaults: run id from the folder name, schedule computed, peer built
    /// now, [`DEADLINE_SLACK`].
    pub fn new(
        workload: &'static dyn Workload,
        config: Config,
        runtime: &str,
        out_dir: PathBuf,
        troupe: TroupeExe,
    ) -> RunRequest {
        RunRequest {
            workload,
            config,
            runtime: runtime.into(),
            out_dir,
            troupe,
            project_root: None,
            command: Vec::new(),
            run_id: None,
            schedule_file: None,
            peer: None,
            deadline_slack: DEADLINE_SLACK,
        }
    }
}

/// How a run went.
#[derive(Debug)]
pub struct RunOutcome {
    /// The run folder.
    pub dir: PathBuf,
    /// The final manifest.
    pub manifest: Manifest,
    /// Statistics, when the events could be read.
    pub stats: Option<Box<dyn RunAnalysis>>,
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

/// The config as the run folder records it (config.json, manifest): an `events` URL keeps its
/// user but not its password (the child gets the URL itself in `TROUPE_EVENTS`).
fn recorded_config(cfg: &Config) -> serde_json::Value {
    let mut v = cfg.to_json();
    if let Some(serde_json::Value::String(url)) = v.get_mut("events") {
        *url = crate::events::amqp::redact(url);
    }
    v
}

/// The lab's command line as the manifest records it: passwords in `amqp://` URLs hidden.
fn recorded_command(args: &[String]) -> Vec<String> {
    args.iter()
        .map(|a| match a.find("amqp://") {
            Some(i) => format!("{}{}", &a[..i], crate::events::amqp::redact(&a[i..])),
            None => a.clone(),
        })
        .collect()
}

/// Performs one run (rules 1-7), in three phases: [`prepare`] the folder, [`execute`] the
/// system under test, [`analyse`] what it recorded. Each phase hands the next one value.
pub fn run(req: &RunRequest, stop: &Stop) -> Result<RunOutcome> {
    let prepared = prepare(req)?;
    let executed = execute(req, prepared, stop)?;
    analyse(req, executed)
}

/// What [`prepare`] made: the run folder with its config, schedule and `running` manifest.
#[derive(Debug)]
pub struct Prepared {
    /// The run folder.
    pub dir: PathBuf,
    /// The run id.
    pub run_id: String,
    /// `config.json` in the folder.
    pub config_path: PathBuf,
    /// `schedule.jsonl` in the folder.
    pub schedule_path: PathBuf,
    /// The schedule it holds.
    pub actions: Vec<schedule::FaultAction>,
    /// The manifest as written (status `running`).
    pub manifest: Manifest,
}

/// What [`execute`] left: the prepared run, where the child's events are, and why the run
/// failed if it did.
#[derive(Debug)]
pub struct Executed {
    /// The prepared run (its manifest updated with the peer's version and settings).
    pub prepared: Prepared,
    /// The child's events, before checking and merging.
    pub raw_events: PathBuf,
    /// Why the run failed while it ran, if it did.
    pub failure: Option<String>,
}

/// The run id a request gets: its own, or the folder's name.
fn run_id_of(req: &RunRequest) -> String {
    req.run_id.clone().unwrap_or_else(|| {
        req.out_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "run".into())
    })
}

/// Writes `config.json` and `schedule.jsonl` (copied, rule 6, or computed) into a new run
/// folder; the paths and the schedule.
fn write_inputs(req: &RunRequest, dir: &Path) -> Result<(PathBuf, PathBuf, Vec<schedule::FaultAction>)> {
    let config_path = dir.join("config.json");
    std::fs::write(&config_path, format!("{}\n", recorded_config(&req.config)))
        .map_err(|e| Error::io(&config_path, e))?;
    let schedule_path = dir.join("schedule.jsonl");
    let actions = match &req.schedule_file {
        Some(src) => {
            std::fs::copy(src, &schedule_path).map_err(|e| Error::io(src, e))?;
            schedule::read(&schedule_path)?
        }
        None => {
            let actions = schedule_of(req.workload, &req.config);
            schedule::write(&schedule_path, &actions)?;
            actions
        }
    };
    Ok((config_path, schedule_path, actions))
}

/// The manifest of a run starting now (status `running`).
fn starting_manifest(req: &RunRequest, run_id: String) -> Manifest {
    let git = machine::git_commit_near(req.project_root.as_deref());
    Manifest {
        format: 1,
        run_id,
        workload: req.config.workload().into(),
        runtime: req.runtime.clone(),
        runtime_version: match (&req.peer, req.runtime.as_str()) {
            (Some(p), _) => p.version.clone(),
            (None, "troupe") => format!("troupe {}", env!("CARGO_PKG_VERSION")),
            (None, _) => "unknown".into(),
        },
        settings: match (&req.peer, req.runtime.as_str()) {
            (Some(p), _) => p.settings.clone(),
            (None, "troupe") => peer::troupe_settings(),
            (None, _) => Vec::new(),
        },
        lab_version: env!("CARGO_PKG_VERSION").into(),
        config: recorded_config(&req.config),
        seed: req.config.int("seed") as u64,
        machine: Machine::detect(),
        git_commit: git.as_ref().map(|g| g.0.clone()),
        git_dirty: git.as_ref().map(|g| g.1),
        command: recorded_command(&req.command),
        started_at: machine::rfc3339(machine::now_unix_ms()),
        ended_at: None,
        interrupted: false,
        status: Status::Running,
        reason: None,
        // Timed first, so its 100 ms of spinning stays out of the run's CPU counters.
        core_rtt_start_ns: machine::core_round_trip_ns(),
        loadavg_start: machine::loadavg(),
        loadavg_end: None,
        cpu_start: machine::CpuTimes::now(),
        load: None,
    }
}

/// The network layer's own events, merged with the run's (crate::netlayer rule 7).
const NET_EVENTS: &str = "events.net.jsonl";

/// A run's network layer: its namespaces, `netns.json` and the schedule its program gets.
struct NetRun {
    topo: std::sync::Arc<crate::netlayer::ns::Topology>,
    file: PathBuf,
    schedule: PathBuf,
}

/// Makes the run's namespaces (crate::netlayer rules 3-4): `netns.json` and
/// `schedule.sut.jsonl` (the workload's own lines) in the run folder.
fn net_setup(req: &RunRequest, dir: &Path, actions: &[schedule::FaultAction]) -> Result<NetRun> {
    let nodes = req.workload.net_nodes(&req.config).map_err(|why| {
        Error::new(ErrorKind::Unsupported(format!(
            "net_faults: workload {} has no network nodes: {why}",
            req.config.workload()
        )))
    })?;
    let delay = req
        .config
        .net_faults()
        .and_then(|nf| nf.delay_ms)
        .filter(|d| d[1] > 0)
        .map(|d| (d, req.config.int("seed") as u64));
    let topo = crate::netlayer::ns::Topology::create(&nodes, delay)
        .map_err(|e| Error::other(format!("setting up the network layer's namespaces: {e}")))?;
    let file = dir.join(crate::netlayer::FILE);
    let text = serde_json::to_string_pretty(topo.file()).map_err(|e| Error::other(e.to_string()))?;
    std::fs::write(&file, text + "\n").map_err(|e| Error::io(&file, e))?;
    let schedule = dir.join("schedule.sut.jsonl");
    let own: Vec<schedule::FaultAction> =
        actions.iter().filter(|a| !crate::netfaults::is_net_kind(&a.kind)).cloned().collect();
    schedule::write(&schedule, &own)?;
    Ok(NetRun { topo: std::sync::Arc::new(topo), file, schedule })
}

/// Phase 1 (rules 1, 6): checks the request, makes the run folder, writes the config, the
/// schedule and a `running` manifest.
pub fn prepare(req: &RunRequest) -> Result<Prepared> {
    // A peer runtime cannot apply `[net_faults]`: refused before anything starts.
    crate::netfaults::check_runtime(&req.config, &req.runtime, req.project_root.as_deref())?;
    let dir = req.out_dir.clone();
    prepare_dir(&dir)?;
    let run_id = run_id_of(req);
    let (config_path, schedule_path, actions) = write_inputs(req, &dir)?;
    let manifest = starting_manifest(req, run_id.clone());
    manifest.write(&dir)?;
    Ok(Prepared { dir, run_id, config_path, schedule_path, actions, manifest })
}

/// Phase 2 (rules 2-5, 7): builds the peer if needed, starts the event collector and the child
/// under its deadline, and waits for both. A run that cannot start is recorded as failed and
/// returned as an error.
pub fn execute(req: &RunRequest, mut p: Prepared, stop: &Stop) -> Result<Executed> {
    let (dir, manifest) = (p.dir.clone(), &mut p.manifest);
    let (program, args) = if req.runtime == "troupe" {
        (req.troupe.program.clone(), req.troupe.args.clone())
    } else if let Some(prep) = &req.peer {
        (prep.program.clone(), vec![])
    } else {
        let prepared = match req.project_root.as_deref() {
            Some(root) => peer::prepare(root, &req.runtime, req.config.workload(), &dir, stop),
            None => Err(Error::new(ErrorKind::NoProjectRoot)),
        };
        match prepared {
            Ok(prep) => {
                manifest.runtime_version = prep.version;
                manifest.settings = prep.settings;
                (prep.program, vec![])
            }
            Err(e) => {
                finish_failed(manifest, &dir, e.to_string(), stop.is_set())?;
                return Err(e);
            }
        }
    };
    // Rule 8: the network layer's namespaces, the program started inside the coordinator's.
    let net = match crate::netlayer::wanted(&req.config) {
        true => match net_setup(req, &dir, &p.actions) {
            Ok(n) => Some(n),
            Err(e) => {
                finish_failed(manifest, &dir, e.to_string(), stop.is_set())?;
                return Err(e);
            }
        },
        false => None,
    };
    let (program, args) = match &net {
        Some(n) => {
            let mut a = vec!["netns".to_string(), "exec".into(), n.topo.file().coordinator.netns.clone()];
            a.push(program.display().to_string());
            a.extend(args);
            (PathBuf::from("ip"), a)
        }
        None => (program, args),
    };
    let raw_events = dir.join("events.raw.jsonl");
    // Rule 7: events through RabbitMQ when the config says so; the collector is bound to the
    // run id before the child starts, so no line is published unrouted.
    let amqp_url = match req.config.get("events") {
        Some(crate::config::Value::Str(u)) if u.starts_with("amqp://") => Some(u.clone()),
        _ => None,
    };
    let collector = match &amqp_url {
        Some(url) => match crate::events::amqp::Collector::start(url, &p.run_id, &raw_events) {
            Ok(c) => Some(c),
            Err(e) => {
                let e = Error::other(format!("events through RabbitMQ: {e}"));
                finish_failed(manifest, &dir, e.to_string(), stop.is_set())?;
                return Err(e);
            }
        },
        None => None,
    };
    let events_dest = amqp_url.clone().unwrap_or_else(|| raw_events.display().to_string());
    let spec = ChildSpec {
        program,
        args,
        env: vec![
            ("TROUPE_CONFIG".into(), p.config_path.display().to_string()),
            ("TROUPE_SCHEDULE".into(), net.as_ref().map_or(&p.schedule_path, |n| &n.schedule).display().to_string()),
            ("TROUPE_EVENTS".into(), events_dest),
            ("TROUPE_RUN_ID".into(), p.run_id.clone()),
            // The troupe binary, for peers that use the lab's helpers (the latency relay).
            ("TROUPE_EXE".into(), req.troupe.program.display().to_string()),
        ],
        cwd: None,
        stdout: dir.join("stdout.txt"),
        stderr: dir.join("stderr.txt"),
    };
    let mut spec = spec;
    let controller = net.as_ref().map(|n| {
        spec.env.push((crate::netlayer::ENV_NETNS.into(), n.file.display().to_string()));
        let net_events = dir.join(NET_EVENTS);
        crate::netlayer::control::Controller::start(
            std::sync::Arc::clone(&n.topo),
            &p.actions,
            raw_events.clone(),
            net_events,
            p.run_id.clone(),
            req.runtime.clone(),
        )
    });
    let window = req.workload.expected_duration(&req.config);
    // The runtime's metrics are read on the lab's loopback, which a child in a namespace is not
    // on (rule 5 of crate::meter::sampler).
    let observe = net.is_none();
    let ending = match crate::meter::sampler::run_child(
        &spec,
        window + req.deadline_slack,
        stop,
        &dir,
        &req.config,
        observe,
        &raw_events,
    ) {
        Ok(e) => e,
        Err(e) => {
            finish_failed(manifest, &dir, e.to_string(), stop.is_set())?;
            return Err(e);
        }
    };
    let mut failure = ending.failure();
    manifest.interrupted = matches!(ending, Ending::Interrupted);
    // The layer's counters are read and its namespaces removed once the program has ended.
    if let Some(c) = controller {
        c.finish();
    }
    drop(net);
    if let Some(c) = collector {
        // Every node's run_finished is the end of its lines; a node that died never sends it,
        // so the wait is bounded and the analysis names what is missing.
        match c.finish(1, AMQP_DRAIN) {
            Ok(st) if !st.all_finished && failure.is_none() => {
                failure = Some(format!(
                    "events through RabbitMQ: {} of {} nodes sent run_finished within {} s",
                    st.finished,
                    st.nodes,
                    AMQP_DRAIN.as_secs()
                ));
            }
            Ok(_) => {}
            Err(e) => {
                failure.get_or_insert_with(|| format!("events through RabbitMQ: {e}"));
            }
        }
    }
    Ok(Executed { prepared: p, raw_events, failure })
}

/// Phase 3 (rule 3): checks and merges the events, computes the statistics, judges the run,
/// writes the final manifest, `summary.json` and the workload's outputs.
pub fn analyse(req: &RunRequest, x: Executed) -> Result<RunOutcome> {
    let Executed { prepared: Prepared { dir, run_id, actions, mut manifest, .. }, raw_events, failure: mut reason } = x;
    let merged = dir.join("events.jsonl");
    let mut stats = None;
    let mut net_missed = Vec::new();
    if !raw_events.exists() {
        std::fs::write(&raw_events, b"").map_err(|e| Error::io(&raw_events, e))?;
    }
    // The meter's `energy` event for each `work` event (crate::meter::energy).
    if let Err(e) = crate::meter::energy::append_energy_events(&dir, &raw_events, &run_id, &req.runtime) {
        reason.get_or_insert_with(|| format!("energy meter: {e}"));
    }
    let net_events = dir.join(NET_EVENTS);
    let inputs: Vec<&Path> = if net_events.is_file() { vec![&raw_events, &net_events] } else { vec![&raw_events] };
    match events::merge(&inputs, &merged) {
        Ok(evs) => {
            let _ = std::fs::remove_file(&raw_events);
            let _ = std::fs::remove_file(&net_events);
            net_missed = crate::netfaults::missed(&req.config, &evs);
            if let Some(v) = evs.iter().find(|e| e.ev == "run_started").and_then(|e| e.raw.get("version")) {
                if let Some(v) = v.as_str() {
                    manifest.runtime_version = v.to_string();
                }
            }
            let st = req.workload.analyse(&req.config, &evs, &actions, None);
            // The workload's reading names what broke (e.g. which node process died); keep it
            // beside the child's own ending.
            if let Some(problem) = st.completeness_problem(&req.config) {
                reason = Some(match reason {
                    Some(r) if !r.contains(&problem) => format!("{r}; {problem}"),
                    Some(r) => r,
                    None => problem,
                });
            }
            stats = Some(st);
        }
        Err(e) => {
            let _ = std::fs::remove_file(&merged);
            reason.get_or_insert_with(|| format!("malformed events: {e}"));
        }
    }
    (manifest.status, manifest.reason) = match reason {
        Some(r) => (Status::Failed, Some(r)),
        None => crate::run_folder::judge_complete(stats.as_deref(), &req.config, &net_missed),
    };
    manifest.ended_at = Some(machine::rfc3339(machine::now_unix_ms()));
    manifest.loadavg_end = machine::loadavg();
    manifest.load = Some(
        machine::Load::between(
            manifest.loadavg_start.clone(),
            manifest.cpu_start,
            manifest.loadavg_end.clone(),
            machine::CpuTimes::now(),
        )
        .with_core_rtt(manifest.core_rtt_start_ns, machine::core_round_trip_ns()),
    );
    manifest.write(&dir)?;
    if let Some(st) = &stats {
        crate::run_folder::write_run_outputs(req.workload, &dir, &manifest, &req.config, st.as_ref())?;
    }
    Ok(RunOutcome { dir, manifest, stats })
}

/// Records a run that could not start (its runtime failed to build): the run folder gets the
/// config, the schedule, a failed manifest with `reason`, and `stderr.txt` (rule 5).
pub fn record_failed(req: &RunRequest, reason: &str, stderr: &str) -> Result<()> {
    let dir = &req.out_dir;
    prepare_dir(dir)?;
    write_inputs(req, dir)?;
    let stderr_path = dir.join("stderr.txt");
    std::fs::write(&stderr_path, stderr).map_err(|e| Error::io(&stderr_path, e))?;
    let mut m = starting_manifest(req, run_id_of(req));
    m.runtime_version = req.peer.as_ref().map(|p| p.version.clone()).unwrap_or_else(|| "unknown".into());
    m.settings = req.peer.as_ref().map(|p| p.settings.clone()).unwrap_or_default();
    finish_failed(&mut m, dir, reason.to_string(), false)
}

fn finish_failed(m: &mut Manifest, dir: &Path, reason: String, interrupted: bool) -> Result<()> {
    m.status = Status::Failed;
    m.reason = Some(reason);
    m.interrupted = interrupted;
    m.ended_at = Some(machine::rfc3339(machine::now_unix_ms()));
    m.write(dir)
}
