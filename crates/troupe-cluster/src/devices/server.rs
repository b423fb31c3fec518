//! The server side of device tracking (rules 2-4 and 8-10 of `devices/mod.rs`): the desk, an
//! actor exported as [`DESK`] on a server node, which answers `Hello`s by the ring, starts and
//! stops the per-device trackers (`tracker.rs`), merges and sends the replicated records, and
//! re-checks ownership when the live servers change.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use troupe::{Actor, ActorError, ActorRef, Ctx, ExitReason};
use troupe_remote::Node;

use super::proto::{DeskMsg, DeskTotals, DeviceMsg, DeviceRecord, Hello, Records, TrackerMsg, DESK, PROTOCOL_VERSION};
use super::tracker::Tracker;
use crate::error::Error;
use crate::HashRing;

/// The server side's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    /// The tracker's heartbeat period to its device, ms (rule 5).
    pub heartbeat_ms: u64,
    /// Phi above which a device is declared failed (rule 5).
    pub phi_threshold: f64,
    /// Silence tolerated on top of the mean heartbeat interval, ms (phi's acceptable pause).
    pub acceptable_pause_ms: u64,
    /// The values a report must hold (rule 7).
    pub report_len: usize,
    /// A request not answered within this is asked again, ms (rule 6).
    pub report_timeout_ms: u64,
    /// Period of the record exchange between servers, ms (rule 8).
    pub sync_ms: u64,
    /// How long a tracker waits for the other servers' acknowledgements of a first report, ms.
    pub replicate_timeout_ms: u64,
    /// Points per server on the hash ring.
    pub vnodes: usize,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            heartbeat_ms: 500,
            phi_threshold: 8.0,
            acceptable_pause_ms: 1000,
            report_len: 1000,
            report_timeout_ms: 1000,
            sync_ms: 1000,
            replicate_timeout_ms: 2000,
            vnodes: 128,
        }
    }
}

impl ServerConfig {
    /// Refuses settings the protocol cannot run with, naming the field.
    pub fn check(&self) -> Result<(), Error> {
        let ms = [
            ("heartbeat_ms", self.heartbeat_ms),
            ("report_timeout_ms", self.report_timeout_ms),
            ("sync_ms", self.sync_ms),
            ("replicate_timeout_ms", self.replicate_timeout_ms),
        ];
        for (name, v) in ms {
            if v == 0 {
                return Err(Error::config(format!("devices: {name} is 0; give a period of at least 1 ms")));
            }
        }
        if !(self.phi_threshold.is_finite() && self.phi_threshold > 0.0) {
            return Err(Error::config(format!(
                "devices: phi_threshold {} must be a positive number (8.0 is usual)",
                self.phi_threshold
            )));
        }
        if self.report_len == 0 || self.vnodes == 0 {
            return Err(Error::config("devices: report_len and vnodes must be at least 1"));
        }
        Ok(())
    }

    /// The timer period of trackers: a quarter of the shorter of heartbeat and report timeout.
    pub(super) fn tick(&self) -> Duration {
        Duration::from_millis((self.heartbeat_ms.min(self.report_timeout_ms) / 4).max(5))
    }
}

/// What a server reports to its application.
#[derive(Debug, Clone, PartialEq)]
pub enum ServerEvent {
    /// This server took a device (rule 4).
    Welcomed {
        /// The device.
        device: String,
        /// Its incarnation.
        incarnation: u64,
    },
    /// An incarnation's first report was summed here and acknowledged by every other server
    /// still live (rule 8): its status is current and known to every server.
    StatusCurrent {
        /// The device.
        device: String,
        /// Its incarnation.
        incarnation: u64,
        /// From the incarnation's start to now, ms.
        ms: f64,
        /// Servers that acknowledged (every server asked that is still live).
        acked: usize,
        /// Servers asked in the first round.
        asked: usize,
    },
    /// An incarnation's first report was not acknowledged by every live server within
    /// ten rounds of `replicate_timeout_ms` (rule 8): its status never became current.
    StatusNotReplicated {
        /// The device.
        device: String,
        /// Its incarnation.
        incarnation: u64,
        /// The live servers that never acknowledged.
        missing: Vec<String>,
        /// Servers asked in the first round.
        asked: usize,
    },
    /// A tracked device crossed the phi threshold (rule 5).
    DeviceLost {
        /// The device.
        device: String,
        /// Its incarnation.
        incarnation: u64,
    },
    /// A device was disconnected for a wrong version or a malformed report (rules 2, 7).
    Refused {
        /// The device.
        device: String,
        /// Why.
        reason: String,
    },
    /// A tracker stood down (rules 9, 10).
    StoodDown {
        /// The device.
        device: String,
        /// Why.
        reason: String,
    },
}

/// Receives [`ServerEvent`]s; called from the server's actors, so it must not block.
pub type ServerObserver = Arc<dyn Fn(ServerEvent) + Send + Sync>;

/// What the desk and its trackers share.
pub(super) struct Shared {
    pub(super) me: String,
    pub(super) node: Node,
    pub(super) cfg: ServerConfig,
    pub(super) observer: ServerObserver,
    pub(super) state: Mutex<State>,
    pub(super) reports: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) stood_down: AtomicU64,
    pub(super) tracked: AtomicU64,
}

/// The replicated records and this server's view of the live servers.
pub(super) struct State {
    pub(super) records: BTreeMap<String, DeviceRecord>,
    pub(super) live: Vec<String>,
    ring: HashRing,
}

impl Shared {
    /// The owner of `device` by this server's ring (itself when it knows no server).
    pub(super) fn owner_of(&self, device: &str) -> String {
        let s = self.state.lock();
        s.ring.node_for(device.as_bytes()).map_or_else(|| self.me.clone(), str::to_owned)
    }

    /// The other live servers.
    pub(super) fn others(&self) -> Vec<String> {
        self.state.lock().live.iter().filter(|a| **a != self.me).cloned().collect()
    }

    pub(super) fn refuse(&self, reply_to: &ActorRef<DeviceMsg>, device: &str, reason: String) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let _ = reply_to.send(DeviceMsg::Disconnect { reason: reason.clone() });
        (self.observer)(ServerEvent::Refused { device: device.to_owned(), reason });
    }
}

/// A running server side: the desk exported on the node.
pub struct DeviceServer {
    desk: ActorRef<DeskMsg>,
    shared: Arc<Shared>,
}

impl DeviceServer {
    /// Starts the desk on `node` and exports it as [`DESK`]. `live` is the set of live server
    /// addresses (this one included), e.g. from [`super::peer_membership`]; every change is
    /// checked against the trackers (rule 10). Events go to `observer`.
    pub fn start(
        node: &Node,
        cfg: ServerConfig,
        live: watch::Receiver<Vec<String>>,
        observer: ServerObserver,
    ) -> Result<DeviceServer, Error> {
        cfg.check()?;
        let me = node.addr();
        let first = live.borrow().clone();
        let shared = Arc::new(Shared {
            me,
            node: node.clone(),
            state: Mutex::new(State { records: BTreeMap::new(), live: Vec::new(), ring: HashRing::new(cfg.vnodes) }),
            cfg,
            observer,
            reports: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            stood_down: AtomicU64::new(0),
            tracked: AtomicU64::new(0),
        });
        set_members(&shared, first);
        let desk = troupe::spawn(Desk {
            shared: Arc::clone(&shared),
            live,
            trackers: HashMap::new(),
            serial: 0,
            watcher: None,
        });
        node.export(DESK, &desk)?;
        Ok(DeviceServer { desk, shared })
    }

    /// The desk (local ref).
    pub fn desk(&self) -> &ActorRef<DeskMsg> {
        &self.desk
    }

    /// The counters now.
    pub fn totals(&self) -> DeskTotals {
        totals(&self.shared)
    }

    /// The records this server holds now, by device name.
    pub fn records(&self) -> Vec<DeviceRecord> {
        self.shared.state.lock().records.values().cloned().collect()
    }

    /// Stops the desk and its trackers and withdraws the export.
    pub fn stop(&self) {
        self.shared.node.unexport(DESK);
        self.desk.stop();
    }
}

fn totals(s: &Shared) -> DeskTotals {
    DeskTotals {
        reports: s.reports.load(Ordering::Relaxed),
        tracked: s.tracked.load(Ordering::Relaxed),
        refused: s.refused.load(Ordering::Relaxed),
        stood_down: s.stood_down.load(Ordering::Relaxed),
    }
}

fn set_members(shared: &Shared, mut live: Vec<String>) {
    live.sort();
    live.dedup();
    let mut s = shared.state.lock();
    s.ring = HashRing::with_nodes(shared.cfg.vnodes, live.iter().map(String::as_str));
    s.live = live;
}

struct Entry {
    serial: u64,
    incarnation: u64,
    tracker: ActorRef<TrackerMsg>,
}

struct Desk {
    shared: Arc<Shared>,
    live: watch::Receiver<Vec<String>>,
    trackers: HashMap<String, Entry>,
    serial: u64,
    watcher: Option<tokio::task::AbortHandle>,
}

impl Desk {
    fn hello(&mut self, h: Hello, ctx: &mut Ctx<Self>) {
        if h.version != PROTOCOL_VERSION {
            let reason = format!(
                "protocol version {} is not spoken here (this server speaks version {PROTOCOL_VERSION}); upgrade the device",
                h.version
            );
            self.shared.refuse(&h.reply_to, &h.device, reason);
            return;
        }
        let owner = self.shared.owner_of(&h.device);
        if owner != self.shared.me {
            let _ = h.reply_to.send(DeviceMsg::Redirect { owner });
            return;
        }
        if let Some(e) = self.trackers.get(&h.device) {
            if h.incarnation == e.incarnation {
                let _ = e.tracker.send(TrackerMsg::Rewelcome(h.reply_to));
                return;
            }
            if h.incarnation < e.incarnation {
                return;
            }
            e.tracker.stop();
            self.trackers.remove(&h.device);
        }
        self.serial += 1;
        let (device, incarnation) = (h.device.clone(), h.incarnation);
        let tracker = troupe::spawn(Tracker::new(Arc::clone(&self.shared), h, self.serial, ctx.myself()));
        self.trackers.insert(device.clone(), Entry { serial: self.serial, incarnation, tracker });
        self.shared.tracked.store(self.trackers.len() as u64, Ordering::Relaxed);
        (self.shared.observer)(ServerEvent::Welcomed { device, incarnation });
    }

    fn merge(&mut self, from: &str, records: Vec<DeviceRecord>) -> u64 {
        let mut merged = 0;
        let mut contested = Vec::new();
        {
            let mut s = self.shared.state.lock();
            for r in records {
                if let Some(e) = self.trackers.get(&r.device) {
                    if r.owner != self.shared.me && r.incarnation >= e.incarnation {
                        contested.push((r.device.clone(), r.owner.clone(), r.incarnation > e.incarnation));
                    }
                }
                let newer = s.records.get(&r.device).is_none_or(|old| r.newer_than(old));
                if newer {
                    s.records.insert(r.device.clone(), r);
                    merged += 1;
                }
            }
        }
        // Rule 9: another server tracks a device we track.
        for (device, other, newer) in contested {
            let Some(e) = self.trackers.get(&device) else { continue };
            let ring = self.shared.owner_of(&device);
            let (reason, rehome) = if newer {
                (format!("{other} tracks a newer incarnation"), None)
            } else if ring != self.shared.me {
                (format!("{other} tracks it too and the ring names {ring}"), Some(ring))
            } else if other < self.shared.me {
                (format!("{other} tracks it too; the smaller address keeps a contested device"), Some(other))
            } else {
                continue;
            };
            let _ = e.tracker.send(TrackerMsg::StandDown { reason, rehome });
        }
        let _ = from;
        merged
    }

    fn members(&mut self, live: Vec<String>) {
        set_members(&self.shared, live);
        // Rule 10: trackers whose device belongs elsewhere now.
        for (device, e) in &self.trackers {
            let owner = self.shared.owner_of(device);
            if owner != self.shared.me {
                let reason = format!("the live servers changed; {owner} owns it now");
                let _ = e.tracker.send(TrackerMsg::StandDown { reason, rehome: Some(owner) });
            }
        }
    }

    fn sync(&self) {
        let me = &self.shared.me;
        let owned: Vec<DeviceRecord> = {
            let s = self.shared.state.lock();
            self.trackers.keys().filter_map(|d| s.records.get(d)).filter(|r| &r.owner == me).cloned().collect()
        };
        if owned.is_empty() {
            return;
        }
        for addr in self.shared.others() {
            let desk = self.shared.node.remote_ref::<DeskMsg>(&addr, DESK);
            let _ = desk.send(DeskMsg::Status { from: me.clone(), records: owned.clone(), ack: None });
        }
    }
}

impl Actor for Desk {
    type Msg = DeskMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        let me = ctx.myself();
        let mut live = self.live.clone();
        let task = tokio::spawn(async move {
            while live.changed().await.is_ok() {
                let now = live.borrow_and_update().clone();
                if me.send(DeskMsg::Members(now)).is_err() {
                    break;
                }
            }
        });
        self.watcher = Some(task.abort_handle());
        super::proto::every(ctx.myself(), Duration::from_millis(self.shared.cfg.sync_ms), || DeskMsg::Sync);
        Ok(())
    }

    async fn handle(&mut self, msg: DeskMsg, ctx: &mut Ctx<Self>) {
        match msg {
            DeskMsg::Hello(h) => self.hello(h, ctx),
            DeskMsg::Status { from, records, ack } => {
                let n = self.merge(&from, records);
                if let Some(ack) = ack {
                    ack.send(n);
                }
            }
            DeskMsg::Totals(r) => r.send(totals(&self.shared)),
            DeskMsg::Records(r) => r.send(Records(self.shared.state.lock().records.values().cloned().collect())),
            DeskMsg::Members(live) => self.members(live),
            DeskMsg::Sync => self.sync(),
            DeskMsg::TrackerEnded { device, serial } => {
                if self.trackers.get(&device).is_some_and(|e| e.serial == serial) {
                    self.trackers.remove(&device);
                    self.shared.tracked.store(self.trackers.len() as u64, Ordering::Relaxed);
                }
            }
        }
    }

    async fn stopped(&mut self, _: &ExitReason, _: &mut Ctx<Self>) {
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
        for e in self.trackers.values() {
            e.tracker.kill();
        }
    }
}
