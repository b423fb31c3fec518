//! The device side of device tracking (rules 1-7 and 10 of `devices/mod.rs`): one actor per
//! device that says hello to the seeds, follows redirects and re-homes, answers its owner's
//! heartbeats, watches them with a phi-accrual detector, answers report
//! requests, and applies its seeded link faults to everything it sends and receives.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use troupe::{Actor, ActorError, ActorRef, Ctx, ExitReason};
use troupe_remote::{Node, RemoteMessage};

use super::proto::{DeskMsg, DeviceMsg, Hello, TrackerMsg, DESK, PROTOCOL_VERSION};
use super::tracker::now_us;
use crate::PhiDetector;

/// Message loss and delay applied by a device to every message it sends and receives.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkFaults {
    /// Probability that a message is dropped (0 to 1).
    pub drop_probability: f64,
    /// Smallest added delay, ms.
    pub delay_min_ms: u64,
    /// Largest added delay, ms (uniform between the two).
    pub delay_max_ms: u64,
    /// Seed of the device's fault RNG.
    pub seed: u64,
}

impl Default for LinkFaults {
    fn default() -> Self {
        LinkFaults { drop_probability: 0.0, delay_min_ms: 0, delay_max_ms: 0, seed: 1 }
    }
}

/// A device's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceConfig {
    /// Its name (its key on the ring).
    pub name: String,
    /// The seed servers' addresses (rule 1).
    pub seeds: Vec<String>,
    /// Which life of the device this is (0 for the first).
    pub incarnation: u64,
    /// When this incarnation started, µs since the epoch; 0 means when the actor starts.
    pub started_us: i64,
    /// Its heartbeat period to the owner, ms (rule 5).
    pub heartbeat_ms: u64,
    /// Phi above which the owner is declared failed.
    pub phi_threshold: f64,
    /// Silence tolerated on top of the mean heartbeat interval, ms.
    pub acceptable_pause_ms: u64,
    /// Period of `Hello` retries while it has no owner, ms.
    pub hello_retry_ms: u64,
    /// Values per report.
    pub report_len: usize,
    /// The protocol version it states (tests set another one to see the refusal).
    pub version: u32,
    /// Link faults.
    pub faults: LinkFaults,
}

impl DeviceConfig {
    /// A device called `name` that starts from `seeds`, with default settings.
    pub fn new(name: impl Into<String>, seeds: Vec<String>) -> DeviceConfig {
        DeviceConfig {
            name: name.into(),
            seeds,
            incarnation: 0,
            started_us: 0,
            heartbeat_ms: 500,
            phi_threshold: 8.0,
            acceptable_pause_ms: 1000,
            hello_retry_ms: 500,
            report_len: 1000,
            version: PROTOCOL_VERSION,
            faults: LinkFaults::default(),
        }
    }
}

/// What a device reports to its application.
#[derive(Debug, Clone, PartialEq)]
pub enum DeviceEvent {
    /// A server welcomed it (rule 4).
    Homed {
        /// The device.
        device: String,
        /// The owner's address.
        owner: String,
    },
    /// Its owner's first request after a report arrived: the owner summed a report of this
    /// device (rule 6). Reported once per device actor.
    FirstReportSummed {
        /// The device.
        device: String,
    },
    /// Its detector declared the owner failed (rule 5); it goes back to the seeds.
    OwnerFailed {
        /// The device.
        device: String,
        /// The owner's address.
        owner: String,
    },
    /// A server disconnected it (rules 2, 7); the actor stops.
    Disconnected {
        /// The device.
        device: String,
        /// The server's reason.
        reason: String,
    },
}

/// Makes a report of the given length.
pub type ReportFn = Arc<dyn Fn(usize) -> Vec<i64> + Send + Sync>;

/// Receives [`DeviceEvent`]s; called from the device actor, so it must not block.
pub type DeviceObserver = Arc<dyn Fn(DeviceEvent) + Send + Sync>;

/// A running device actor.
pub struct Device {
    actor: ActorRef<DeviceMsg>,
}

impl Device {
    /// Starts device `cfg.name` on `node` (a node that is not a cluster member); it reports
    /// with `report` and tells `observer` what happens.
    pub fn start(
        node: &Node,
        cfg: DeviceConfig,
        report: ReportFn,
        observer: impl Fn(DeviceEvent) + Send + Sync + 'static,
    ) -> Device {
        let faults = cfg.faults;
        let phi = detector(&cfg);
        let actor = troupe::spawn(DeviceActor {
            node: node.clone(),
            rng: ChaCha8Rng::seed_from_u64(faults.seed),
            cfg,
            report,
            observer: Arc::new(observer),
            owner: None,
            phi,
            hello_next: Instant::now(),
            hello_target: None,
            seed_idx: 0,
            redirects: 0,
            summed: false,
            born: Instant::now(),
        });
        Device { actor }
    }

    /// The device actor.
    pub fn actor(&self) -> &ActorRef<DeviceMsg> {
        &self.actor
    }

    /// Kills the device at once (none of its code runs; its owner notices by phi).
    pub fn kill(&self) {
        self.actor.kill();
    }

    /// Whether the device actor runs.
    pub fn is_alive(&self) -> bool {
        self.actor.is_alive()
    }
}

fn detector(c: &DeviceConfig) -> PhiDetector {
    PhiDetector::new(c.heartbeat_ms as f64, c.heartbeat_ms as f64 / 2.0, c.acceptable_pause_ms as f64, 100)
}

struct DeviceActor {
    node: Node,
    cfg: DeviceConfig,
    report: ReportFn,
    observer: DeviceObserver,
    rng: ChaCha8Rng,
    owner: Option<(String, ActorRef<TrackerMsg>)>,
    phi: PhiDetector,
    hello_next: Instant,
    hello_target: Option<String>,
    seed_idx: usize,
    redirects: u32,
    summed: bool,
    born: Instant,
}

impl DeviceActor {
    fn ms(&self) -> f64 {
        self.born.elapsed().as_secs_f64() * 1000.0
    }

    /// The link-fault verdict for one message: `None` to drop it, else the delay.
    fn fault(&mut self) -> Option<Duration> {
        let f = self.cfg.faults;
        if f.drop_probability > 0.0 && self.rng.gen_bool(f.drop_probability.min(1.0)) {
            return None;
        }
        let ms = if f.delay_max_ms > f.delay_min_ms {
            self.rng.gen_range(f.delay_min_ms..=f.delay_max_ms)
        } else {
            f.delay_min_ms
        };
        Some(Duration::from_millis(ms))
    }

    fn send_out<M: RemoteMessage>(&mut self, to: &ActorRef<M>, msg: M) {
        match self.fault() {
            None => {}
            Some(d) if d.is_zero() => {
                let _ = to.send(msg);
            }
            Some(d) => {
                let to = to.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(d).await;
                    let _ = to.send(msg);
                });
            }
        }
    }

    /// Rule 1 (and 3): `Hello` to the pending target or the next seed.
    fn hello(&mut self, ctx: &mut Ctx<Self>) {
        let target = match self.hello_target.take() {
            Some(t) => t,
            None if self.cfg.seeds.is_empty() => return,
            None => {
                let t = self.cfg.seeds[self.seed_idx % self.cfg.seeds.len()].clone();
                self.seed_idx += 1;
                t
            }
        };
        let desk = self.node.remote_ref::<DeskMsg>(&target, DESK);
        let h = Hello {
            version: self.cfg.version,
            device: self.cfg.name.clone(),
            incarnation: self.cfg.incarnation,
            started_us: self.cfg.started_us,
            reported: self.summed,
            reply_to: ctx.myself(),
        };
        self.send_out(&desk, DeskMsg::Hello(h));
        self.hello_next = Instant::now() + Duration::from_millis(self.cfg.hello_retry_ms);
    }

    fn tick(&mut self, ctx: &mut Ctx<Self>) {
        let now = Instant::now();
        match self.owner.clone() {
            Some((owner, _)) if !self.phi.is_available(self.ms(), self.cfg.phi_threshold) => {
                // Rule 5: back to the seeds, starting with the one after the failed owner.
                if let Some(i) = self.cfg.seeds.iter().position(|s| *s == owner) {
                    self.seed_idx = i + 1;
                }
                self.owner = None;
                (self.observer)(DeviceEvent::OwnerFailed { device: self.cfg.name.clone(), owner });
                self.hello_target = None;
                self.redirects = 0;
                self.hello(ctx);
            }
            Some(_) => {}
            None if now >= self.hello_next => self.hello(ctx),
            None => {}
        }
    }

    fn process(&mut self, msg: DeviceMsg, ctx: &mut Ctx<Self>) {
        match msg {
            DeviceMsg::Welcome { owner, tracker } => {
                self.phi = detector(&self.cfg);
                self.phi.heartbeat(self.ms());
                self.redirects = 0;
                self.owner = Some((owner.clone(), tracker));
                (self.observer)(DeviceEvent::Homed { device: self.cfg.name.clone(), owner });
            }
            DeviceMsg::Redirect { owner } => {
                if self.owner.is_none() {
                    self.redirects += 1;
                    self.hello_target = Some(owner);
                    if self.redirects <= 3 {
                        self.hello(ctx);
                    } else {
                        self.redirects = 0;
                    }
                }
            }
            DeviceMsg::Heartbeat { owner } => {
                // Rule 5: every heartbeat of the owner is fed to the detector and answered.
                if let Some((current, tracker)) = self.owner.clone() {
                    if current == owner {
                        let now = self.ms();
                        self.phi.heartbeat(now);
                        self.send_out(&tracker, TrackerMsg::Beat);
                    }
                }
            }
            DeviceMsg::Request { owner, req } => {
                let Some((current, tracker)) = self.owner.clone() else { return };
                if current != owner {
                    return;
                }
                if req >= 2 && !self.summed {
                    self.summed = true;
                    (self.observer)(DeviceEvent::FirstReportSummed { device: self.cfg.name.clone() });
                }
                let values = (self.report)(self.cfg.report_len);
                self.send_out(&tracker, TrackerMsg::Report { req, values });
            }
            DeviceMsg::Rehome { owner } => {
                self.owner = None;
                self.redirects = 0;
                self.hello_target = Some(owner);
                self.hello(ctx);
            }
            DeviceMsg::Disconnect { reason } => {
                (self.observer)(DeviceEvent::Disconnected { device: self.cfg.name.clone(), reason });
                ctx.stop(ExitReason::Normal);
            }
            DeviceMsg::Tick => self.tick(ctx),
            DeviceMsg::Delayed(m) => self.process(*m, ctx),
        }
    }
}

impl Actor for DeviceActor {
    type Msg = DeviceMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        if self.cfg.started_us == 0 {
            self.cfg.started_us = now_us();
        }
        if !self.cfg.seeds.is_empty() {
            self.seed_idx = (crate::stable_hash(self.cfg.name.as_bytes()) % self.cfg.seeds.len() as u64) as usize;
        }
        self.hello(ctx);
        let period = (self.cfg.heartbeat_ms.min(self.cfg.hello_retry_ms) / 4).max(5);
        super::proto::every(ctx.myself(), Duration::from_millis(period), || DeviceMsg::Tick);
        Ok(())
    }

    async fn handle(&mut self, msg: DeviceMsg, ctx: &mut Ctx<Self>) {
        match msg {
            DeviceMsg::Tick | DeviceMsg::Delayed(_) => self.process(msg, ctx),
            m => match self.fault() {
                None => {}
                Some(d) if d.is_zero() => self.process(m, ctx),
                Some(d) => {
                    let _ = ctx.send_after(d, DeviceMsg::Delayed(Box::new(m)));
                }
            },
        }
    }
}
