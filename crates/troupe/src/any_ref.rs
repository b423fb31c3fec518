//! [`AnyRef`]: a reference to an actor of any message type, for what every actor supports
//! whatever it accepts: identity, liveness, kill, stop, links, monitors, waiting for its death.
//! Supervisors, links, monitors and the registry hold these.

use std::fmt;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::cell::Sys;
use crate::registry::Registry;
use crate::{ActorId, ExitReason, MonitorId};

/// What the runtime needs from any actor, local or (later) remote.
pub(crate) trait Process: Send + Sync + 'static {
    fn id(&self) -> ActorId;
    /// The runtime a local actor was spawned in (`cell.rs`, rule 9); `None` for a remote one.
    fn home(&self) -> Option<&tokio::runtime::Handle>;
    fn is_alive(&self) -> bool;
    /// Delivers a system message; false when the actor is dead.
    fn push_sys(self: Arc<Self>, sys: Sys) -> bool;
    fn kill(self: Arc<Self>);
    /// Adds a link; false when the actor is dead.
    fn add_link(&self, other: AnyRef) -> bool;
    fn remove_link(&self, other: ActorId);
    /// Adds a monitor; false when the actor is dead.
    fn add_monitor(&self, id: MonitorId, watcher: AnyRef) -> bool;
    fn remove_monitor(&self, id: MonitorId);
    /// A receiver told the exit reason at death, or the reason now if already dead.
    fn watch(&self) -> Result<oneshot::Receiver<ExitReason>, ExitReason>;
    /// Records a registered name or group so death releases it; false when dead.
    fn add_name(&self, reg: &Arc<Registry>, name: &str, group: bool) -> bool;
    fn remove_name(&self, reg: &Arc<Registry>, name: &str, group: bool);
    /// Its name for people (`Spawn::name`), else its first registered name, while alive.
    fn name(&self) -> Option<String>;
    /// How many links it holds and how many monitors watch it (0 for a remote actor, whose
    /// relations its own node keeps).
    fn relation_counts(&self) -> (usize, usize) {
        (0, 0)
    }
}

/// A reference to an actor whatever its message type: identity, liveness, stop, kill, waiting
/// for its end. Get one from [`crate::ActorRef::any`].
///
/// ```
/// # #[tokio::main] async fn main() {
/// use troupe::{Actor, Ctx, ExitReason};
/// struct Idle;
/// impl Actor for Idle {
///     type Msg = ();
///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
/// }
/// let any = troupe::spawn(Idle).any();
/// any.kill();
/// assert_eq!(any.terminated().await, ExitReason::Killed);
/// # }
/// ```
#[derive(Clone)]
pub struct AnyRef(pub(crate) Arc<dyn Process>);

impl AnyRef {
    /// The actor's identity.
    #[must_use]
    pub fn id(&self) -> ActorId {
        self.0.id()
    }

    /// Its name (`Spawn::name`; a supervised child's id), else the first name it is
    /// registered under; `None` when it has neither, once it is dead, and for a remote actor.
    #[must_use]
    pub fn name(&self) -> Option<String> {
        self.0.name()
    }

    /// How many links this actor holds (Erlang's `process_info(Pid, links)`, counted); 0 once
    /// it is dead and for a remote actor (its own node keeps its relations).
    #[must_use]
    pub fn link_count(&self) -> usize {
        self.0.relation_counts().0
    }

    /// How many monitors watch this actor (Erlang's `process_info(Pid, monitored_by)`,
    /// counted); 0 once it is dead and for a remote actor.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe::{spawn, Actor, Ctx};
    /// struct Idle;
    /// impl Actor for Idle {
    ///     type Msg = ();
    ///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    /// }
    /// let target = spawn(Idle).any();
    /// let _m = troupe::remote_api::add_monitor(&target, troupe::remote_api::new_monitor_id(), spawn(Idle).any());
    /// assert_eq!(target.monitor_count(), 1);
    /// # }
    /// ```
    #[must_use]
    pub fn monitor_count(&self) -> usize {
        self.0.relation_counts().1
    }

    /// True until the actor has stopped (or a kill is pending).
    #[must_use]
    pub fn is_alive(&self) -> bool {
        self.0.is_alive()
    }

    /// Kills it brutally: no more of its code runs; links and monitors see `Killed`.
    pub fn kill(&self) {
        self.0.clone().kill();
    }

    /// Asks it to stop now, gracefully, with `reason`: it finishes the message in hand, runs its
    /// `stopped` hook and exits. Queued user messages are dropped (pending `ask`s see `Gone`).
    pub fn stop(&self, reason: ExitReason) {
        self.0.clone().push_sys(Sys::Stop(reason));
    }

    /// Asks it to stop with `reason` once it has handled the messages already queued: its
    /// mailbox closes at once (later sends fail with `Gone`), it handles what was queued, then
    /// runs its `stopped` hook and exits. A stop or kill meanwhile still acts at once. A remote
    /// actor stops at once, as with [`AnyRef::stop`].
    pub fn drain_and_stop(&self, reason: ExitReason) {
        self.0.clone().push_sys(Sys::Drain(reason));
    }

    /// Waits until the actor has stopped and returns why (at once if it already has).
    pub async fn terminated(&self) -> ExitReason {
        match self.0.watch() {
            Err(reason) => reason,
            Ok(rx) => rx.await.unwrap_or(ExitReason::NoProc),
        }
    }
}

impl PartialEq for AnyRef {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl Eq for AnyRef {}

impl fmt::Debug for AnyRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AnyRef({})", self.id())
    }
}
