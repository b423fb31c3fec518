//! One lifecycle for a Troupe application: the services a [`System`] owns (a node, a cluster
//! membership, a replicator: anything that implements [`Service`]) and the coordinated
//! shutdown that stops them and the system's actors in phases, as Akka's coordinated shutdown
//! does. The core knows no sockets: `troupe-remote`, `troupe-cluster` and `troupe-crdt`
//! implement [`Service`] and attach themselves (`Node::start_in`, `Cluster::start_in`,
//! `Replicator::start_in`), or the application calls [`System::attach`].
//!
//! Rules (tests in `tests/core_shutdown.rs`; the node, cluster and replicator in
//! `troupe-crdt/tests/replicator_shutdown.rs`):
//! 1. [`System::shutdown`] runs the phases in [`Phase::ALL`] order, each once:
//!    [`Phase::LeaveCluster`], [`Phase::StopActors`], [`Phase::StopReplicator`],
//!    [`Phase::CloseNode`]. A service runs in the one phase it names ([`Service::phase`]).
//! 2. Within a phase, services stop one after another in reverse attach order (the last
//!    attached stops first). [`Phase::StopActors`] stops the system's actors (`system.rs`
//!    rule 3: top-level ones in reverse start order) and then its services of that phase.
//! 3. Each phase is bounded by its timeout (defaults: [`Phase::default_timeout`]; set with
//!    [`System::with_phase_timeout`]). When it runs out, the service being stopped is
//!    abandoned (its stop future dropped), the phase's remaining services are each polled
//!    once (a stop that completes at once still completes), the overrun is logged as a WARN
//!    `tracing` event, and the next phase runs anyway. In [`Phase::StopActors`] the actors
//!    still alive at the deadline are killed.
//! 4. `shutdown` returns a [`ShutdownReport`]: every phase, the services it stopped, those
//!    that overran, whether it timed out, how long it took.
//! 5. Shutdown is idempotent: only the first call runs the phases; a later (or concurrent)
//!    call returns at once, with `first: false` and the first call's phases when they are done
//!    (none while it is still running).
//! 6. A service attached after shutdown began is stopped at once (in the background, on the
//!    current tokio runtime), as an actor spawned then is killed (`system.rs` rule 4).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use crate::System;

/// What a [`Service`]'s stop returns: a boxed future that owns what it needs.
pub type StopFuture = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A phase of coordinated shutdown (rule 1), in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Phase {
    /// Leave the cluster gracefully, so peers see this member leave rather than fail.
    LeaveCluster,
    /// Stop the application's actors (reverse start order) and services of this phase.
    StopActors,
    /// Stop the replicator (after the actors, which may write to it while they stop).
    StopReplicator,
    /// Close the node: connections and the listener.
    CloseNode,
}

impl Phase {
    /// Every phase, in the order shutdown runs them.
    pub const ALL: [Phase; 4] = [Phase::LeaveCluster, Phase::StopActors, Phase::StopReplicator, Phase::CloseNode];

    /// The phase's default bound: 10 s to leave the cluster (gossip needs a few rounds and
    /// a leader), 30 s for the actors (each gets the system's shutdown timeout, 5 s by
    /// default, before it is killed), 5 s for the replicator and 5 s for the node.
    #[must_use]
    pub fn default_timeout(self) -> Duration {
        match self {
            Phase::LeaveCluster => Duration::from_secs(10),
            Phase::StopActors => Duration::from_secs(30),
            Phase::StopReplicator | Phase::CloseNode => Duration::from_secs(5),
        }
    }

    /// The phase's name in logs and reports (`leave-cluster`, `stop-actors`,
    /// `stop-replicator`, `close-node`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::LeaveCluster => "leave-cluster",
            Phase::StopActors => "stop-actors",
            Phase::StopReplicator => "stop-replicator",
            Phase::CloseNode => "close-node",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something a [`System`] owns and stops in one [`Phase`] of its shutdown: a node, a cluster
/// membership, a replicator, or an application's own resource.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::sync::Arc;
/// use troupe::lifecycle::{Phase, Service, StopFuture};
/// use troupe::System;
///
/// struct Flusher(Arc<AtomicBool>);
/// impl Service for Flusher {
///     fn name(&self) -> &str { "flusher" }
///     fn phase(&self) -> Phase { Phase::StopReplicator }
///     fn stop(&self) -> StopFuture {
///         let done = self.0.clone();
///         Box::pin(async move { done.store(true, Ordering::SeqCst) })
///     }
/// }
///
/// let sys = System::new();
/// let flushed = Arc::new(AtomicBool::new(false));
/// sys.attach(Flusher(flushed.clone()));
/// let report = sys.shutdown().await;
/// assert!(flushed.load(Ordering::SeqCst));
/// assert!(report.timed_out().is_empty());
/// # }
/// ```
pub trait Service: Send + Sync + 'static {
    /// A name for logs and the shutdown report.
    fn name(&self) -> &str;
    /// The phase it stops in.
    fn phase(&self) -> Phase;
    /// Stops it; shutdown waits for the future up to the phase's timeout (rule 3).
    fn stop(&self) -> StopFuture;
}

/// One phase as it ran (rule 4).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PhaseReport {
    /// Which phase.
    pub phase: Phase,
    /// The services it stopped, in the order it stopped them.
    pub services: Vec<String>,
    /// The services whose stop had not finished at the phase's deadline (for
    /// [`Phase::StopActors`], `"actors"` when actors had to be killed at the deadline).
    pub overran: Vec<String>,
    /// Whether the phase ran past its timeout.
    pub timed_out: bool,
    /// How long it took.
    pub elapsed: Duration,
}

/// What [`System::shutdown`] did (rule 4).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ShutdownReport {
    /// False when shutdown had already begun: this call ran nothing and returned at once
    /// (rule 5).
    pub first: bool,
    /// Every phase, in the order it ran.
    pub phases: Vec<PhaseReport>,
}

impl ShutdownReport {
    /// The phases that ran past their timeout.
    #[must_use]
    pub fn timed_out(&self) -> Vec<Phase> {
        self.phases.iter().filter(|p| p.timed_out).map(|p| p.phase).collect()
    }

    /// The report of `phase`, when it ran.
    #[must_use]
    pub fn phase(&self, phase: Phase) -> Option<&PhaseReport> {
        self.phases.iter().find(|p| p.phase == phase)
    }
}

/// A system's services and shutdown state (held by `SystemInner`).
pub(crate) struct Lifecycle {
    services: Mutex<Vec<Arc<dyn Service>>>,
    timeouts: Mutex<[Duration; 4]>,
    begun: AtomicBool,
    report: Mutex<Option<ShutdownReport>>,
}

impl Default for Lifecycle {
    fn default() -> Self {
        Self {
            services: Mutex::new(Vec::new()),
            timeouts: Mutex::new(Phase::ALL.map(Phase::default_timeout)),
            begun: AtomicBool::new(false),
            report: Mutex::new(None),
        }
    }
}

impl System {
    /// Sets the bound of one shutdown phase (rule 3; defaults: [`Phase::default_timeout`]).
    #[must_use]
    pub fn with_phase_timeout(self, phase: Phase, timeout: Duration) -> Self {
        self.inner.lifecycle.timeouts.lock()[phase.index()] = timeout;
        self
    }

    /// Hands `service` to this system: [`System::shutdown`] stops it in its phase (rules 1
    /// and 2). Attached after shutdown began, it is stopped at once (rule 6).
    pub fn attach(&self, service: impl Service) {
        self.attach_arc(Arc::new(service));
    }

    /// [`System::attach`] for a service already behind an `Arc`.
    pub fn attach_arc(&self, service: Arc<dyn Service>) {
        let lc = &self.inner.lifecycle;
        {
            let mut services = lc.services.lock();
            if !lc.begun.load(Ordering::Acquire) {
                services.push(service);
                return;
            }
        }
        tracing::warn!(service = service.name(), "attached after shutdown began; stopping it now");
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn(service.stop())),
            Err(_) => tracing::warn!(service = service.name(), "no tokio runtime here to stop it on; dropped instead"),
        }
    }

    /// The names of the services attached, in attach order.
    #[must_use]
    pub fn services(&self) -> Vec<String> {
        self.inner.lifecycle.services.lock().iter().map(|s| s.name().to_owned()).collect()
    }

    /// Coordinated shutdown (rules 1-5): leaves the cluster, stops the actors in reverse start
    /// order, stops the replicator, closes the node, each phase bounded by its timeout; then
    /// forgets every name. Returns what each phase did. A second call returns at once.
    pub async fn shutdown(&self) -> ShutdownReport {
        let lc = &self.inner.lifecycle;
        let services = {
            let services = lc.services.lock();
            if lc.begun.swap(true, Ordering::AcqRel) {
                let phases = lc.report.lock().as_ref().map(|r| r.phases.clone()).unwrap_or_default();
                return ShutdownReport { first: false, phases };
            }
            services.clone()
        };
        let timeouts = *lc.timeouts.lock();
        let mut report = ShutdownReport { first: true, phases: Vec::new() };
        for phase in Phase::ALL {
            let timeout = timeouts[phase.index()];
            let start = tokio::time::Instant::now();
            let deadline = start + timeout;
            let mut pr = PhaseReport {
                phase,
                services: Vec::new(),
                overran: Vec::new(),
                timed_out: false,
                elapsed: Duration::ZERO,
            };
            if phase == Phase::StopActors && tokio::time::timeout_at(deadline, self.inner.stop_actors()).await.is_err()
            {
                self.inner.kill_actors();
                pr.overran.push("actors".to_owned());
            }
            for s in services.iter().rev().filter(|s| s.phase() == phase) {
                pr.services.push(s.name().to_owned());
                if tokio::time::timeout_at(deadline, s.stop()).await.is_err() {
                    pr.overran.push(s.name().to_owned());
                }
            }
            pr.timed_out = !pr.overran.is_empty();
            pr.elapsed = start.elapsed();
            if pr.timed_out {
                tracing::warn!(
                    phase = phase.as_str(),
                    overran = %pr.overran.join(","),
                    "shutdown phase ran past its timeout of {timeout:?}; going on with the next phase"
                );
            }
            report.phases.push(pr);
        }
        self.inner.forget_names();
        lc.services.lock().clear();
        *lc.report.lock() = Some(report.clone());
        report
    }
}
