//! Supervision with the semantics of Erlang/OTP's `supervisor`: strategies, restart types,
//! restart intensity counted as OTP does (or on an exact sliding window), backoff, ordered start and reverse-ordered shutdown,
//! dynamic children, and [`ChildRef`] handles that follow a child across restarts.
//! The rules are written out in `server.rs` and each is pinned by a test.
//!
//! Every supervisor has a path (`/app`, `/app/pool`: its name, or its parent's path and its
//! child id; see [`SupervisorSpec::name`]) that its reports and its children's metrics carry,
//! and every child a bounded `child` label (its id, or [`WorkerSpec::template`]); the events
//! and series are listed in `reports.rs`.
//!
//! ```
//! # #[tokio::main] async fn main() {
//! use std::time::Duration;
//! use troupe::{Actor, Ctx};
//! use troupe::supervisor::{self, ChildSpec, Restart, Strategy, SupervisorSpec};
//!
//! struct Worker;
//! impl Actor for Worker {
//!     type Msg = &'static str;
//!     async fn handle(&mut self, m: &'static str, _: &mut Ctx<Self>) {
//!         if m == "crash" { panic!("asked to crash") }
//!     }
//! }
//!
//! let worker = ChildSpec::worker("w", || Worker).restart(Restart::Permanent);
//! let handle = worker.handle();
//! let spec = SupervisorSpec::new(Strategy::OneForOne).intensity(5, Duration::from_secs(1)).child(worker);
//! let sup = supervisor::start(spec).await.unwrap();
//!
//! let first = handle.get().unwrap();
//! first.send("crash").unwrap();
//! assert!(matches!(first.terminated().await, troupe::ExitReason::Panicked(_)));
//! // The supervisor restarts it; the handle follows the new incarnation.
//! let second = loop {
//!     if let Some(r) = handle.get() { break r; }
//!     tokio::task::yield_now().await;
//! };
//! assert_ne!(first.id(), second.id());
//! sup.stop().await;
//! # }
//! ```

mod child;
mod child_ref;
mod clock;
mod server;
mod simple;
mod spec;

use std::fmt;
use std::time::Duration;

pub use child::{ChildCount, ChildInfo, ChildSpec, WorkerSpec};
pub use child_ref::ChildRef;
pub use clock::{clock_second, until_next_clock_second};
pub use server::{Supervisor, SupervisorMsg};
pub use simple::{start_simple, SimpleSpec, SimpleSupervisorRef};
pub use spec::{AutoShutdown, Backoff, ChildKind, IntensityWindow, Restart, Shutdown, Strategy, SupervisorSpec};

use server::Cmd;

use crate::spawn::{spawn_acked, Spawn};
use crate::{ActorId, ActorRef, AnyRef, AskError, ExitReason};

/// How long supervisor calls wait unless [`SupervisorRef::with_call_timeout`] says otherwise;
/// OTP waits forever, a dead supervisor answers `Gone` at once.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// Why a supervisor operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SupervisorError {
    /// The spec breaks a rule; `field` names it.
    InvalidSpec {
        /// The offending field.
        field: String,
        /// What is wrong and what is allowed.
        problem: String,
    },
    /// Two children of a spec share an id.
    DuplicateId(String),
    /// `start_child` with the id of a running child (OTP `{error, {already_started, Pid}}`).
    AlreadyStarted {
        /// The child's id.
        child: String,
        /// The running child.
        actor: ActorId,
    },
    /// `start_child` with the id of a child that is in the spec but not running (OTP
    /// `{error, already_present}`): `restart_child` or `delete_child` it.
    AlreadyPresent(String),
    /// A child failed to start.
    StartFailed {
        /// The child's id.
        child: String,
        /// Why it stopped.
        reason: ExitReason,
    },
    /// No child has this id.
    NoSuchChild(String),
    /// The child is running; terminate it first.
    ChildRunning(String),
    /// The child's restart failed and a retry is queued (OTP `{error, restarting}`).
    Restarting(String),
    /// The supervisor already has its maximum number of children.
    MaxChildren(usize),
    /// The supervisor has stopped.
    Gone,
    /// The supervisor did not answer the call within this time (see
    /// [`SupervisorRef::with_call_timeout`]); it is alive but busy, e.g. starting a slow child.
    Timeout(Duration),
}

impl fmt::Display for SupervisorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SupervisorError::InvalidSpec { field, problem } => {
                write!(f, "invalid supervisor spec: {field} {problem}")
            }
            SupervisorError::DuplicateId(id) => {
                write!(f, "invalid supervisor spec: two children have the id {id:?}; ids must be unique")
            }
            SupervisorError::AlreadyStarted { child, actor } => {
                write!(f, "a child with the id {child:?} is already running as {actor}; pick another id")
            }
            SupervisorError::AlreadyPresent(id) => write!(
                f,
                "a child with the id {id:?} is already in the supervisor (not running); restart_child or \
                 delete_child it"
            ),
            SupervisorError::StartFailed { child, reason } => {
                write!(f, "child {child:?} failed to start: {reason}")
            }
            SupervisorError::NoSuchChild(id) => write!(f, "no child has the id {id:?}"),
            SupervisorError::ChildRunning(id) => {
                write!(f, "child {id:?} is running; terminate it first")
            }
            SupervisorError::Restarting(id) => {
                write!(f, "child {id:?} is being restarted (its last start failed); terminate it first")
            }
            SupervisorError::MaxChildren(n) => {
                write!(f, "the supervisor already has its maximum of {n} children")
            }
            SupervisorError::Gone => f.write_str("the supervisor has stopped; start it again or use its parent"),
            SupervisorError::Timeout(after) => write!(
                f,
                "the supervisor did not answer within {after:?} (it is busy, e.g. starting a slow child); retry, \
                 or raise the call timeout"
            ),
        }
    }
}

impl std::error::Error for SupervisorError {}

impl From<SupervisorError> for crate::ActorError {
    fn from(e: SupervisorError) -> Self {
        Self::from_source(e)
    }
}

/// A call that got no answer in time is a [`SupervisorError::Timeout`], never `Gone`.
impl From<AskError> for SupervisorError {
    fn from(e: AskError) -> Self {
        match e {
            AskError::Timeout(after) => SupervisorError::Timeout(after),
            _ => SupervisorError::Gone,
        }
    }
}

/// Checks child specs as a supervisor would before starting them (OTP's `check_childspecs`):
/// each child's own rules, unique ids, and significant children against `auto_shutdown`.
///
/// ```
/// use troupe::{Actor, Ctx};
/// use troupe::supervisor::{check_childspecs, AutoShutdown, ChildSpec, Restart};
/// struct W;
/// impl Actor for W {
///     type Msg = ();
///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
/// }
/// let ok = ChildSpec::worker("w", || W).into();
/// assert!(check_childspecs(&[ok], AutoShutdown::Never).is_ok());
/// let sig = ChildSpec::worker("s", || W).restart(Restart::Transient).significant(true).into();
/// assert!(check_childspecs(&[sig], AutoShutdown::Never).is_err());
/// ```
pub fn check_childspecs(specs: &[ChildSpec], auto_shutdown: AutoShutdown) -> Result<(), SupervisorError> {
    let mut spec = SupervisorSpec::new(Strategy::OneForOne).auto_shutdown(auto_shutdown);
    spec.children = specs.to_vec();
    spec.validate()
}

/// Validates `spec`, spawns the supervisor and waits until all its children have started.
pub async fn start(spec: SupervisorSpec) -> Result<SupervisorRef, SupervisorError> {
    spec.validate()?;
    let slot = server::FailureSlot::default();
    let (r, ack) = spawn_acked(Supervisor::with_failure_slot(spec, slot.clone()), Spawn::new(), None);
    if let Ok(Ok(())) = ack.await {
        return Ok(SupervisorRef::from_ref(r));
    }
    let reason = r.terminated().await;
    let (child, reason) = slot.lock().take().unwrap_or((String::new(), reason));
    Err(SupervisorError::StartFailed { child, reason })
}

/// Validates `spec` and spawns the supervisor without waiting for its children to start: for
/// callers that cannot wait (a synchronous constructor). The children start in order right
/// after, as with [`start`]; when one fails to start, the supervisor stops (see
/// [`SupervisorRef::terminated`]) instead of this returning the error. Needs a tokio runtime.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, Ctx, ReplyTo};
/// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
/// struct Echo;
/// impl Actor for Echo {
///     type Msg = (u32, ReplyTo<u32>);
///     async fn handle(&mut self, (n, r): Self::Msg, _: &mut Ctx<Self>) { r.send(n) }
/// }
/// let spec = ChildSpec::worker("echo", || Echo);
/// let echo = spec.handle();
/// let sup = supervisor::spawn(SupervisorSpec::new(Strategy::OneForOne).child(spec)).unwrap();
/// // The child may not be up yet: `ask` on its handle waits for it.
/// assert_eq!(echo.ask(|r| (7, r), Duration::from_secs(5)).await.unwrap(), 7);
/// sup.stop().await;
/// # }
/// ```
pub fn spawn(spec: SupervisorSpec) -> Result<SupervisorRef, SupervisorError> {
    spec.validate()?;
    Ok(SupervisorRef::from_ref(crate::spawn::spawn_inner(Supervisor::new(spec), Spawn::new(), None, None)))
}

/// A handle to a running supervisor.
#[derive(Clone, Debug)]
pub struct SupervisorRef {
    actor: ActorRef<SupervisorMsg>,
    call_timeout: Duration,
}

impl SupervisorRef {
    /// Wraps a supervisor's actor ref (e.g. from a [`ChildRef`] of a child supervisor).
    #[must_use]
    pub fn from_ref(r: ActorRef<SupervisorMsg>) -> Self {
        Self { actor: r, call_timeout: DEFAULT_CALL_TIMEOUT }
    }

    /// The same handle whose calls (`start_child`, `which_children`, ...) give up after
    /// `timeout` with [`SupervisorError::Timeout`] (default [`DEFAULT_CALL_TIMEOUT`]).
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe::supervisor::{self, Strategy, SupervisorSpec};
    /// let sup = supervisor::start(SupervisorSpec::new(Strategy::OneForOne)).await.unwrap();
    /// let quick = sup.with_call_timeout(Duration::from_secs(5));
    /// assert_eq!(quick.call_timeout(), Duration::from_secs(5));
    /// assert!(quick.which_children().await.unwrap().is_empty());
    /// sup.stop().await;
    /// # }
    /// ```
    #[must_use]
    pub fn with_call_timeout(&self, timeout: Duration) -> Self {
        Self { actor: self.actor.clone(), call_timeout: timeout }
    }

    /// How long this handle's calls wait for the supervisor's answer.
    #[must_use]
    pub fn call_timeout(&self) -> Duration {
        self.call_timeout
    }

    /// The supervisor's actor ref.
    #[must_use]
    pub fn actor(&self) -> &ActorRef<SupervisorMsg> {
        &self.actor
    }

    /// The supervisor as an untyped ref.
    #[must_use]
    pub fn any(&self) -> AnyRef {
        self.actor.any()
    }

    /// Adds and starts a child at run time (a dynamic supervisor's `start_child`). An empty id
    /// gets a unique one. `Ok(None)` when its start returned ignore
    /// ([`ChildSpec::worker_or_ignore`]): a temporary child is then dropped, another kept, not
    /// running (OTP). An id already in use fails with `AlreadyStarted` or `AlreadyPresent`.
    pub async fn start_child(&self, spec: impl Into<ChildSpec>) -> Result<Option<ActorId>, SupervisorError> {
        let spec = spec.into();
        self.actor.ask(|r| SupervisorMsg(Cmd::StartChild(spec, r)), self.call_timeout).await?
    }

    /// Stops a child (it stays in the spec, not restarted, until `restart_child`).
    pub async fn terminate_child(&self, id: &str) -> Result<(), SupervisorError> {
        let id = id.to_owned();
        self.actor.ask(|r| SupervisorMsg(Cmd::TerminateChild(id, r)), self.call_timeout).await?
    }

    /// Starts a terminated child again; `Ok(None)` when its start returned ignore.
    pub async fn restart_child(&self, id: &str) -> Result<Option<ActorId>, SupervisorError> {
        let id = id.to_owned();
        self.actor.ask(|r| SupervisorMsg(Cmd::RestartChild(id, r)), self.call_timeout).await?
    }

    /// Removes a terminated child's spec.
    pub async fn delete_child(&self, id: &str) -> Result<(), SupervisorError> {
        let id = id.to_owned();
        self.actor.ask(|r| SupervisorMsg(Cmd::DeleteChild(id, r)), self.call_timeout).await?
    }

    /// The children in start order.
    pub async fn which_children(&self) -> Result<Vec<ChildInfo>, SupervisorError> {
        Ok(self.actor.ask(|r| SupervisorMsg(Cmd::Which(r)), self.call_timeout).await?)
    }

    /// How many children, how many running, how many supervisors and workers (OTP's
    /// `count_children`).
    pub async fn count_children(&self) -> Result<ChildCount, SupervisorError> {
        Ok(self.actor.ask(|r| SupervisorMsg(Cmd::Count(r)), self.call_timeout).await?)
    }

    /// The spec of child `id` (OTP's `get_childspec`), e.g. to start it under another supervisor.
    pub async fn get_childspec(&self, id: &str) -> Result<ChildSpec, SupervisorError> {
        let id = id.to_owned();
        self.actor.ask(|r| SupervisorMsg(Cmd::GetSpec(id, r)), self.call_timeout).await?
    }

    /// Stops the supervisor: its children stop in reverse order first. Returns its exit reason.
    pub async fn stop(&self) -> ExitReason {
        self.actor.any().stop(ExitReason::Shutdown);
        self.actor.terminated().await
    }

    /// Waits until the supervisor has stopped.
    pub async fn terminated(&self) -> ExitReason {
        self.actor.terminated().await
    }
}
