//! The conformance driver: every runtime on every scenario of a workload, each an ordinary lab
//! run ([`crate::run`]: prepare, execute, analyse, exactly as `troupe lab run` does), then every
//! rule on every trace, the verdicts written to `conform.json` and `conform.md`.
//!
//! Rules:
//! 1. A workload without rules is refused before anything starts, naming it and the workloads
//!    that have rules; so is a scenario name it does not have (listing those it has) and a
//!    scenario whose settings the workload's keys refuse.
//! 2. The folder is new: one that already holds files is refused (nothing is resumed or
//!    overwritten). Each run goes to `<out>/<scenario>/<runtime>/`, an ordinary run folder;
//!    peers are built once each, their output in `<out>/builds/<runtime>/`.
//! 3. Nothing is skipped: a runtime that cannot be built (missing toolchain, failed build) or a
//!    run that failed (crashed, hung, incomplete events) fails every rule for that scenario
//!    and runtime, the run's reason as the evidence, and its run folder says so. A `degraded`
//!    run is a complete trace: its rules are judged on it.
//! 4. Ctrl-C stops after the run in progress; what was judged is written, marked
//!    `interrupted`, and the runs not made fail with "not run: interrupted".
//! 5. The check passes only when no rule is `FAIL` for any runtime ([`ConformOutcome::passed`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::child::Stop;
use crate::compare::RunContext;
use crate::config::{Config, ConfigBuilder};
use crate::error::{ConfigIssue, Error, ErrorKind, Result};
use crate::manifest::{Manifest, Status};
use crate::peer::{self, PreparedPeer};
use crate::registry::Registry;
use crate::run::{self, RunOutcome, RunRequest};
use crate::sweep::{Point, SweepObserver};
use crate::workload::Workload;
use crate::{events, schedule};

use super::{Rule, Scenario, Trace, Verdict};

/// What to check.
#[derive(Debug, Clone)]
pub struct ConformSpec {
    /// The workload (with rules: [`resolve`]).
    pub workload: &'static dyn Workload,
    /// Runtimes, in table order.
    pub runtimes: Vec<String>,
    /// Only this scenario (`--scenario`); every one when `None`.
    pub scenario: Option<String>,
}

/// The checked plan: rules, runtimes, and each scenario with its validated config.
#[derive(Debug, Clone)]
pub struct ConformPlan {
    /// The workload.
    pub workload: &'static dyn Workload,
    /// Its rules, in contract order.
    pub rules: Vec<Rule>,
    /// Runtimes, in table order.
    pub runtimes: Vec<String>,
    /// The scenarios to run, each with its config.
    pub scenarios: Vec<(Scenario, Config)>,
}

impl ConformPlan {
    /// Every run as a point named by its folder (`<scenario>/<runtime>`), in run order.
    pub fn runs(&self) -> Vec<Point> {
        self.scenarios
            .iter()
            .flat_map(|(s, cfg)| {
                self.runtimes.iter().map(move |rt| Point {
                    name: format!("{}/{rt}", s.name),
                    runtime: rt.clone(),
                    config: cfg.clone(),
                    rep: 1,
                })
            })
            .collect()
    }
}

/// One run of the check and what every rule said of it.
#[derive(Debug, Clone)]
pub struct RunVerdicts {
    /// The scenario.
    pub scenario: String,
    /// The runtime.
    pub runtime: String,
    /// The run folder.
    pub dir: PathBuf,
    /// `ok`, `degraded`, `failed`, or `not run`.
    pub status: String,
    /// Why the run failed or was degraded, if it was.
    pub reason: Option<String>,
    /// One verdict per rule, in the plan's rule order.
    pub verdicts: Vec<Verdict>,
}

/// How a check went.
#[derive(Debug, Clone)]
pub struct ConformOutcome {
    /// The plan it ran.
    pub plan: ConformPlan,
    /// The folder.
    pub dir: PathBuf,
    /// Every run, in run order.
    pub runs: Vec<RunVerdicts>,
    /// Whether Ctrl-C stopped it (rule 4).
    pub interrupted: bool,
}

impl ConformOutcome {
    /// The verdict of `rule` (by index) for `runtime` over every scenario (module rule 5 of
    /// [`crate::conform`]).
    pub fn verdict(&self, rule: usize, runtime: &str) -> Verdict {
        Verdict::combine(self.runs.iter().filter(|r| r.runtime == runtime).filter_map(|r| r.verdicts.get(rule)))
    }

    /// Whether no rule failed for any runtime (rule 5).
    pub fn passed(&self) -> bool {
        self.runs.iter().all(|r| r.verdicts.iter().all(|v| !v.is_fail()))
    }

    /// Every failure as one line: `<runtime> <rule> [<scenario>]: <evidence>`.
    pub fn failure_lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (i, rule) in self.plan.rules.iter().enumerate() {
            for rt in &self.plan.runtimes {
                for r in self.runs.iter().filter(|r| &r.runtime == rt) {
                    if let Some(Verdict::Fail { evidence }) = r.verdicts.get(i) {
                        out.push(format!("{rt} {} [{}]: {evidence}", rule.id, r.scenario));
                    }
                }
            }
        }
        out
    }

    /// The rule x runtime table, aligned, as text lines.
    pub fn table(&self) -> Vec<String> {
        let rt = &self.plan.runtimes;
        let w0 = self.plan.rules.iter().map(|r| r.id.len()).max().unwrap_or(4).max(4);
        let widths: Vec<usize> = rt.iter().map(|r| r.len().max(4)).collect();
        let mut head = format!("{:<w0$}", "rule");
        for (r, w) in rt.iter().zip(&widths) {
            head.push_str(&format!("  {r:<w$}"));
        }
        let mut out = vec![head.trim_end().to_string()];
        for (i, rule) in self.plan.rules.iter().enumerate() {
            let mut line = format!("{:<w0$}", rule.id);
            for (r, w) in rt.iter().zip(&widths) {
                line.push_str(&format!("  {:<w$}", self.verdict(i, r).label()));
            }
            out.push(line.trim_end().to_string());
        }
        out
    }
}

/// The workload called `name`, refused when it has no rules (rule 1): the error names it and
/// the registered workloads that have rules.
pub fn resolve(registry: &Registry, name: &str) -> Result<&'static dyn Workload> {
    let w = registry.get(name)?;
    if w.rules().is_empty() {
        let with: Vec<&str> = registry.all().iter().filter(|w| !w.rules().is_empty()).map(|w| w.name()).collect();
        return Err(no_rules(w, &with));
    }
    Ok(w)
}

fn no_rules(w: &dyn Workload, with: &[&str]) -> Error {
    Error::new(ErrorKind::Unsupported(format!(
        "workload {:?} has no conformance rules (its Conform role names none), so there is nothing to check{}",
        w.name(),
        if with.is_empty() { String::new() } else { format!("; workloads with rules: {}", with.join(", ")) }
    )))
}

fn issue(key: &str, value: &str, problem: String) -> Error {
    Error::new(ErrorKind::InvalidConfig(vec![ConfigIssue { key: key.into(), value: value.into(), problem }]))
}

/// Checks the spec and builds every scenario's config (rule 1). The runtimes are checked by
/// the caller ([`crate::compare::check_runtimes`]), which knows the project root.
pub fn plan(spec: &ConformSpec) -> Result<ConformPlan> {
    let w = spec.workload;
    let rules = w.rules();
    if rules.is_empty() {
        return Err(no_rules(w, &[]));
    }
    let mut ids = BTreeSet::new();
    for r in &rules {
        if !ids.insert(r.id) {
            return Err(Error::other(format!("the {} workload names rule {} twice", w.name(), r.id)));
        }
    }
    let all = w.scenarios();
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    let chosen: Vec<Scenario> = match &spec.scenario {
        Some(n) => match all.iter().find(|s| &s.name == n) {
            Some(s) => vec![s.clone()],
            None => {
                return Err(issue(
                    "scenario",
                    n,
                    format!(
                        "the {} workload has no such scenario{}; scenarios: {}",
                        w.name(),
                        crate::did_you_mean(n, &names),
                        names.join(", ")
                    ),
                ))
            }
        },
        None => all.clone(),
    };
    if chosen.is_empty() {
        return Err(Error::other(format!("the {} workload has rules but no scenario to run them on", w.name())));
    }
    let mut scenarios = Vec::new();
    for s in chosen {
        if s.name.is_empty()
            || s.name.starts_with('.')
            || crate::folders::sanitize(&s.name) != s.name
            || s.name == "builds"
        {
            return Err(Error::other(format!(
                "scenario name {:?} is not a folder name (letters, digits, . _ -)",
                s.name
            )));
        }
        let mut b = ConfigBuilder::new(w);
        for (k, v) in &s.settings {
            b.apply_set(&format!("{k}={v}"));
        }
        let cfg = b.build().map_err(|e| Error::other(format!("scenario {:?} of {}: {e}", s.name, w.name())))?;
        scenarios.push((s, cfg));
    }
    Ok(ConformPlan { workload: w, rules, runtimes: spec.runtimes.clone(), scenarios })
}

/// Makes `dir` and checks it is new (rule 2).
fn claim(dir: &Path) -> Result<()> {
    if dir.is_dir() && std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?.next().is_some() {
        return Err(Error::io(
            dir,
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "already holds files; a conformance check writes a new folder: choose another --out",
            ),
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))
}

/// Each runtime ready to run, or why it is not (rule 3).
fn prepare_runtimes(
    plan: &ConformPlan,
    dir: &Path,
    ctx: &RunContext,
    stop: &Stop,
    obs: &mut dyn SweepObserver,
) -> Result<Vec<std::result::Result<PreparedPeer, String>>> {
    let mut out = Vec::new();
    for rt in &plan.runtimes {
        if rt == "troupe" {
            out.push(Ok(PreparedPeer {
                program: ctx.troupe.program.clone(),
                version: format!("troupe {}", env!("CARGO_PKG_VERSION")),
                settings: peer::troupe_settings(),
            }));
            continue;
        }
        let root = ctx.project_root.as_deref().ok_or_else(|| Error::new(ErrorKind::NoProjectRoot))?;
        let log_dir = dir.join("builds").join(rt);
        std::fs::create_dir_all(&log_dir).map_err(|e| Error::io(&log_dir, e))?;
        obs.note(&format!("building {rt} ({})", peer::workload_dir(root, rt, plan.workload.name()).display()));
        match peer::prepare(root, rt, plan.workload.name(), &log_dir, stop) {
            Ok(p) => {
                obs.note(&format!("{rt}: {}", p.version));
                out.push(Ok(p));
            }
            Err(_) if stop.is_set() => return Err(Error::other("interrupted while building the peers")),
            Err(e) => {
                obs.note(&format!("{rt}: CANNOT BUILD: {e}"));
                out.push(Err(format!("cannot build: {e}")));
            }
        }
    }
    Ok(out)
}

/// Every rule on one run's recorded files (rule 3).
fn judge(
    plan: &ConformPlan,
    scenario: &Scenario,
    cfg: &Config,
    o: &RunOutcome,
) -> (String, Option<String>, Vec<Verdict>) {
    let m = &o.manifest;
    let all = |why: String| plan.rules.iter().map(|_| Verdict::fail(why.clone())).collect();
    let status = match m.status {
        Status::Ok => "ok",
        Status::Degraded => "degraded",
        Status::Failed => "failed",
        Status::Running => "running",
    };
    if m.interrupted || !m.status.completed() {
        let reason = m.reason.clone().unwrap_or_else(|| "interrupted".into());
        let why = format!("the run {status}: {reason} (see {})", o.dir.join("stderr.txt").display());
        return (status.into(), Some(reason), all(why));
    }
    let read = events::read(&o.dir.join("events.jsonl"))
        .and_then(|evs| schedule::read(&o.dir.join("schedule.jsonl")).map(|s| (evs, s)));
    let verdicts = match read {
        Ok((evs, sched)) => {
            let t = Trace::new(cfg, &evs, &sched, scenario);
            plan.rules.iter().map(|r| (r.check)(&t)).collect()
        }
        Err(e) => all(format!("cannot read the run's recorded files: {e}")),
    };
    (status.into(), m.reason.clone(), verdicts)
}

/// Runs every runtime on every scenario into `dir` and judges every rule (rules 2-5), then
/// writes `conform.json` and `conform.md`.
pub fn run(
    plan: &ConformPlan,
    dir: &Path,
    ctx: &RunContext,
    stop: &Stop,
    obs: &mut dyn SweepObserver,
) -> Result<ConformOutcome> {
    claim(dir)?;
    let prepared = prepare_runtimes(plan, dir, ctx, stop, obs)?;
    let points = plan.runs();
    obs.planned(points.len(), 0);
    let mut outcome =
        ConformOutcome { plan: plan.clone(), dir: dir.to_path_buf(), runs: Vec::new(), interrupted: false };
    for point in points {
        let (scenario, cfg) = plan
            .scenarios
            .iter()
            .find(|(s, _)| point.name.starts_with(&format!("{}/", s.name)))
            .ok_or_else(|| Error::other(format!("no scenario for {}", point.name)))?;
        let idx = plan.runtimes.iter().position(|r| *r == point.runtime).unwrap_or(0);
        let rdir = dir.join(&point.name);
        if outcome.interrupted || stop.is_set() {
            outcome.interrupted = true;
            outcome.runs.push(RunVerdicts {
                scenario: scenario.name.clone(),
                runtime: point.runtime.clone(),
                dir: rdir,
                status: "not run".into(),
                reason: Some("interrupted".into()),
                verdicts: plan.rules.iter().map(|_| Verdict::fail("not run: interrupted")).collect(),
            });
            continue;
        }
        obs.started(&point);
        let mut req = RunRequest::new(plan.workload, cfg.clone(), &point.runtime, rdir.clone(), ctx.troupe.clone());
        req.project_root = ctx.project_root.clone();
        req.command = ctx.command.clone();
        req.run_id = Some(format!("conform-{}", point.name.replace('/', "-")));
        req.deadline_slack = ctx.deadline_slack;
        let o = match &prepared[idx] {
            Err(reason) => {
                let log = std::fs::read_to_string(dir.join("builds").join(&point.runtime).join("build-stderr.txt"))
                    .unwrap_or_default();
                run::record_failed(&req, reason, &log)?;
                RunOutcome { dir: rdir.clone(), manifest: Manifest::read(&rdir)?, stats: None }
            }
            Ok(p) => {
                req.peer = (point.runtime != "troupe").then(|| p.clone());
                match run::run(&req, stop) {
                    Ok(o) => o,
                    // A run that could not start left a failed manifest (run rule 5): a failure
                    // of its rules, not of the check.
                    Err(e) => match Manifest::read(&rdir) {
                        Ok(m) if m.status == Status::Failed => {
                            RunOutcome { dir: rdir.clone(), manifest: m, stats: None }
                        }
                        _ => return Err(e),
                    },
                }
            }
        };
        obs.finished(&point, &o);
        outcome.interrupted |= o.manifest.interrupted;
        let (status, reason, verdicts) = judge(plan, scenario, cfg, &o);
        outcome.runs.push(RunVerdicts {
            scenario: scenario.name.clone(),
            runtime: point.runtime.clone(),
            dir: rdir,
            status,
            reason,
            verdicts,
        });
    }
    super::output::write(&outcome)?;
    Ok(outcome)
}
