//! Worker pools: `size` supervised workers of one actor type behind a router that picks one per
//! message, round-robin, least-loaded, or by a consistent hash of a key.
//!
//! Rules (tests in `tests/pool_routing.rs`):
//! 1. The workers are the children `worker-0` .. `worker-{size-1}` of a `OneForOne` supervisor
//!    (permanent; intensity and period settable): a dead worker is restarted, and the router
//!    routes to the new incarnation (it holds a [`ChildRef`] per worker, not an `ActorRef`).
//!    The supervisor is named by [`PoolSpec::name`] (default `pool`) and the workers are made
//!    from the template `worker`, so their metrics are `{supervisor="/pool",child="worker"}`
//!    however large the pool (`reports.rs` rule 5).
//! 2. `RoundRobin` takes the workers in turn; `LeastLoaded` takes the worker with the fewest
//!    messages waiting ([`ActorRef::mailbox_len`]), ties going round-robin. Both skip a worker
//!    that is being restarted or whose mailbox refuses the message; the send fails only when no
//!    worker takes it (`Gone`, or `Full` when a full mailbox refused it).
//! 3. `ConsistentHash` sends every message with the same key to the same worker (jump consistent
//!    hashing of the key's hash over the pool size), so per-key state can live in a worker. While
//!    that worker is being restarted `send` fails with `Gone` and `ask` waits for it: the
//!    message never goes to another worker.
//! 4. Stopping the pool stops its supervisor, which stops the workers in reverse order.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use crate::error::{AskError, SendError, SendErrorKind};
use crate::supervisor::{self, ChildRef, ChildSpec, Strategy, SupervisorError, SupervisorRef, SupervisorSpec};
use crate::{Actor, ActorRef, AnyRef, DynSender, ExitReason, MailboxConfig, ReplyTo};

/// How a pool picks a worker for a message.
pub enum Routing<M> {
    /// The workers in turn.
    RoundRobin,
    /// The worker with the fewest messages waiting.
    LeastLoaded,
    /// The worker owning the message's key (see [`Routing::consistent_hash`]).
    ConsistentHash(Arc<dyn Fn(&M) -> u64 + Send + Sync>),
}

impl<M> Routing<M> {
    /// Routes by `key(msg)`: equal keys always reach the same worker (rule 3).
    pub fn consistent_hash<K: Hash>(key: impl Fn(&M) -> K + Send + Sync + 'static) -> Self {
        Routing::ConsistentHash(Arc::new(move |m| {
            let mut h = std::hash::DefaultHasher::new();
            key(m).hash(&mut h);
            h.finish()
        }))
    }
}

impl<M> Clone for Routing<M> {
    fn clone(&self) -> Self {
        match self {
            Routing::RoundRobin => Routing::RoundRobin,
            Routing::LeastLoaded => Routing::LeastLoaded,
            Routing::ConsistentHash(f) => Routing::ConsistentHash(f.clone()),
        }
    }
}

/// A pool's specification: `size` workers made by `factory(index)`, `RoundRobin` routing,
/// unbounded mailboxes, and a supervisor allowing `size` restarts in 5 s.
#[must_use]
pub struct PoolSpec<A: Actor> {
    size: usize,
    factory: Arc<dyn Fn(usize) -> A + Send + Sync>,
    routing: Routing<A::Msg>,
    mailbox: MailboxConfig,
    intensity: u32,
    period: Duration,
    name: String,
}

impl<A: Actor> PoolSpec<A> {
    /// `size` workers; worker `i` (and each of its restarts) is made by `factory(i)`.
    pub fn new(size: usize, factory: impl Fn(usize) -> A + Send + Sync + 'static) -> Self {
        Self {
            size,
            factory: Arc::new(factory),
            routing: Routing::RoundRobin,
            mailbox: MailboxConfig::unbounded(),
            intensity: size.max(1) as u32,
            period: Duration::from_secs(5),
            name: "pool".to_owned(),
        }
    }

    /// Names the pool's supervisor (default `pool`): its path `/name` is the `supervisor` label
    /// of the workers' metrics, which are all labelled `child=worker` (`reports.rs` rule 5).
    /// Must be non-empty and contain no `/`.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How messages are routed (default `RoundRobin`).
    pub fn routing(mut self, routing: Routing<A::Msg>) -> Self {
        self.routing = routing;
        self
    }

    /// Each worker's mailbox.
    pub fn mailbox(mut self, mailbox: MailboxConfig) -> Self {
        self.mailbox = mailbox;
        self
    }

    /// The supervisor's restart intensity: more than `intensity` worker restarts within `period`
    /// (whole seconds) stop the pool.
    pub fn intensity(mut self, intensity: u32, period: Duration) -> Self {
        self.intensity = intensity;
        self.period = period;
        self
    }
}

/// Starts a pool: its supervisor and every worker, started in order.
///
/// ```
/// # #[tokio::main] async fn main() {
/// use std::time::Duration;
/// use troupe::{Actor, Ctx, ReplyTo};
/// use troupe::pool::{self, PoolSpec, Routing};
///
/// struct Square;
/// impl Actor for Square {
///     type Msg = (u64, ReplyTo<u64>);
///     async fn handle(&mut self, (n, r): Self::Msg, _: &mut Ctx<Self>) { r.send(n * n) }
/// }
/// let pool = pool::start(PoolSpec::new(4, |_| Square).routing(Routing::LeastLoaded)).await.unwrap();
/// assert_eq!(pool.ask(|r| (12, r), Duration::from_secs(1)).await.unwrap(), 144);
/// pool.stop().await;
/// # }
/// ```
pub async fn start<A: Actor>(spec: PoolSpec<A>) -> Result<Pool<A::Msg>, SupervisorError> {
    if spec.size == 0 {
        return Err(SupervisorError::InvalidSpec { field: "pool.size".into(), problem: "must be at least 1".into() });
    }
    let mut sup = SupervisorSpec::new(Strategy::OneForOne).intensity(spec.intensity, spec.period).name(spec.name);
    let mut workers = Vec::with_capacity(spec.size);
    for i in 0..spec.size {
        let factory = spec.factory.clone();
        let w = ChildSpec::worker(format!("worker-{i}"), move || factory(i)).template("worker").mailbox(spec.mailbox);
        workers.push(w.handle());
        sup = sup.child(w);
    }
    let sup = supervisor::start(sup).await?;
    Ok(Pool { inner: Arc::new(Inner { sup, workers, routing: spec.routing, next: AtomicUsize::new(0) }) })
}

/// A running pool: send to it as to one actor. Cheap to clone.
pub struct Pool<M> {
    inner: Arc<Inner<M>>,
}

struct Inner<M> {
    sup: SupervisorRef,
    workers: Vec<ChildRef<M>>,
    routing: Routing<M>,
    next: AtomicUsize,
}

impl<M> Clone for Pool<M> {
    fn clone(&self) -> Self {
        Self { inner: self.inner.clone() }
    }
}

impl<M> std::fmt::Debug for Pool<M> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool({} workers, {:?})", self.inner.workers.len(), self.inner.sup)
    }
}

impl<M: Send + 'static> Pool<M> {
    /// Sends `msg` to the worker the routing picks (rules 2 and 3).
    pub fn send(&self, msg: M) -> Result<(), SendError<M>> {
        self.inner.route(msg)
    }

    /// Request/reply with the worker the routing picks. With `ConsistentHash`, waits (within
    /// `timeout`) for the key's worker while it is being restarted.
    pub async fn ask<R: Send + 'static>(
        &self,
        make: impl FnOnce(ReplyTo<R>) -> M,
        timeout: Duration,
    ) -> Result<R, AskError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let (tx, rx) = oneshot::channel();
        let msg = make(ReplyTo::local(tx));
        let sent = match &self.inner.routing {
            Routing::ConsistentHash(key) => {
                let i = jump_hash(key(&msg), self.inner.workers.len());
                let worker = self.inner.workers[i].current(timeout).await?;
                worker.send(msg)
            }
            _ => self.inner.route(msg),
        };
        sent.map_err(|e| if e.kind() == SendErrorKind::Full { AskError::Full } else { AskError::Gone })?;
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(r)) => r,
            Ok(Err(_)) => Err(AskError::Gone),
            Err(_) => Err(AskError::Timeout(timeout)),
        }
    }

    /// Sends a clone of `msg` to every live worker; returns how many took it.
    pub fn broadcast(&self, msg: M) -> usize
    where
        M: Clone,
    {
        self.inner.workers.iter().filter(|w| w.send(msg.clone()).is_ok()).count()
    }

    /// The workers' current incarnations, in index order (`None` while one is being restarted).
    #[must_use]
    pub fn workers(&self) -> Vec<Option<ActorRef<M>>> {
        self.inner.workers.iter().map(ChildRef::get).collect()
    }

    /// The handle of worker `i`, following it across restarts.
    #[must_use]
    pub fn worker(&self, i: usize) -> Option<&ChildRef<M>> {
        self.inner.workers.get(i)
    }

    /// How many workers.
    #[must_use]
    pub fn size(&self) -> usize {
        self.inner.workers.len()
    }

    /// The pool's supervisor.
    #[must_use]
    pub fn supervisor(&self) -> &SupervisorRef {
        &self.inner.sup
    }

    /// The pool as an `ActorRef<M>`, to hand to code that expects one: its sends are routed;
    /// its identity, liveness, stop, kill and monitors are the supervisor's.
    #[must_use]
    pub fn actor_ref(&self) -> ActorRef<M> {
        ActorRef::from_dyn(Arc::new(self.clone()))
    }

    /// Stops the pool (rule 4) and returns the supervisor's exit reason.
    pub async fn stop(&self) -> ExitReason {
        self.inner.sup.stop().await
    }
}

impl<M: Send + 'static> DynSender<M> for Pool<M> {
    fn send(&self, msg: M) -> Result<(), SendError<M>> {
        self.inner.route(msg)
    }

    fn any(&self) -> AnyRef {
        self.inner.sup.any()
    }
}

impl<M: Send + 'static> Inner<M> {
    fn route(&self, msg: M) -> Result<(), SendError<M>> {
        let n = self.workers.len();
        match &self.routing {
            Routing::ConsistentHash(key) => self.workers[jump_hash(key(&msg), n)].send(msg),
            Routing::RoundRobin => {
                let start = self.next.fetch_add(1, Ordering::Relaxed);
                self.first_taker((0..n).map(|k| (start + k) % n), msg)
            }
            Routing::LeastLoaded => {
                let start = self.next.fetch_add(1, Ordering::Relaxed);
                let mut live: Vec<(usize, usize)> = (0..n)
                    .map(|k| (start + k) % n)
                    .filter_map(|i| self.workers[i].get().map(|w| (w.mailbox_len(), i)))
                    .collect();
                // Stable: among equal loads the rotation order stays.
                live.sort_by_key(|&(len, _)| len);
                self.first_taker(live.into_iter().map(|(_, i)| i), msg)
            }
        }
    }

    /// Rule 2: the first worker in `order` that takes the message.
    fn first_taker(&self, order: impl Iterator<Item = usize>, msg: M) -> Result<(), SendError<M>> {
        let mut msg = msg;
        let mut kind = SendErrorKind::Gone;
        for i in order {
            match self.workers[i].send(msg) {
                Ok(()) => return Ok(()),
                Err(e) => {
                    if e.kind() == SendErrorKind::Full {
                        kind = SendErrorKind::Full;
                    }
                    match e.into_inner() {
                        Some(m) => msg = m,
                        None => return Err(SendError::new(kind, None)),
                    }
                }
            }
        }
        Err(SendError::new(kind, Some(msg)))
    }
}

/// Jump consistent hashing (Lamping and Veach, 2014): the bucket in `0..n` of `key`; when `n`
/// grows by one, only about `1/n` of the keys move.
fn jump_hash(mut key: u64, n: usize) -> usize {
    let (mut b, mut j) = (-1i64, 0i64);
    while j < n as i64 {
        b = j;
        key = key.wrapping_mul(2_862_933_555_777_941_757).wrapping_add(1);
        j = ((b + 1) as f64 * ((1u64 << 31) as f64 / ((key >> 33) + 1) as f64)) as i64;
    }
    b as usize
}

#[cfg(test)]
mod tests {
    use super::jump_hash;

    #[test]
    fn jump_hash_is_in_range_spread_and_moves_few_keys_when_growing() {
        let mut counts = [0usize; 8];
        let mut moved = 0;
        for k in 0..8000u64 {
            let key = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let b = jump_hash(key, 8);
            counts[b] += 1;
            if jump_hash(key, 9) != b {
                moved += 1;
            }
        }
        assert!(counts.iter().all(|&c| (800..1200).contains(&c)), "{counts:?}");
        assert!((600..1200).contains(&moved), "about 1/9 of the keys move, {moved} did");
        assert_eq!(jump_hash(42, 1), 0);
    }
}
