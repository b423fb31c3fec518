//! The process half of the nemesis ([`super`] rule 3): `kill` (SIGKILL, then a fresh process
//! after `duration_ms`) and `pause` (SIGSTOP, then SIGCONT after `duration_ms`), carried out by
//! the workload's orchestrator, which owns its node processes and knows how to start one again.
//!
//! Rules:
//! 1. [`steps`] turns the `kill` and `pause` lines of a schedule into timed steps: the fault at
//!    `at_ms`, its heal (restart, continue) at `at_ms + duration_ms`, in time order (a heal
//!    before a fault at one instant).
//! 2. [`run`] carries them out from the window start through a [`Target`]: after each fault it
//!    emits `fault_injected {id, target, kind}`, after each heal `fault_healed {id, target,
//!    kind}`; a step that fails emits neither but `nemesis_error {id, message}`, and is returned
//!    as an error line (the run is then degraded: [`super::missed`]). It returns when the last step is done.
//! 3. A paused process is continued, and a killed one started again, before [`run`] returns,
//!    whatever happened to the other steps: the final reads meet every node running.
//! 4. Steps run in order; a fault whose heal time has already passed when its turn comes (a
//!    restart before it was slow) is not started, but reported as a `nemesis_error` (the run
//!    is degraded), so a late step never makes the later ones fire all at once.

use std::future::Future;
use std::time::Duration;

use serde_json::json;

use crate::events::writer::Emitter;
use crate::schedule::FaultAction;

/// Whether a nemesis kind is carried out on processes (`kill`, `pause`).
pub fn is_proc_kind(kind: &str) -> bool {
    kind == "kill" || kind == "pause"
}

/// What to do to a node process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// SIGKILL.
    Kill,
    /// Start it again (after a kill).
    Restart,
    /// SIGSTOP.
    Pause,
    /// SIGCONT (after a pause).
    Resume,
}

impl Act {
    /// Whether this ends a fault.
    pub fn heals(self) -> bool {
        matches!(self, Act::Restart | Act::Resume)
    }
}

/// One timed step (rule 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Offset from the window start, ms.
    pub at_ms: u64,
    /// The schedule line's id.
    pub id: String,
    /// The line's kind (`kill`, `pause`).
    pub kind: String,
    /// The node index.
    pub node: u32,
    /// What to do.
    pub act: Act,
}

/// Rule 1.
///
/// ```
/// use troupe_lab::nemesis::procs::{steps, Act};
/// use troupe_lab::schedule::FaultAction;
/// let kill = FaultAction { at_ms: 1000, id: "nem-kill-0".into(), kind: "kill".into(), group: 2,
///                          duration_ms: Some(500), ..Default::default() };
/// let s = steps(&[kill]);
/// assert_eq!((s[0].at_ms, s[0].act, s[1].at_ms, s[1].act), (1000, Act::Kill, 1500, Act::Restart));
/// ```
pub fn steps(actions: &[FaultAction]) -> Vec<Step> {
    let mut out = Vec::new();
    for a in actions.iter().filter(|a| super::is_nemesis(a) && is_proc_kind(&a.kind)) {
        let (on, off) = if a.kind == "kill" { (Act::Kill, Act::Restart) } else { (Act::Pause, Act::Resume) };
        let end = a.at_ms + a.duration_ms.unwrap_or(0);
        out.push(Step { at_ms: a.at_ms, id: a.id.clone(), kind: a.kind.clone(), node: a.group, act: on });
        out.push(Step { at_ms: end, id: a.id.clone(), kind: a.kind.clone(), node: a.group, act: off });
    }
    out.sort_by_key(|s| (s.at_ms, !s.act.heals()));
    out
}

/// The node processes a workload's orchestrator owns, as the nemesis acts on them.
pub trait Target {
    /// The name of node `i` in events (`target`), e.g. `node-0`.
    fn name(&self, i: u32) -> String;
    /// Sends SIGKILL to node `i` and reaps it.
    fn kill(&mut self, i: u32) -> impl Future<Output = Result<(), String>> + Send;
    /// Starts node `i` again, ready to serve (wired to its peers).
    fn restart(&mut self, i: u32) -> impl Future<Output = Result<(), String>> + Send;
    /// Sends node `i` SIGSTOP.
    fn pause(&mut self, i: u32) -> Result<(), String>;
    /// Sends node `i` SIGCONT.
    fn resume(&mut self, i: u32) -> Result<(), String>;
}

/// Sends `sig` to process `pid`.
pub fn signal(pid: u32, sig: nix::sys::signal::Signal) -> Result<(), String> {
    let pid = i32::try_from(pid).map_err(|_| format!("process id {pid} is out of range"))?;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), sig).map_err(|e| format!("cannot send {sig} to {pid}: {e}"))
}

/// Rules 2-3: carries out `steps` on `target` from `start` (the window start); the error lines.
pub async fn run<T: Target + Send>(
    target: &mut T,
    steps: &[Step],
    start: tokio::time::Instant,
    em: &Emitter,
) -> Vec<String> {
    let mut errors = Vec::new();
    // Faults under way, so rule 3 can end them if their heal step failed or was not reached.
    let mut open: Vec<&Step> = Vec::new();
    let mut skipped: Vec<&str> = Vec::new();
    for s in steps {
        tokio::time::sleep_until(start + Duration::from_millis(s.at_ms)).await;
        if skipped.contains(&s.id.as_str()) {
            continue;
        }
        // Rule 4: a fault whose heal time has passed (an earlier step ran late) is not started.
        let heal_at = steps.iter().find(|h| h.id == s.id && h.act.heals()).map_or(s.at_ms, |h| h.at_ms);
        if !s.act.heals() && tokio::time::Instant::now() >= start + Duration::from_millis(heal_at) {
            let line = format!(
                "nemesis {}: its heal time passed before it could be started (a step before it ran late)",
                s.id
            );
            em.emit("nemesis_error", json!({"id": s.id, "message": line}));
            errors.push(line);
            skipped.push(&s.id);
            continue;
        }
        let done = match s.act {
            Act::Kill => target.kill(s.node).await,
            Act::Restart => target.restart(s.node).await,
            Act::Pause => target.pause(s.node),
            Act::Resume => target.resume(s.node),
        };
        match done {
            Ok(()) => {
                let ev = if s.act.heals() { "fault_healed" } else { "fault_injected" };
                em.emit(ev, json!({"id": s.id, "target": target.name(s.node), "kind": s.kind}));
                if s.act.heals() {
                    open.retain(|o| o.id != s.id);
                } else {
                    open.push(s);
                }
            }
            Err(e) => {
                let line = format!("nemesis {} ({:?} {}): {e}", s.id, s.act, target.name(s.node));
                em.emit("nemesis_error", json!({"id": s.id, "message": line}));
                errors.push(line);
            }
        }
    }
    // Rule 3: nothing stays dead or stopped.
    for s in open {
        let healed = if s.kind == "kill" { target.restart(s.node).await } else { target.resume(s.node) };
        match healed {
            Ok(()) => {
                em.emit("fault_healed", json!({"id": s.id, "target": target.name(s.node), "kind": s.kind}));
            }
            Err(e) => {
                let line = format!("nemesis {}: healing {} at the end: {e}", s.id, target.name(s.node));
                em.emit("nemesis_error", json!({"id": s.id, "message": line}));
                errors.push(line);
            }
        }
    }
    errors
}
