//! The [`Replicator`]: one per node, over a `troupe_cluster::Cluster`; it holds a replica of
//! every key, spreads local changes as deltas with acknowledgements, and gossips full states
//! as the fallback (seed 003 §2.9; Akka Distributed Data's `Replicator`).
//!
//! Rules:
//! 1. A replica changes only under the store lock and only by a join (a local mutator, a
//!    merged delta, a merged state); subscribers get the new value after every change
//!    (watch semantics: a slow subscriber sees the latest value, not every step).
//! 2. A local update that changes the state yields one delta with the key's next sequence
//!    number on this node; it is buffered (at most `delta_buffer` per key) and sent at once to
//!    every live member.
//! 3. A peer's acknowledgement of deltas `first..=last` moves its mark to `last` only when the
//!    mark was at least `first - 1` (acknowledgements beyond a gap are kept and taken in when
//!    it closes); an acknowledged state moves it to the state's sequence number. Marks only
//!    grow.
//! 4. Every `resend_interval`, a reachable peer whose mark is behind receives the buffered
//!    deltas after its mark in one message (once the oldest of them is `resend_interval` old),
//!    or the full state when the buffer no longer reaches back to its mark. A buffer keeps
//!    only what some live member has not acknowledged.
//! 5. Every `gossip_interval`, one random reachable member receives the full state of every
//!    typed key: the fallback for lost deltas, members that joined later, and the data of
//!    members that are gone.
//! 6. `Majority` needs `N/2 + 1` replicas and `All` needs `N`, where `N` counts this node and
//!    every live member, reachable or not; this node counts itself. Without enough
//!    acknowledgements (writes) or answers (reads) before the timeout the call fails with
//!    [`ErrorKind::Timeout`]: the write is applied here and keeps spreading, but it is never
//!    reported as done.
//! 7. A delta or state that fails to decode, or whose kind is not the key's, is rejected
//!    whole (all items are decoded before any is merged), counted in [`ReplicatorStats`], and
//!    answered with a negative acknowledgement, which never counts towards a level. It is
//!    logged as a WARN `tracing` event, `replicated payload rejected` (rate-limited; target
//!    under `troupe_crdt`): `key`, `peer`, `reason` (`decode`, `kind`), `error`. A send
//!    without a positive acknowledgement is counted (`sends_unanswered`, `sends_nacked`) and
//!    logged the same way, `replication send failed`: `key`, `peer`, `what` (`deltas`,
//!    `state`), `reason` (`no_answer`, `rejected_by_peer`), `error` for `no_answer`.
//! 8. A key this node has not used keeps what it receives undecoded (the latest state per
//!    sender, a bounded list of deltas); the first typed use decodes and joins it, under
//!    rule 7.
//! 9. The replicator's actors, the inbox (exported as [`REPLICATOR_ACTOR`] with
//!    `Node::export_child`, so every message reaches the live incarnation) and the ticker
//!    (rules 4 and 5), are permanent children of a `one_for_one` supervisor (path
//!    `/troupe.crdt`) allowing [`RESTART_INTENSITY`] restarts in [`RESTART_PERIOD`]. The
//!    replicas, marks and buffers live outside the actors, so a restarted child goes on with
//!    the same data; a message that reaches the name while the inbox is being restarted is
//!    refused as for an unknown name, and the sender's resend or gossip makes up for it. Each
//!    restart is counted ([`ReplicatorStats::restarts`]) and logged as a WARN `tracing` event,
//!    `replicator child restarted` (`child`: `inbox`, `ticker`; `restarts`). The supervisor
//!    belongs to no `troupe::System` (a system's `stop-actors` phase does not stop it; the
//!    replicator's own stop does, `lifecycle.rs`). When it gives up (more restarts than its
//!    intensity), the replicator is unexported and ended: an ERROR event, `replicator
//!    stopped after repeated crashes` (`reason`), says so; the data stays readable locally.

mod lifecycle;
mod store;
mod types;
mod wire;

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use futures::stream::{FuturesUnordered, StreamExt};
use parking_lot::Mutex;
use tokio::sync::watch;
use troupe::supervisor::{self, ChildRef, ChildSpec, Strategy, SupervisorRef, SupervisorSpec};
use troupe::{Actor, ActorError, ActorRef, Ctx, ExitReason, System};
use troupe_cluster::Cluster;
use troupe_remote::codec;
use troupe_remote::logging::Esc;

use crate::error::{Error, ErrorKind};
use crate::DeltaCrdt;
use store::{bump, Counters, Data, Store};
pub use types::{Changes, Consistency, Key, ReplicatorConfig, ReplicatorStats};
pub use wire::{CrdtMsg, ReadReply, WireAck, REPLICATOR_ACTOR};

type Push = Pin<Box<dyn Future<Output = bool> + Send>>;

struct Inner {
    cluster: Cluster,
    me: String,
    replica: String,
    cfg: ReplicatorConfig,
    store: Mutex<Store>,
    stats: Counters,
    refs: Mutex<HashMap<String, ActorRef<CrdtMsg>>>,
    /// The supervisor of the inbox and the ticker (rule 9), set once at start.
    sup: OnceLock<SupervisorRef>,
    /// The inbox, followed across its restarts (rule 9), set once at start.
    inbox: OnceLock<ChildRef<CrdtMsg>>,
    /// Set by [`Replicator::stop`]: the supervisor's end is then no failure.
    stopping: AtomicBool,
    /// Whether the inbox and the ticker have started once (a later start is a restart).
    inbox_started: AtomicBool,
    ticker_started: AtomicBool,
    /// Set by [`Replicator::debug_crash_inbox`]: the inbox panics at its next message.
    crash_inbox: AtomicBool,
    /// Set when the supervisor has ended and the replicator is unexported (`lifecycle.rs`).
    ended: watch::Sender<bool>,
}

/// How many restarts of its actors the replicator's supervisor allows in [`RESTART_PERIOD`]
/// before it gives up (rule 9).
pub const RESTART_INTENSITY: u32 = 10;

/// The period over which [`RESTART_INTENSITY`] counts restarts (rule 9).
pub const RESTART_PERIOD: Duration = Duration::from_secs(10);

/// A node's replicator (module docs for its rules).
///
/// ```no_run
/// # async fn demo(cluster: troupe_cluster::Cluster) -> Result<(), troupe_crdt::Error> {
/// use std::time::Duration;
/// use troupe_crdt::{Consistency, GCounter, Key, Replicator, ReplicatorConfig};
/// let r = Replicator::start(&cluster, ReplicatorConfig::default())?;
/// let hits = Key::<GCounter>::new("hits");
/// r.update(&hits, Consistency::Majority, Duration::from_secs(1), |c, me| c.increment(me, 1)).await?;
/// let seen = r.get(&hits, Consistency::Local, Duration::from_secs(1)).await?;
/// assert!(seen.value() >= 1);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Replicator {
    inner: Arc<Inner>,
}

/// The exported actor (rule 9): it applies what peers send to the store in `Inner`.
struct Inbox(Arc<Inner>);

impl Actor for Inbox {
    type Msg = CrdtMsg;

    async fn started(&mut self, _: &mut Ctx<Self>) -> Result<(), ActorError> {
        self.0.incarnation("inbox", &self.0.inbox_started);
        Ok(())
    }

    async fn handle(&mut self, msg: CrdtMsg, _: &mut Ctx<Self>) {
        let i = &self.0;
        if i.crash_inbox.swap(false, Ordering::AcqRel) {
            panic!("replicator inbox: crash requested by Replicator::debug_crash_inbox");
        }
        match msg {
            CrdtMsg::Deltas { from, key, kind, items, reply, .. } => {
                let items: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                let ok = i.store.lock().receive(&from, &key, kind, &items, true, &i.stats);
                reply.send(WireAck { ok });
            }
            CrdtMsg::State { from, key, kind, bytes, reply, .. } => {
                let ok = i.store.lock().receive(&from, &key, kind, &[&bytes], false, &i.stats);
                reply.send(WireAck { ok });
            }
            CrdtMsg::Read { key, reply } => {
                let items = i.store.lock().read(&key);
                reply.send(ReadReply { items });
            }
        }
    }
}

/// What the ticker is woken for (rules 4 and 5).
#[derive(Clone, Copy)]
enum Tick {
    Resend,
    Gossip,
}

/// The replicator's timers as an actor (rule 9): resends and gossip.
struct Ticker(Arc<Inner>);

impl Actor for Ticker {
    type Msg = Tick;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        self.0.incarnation("ticker", &self.0.ticker_started);
        let every = |ms: u64| Duration::from_millis(ms.max(1));
        let _ = ctx.interval(every(self.0.cfg.resend_interval_ms), Tick::Resend);
        let _ = ctx.interval(every(self.0.cfg.gossip_interval_ms), Tick::Gossip);
        Ok(())
    }

    async fn handle(&mut self, tick: Tick, _: &mut Ctx<Self>) {
        match tick {
            Tick::Resend => self.0.resend(),
            Tick::Gossip => self.0.gossip(),
        }
    }
}

impl Replicator {
    /// Exports this node's replicator (`troupe.crdt`) and starts its supervisor, which starts
    /// the inbox and the ticker (rule 9). Returns at once; needs a tokio runtime.
    pub fn start(cluster: &Cluster, cfg: ReplicatorConfig) -> Result<Replicator, Error> {
        let me = cluster.me();
        let inner = Arc::new(Inner {
            cluster: cluster.clone(),
            me: cluster.node().addr(),
            replica: format!("{}#{}", me.addr, me.uid),
            cfg,
            store: Mutex::new(Store::default()),
            stats: Counters::default(),
            refs: Mutex::new(HashMap::new()),
            sup: OnceLock::new(),
            inbox: OnceLock::new(),
            stopping: AtomicBool::new(false),
            inbox_started: AtomicBool::new(false),
            ticker_started: AtomicBool::new(false),
            crash_inbox: AtomicBool::new(false),
            ended: watch::channel(false).0,
        });
        let (i, t) = (Arc::clone(&inner), Arc::clone(&inner));
        let inbox = ChildSpec::worker("inbox", move || Inbox(Arc::clone(&i)));
        let ticker = ChildSpec::worker("ticker", move || Ticker(Arc::clone(&t)));
        let handle = inbox.handle();
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .name(REPLICATOR_ACTOR)
            .intensity(RESTART_INTENSITY, RESTART_PERIOD)
            .child(inbox)
            .child(ticker);
        let node = cluster.node();
        node.export_child(REPLICATOR_ACTOR, &handle)
            .map_err(|e| Error::node(format!("cannot export the replicator as {REPLICATOR_ACTOR:?}"), e))?;
        // Rule 9: in no system, so that only the replicator's own stop stops it.
        let sup = match System::outside(|| supervisor::spawn(spec)) {
            Ok(sup) => sup,
            Err(e) => {
                node.unexport(REPLICATOR_ACTOR);
                return Err(Error::node("cannot start the replicator's supervisor", e));
            }
        };
        let _ = inner.sup.set(sup.clone());
        let _ = inner.inbox.set(handle);
        tokio::spawn(watch_supervisor(Arc::clone(&inner), sup));
        Ok(Replicator { inner })
    }

    /// Makes the replicator's inbox panic at its next message, sends it one, and waits (up to
    /// 5 s) for the incarnation its supervisor starts instead: for tests and drills of rule 9.
    /// True when a new incarnation came; false when none did (the supervisor gave up, or the
    /// replicator was stopped).
    #[doc(hidden)]
    pub async fn debug_crash_inbox(&self) -> bool {
        const WAIT: Duration = Duration::from_secs(5);
        let Some(inbox) = self.inner.inbox.get() else { return false };
        let Ok(before) = inbox.current(WAIT).await else { return false };
        self.inner.crash_inbox.store(true, Ordering::Release);
        let _ = before.ask(|reply| CrdtMsg::Read { key: String::new(), reply }, WAIT).await;
        inbox.current_after(before.id(), WAIT).await.is_ok()
    }

    /// This node's replica id (`ADDR#UID`), what mutators are given as `me`.
    #[must_use]
    pub fn replica_id(&self) -> &str {
        &self.inner.replica
    }

    /// Applies `f` to the local replica of `key` (given this node's replica id) and
    /// replicates the change at `level` within `timeout` (rules 2 and 6). Returns the new
    /// local value.
    pub async fn update<T: DeltaCrdt>(
        &self,
        key: &Key<T>,
        level: Consistency,
        timeout: Duration,
        f: impl FnOnce(&mut T, &str),
    ) -> Result<T, Error> {
        let i = &self.inner;
        let (value, sent) = {
            let mut st = i.store.lock();
            let slot = st.typed::<T>(key.name(), &i.stats)?;
            let t = slot.typed_mut::<T>();
            f(&mut t.value, &i.replica);
            let delta = t.value.take_delta();
            let value = t.value.clone();
            match delta {
                None => (value, None),
                Some(d) => {
                    t.tx.send_replace(value.clone());
                    let bytes = Arc::new(
                        codec::encode(&d)
                            .map_err(|e| Error::node(format!("cannot encode the delta of {:?}", key.name()), e))?,
                    );
                    slot.seq += 1;
                    slot.buffer.push_back((slot.seq, Instant::now(), Arc::clone(&bytes)));
                    if slot.buffer.len() > i.cfg.delta_buffer.max(1) {
                        slot.buffer.pop_front();
                    }
                    (value, Some((slot.seq, slot.kind_hash, bytes)))
                }
            }
        };
        let peers = i.peers();
        let needed = level.needed(peers.len() + 1) - 1;
        let Some((seq, kind, bytes)) = sent else {
            // Nothing changed: nothing to replicate, but the level still has to hold.
            return self.get(key, level, timeout).await.map(|_| value);
        };
        let wait = timeout.max(Duration::from_millis(i.cfg.ack_timeout_ms));
        let pushes: FuturesUnordered<Push> = peers
            .iter()
            .map(|(p, _)| i.push_deltas(p, key.name(), kind, seq, seq, vec![bytes.to_vec()], wait))
            .collect();
        i.await_level(key.name(), pushes, needed, timeout).await?;
        Ok(value)
    }

    /// The value of `key`, merged with what `level` replicas hold (rule 6).
    pub async fn get<T: DeltaCrdt>(&self, key: &Key<T>, level: Consistency, timeout: Duration) -> Result<T, Error> {
        let i = &self.inner;
        i.store.lock().typed::<T>(key.name(), &i.stats)?;
        let peers = i.peers();
        let needed = level.needed(peers.len() + 1) - 1;
        if needed > 0 {
            let reads: FuturesUnordered<Push> = peers
                .iter()
                .map(|(p, _)| {
                    let (r, inner, key, peer) = (i.peer(p), Arc::clone(i), key.name().to_owned(), p.clone());
                    Box::pin(async move {
                        let Ok(rep) = r.ask(|reply| CrdtMsg::Read { key: key.clone(), reply }, timeout).await else {
                            return false;
                        };
                        let mut st = inner.store.lock();
                        rep.items.iter().all(|(k, d, b)| st.receive(&peer, &key, *k, &[b], *d, &inner.stats))
                    }) as Push
                })
                .collect();
            i.await_level(key.name(), reads, needed, timeout).await?;
        }
        let mut st = i.store.lock();
        Ok(st.typed::<T>(key.name(), &i.stats)?.typed_mut::<T>().value.clone())
    }

    /// The changes of `key` from now on (rule 1).
    pub fn subscribe<T: DeltaCrdt>(&self, key: &Key<T>) -> Result<Changes<T>, Error> {
        let i = &self.inner;
        let mut st = i.store.lock();
        let rx = st.typed::<T>(key.name(), &i.stats)?.typed_mut::<T>().tx.subscribe();
        Ok(Changes { rx })
    }

    /// The size in bytes of `key`'s encoded full state here (what gossip sends; 0 when the
    /// key is not typed here).
    #[must_use]
    pub fn state_size(&self, key: &str) -> usize {
        let st = self.inner.store.lock();
        match st.slots.get(key).map(|s| &s.data) {
            Some(Data::Typed(t)) => t.state_bytes().len(),
            _ => 0,
        }
    }

    /// How many keys this replicator holds (typed, or still undecoded: rule 8).
    #[must_use]
    pub fn keys(&self) -> usize {
        self.inner.store.lock().slots.len()
    }

    /// What was sent, received and rejected so far.
    #[must_use]
    pub fn stats(&self) -> ReplicatorStats {
        let c = &self.inner.stats;
        let g = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed);
        ReplicatorStats {
            deltas_sent: g(&c.deltas_sent),
            delta_bytes_sent: g(&c.delta_bytes_sent),
            states_sent: g(&c.states_sent),
            state_bytes_sent: g(&c.state_bytes_sent),
            deltas_received: g(&c.deltas_received),
            states_received: g(&c.states_received),
            rejected_decode: g(&c.rejected_decode),
            rejected_kind: g(&c.rejected_kind),
            deltas_acked: g(&c.deltas_acked),
            states_acked: g(&c.states_acked),
            sends_unanswered: g(&c.sends_unanswered),
            sends_nacked: g(&c.sends_nacked),
            restarts: g(&c.restarts),
        }
    }

    /// Unexports the replicator and stops its supervisor, with the inbox and the ticker
    /// (rule 9). What it holds stays readable locally.
    pub fn stop(&self) {
        let i = &self.inner;
        if i.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        i.cluster.node().unexport(REPLICATOR_ACTOR);
        if let Some(sup) = i.sup.get() {
            sup.any().stop(ExitReason::Shutdown);
        }
    }
}

/// Rule 9: when the supervisor ends (stopped, or gave up), the replicator is unexported and
/// ended.
async fn watch_supervisor(inner: Arc<Inner>, sup: SupervisorRef) {
    let reason = sup.terminated().await;
    if !inner.stopping.swap(true, Ordering::AcqRel) {
        inner.cluster.node().unexport(REPLICATOR_ACTOR);
        tracing::error!(
            target: "troupe_crdt::replicator",
            node = %Esc(&inner.me),
            reason = %reason,
            "replicator stopped after repeated crashes; this node no longer replicates (start a new replicator)"
        );
    }
    inner.ended.send_replace(true);
}

impl Inner {
    /// Rule 9: counts and logs a start of `child` after its first.
    fn incarnation(&self, child: &'static str, started: &AtomicBool) {
        if started.swap(true, Ordering::AcqRel) {
            let restarts = self.stats.restarts.fetch_add(1, Ordering::Relaxed) + 1;
            tracing::warn!(
                target: "troupe_crdt::replicator",
                node = %Esc(&self.me),
                child,
                restarts,
                "replicator child restarted"
            );
        }
    }

    /// Live members other than this node, with whether they are reachable.
    fn peers(&self) -> Vec<(String, bool)> {
        let g = self.cluster.gossip();
        g.live().filter(|m| m.id.addr != self.me).map(|m| (m.id.addr.clone(), !g.is_unreachable(&m.id.addr))).collect()
    }

    fn peer(&self, addr: &str) -> ActorRef<CrdtMsg> {
        let mut refs = self.refs.lock();
        refs.entry(addr.to_owned())
            .or_insert_with(|| self.cluster.node().remote_ref::<CrdtMsg>(addr, REPLICATOR_ACTOR))
            .clone()
    }

    /// Waits for `needed` successes among `futs` (rule 6); the rest finish in the background.
    async fn await_level(
        &self,
        key: &str,
        mut futs: FuturesUnordered<Push>,
        needed: usize,
        timeout: Duration,
    ) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut got = 0;
        while got < needed {
            match tokio::time::timeout_at(deadline, futs.next()).await {
                Ok(Some(true)) => got += 1,
                Ok(Some(false)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        if !futs.is_empty() {
            tokio::spawn(async move { while futs.next().await.is_some() {} });
        }
        if got < needed {
            return Err(ErrorKind::Timeout {
                key: key.to_owned(),
                needed: needed + 1,
                acked: got + 1,
                waited: timeout,
            }
            .into());
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn push_deltas(
        self: &Arc<Self>,
        peer: &str,
        key: &str,
        kind: u64,
        first: u64,
        last: u64,
        items: Vec<Vec<u8>>,
        wait: Duration,
    ) -> Push {
        let (r, inner, peer, key, from) =
            (self.peer(peer), Arc::clone(self), peer.to_owned(), key.to_owned(), self.me.clone());
        bump(&self.stats.deltas_sent, 1);
        bump(&self.stats.delta_bytes_sent, items.iter().map(|b| b.len() as u64).sum());
        Box::pin(async move {
            let k = key.clone();
            let ack = r.ask(|reply| CrdtMsg::Deltas { from, key: k, kind, first, last, items, reply }, wait).await;
            let ok = inner.answered(ack, &key, &peer, "deltas");
            if ok {
                bump(&inner.stats.deltas_acked, 1);
                if let Some(s) = inner.store.lock().slots.get_mut(&key) {
                    s.ack(&peer, first, last);
                }
            }
            ok
        })
    }

    fn push_state(self: &Arc<Self>, peer: &str, key: &str, kind: u64, seq: u64, bytes: Vec<u8>) -> Push {
        let (r, inner, peer, key, from) =
            (self.peer(peer), Arc::clone(self), peer.to_owned(), key.to_owned(), self.me.clone());
        bump(&self.stats.states_sent, 1);
        bump(&self.stats.state_bytes_sent, bytes.len() as u64);
        let wait = Duration::from_millis(self.cfg.ack_timeout_ms);
        Box::pin(async move {
            let k = key.clone();
            let ack = r.ask(|reply| CrdtMsg::State { from, key: k, kind, seq, bytes, reply }, wait).await;
            let ok = inner.answered(ack, &key, &peer, "state");
            if ok {
                bump(&inner.stats.states_acked, 1);
                if let Some(s) = inner.store.lock().slots.get_mut(&key) {
                    s.ack(&peer, 0, seq);
                }
            }
            ok
        })
    }

    /// What a send's answer says: true for a positive acknowledgement; a send without one
    /// is counted and logged (rate-limited: a partition fails every send for a while).
    fn answered(&self, ack: Result<WireAck, troupe::AskError>, key: &str, peer: &str, what: &'static str) -> bool {
        match ack {
            Ok(WireAck { ok: true }) => true,
            Ok(WireAck { ok: false }) => {
                bump(&self.stats.sends_nacked, 1);
                troupe_remote::warn_limited!(
                    key = %Esc(key),
                    peer = %Esc(peer),
                    what,
                    reason = "rejected_by_peer",
                    "replication send failed"
                );
                false
            }
            Err(e) => {
                bump(&self.stats.sends_unanswered, 1);
                troupe_remote::warn_limited!(
                    key = %Esc(key),
                    peer = %Esc(peer),
                    what,
                    reason = "no_answer",
                    error = %e,
                    "replication send failed"
                );
                false
            }
        }
    }

    /// Rule 4.
    fn resend(self: &Arc<Self>) {
        let peers = self.peers();
        let age = Duration::from_millis(self.cfg.resend_interval_ms);
        let mut sends = Vec::new();
        {
            let mut st = self.store.lock();
            for (key, slot) in st.slots.iter_mut().filter(|(_, s)| s.seq > 0) {
                for (p, reachable) in &peers {
                    let mark = slot.acked.get(p).copied().unwrap_or(0);
                    if !reachable || mark >= slot.seq {
                        continue;
                    }
                    let behind: Vec<_> = slot.buffer.iter().filter(|(s, _, _)| *s > mark).collect();
                    if behind.first().is_some_and(|(s, _, _)| *s == mark + 1) {
                        if behind[0].1.elapsed() >= age {
                            let items = behind.iter().map(|(_, _, b)| b.to_vec()).collect();
                            sends.push(self.push_deltas(p, key, slot.kind_hash, mark + 1, slot.seq, items, age * 10));
                        }
                    } else if let Data::Typed(t) = &slot.data {
                        sends.push(self.push_state(p, key, slot.kind_hash, slot.seq, t.state_bytes()));
                    }
                }
                let low = peers.iter().map(|(p, _)| slot.acked.get(p).copied().unwrap_or(0)).min().unwrap_or(slot.seq);
                while slot.buffer.front().is_some_and(|(s, _, _)| *s <= low) {
                    slot.buffer.pop_front();
                }
            }
        }
        for s in sends {
            tokio::spawn(s);
        }
    }

    /// Rule 5.
    fn gossip(self: &Arc<Self>) {
        let reachable: Vec<String> = self.peers().into_iter().filter(|(_, r)| *r).map(|(p, _)| p).collect();
        if reachable.is_empty() {
            return;
        }
        let p = &reachable[rand::random::<usize>() % reachable.len()];
        let sends: Vec<Push> = {
            let st = self.store.lock();
            st.slots
                .iter()
                .filter_map(|(key, slot)| match &slot.data {
                    Data::Typed(t) => Some(self.push_state(p, key, slot.kind_hash, slot.seq, t.state_bytes())),
                    Data::Raw(_) => None,
                })
                .collect()
        };
        for s in sends {
            tokio::spawn(s);
        }
    }
}
