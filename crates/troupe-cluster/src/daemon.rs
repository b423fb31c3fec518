//! [`Cluster`]: the membership engine driven over a real [`Node`]. One actor, the daemon,
//! owns the engine; an exported actor, the inbox (`troupe.cluster`), hands it what other
//! members send; a timer ticks it; the handle reads the state it publishes after every step.
//!
//! Rules:
//! 1. Only the daemon actor touches the engine; everything else sends it commands, so the
//!    engine sees one message at a time, in arrival order.
//! 2. After every step the daemon publishes the state (a shared snapshot) before it reports
//!    the step's events, so a subscriber that reacts to an event reads a state at least as new.
//! 3. The tick is a fifth of the shorter of the heartbeat and gossip intervals (5 to 100 ms);
//!    at most one tick waits in the daemon's mailbox.
//! 4. While not a member, `seed_dns` is resolved again before each join round.
//! 5. When the engine stops (left, downed without rejoin), or the daemon is told to stop
//!    (`Cmd::Stop`: a `System`'s shutdown gave up waiting for the leave, `lifecycle.rs`), the
//!    daemon ends, the inbox is unexported and stopped; the node itself keeps running.
//! 6. The daemon and the inbox are children of a `one_for_one` supervisor (path
//!    `/troupe.cluster`) that belongs to no `troupe::System`: the inbox is permanent (it holds
//!    nothing; exported with `Node::export_child`, it is reached across restarts), the daemon
//!    temporary, never restarted (Akka's cluster core daemon): a new engine would rejoin as a
//!    new incarnation and lose what this one knew. When the daemon ends otherwise than by
//!    rule 5 (a panic, a kill), the membership is stopped: the status phase becomes
//!    `stopped: the cluster daemon failed: REASON`, subscribers get [`ClusterEvent::Stopped`]
//!    with that reason, an ERROR `tracing` event `cluster daemon failed` (`node`, `reason`)
//!    is logged, the inbox is unexported, and every later command fails with
//!    [`ErrorKind::DaemonFailed`] naming the reason. This node announces nothing to its peers
//!    (the engine is gone): they see it become unreachable, and down it as their downing
//!    rules say, as for a crashed node; the node keeps running.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::RwLock;
use tokio::sync::{broadcast, oneshot, watch};
use troupe::supervisor::{self, ChildRef, ChildSpec, Strategy, SupervisorRef, SupervisorSpec};
use troupe::{Actor, ActorError, ActorRef, Ctx, ExitReason, System};
use troupe_remote::logging::Esc;
use troupe_remote::Node;

use crate::config::ClusterConfig;
use crate::engine::{Engine, EngineStats, Out};
use crate::error::{Error, ErrorKind};
use crate::gossip::{Entry, Gossip};
use crate::member::{MemberStatus, NodeId};
use crate::ring::HashRing;
use crate::status::Status;
use crate::wire::{ClusterEvent, ClusterMsg, Wire, CLUSTER_ACTOR};

pub(crate) enum Cmd {
    Wire(Wire),
    Status(troupe::ReplyTo<Status>),
    Leave,
    Down(String, oneshot::Sender<bool>),
    Publish(BTreeMap<String, Vec<Entry>>, BTreeMap<String, Entry>),
    /// Rule 5: end now, left or not.
    Stop,
    /// Rule 3.
    Tick,
    /// [`Cluster::debug_crash_daemon`]: panic (rule 6).
    Crash,
    /// The overlay's neighbours of this node (engine rule 9; [`Cluster::follow_overlay`]).
    Neighbours(Option<std::collections::BTreeSet<String>>),
}

/// The actor other members send to; it only forwards (rule 1).
struct Inbox(Arc<Shared>);

impl Actor for Inbox {
    type Msg = ClusterMsg;
    async fn handle(&mut self, msg: ClusterMsg, _: &mut Ctx<Self>) {
        let cmd = match msg {
            ClusterMsg::Wire(w) => Cmd::Wire(w),
            ClusterMsg::Status(r) => Cmd::Status(r),
        };
        let _ = self.0.cmd.send(cmd);
    }
}

pub(crate) struct Shared {
    pub(crate) node: Node,
    pub(crate) cfg: ClusterConfig,
    /// The daemon (rules 1 and 6).
    pub(crate) cmd: ChildRef<Cmd>,
    /// Why the daemon failed, once it has (rule 6).
    pub(crate) failed: parking_lot::Mutex<Option<String>>,
    pub(crate) events: broadcast::Sender<ClusterEvent>,
    pub(crate) gossip: RwLock<Arc<Gossip>>,
    pub(crate) status: RwLock<Status>,
    pub(crate) me: RwLock<NodeId>,
    /// Bumped when the published services or names change (receptionist listings wait on it).
    pub(crate) published: watch::Sender<u64>,
    /// Bumped at every status change, convergence included (which raises no event).
    pub(crate) status_changed: watch::Sender<u64>,
    pub(crate) registry: parking_lot::Mutex<crate::receptionist::Registry>,
    /// The engine's counters, copied after every step (read by [`Cluster::stats`]).
    pub(crate) stats: parking_lot::Mutex<EngineStats>,
    /// Phi of each monitored member as (address, name, phi), taken at every tick.
    pub(crate) phi: parking_lot::Mutex<Vec<(String, String, f64)>>,
    /// The phi series last published (`metrics.rs` rule 3).
    #[cfg_attr(not(feature = "metrics"), allow(dead_code))]
    pub(crate) phi_published: parking_lot::Mutex<std::collections::BTreeSet<(String, String)>>,
}

/// A node's membership in a cluster.
///
/// ```no_run
/// # async fn demo() -> Result<(), troupe_cluster::Error> {
/// use troupe_cluster::{Cluster, ClusterConfig};
/// use troupe_remote::{Node, NodeConfig};
/// let node = Node::start(NodeConfig::new("a", "s3cret")).await?;
/// let cfg = ClusterConfig { seeds: vec!["10.0.0.1:7000".into()], ..ClusterConfig::default() };
/// let cluster = Cluster::start(&node, cfg).await?;
/// let mut events = cluster.subscribe();
/// while let Ok(ev) = events.recv().await {
///     println!("{ev:?}");
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Cluster {
    pub(crate) shared: Arc<Shared>,
}

impl Cluster {
    /// Validates `cfg`, exports the cluster actor on `node`, and starts joining (engine
    /// rule 1). Returns at once; see [`Cluster::subscribe`] and [`Cluster::wait_members`].
    pub async fn start(node: &Node, cfg: ClusterConfig) -> Result<Cluster, Error> {
        cfg.validate()?;
        let me = NodeId::fresh(&node.addr(), node.name());
        let epoch = Instant::now();
        let engine = Engine::new(cfg.clone(), me.clone(), rand::random(), 0);
        // Rule 6: a temporary child, started once; the slot hands it its engine.
        let slot: Arc<parking_lot::Mutex<Option<Daemon>>> = Arc::default();
        let daemon = {
            let slot = Arc::clone(&slot);
            ChildSpec::worker_or_ignore("daemon", move || slot.lock().take()).restart(supervisor::Restart::Temporary)
        };
        let shared = Arc::new(Shared {
            node: node.clone(),
            cfg: cfg.clone(),
            cmd: daemon.handle(),
            failed: parking_lot::Mutex::new(None),
            events: broadcast::channel(4096).0,
            gossip: RwLock::new(engine.shared_gossip()),
            status: RwLock::new(engine.status()),
            me: RwLock::new(me),
            published: watch::channel(0).0,
            status_changed: watch::channel(0).0,
            registry: parking_lot::Mutex::new(crate::receptionist::Registry::default()),
            stats: parking_lot::Mutex::new(EngineStats::default()),
            phi: parking_lot::Mutex::new(Vec::new()),
            phi_published: parking_lot::Mutex::new(std::collections::BTreeSet::new()),
        });
        *slot.lock() = Some(Daemon {
            shared: Arc::clone(&shared),
            engine,
            epoch,
            refs: HashMap::new(),
            last_dns: None,
            published: None,
            tick_queued: Arc::new(AtomicBool::new(false)),
        });
        let inbox = {
            let shared = Arc::clone(&shared);
            ChildSpec::worker("inbox", move || Inbox(Arc::clone(&shared)))
        };
        let inbox_ref = inbox.handle();
        let spec = SupervisorSpec::new(Strategy::OneForOne)
            .name(CLUSTER_ACTOR)
            .intensity(10, Duration::from_secs(10))
            .child(daemon)
            .child(inbox);
        node.export_child(CLUSTER_ACTOR, &inbox_ref)?;
        let sup = match System::outside(|| supervisor::spawn(spec)) {
            Ok(sup) => sup,
            Err(e) => {
                node.unexport(CLUSTER_ACTOR);
                return Err(Error::with_source(
                    ErrorKind::Node("cannot start the cluster daemon's supervisor".into()),
                    e,
                ));
            }
        };
        let started = shared.cmd.current(Duration::from_secs(30)).await;
        let Ok(daemon) = started else {
            node.unexport(CLUSTER_ACTOR);
            sup.stop().await;
            return Err(ErrorKind::Stopped.into());
        };
        tokio::spawn(watch_daemon(Arc::clone(&shared), sup, daemon));
        Ok(Cluster { shared })
    }

    /// Runs the membership on `overlay` (engine rule 9, seed 004 §3's peer service): gossip
    /// and heartbeats go to this node's overlay neighbours only, and follow them as they
    /// change; a non-neighbour's failure is learned through gossip. With a full mesh overlay
    /// nothing changes. Called by `troupe node` when a node has both `[cluster]` and
    /// `[overlay]`; the overlay's router carries whatever else the cluster sends to
    /// non-neighbours (joins, the receptionist's lookups).
    pub fn follow_overlay(&self, overlay: &crate::overlay::live::Overlay) {
        if overlay.kind() == crate::overlay::live::LiveKind::FullMesh {
            return;
        }
        let (cmd, overlay) = (self.shared.cmd.clone(), overlay.clone());
        let mut events = overlay.events();
        tokio::spawn(async move {
            loop {
                let Ok(n) = overlay.neighbours().await else { return };
                if cmd.send(Cmd::Neighbours(Some(n.into_iter().collect()))).is_err() {
                    return;
                }
                match events.recv().await {
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }

    /// Makes the daemon panic at its next command, and sends it one: for tests and drills of
    /// `daemon.rs` rule 6 (the membership stops; it is not restarted).
    #[doc(hidden)]
    pub fn debug_crash_daemon(&self) {
        let _ = self.shared.cmd.send(Cmd::Crash);
    }

    /// The error a command gets once the daemon has ended (rule 6 names a failure).
    pub(crate) fn stopped_error(&self) -> Error {
        match self.shared.failed.lock().clone() {
            Some(reason) => ErrorKind::DaemonFailed(reason).into(),
            None => ErrorKind::Stopped.into(),
        }
    }

    /// The node this membership runs on.
    #[must_use]
    pub fn node(&self) -> &Node {
        &self.shared.node
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ClusterConfig {
        &self.shared.cfg
    }

    /// This node's current incarnation.
    #[must_use]
    pub fn me(&self) -> NodeId {
        self.shared.me.read().clone()
    }

    /// Cluster events from now on (member up, unreachable, reachable, downed, left, removed,
    /// leader changed, ...).
    #[must_use]
    pub fn subscribe(&self) -> broadcast::Receiver<ClusterEvent> {
        self.shared.events.subscribe()
    }

    /// The membership table as this node sees it now.
    #[must_use]
    pub fn status(&self) -> Status {
        self.shared.status.read().clone()
    }

    /// Whether this node is a member with status `Up` now (its current incarnation, not
    /// stopped): what a readiness probe asks.
    ///
    /// ```
    /// # #[tokio::main] async fn main() {
    /// use std::time::Duration;
    /// use troupe_cluster::{Cluster, ClusterConfig};
    /// use troupe_remote::{Node, NodeConfig};
    /// let node = Node::start(NodeConfig::new("solo", "s3cret")).await.unwrap();
    /// let cluster = Cluster::start(&node, ClusterConfig::default()).await.unwrap();
    /// cluster.wait_members(1, Duration::from_secs(10)).await.unwrap();
    /// assert!(cluster.is_up());
    /// node.shutdown();
    /// # }
    /// ```
    #[must_use]
    pub fn is_up(&self) -> bool {
        let me = self.me();
        let s = self.shared.status.read();
        s.phase == "member"
            && s.members.iter().any(|m| m.addr == me.addr && m.uid == me.uid && m.status == MemberStatus::Up)
    }

    /// The membership engine's counters (gossip, heartbeats, refusals, join retries), as of
    /// its last step.
    #[must_use]
    pub fn stats(&self) -> EngineStats {
        self.shared.stats.lock().clone()
    }

    /// Phi of every member this node monitors, as (address, node name, phi), as of the last
    /// tick (at most 100 ms old): the failure detector's suspicion, compared with
    /// `phi_threshold`.
    #[must_use]
    pub fn phi(&self) -> Vec<(String, String, f64)> {
        self.shared.phi.lock().clone()
    }

    /// The current replicated state.
    #[must_use]
    pub fn gossip(&self) -> Arc<Gossip> {
        Arc::clone(&self.shared.gossip.read())
    }

    /// A hash ring of the members that are up (for sharding with the cluster's own view).
    #[must_use]
    pub fn ring(&self) -> HashRing {
        let g = self.gossip();
        let up = g.live().filter(|m| m.status == MemberStatus::Up).map(|m| m.id.addr.as_str());
        HashRing::with_nodes(self.shared.cfg.vnodes, up)
    }

    /// Asks to leave gracefully: leaving, exiting, removed; then the daemon stops.
    pub fn leave(&self) {
        let _ = self.shared.cmd.send(Cmd::Leave);
    }

    /// Leaves and waits (at most `timeout`) until this node's membership has ended; Ok at
    /// once when it already has.
    pub async fn leave_and_wait(&self, timeout: Duration) -> Result<(), Error> {
        let mut events = self.subscribe();
        if self.status().phase.starts_with("stopped") {
            return Ok(());
        }
        self.leave();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.status().phase.starts_with("stopped") {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) => {
                    return Err(ErrorKind::Timeout(format!("the leave did not complete within {timeout:?}")).into())
                }
                Ok(Err(broadcast::error::RecvError::Closed) | Ok(ClusterEvent::Stopped { .. })) => return Ok(()),
                Ok(_) => {}
            }
        }
    }

    /// Downs the member at `addr` (an operator's decision); false when it is not a live member.
    pub async fn down(&self, addr: &str) -> Result<bool, Error> {
        let (tx, rx) = oneshot::channel();
        self.shared.cmd.send(Cmd::Down(addr.to_owned(), tx)).map_err(|_| self.stopped_error())?;
        rx.await.map_err(|_| self.stopped_error())
    }

    /// Waits until this node sees `n` members up, all reachable, and the state converged.
    pub async fn wait_members(&self, n: usize, timeout: Duration) -> Result<Status, Error> {
        self.wait_status(
            |s| s.converged && s.count(MemberStatus::Up) >= n && s.members.iter().all(|m| m.reachable),
            timeout,
        )
        .await
        .map_err(|s| {
            ErrorKind::Timeout(format!("{} of {n} members up after {timeout:?}", s.count(MemberStatus::Up))).into()
        })
    }

    /// Waits until this node's status satisfies `pred` (re-checked at every status change,
    /// convergence included); `Err` with the last status on timeout.
    pub async fn wait_status(&self, pred: impl Fn(&Status) -> bool, timeout: Duration) -> Result<Status, Status> {
        let mut changed = self.shared.status_changed.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let s = self.status();
            if pred(&s) {
                return Ok(s);
            }
            match tokio::time::timeout_at(deadline, changed.changed()).await {
                Ok(Ok(())) => {}
                // Timed out, or the daemon is gone (its status will not change again).
                _ => return Err(self.status()),
            }
        }
    }
}

fn tick_period(cfg: &ClusterConfig) -> Duration {
    Duration::from_millis((cfg.heartbeat_interval_ms.min(cfg.gossip_interval_ms) / 5).clamp(5, 100))
}

async fn resolve(dns: &str) -> Vec<String> {
    match tokio::net::lookup_host(dns).await {
        Ok(addrs) => addrs.map(|a| a.to_string()).collect(),
        Err(e) => {
            tracing::warn!("seed_dns {dns}: cannot resolve ({e}); retrying at the next join round");
            Vec::new()
        }
    }
}

/// The events the engine does not log itself (membership, reachability and leader changes
/// are logged where they are found, `engine/events.rs`), as structured `tracing` events.
fn log(me: &str, ev: &ClusterEvent) {
    match ev {
        ClusterEvent::JoinRetry { tried, next_in_ms } => {
            tracing::warn!(node = me, tried = %tried.join(","), next_in_ms, "join retry: no seed answered");
        }
        ClusterEvent::JoinRefused { seed, reason } => {
            tracing::error!(node = me, seed = %Esc(seed), reason = %Esc(reason), "join refused");
        }
        ClusterEvent::Refused { from, reason } => {
            tracing::warn!(node = me, from = %Esc(from), reason = %Esc(reason), "refused a join or gossip");
        }
        ClusterEvent::NameConflict { name, winner, loser } => {
            tracing::warn!(node = me, name = %Esc(name), winner = %Esc(winner), loser = %Esc(loser), "global name conflict");
        }
        ClusterEvent::Stopped { reason } => tracing::info!(node = me, reason = %reason, "membership ended"),
        _ => {}
    }
}

/// The daemon (rules 1 to 5): the engine and what it needs between steps.
struct Daemon {
    shared: Arc<Shared>,
    engine: Engine,
    epoch: Instant,
    refs: HashMap<String, ActorRef<ClusterMsg>>,
    last_dns: Option<Instant>,
    /// What was last published, and the engine's generation then (rule 2).
    published: Option<(u64, Arc<Gossip>)>,
    /// Rule 3: set while a tick waits in the mailbox.
    tick_queued: Arc<AtomicBool>,
}

impl Actor for Daemon {
    type Msg = Cmd;

    /// Rule 3: the timer, a task that ends with the daemon (its sends fail).
    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        let (me, queued, period) = (ctx.myself(), Arc::clone(&self.tick_queued), tick_period(&self.shared.cfg));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(period);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if !queued.swap(true, Ordering::AcqRel) && me.send(Cmd::Tick).is_err() {
                    break;
                }
                if !me.is_alive() {
                    break;
                }
            }
        });
        Ok(())
    }

    async fn handle(&mut self, cmd: Cmd, ctx: &mut Ctx<Self>) {
        let epoch = self.epoch;
        let now = || epoch.elapsed().as_millis() as u64;
        let shared = Arc::clone(&self.shared);
        let engine = &mut self.engine;
        let mut out = Vec::new();
        match cmd {
            Cmd::Wire(w) => engine.receive(w, now(), &mut out),
            Cmd::Status(r) => r.send(engine.status()),
            Cmd::Leave => engine.leave(now(), &mut out),
            Cmd::Down(addr, r) => {
                let _ = r.send(engine.down(&addr, now(), &mut out));
            }
            Cmd::Publish(s, n) => engine.publish(s, n, now(), &mut out),
            Cmd::Stop => {
                ctx.stop(ExitReason::Normal);
                return;
            }
            Cmd::Crash => panic!("cluster daemon: crash requested by Cluster::debug_crash_daemon"),
            Cmd::Neighbours(n) => engine.set_neighbours(n),
            Cmd::Tick => {
                self.tick_queued.store(false, Ordering::Release);
                if let Some(dns) = shared.cfg.seed_dns.as_deref().filter(|_| !engine.is_member()) {
                    let due =
                        self.last_dns.is_none_or(|t| t.elapsed().as_millis() as u64 >= shared.cfg.join_retry_min_ms);
                    if due {
                        self.last_dns = Some(Instant::now());
                        engine.set_dns_seeds(resolve(dns).await);
                    }
                }
                engine.tick(now(), &mut out);
                *shared.phi.lock() = engine.phis(now());
            }
        }
        *shared.stats.lock() = engine.stats().clone();
        // Rule 2: publish, then report.
        let stopped = engine.stopped().is_some();
        let generation = engine.generation();
        if stopped || self.published.as_ref().is_none_or(|(at, _)| *at != generation) {
            let snapshot = engine.shared_gossip();
            let services_changed =
                self.published.as_ref().is_none_or(|(_, p)| p.owned != snapshot.owned || p.members != snapshot.members);
            *shared.gossip.write() = Arc::clone(&snapshot);
            *shared.status.write() = engine.status();
            *shared.me.write() = engine.me().clone();
            shared.status_changed.send_modify(|v| *v += 1);
            self.published = Some((generation, snapshot));
            if services_changed {
                shared.published.send_modify(|v| *v += 1);
            }
        }
        for o in out {
            match o {
                Out::Send(to, msg) => {
                    let r = self
                        .refs
                        .entry(to.clone())
                        .or_insert_with(|| shared.node.remote_ref::<ClusterMsg>(&to, CLUSTER_ACTOR));
                    let _ = r.send(ClusterMsg::Wire(msg));
                }
                Out::Event(ev) => {
                    log(&engine.me().addr, &ev);
                    if let ClusterEvent::NameConflict { name, loser, .. } = &ev {
                        if *loser == engine.me().addr {
                            let mut reg = shared.registry.lock();
                            if let Some(export) = reg.drop_name(name) {
                                shared.node.unexport(&export);
                            }
                        }
                    }
                    let _ = shared.events.send(ev);
                }
            }
        }
        // Forget refs to members that are gone, so the table does not grow with churn.
        if self.refs.len() > 2 * engine.gossip().members.len() + 16 {
            let g = engine.gossip();
            self.refs.retain(|a, _| g.member(a).is_some_and(|m| m.status.is_live()));
        }
        if stopped {
            ctx.stop(ExitReason::Normal);
        }
    }
}

/// Rules 5 and 6: when the daemon ends, the inbox is unexported and stopped with the
/// supervisor; an end other than rule 5's is a failure.
async fn watch_daemon(shared: Arc<Shared>, sup: SupervisorRef, daemon: ActorRef<Cmd>) {
    let reason = daemon.terminated().await;
    shared.node.unexport(CLUSTER_ACTOR);
    if reason != ExitReason::Normal {
        let why = format!("the cluster daemon failed: {reason}");
        *shared.failed.lock() = Some(why.clone());
        shared.status.write().phase = format!("stopped: {why}");
        shared.status_changed.send_modify(|v| *v += 1);
        let node = shared.me.read().addr.clone();
        tracing::error!(
            node = %node,
            reason = %reason,
            "cluster daemon failed; this node is no longer a member (its peers see it unreachable), start a new Cluster"
        );
        let _ = shared.events.send(ClusterEvent::Stopped { reason: why });
    }
    sup.stop().await;
}
