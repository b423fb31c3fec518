//! The supervisor actor: starts its children in order, restarts them per strategy and restart
//! type within the intensity limit, and stops them in reverse order.
//!
//! Rules (OTP `supervisor`; each has a test in `tests/supervision_*.rs`). Restarts are in
//! `server/restart.rs`, stopping children in `server/shutdown.rs`.
//! 1. A supervisor traps exits and links to every child it starts.
//! 2. Children start in spec order; if one fails to start, those already started are stopped in
//!    reverse order and the supervisor fails to start, naming the child.
//! 3. On a child's exit: `Permanent` restarts, `Transient` restarts only on an abnormal reason,
//!    `Temporary` never restarts and its spec is removed. A child that needs no restart
//!    affects no other child.
//! 4. A restart is counted first: more than `intensity` restarts within `period` make the
//!    supervisor stop all children in reverse order and exit with `Shutdown`, which its own
//!    supervisor sees as an exit of its child. "Within" is OTP's rule by default: times in whole
//!    seconds of one monotonic clock shared by the whole process (`clock.rs`; OTP's
//!    `erlang:monotonic_time(second)`, the VM's clock, not the supervisor's start), a restart
//!    in second `r` counting while `now - r <= period` (so between `period` and `period + 1 s`:
//!    with period 1, restarts at x.9 s and (x+2).1 s, 1.2 s apart, do not count together, while
//!    restarts at x.1 s and (x+1).7 s, 1.6 s apart, do); or, with `IntensityWindow::Exact`, a
//!    restart counting while at most `period` old.
//! 5. `OneForAll` stops every other running child, `RestForOne` every child started after the
//!    exited one, in reverse order; then those children restart in order (temporary ones that
//!    were stopped this way are removed instead).
//! 6. Stopping a child: unlink, then `Brutal` kills, `Timeout(t)` asks it to stop and kills it
//!    after `t`, `Infinity` asks and waits.
//! 7. An exit signal from the supervisor's parent, or a stop request, stops all children in
//!    reverse order, then the supervisor exits with the same reason.
//! 8. With backoff, restarts wait the backoff delay; the children to restart are stopped at once.
//! 9. A restart whose start fails (OTP `try_again`): the children of the group started before
//!    the failed one keep running, the failed one is marked `restarting` and later ones stay
//!    stopped; the supervisor sends itself a retry for the failed child behind the messages
//!    already queued (so `which_children`, `terminate_child`, a stop... are served between
//!    tries): a call that reached it while the restart ran is answered before the retry and
//!    sees the child `restarting`, as OTP 25 does (its `try_again_restart` is a cast to itself,
//!    queued behind that call). The retry is a new restart of that child: counted (rule 4), then its strategy's
//!    group is stopped again and started again in order: for `OneForAll` that stops the
//!    siblings already restarted and restarts the whole group. A retry for a child that is no
//!    longer `restarting` (terminated, or restarted with its group meanwhile) does nothing.
//!    `restart_child` and `delete_child` of a `restarting` child fail with `Restarting`.
//! 10. A start that returns ignore (`ChildSpec::worker_or_ignore`) is no failure: the child stays
//!     in the spec, not running, and a temporary one is removed (OTP `ignore`), at the
//!     supervisor's start, in `start_child`, and in a restart.
//! 11. `start_child` with an id in use fails with `AlreadyStarted` (running) or `AlreadyPresent`
//!     (in the spec, not running), as OTP's `already_started`/`already_present`.
//! 12. Auto-shutdown (OTP): when a significant child exits and is not restarted (rule 3), an
//!     `AnySignificant` supervisor shuts down (rule 7, reason `Shutdown`); an `AllSignificant`
//!     one does when no significant child is left running or being restarted. Terminating a
//!     child with `terminate_child` never triggers it.
//! 13. A `simple_one_for_one` supervisor (`simple.rs`) restarts as `OneForOne`; a child that is
//!     not restarted, is terminated, or whose start returned ignore leaves it for good; and on
//!     shutdown all children are asked to stop at once and waited for together, killed at the
//!     shutdown timeout (OTP's `terminate_dynamic_children`).

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::time::Instant;

use super::child::{ChildCount, ChildInfo, ChildSpec};
use super::spec::{ChildKind, Restart, SupervisorSpec};
use super::SupervisorError;
use crate::any_ref::AnyRef;
use crate::reports::Placement;
use crate::{Actor, ActorError, ActorId, Ctx, ExitReason, ExitSignal, ReplyTo};

mod restart;
mod shutdown;

/// The supervisor actor. Start one with [`super::start`] or as a child with
/// [`ChildSpec::supervisor`]; talk to it through [`super::SupervisorRef`].
pub struct Supervisor {
    spec: SupervisorSpec,
    children: Vec<Child>,
    restarts: VecDeque<Instant>,
    next_auto_id: u64,
    generation: u64,
    start_failure: Option<FailureSlot>,
    /// Its path (`reports.rs` rule 5): from its spec's name, or, as a child, set in `started`.
    path: Arc<str>,
    /// The child whose exit caused the restart under way, and why (`reports.rs` rule 2).
    cause: Option<(String, ExitReason)>,
}

/// Where a top-level supervisor reports which child failed to start.
pub(crate) type FailureSlot = std::sync::Arc<parking_lot::Mutex<Option<(String, ExitReason)>>>;

struct Child {
    spec: ChildSpec,
    actor: Option<AnyRef>,
    started_at: Instant,
    /// Waiting to be started by a restart (possibly delayed by backoff).
    pending: bool,
    /// Its restart failed and a retry is queued (rule 9; OTP's `{restarting, Pid}`).
    restarting: bool,
    backoff_n: u32,
}

impl Child {
    fn new(spec: ChildSpec) -> Self {
        Child { spec, actor: None, started_at: Instant::now(), pending: false, restarting: false, backoff_n: 0 }
    }
}

/// A message to a supervisor; build them through [`super::SupervisorRef`].
pub struct SupervisorMsg(pub(crate) Cmd);

pub(crate) enum Cmd {
    StartChild(ChildSpec, ReplyTo<Result<Option<ActorId>, SupervisorError>>),
    TerminateChild(String, ReplyTo<Result<(), SupervisorError>>),
    RestartChild(String, ReplyTo<Result<Option<ActorId>, SupervisorError>>),
    DeleteChild(String, ReplyTo<Result<(), SupervisorError>>),
    /// Rule 13: terminate the child that is this actor.
    TerminateActor(ActorId, ReplyTo<Result<(), SupervisorError>>),
    Which(ReplyTo<Vec<ChildInfo>>),
    Count(ReplyTo<ChildCount>),
    GetSpec(String, ReplyTo<Result<ChildSpec, SupervisorError>>),
    DelayedRestart(u64),
    /// Rule 9: retry the restart of this child, whose start failed for this reason.
    TryAgain(String, ExitReason),
}

impl Supervisor {
    pub(crate) fn new(mut spec: SupervisorSpec) -> Self {
        let children = std::mem::take(&mut spec.children).into_iter().map(Child::new).collect();
        let path = crate::reports::root_path(spec.name.as_deref());
        Self {
            spec,
            children,
            restarts: VecDeque::new(),
            next_auto_id: 0,
            generation: 0,
            start_failure: None,
            path,
            cause: None,
        }
    }

    /// Its strategy as reports name it (`reports.rs` rule 2).
    pub(super) fn strategy_name(&self) -> &'static str {
        if self.spec.simple {
            "simple_one_for_one"
        } else {
            self.spec.strategy.as_str()
        }
    }

    pub(crate) fn with_failure_slot(spec: SupervisorSpec, slot: FailureSlot) -> Self {
        Self { start_failure: Some(slot), ..Self::new(spec) }
    }

    /// Starts child `i`: `Ok(None)` when its start returned ignore (rule 10).
    async fn start_one(&mut self, i: usize, me: &AnyRef) -> Result<Option<ActorId>, ExitReason> {
        let start = self.children[i].spec.start.clone();
        let at = Arc::new(Placement { supervisor: self.path.clone(), child: self.children[i].spec.label() });
        let started = start(me.clone(), at).await?;
        let c = &mut self.children[i];
        c.pending = false;
        c.restarting = false;
        let Some(a) = started else { return Ok(None) };
        let id = a.id();
        c.actor = Some(a);
        c.started_at = Instant::now();
        Ok(Some(id))
    }

    /// Whether child `i`, once not running, leaves the supervisor: a temporary one, or any
    /// child of a simple supervisor (rule 13).
    fn leaves_for_good(&self, i: usize) -> bool {
        self.spec.simple || self.children[i].spec.restart == Restart::Temporary
    }

    /// Rule 10: after an ignore, a temporary child leaves the supervisor; true when it did.
    fn forget_if_ignored_temporary(&mut self, i: usize, started: Option<ActorId>) -> bool {
        let gone = started.is_none() && self.leaves_for_good(i);
        if gone {
            self.children.remove(i);
        }
        gone
    }

    fn find(&self, id: &str) -> Result<usize, SupervisorError> {
        self.children.iter().position(|c| c.spec.id == id).ok_or_else(|| SupervisorError::NoSuchChild(id.to_owned()))
    }

    async fn start_child(
        &mut self,
        ctx: &mut Ctx<Self>,
        mut spec: ChildSpec,
    ) -> Result<Option<ActorId>, SupervisorError> {
        if spec.id.is_empty() {
            self.next_auto_id += 1;
            spec.id = format!("child-{}", self.next_auto_id);
            // reports.rs rule 5: generated ids share one label.
            spec.template.get_or_insert_with(|| "child".into());
        }
        spec.validate()?;
        self.spec.check_significant(&spec)?;
        if let Some(c) = self.children.iter().find(|c| c.spec.id == spec.id) {
            return Err(match &c.actor {
                Some(a) => SupervisorError::AlreadyStarted { child: spec.id, actor: a.id() },
                None => SupervisorError::AlreadyPresent(spec.id),
            });
        }
        if let Some(max) = self.spec.max_children {
            if self.children.len() >= max {
                return Err(SupervisorError::MaxChildren(max));
            }
        }
        let child_id = spec.id.clone();
        self.children.push(Child::new(spec));
        let i = self.children.len() - 1;
        let me = AnyRef(ctx.cell.clone());
        match self.start_one(i, &me).await {
            Ok(started) => {
                self.forget_if_ignored_temporary(i, started);
                Ok(started)
            }
            Err(reason) => {
                self.children.pop();
                Err(SupervisorError::StartFailed { child: child_id, reason })
            }
        }
    }

    fn which(&self) -> Vec<ChildInfo> {
        self.children
            .iter()
            .map(|c| ChildInfo {
                id: c.spec.id.clone(),
                actor: c.actor.clone(),
                kind: c.spec.kind,
                restart: c.spec.restart,
                restarting: c.restarting,
            })
            .collect()
    }

    fn count(&self) -> ChildCount {
        let supervisors = self.children.iter().filter(|c| c.spec.kind == ChildKind::Supervisor).count();
        ChildCount {
            specs: self.children.len(),
            active: self.children.iter().filter(|c| c.actor.as_ref().is_some_and(AnyRef::is_alive)).count(),
            supervisors,
            workers: self.children.len() - supervisors,
        }
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        ctx.trap_exit(true);
        if let Some(at) = ctx.placement() {
            // reports.rs rule 5: a child supervisor's path follows its place, across restarts.
            self.path = crate::reports::child_path(&at.supervisor, &at.child);
        }
        let me = AnyRef(ctx.cell.clone());
        let mut i = 0;
        while i < self.children.len() {
            match self.start_one(i, &me).await {
                Ok(started) => {
                    if !self.forget_if_ignored_temporary(i, started) {
                        i += 1;
                    }
                }
                Err(reason) => {
                    let id = self.children[i].spec.id.clone();
                    let started: Vec<usize> = (0..i).collect();
                    self.stop_children(ctx, &started).await;
                    if let Some(slot) = &self.start_failure {
                        *slot.lock() = Some((id.clone(), reason.clone()));
                    }
                    return Err(ActorError::from_source(super::SupervisorError::StartFailed { child: id, reason }));
                }
            }
        }
        Ok(())
    }

    async fn handle(&mut self, SupervisorMsg(cmd): SupervisorMsg, ctx: &mut Ctx<Self>) {
        match cmd {
            Cmd::StartChild(spec, reply) => reply.send(self.start_child(ctx, spec).await),
            Cmd::TerminateChild(id, reply) => {
                let r = match self.find(&id) {
                    Ok(i) => {
                        self.children[i].pending = false;
                        self.children[i].restarting = false;
                        self.stop_children(ctx, &[i]).await;
                        if self.leaves_for_good(i) {
                            self.children.remove(i);
                        }
                        Ok(())
                    }
                    Err(e) => Err(e),
                };
                reply.send(r);
            }
            Cmd::RestartChild(id, reply) => {
                let r = match self.find(&id) {
                    Ok(i) if self.children[i].actor.is_some() => Err(SupervisorError::ChildRunning(id)),
                    Ok(i) if self.children[i].restarting => Err(SupervisorError::Restarting(id)),
                    Ok(i) => {
                        let me = AnyRef(ctx.cell.clone());
                        self.start_one(i, &me)
                            .await
                            .map_err(|reason| SupervisorError::StartFailed { child: id, reason })
                    }
                    Err(e) => Err(e),
                };
                reply.send(r);
            }
            Cmd::DeleteChild(id, reply) => {
                let r = match self.find(&id) {
                    Ok(i) if self.children[i].actor.is_some() => Err(SupervisorError::ChildRunning(id)),
                    Ok(i) if self.children[i].restarting => Err(SupervisorError::Restarting(id)),
                    Ok(i) => {
                        self.children.remove(i);
                        Ok(())
                    }
                    Err(e) => Err(e),
                };
                reply.send(r);
            }
            Cmd::TerminateActor(actor, reply) => {
                let found = self.children.iter().position(|c| c.actor.as_ref().is_some_and(|a| a.id() == actor));
                let r = match found {
                    Some(i) => {
                        self.stop_children(ctx, &[i]).await;
                        if self.leaves_for_good(i) {
                            self.children.remove(i);
                        }
                        Ok(())
                    }
                    None => Err(SupervisorError::NoSuchChild(actor.to_string())),
                };
                reply.send(r);
            }
            Cmd::Which(reply) => reply.send(self.which()),
            Cmd::Count(reply) => reply.send(self.count()),
            Cmd::GetSpec(id, reply) => reply.send(self.find(&id).map(|i| self.children[i].spec.clone())),
            Cmd::DelayedRestart(generation) => {
                if generation == self.generation {
                    self.start_pending(ctx).await;
                }
            }
            Cmd::TryAgain(id, reason) => {
                if let Ok(i) = self.find(&id) {
                    if self.children[i].restarting {
                        self.restart(ctx, i, &reason).await;
                    }
                }
            }
        }
    }

    async fn on_exit(&mut self, sig: ExitSignal, ctx: &mut Ctx<Self>) {
        if Some(sig.from) == ctx.parent() {
            ctx.stop(sig.reason);
            return;
        }
        let Some(i) = self.children.iter().position(|c| c.actor.as_ref().is_some_and(|a| a.id() == sig.from)) else {
            return; // an exit of an actor that is no longer (or never was) a child
        };
        self.on_child_exit(ctx, i, sig.reason).await;
    }

    async fn stopped(&mut self, reason: &ExitReason, ctx: &mut Ctx<Self>) {
        tracing::info!(target: "troupe", supervisor = &*self.path, supervisor_id = %ctx.id(),
            strategy = self.strategy_name(), %reason, "supervisor shut down");
        if self.spec.simple {
            return self.stop_all_at_once(ctx).await;
        }
        let all: Vec<usize> = (0..self.children.len()).collect();
        self.stop_children(ctx, &all).await;
    }
}
