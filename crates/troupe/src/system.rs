//! [`System`]: a scope that owns actors and a registry, and shuts them all down.
//!
//! Rules (tests in `tests/core_system.rs`):
//! 1. An actor belongs to the system current where it is spawned: inside an actor of a system,
//!    in [`System::run`] or [`System::enter`], or through [`System::spawn`], that system;
//!    elsewhere none (the process-wide default, which does not track its actors). So an actor's
//!    children, a supervisor's children and a pool's workers belong to its system.
//! 2. A system's actors see its registry through the free functions (`troupe::register`,
//!    `whereis`, ...; `registry.rs` rule 4); two systems never share names.
//! 3. `shutdown` (coordinated: `lifecycle.rs`, whose phase `stop-actors` this rule is) stops the system's top-level actors (spawned without a link: `spawn`,
//!    `supervisor::start`, `pool::start`, probes) one by one in reverse start order, each asked
//!    to stop with `Shutdown` and killed if still alive after the shutdown timeout (a supervisor
//!    stops its children first); then every other actor of the system still alive, all at
//!    once, with the same timeout; then it forgets every name. It returns when all are dead.
//! 4. Once shutdown has reached its `stop-actors` phase, an actor spawned in the system is
//!    killed at once.
//! 5. Dropping the `System` without `shutdown` kills every actor it still has (no `stopped`
//!    hook runs), so nothing it started outlives it.
//! 6. [`ActorRef::call`] made in a system (rule 1's sense) waits for a reply up to the system's
//!    ask timeout ([`System::with_ask_timeout`]; [`DEFAULT_ASK_TIMEOUT`], 5 s, unless set), then
//!    fails with `AskError::Timeout`; outside any system it waits the default.
//!    [`ActorRef::ask`] always takes its own timeout.
//!
//! Actors belong to their home runtime too (`cell.rs` rule 9): when it shuts down they die with
//! `Killed`, whatever their system.

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::registry::Registry;
use crate::spawn::Spawn;
use crate::{Actor, ActorId, ActorRef, AnyRef, ExitReason, RegistryError, StartError};

pub(crate) struct SystemInner {
    registry: Arc<Registry>,
    /// Top-level actors, in start order (rule 3).
    roots: Mutex<Vec<AnyRef>>,
    /// Every other actor of the system (pruned of the dead as it grows).
    others: Mutex<Vec<AnyRef>>,
    closed: AtomicBool,
    shutdown_timeout: Mutex<Duration>,
    /// What [`ActorRef::call`] waits for a reply (rule 6).
    ask_timeout: Mutex<Duration>,
    /// Attached services and coordinated shutdown (`lifecycle.rs`).
    pub(crate) lifecycle: crate::lifecycle::Lifecycle,
}

/// How long [`ActorRef::call`] waits for a reply when its system has not set another timeout
/// ([`System::with_ask_timeout`]), or outside any system: 5 s, as OTP's `gen_server:call/2`.
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(5);

/// The default timeout of the current system (rule 6).
pub(crate) fn current_ask_timeout() -> Duration {
    CURRENT.with_borrow(|c| c.as_ref().map_or(DEFAULT_ASK_TIMEOUT, |s| *s.ask_timeout.lock()))
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<SystemInner>>> = const { RefCell::new(None) };
}

/// The current system (rule 1).
pub(crate) fn current() -> Option<Arc<SystemInner>> {
    CURRENT.with_borrow(Clone::clone)
}

/// The current system's registry (`registry.rs` rule 4).
pub(crate) fn current_registry() -> Option<Arc<Registry>> {
    CURRENT.with_borrow(|c| c.as_ref().map(|s| s.registry.clone()))
}

/// Makes `sys` current until dropped, then restores what was.
pub(crate) struct Entered(Option<Arc<SystemInner>>);

pub(crate) fn enter(sys: &Arc<SystemInner>) -> Entered {
    Entered(CURRENT.with_borrow_mut(|c| c.replace(sys.clone())))
}

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with_borrow_mut(|c| *c = previous);
    }
}

impl SystemInner {
    /// Rules 1 and 4: records a new actor; false when the system is shutting down.
    pub(crate) fn adopt(&self, actor: AnyRef, top_level: bool) -> bool {
        if self.closed.load(Ordering::Acquire) {
            return false;
        }
        if top_level {
            self.roots.lock().push(actor);
        } else {
            let mut others = self.others.lock();
            if others.len() >= 64 && others.len().is_power_of_two() {
                others.retain(AnyRef::is_alive);
            }
            others.push(actor);
        }
        true
    }
}

/// A scope owning actors and a registry: everything spawned in it (rule 1) is stopped by
/// [`System::shutdown`], or killed when the `System` is dropped; its names are its own, so
/// tests running in parallel in one process, each with its own system, never collide.
///
/// The process-wide functions (`troupe::spawn`, `troupe::register`, ...) keep working outside
/// any system: they are the default system, whose actors are not tracked.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::supervisor::{self, ChildSpec, Strategy, SupervisorSpec};
/// use troupe::{Actor, Ctx, ExitReason, System};
///
/// struct Idle;
/// impl Actor for Idle { type Msg = (); async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {} }
///
/// let sys = System::new();
/// let a = sys.spawn(Idle);
/// sys.register("idle", &a).unwrap();
/// assert!(troupe::whereis::<()>("idle").is_err(), "not in the process-wide registry");
/// // Code run in the system spawns and looks up in it.
/// let sup = sys
///     .run(async {
///         let spec = SupervisorSpec::new(Strategy::OneForOne).child(ChildSpec::worker("w", || Idle));
///         supervisor::start(spec).await.unwrap()
///     })
///     .await;
/// assert_eq!(sys.whereis::<()>("idle").unwrap().id(), a.id());
/// sys.shutdown().await;
/// assert_eq!(sup.terminated().await, ExitReason::Shutdown);
/// assert_eq!(a.terminated().await, ExitReason::Shutdown);
/// # }
/// ```
pub struct System {
    pub(crate) inner: Arc<SystemInner>,
}

impl Default for System {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for System {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "System({} top-level actors)", self.inner.roots.lock().len())
    }
}

impl System {
    /// An empty system with a 5 s shutdown timeout per actor.
    #[must_use]
    pub fn new() -> Self {
        Self {
            inner: Arc::new(SystemInner {
                registry: Arc::new(Registry::default()),
                roots: Mutex::new(Vec::new()),
                others: Mutex::new(Vec::new()),
                closed: AtomicBool::new(false),
                shutdown_timeout: Mutex::new(Duration::from_secs(5)),
                ask_timeout: Mutex::new(DEFAULT_ASK_TIMEOUT),
                lifecycle: crate::lifecycle::Lifecycle::default(),
            }),
        }
    }

    /// How long `shutdown` waits for each actor (or, for the rest, all of them) to stop before
    /// killing it (rule 3).
    #[must_use]
    pub fn with_shutdown_timeout(self, timeout: Duration) -> Self {
        *self.inner.shutdown_timeout.lock() = timeout;
        self
    }

    /// The default timeout of [`ActorRef::call`] made in this system (rule 6); without it,
    /// [`DEFAULT_ASK_TIMEOUT`] (5 s). [`ActorRef::ask`] still takes an explicit one.
    ///
    /// ```
    /// use std::time::Duration;
    /// use troupe::System;
    /// let sys = System::new().with_ask_timeout(Duration::from_millis(250));
    /// assert_eq!(sys.ask_timeout(), Duration::from_millis(250));
    /// assert_eq!(System::new().ask_timeout(), troupe::DEFAULT_ASK_TIMEOUT);
    /// ```
    #[must_use]
    pub fn with_ask_timeout(self, timeout: Duration) -> Self {
        *self.inner.ask_timeout.lock() = timeout;
        self
    }

    /// The default timeout of [`ActorRef::call`] in this system.
    #[must_use]
    pub fn ask_timeout(&self) -> Duration {
        *self.inner.ask_timeout.lock()
    }

    /// Runs `f` with this system current: what it spawns or registers goes to this system.
    pub fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let _in = enter(&self.inner);
        f()
    }

    /// Runs `fut` with this system current at each poll (rule 1): the actors, supervisors and
    /// pools it starts, and the names it registers or looks up, are this system's. Tasks it
    /// spawns with `tokio::spawn` are not in it.
    pub async fn run<F: Future>(&self, fut: F) -> F::Output {
        let mut fut = pin!(fut);
        poll_fn(|cx| {
            let _in = enter(&self.inner);
            fut.as_mut().poll(cx)
        })
        .await
    }

    /// Spawns `actor` in this system ([`crate::spawn`]).
    pub fn spawn<A: Actor>(&self, actor: A) -> ActorRef<A::Msg> {
        self.enter(|| crate::spawn(actor))
    }

    /// Spawns `actor` in this system with options ([`crate::spawn_with`]).
    pub fn spawn_with<A: Actor>(&self, actor: A, opts: Spawn) -> ActorRef<A::Msg> {
        self.enter(|| crate::spawn_with(actor, opts))
    }

    /// Starts `actor` in this system and waits for its `started` hook ([`crate::start`]):
    /// its ref, or the [`StartError`] saying why it failed.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use troupe::{Actor, ActorError, Ctx, System};
    /// struct Refuses;
    /// impl Actor for Refuses {
    ///     type Msg = ();
    ///     async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
    ///         Err(ActorError::new("port 80 is taken"))
    ///     }
    ///     async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {}
    /// }
    /// let sys = System::new();
    /// let err = sys.start(Refuses).await.unwrap_err();
    /// assert!(err.to_string().contains("port 80 is taken"), "{err}");
    /// assert_eq!(sys.alive(), 0);
    /// # }
    /// ```
    pub async fn start<A: Actor>(&self, actor: A) -> Result<ActorRef<A::Msg>, StartError> {
        self.run(crate::start(actor)).await
    }

    /// [`System::start`] with options ([`crate::start_with`]).
    pub async fn start_with<A: Actor>(&self, actor: A, opts: Spawn) -> Result<ActorRef<A::Msg>, StartError> {
        self.run(crate::start_with(actor, opts)).await
    }

    /// Registers `actor` under `name` in this system's registry ([`crate::register`]).
    pub fn register<M: Send + 'static>(&self, name: &str, actor: &ActorRef<M>) -> Result<(), RegistryError> {
        self.inner.registry.register(name, actor)
    }

    /// Removes a name from this system's registry.
    pub fn unregister(&self, name: &str) -> bool {
        self.inner.registry.unregister(name)
    }

    /// Looks a name up in this system's registry ([`crate::whereis`]).
    pub fn whereis<M: Send + 'static>(&self, name: &str) -> Result<ActorRef<M>, RegistryError> {
        self.inner.registry.whereis(name)
    }

    /// The actor holding `name` in this system, whatever its message type.
    #[must_use]
    pub fn whereis_any(&self, name: &str) -> Option<AnyRef> {
        self.inner.registry.whereis_any(name)
    }

    /// Adds `actor` to group `group` of this system.
    pub fn join_group<M: Send + 'static>(&self, group: &str, actor: &ActorRef<M>) -> Result<(), RegistryError> {
        self.inner.registry.join_group(group, actor)
    }

    /// Removes `actor` from group `group` of this system.
    pub fn leave_group(&self, group: &str, actor: ActorId) {
        self.inner.registry.leave_group(group, actor);
    }

    /// The live members of group `group` of this system that accept `M`.
    #[must_use]
    pub fn group_members<M: Send + 'static>(&self, group: &str) -> Vec<ActorRef<M>> {
        self.inner.registry.group_members(group)
    }

    /// How many of its actors are alive.
    #[must_use]
    pub fn alive(&self) -> usize {
        let roots = self.inner.roots.lock().iter().filter(|a| a.is_alive()).count();
        roots + self.inner.others.lock().iter().filter(|a| a.is_alive()).count()
    }
}

impl SystemInner {
    /// Rule 3 (the `stop-actors` phase of `System::shutdown`): stops every actor and returns
    /// when all are dead.
    pub(crate) async fn stop_actors(&self) {
        self.closed.store(true, Ordering::Release);
        let timeout = *self.shutdown_timeout.lock();
        let roots = self.roots.lock().clone();
        for actor in roots.iter().rev() {
            stop_within(std::slice::from_ref(actor), timeout).await;
        }
        loop {
            let rest: Vec<AnyRef> = self.others.lock().iter().filter(|a| a.is_alive()).cloned().collect();
            if rest.is_empty() {
                break;
            }
            stop_within(&rest, timeout).await;
        }
        self.roots.lock().clear();
        self.others.lock().clear();
    }

    /// Kills every actor still alive, the last started first (rule 5, and the end of an
    /// overrun `stop-actors` phase).
    pub(crate) fn kill_actors(&self) {
        self.closed.store(true, Ordering::Release);
        let roots = std::mem::take(&mut *self.roots.lock());
        for a in roots.iter().rev() {
            a.kill();
        }
        let others = std::mem::take(&mut *self.others.lock());
        for a in &others {
            a.kill();
        }
    }

    /// Forgets every name (the end of rule 3).
    pub(crate) fn forget_names(&self) {
        self.registry.clear();
    }
}

/// Asks each of `actors` to stop with `Shutdown`, waits for them together up to `timeout`,
/// kills those still alive, and waits for them all.
async fn stop_within(actors: &[AnyRef], timeout: Duration) {
    for a in actors {
        a.stop(ExitReason::Shutdown);
    }
    let deadline = tokio::time::Instant::now() + timeout;
    for a in actors {
        if tokio::time::timeout_at(deadline, a.terminated()).await.is_err() {
            tracing::warn!(actor = %a.id(), "did not stop within the system's shutdown timeout {timeout:?}; killing it");
            a.kill();
            a.terminated().await;
        }
    }
}

impl Drop for System {
    /// Rule 5.
    fn drop(&mut self) {
        self.inner.kill_actors();
        self.inner.registry.clear();
    }
}
