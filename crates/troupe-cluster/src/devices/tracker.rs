//! The per-device tracker (rules 4-9 of `devices/mod.rs`): started by the owner's desk, it
//! heartbeats its device, watches the device's heartbeats with a phi-accrual detector, asks for
//! reports and re-asks after the timeout, sums them into the device's record, replicates the
//! first report of an incarnation to every other live server, and stands down when told.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use troupe::{Actor, ActorError, ActorRef, Ctx, ExitReason};

use super::proto::{DeskMsg, DeviceMsg, DeviceRecord, Hello, TrackerMsg, DESK};
use super::server::{ServerEvent, Shared};
use crate::PhiDetector;

/// Wall clock, µs since the epoch.
pub(super) fn now_us() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

pub(super) struct Tracker {
    shared: Arc<Shared>,
    device: String,
    incarnation: u64,
    started_us: i64,
    serial: u64,
    reply_to: ActorRef<DeviceMsg>,
    desk: ActorRef<DeskMsg>,
    phi: PhiDetector,
    born: Instant,
    req: u64,
    asked_at: Instant,
    next_beat: Instant,
    first_done: bool,
    /// The first report's replication while it is under way (rule 8).
    replication: Option<Replication>,
}

/// Rounds of acknowledgement asks (each `replicate_timeout_ms` long) before a first report's
/// replication is given up (rule 8).
pub(super) const REPLICATE_TRIES: u32 = 10;

struct Replication {
    record: DeviceRecord,
    /// Servers asked in the first round.
    asked: usize,
    /// Rounds asked so far.
    tries: u32,
    /// Servers asked in the current round.
    round: usize,
    /// Servers that acknowledged so far.
    acked: usize,
}

impl Tracker {
    pub(super) fn new(shared: Arc<Shared>, h: Hello, serial: u64, desk: ActorRef<DeskMsg>) -> Tracker {
        let c = &shared.cfg;
        let phi =
            PhiDetector::new(c.heartbeat_ms as f64, c.heartbeat_ms as f64 / 2.0, c.acceptable_pause_ms as f64, 100);
        let now = Instant::now();
        Tracker {
            device: h.device,
            incarnation: h.incarnation,
            started_us: h.started_us,
            serial,
            reply_to: h.reply_to,
            desk,
            phi,
            born: now,
            req: 1,
            asked_at: now,
            next_beat: now,
            first_done: h.reported,
            replication: None,
            shared,
        }
    }

    fn ms(&self) -> f64 {
        self.born.elapsed().as_secs_f64() * 1000.0
    }

    fn welcome(&mut self, ctx: &mut Ctx<Self>) {
        let owner = self.shared.me.clone();
        let _ = self.reply_to.send(DeviceMsg::Welcome { owner: owner.clone(), tracker: ctx.myself() });
        let _ = self.reply_to.send(DeviceMsg::Heartbeat { owner: owner.clone() });
        let _ = self.reply_to.send(DeviceMsg::Request { owner, req: self.req });
        self.asked_at = Instant::now();
    }

    fn tick(&mut self, ctx: &mut Ctx<Self>) {
        let now = Instant::now();
        // Rule 5: phi is checked at every tick (a quarter of the shorter period), not only
        // when a heartbeat is due.
        if !self.phi.is_available(self.ms(), self.shared.cfg.phi_threshold) {
            (self.shared.observer)(ServerEvent::DeviceLost {
                device: self.device.clone(),
                incarnation: self.incarnation,
            });
            ctx.stop(ExitReason::Normal);
            return;
        }
        if now >= self.next_beat {
            let _ = self.reply_to.send(DeviceMsg::Heartbeat { owner: self.shared.me.clone() });
            self.next_beat = now + Duration::from_millis(self.shared.cfg.heartbeat_ms);
        }
        if now.duration_since(self.asked_at) >= Duration::from_millis(self.shared.cfg.report_timeout_ms) {
            let _ = self.reply_to.send(DeviceMsg::Request { owner: self.shared.me.clone(), req: self.req });
            self.asked_at = now;
        }
    }

    fn report(&mut self, req: u64, values: &[i64], ctx: &mut Ctx<Self>) {
        if req != self.req {
            return;
        }
        // Any report is also a sign of life.
        if values.len() != self.shared.cfg.report_len {
            let reason = format!(
                "malformed report: {} values where {} were asked for; the device must send report_len values",
                values.len(),
                self.shared.cfg.report_len
            );
            self.shared.refuse(&self.reply_to, &self.device, reason);
            ctx.stop(ExitReason::Normal);
            return;
        }
        let sum = values.iter().fold(0i64, |a, v| a.wrapping_add(*v));
        let now = now_us();
        let first = {
            let mut s = self.shared.state.lock();
            let r = s.records.entry(self.device.clone()).or_insert_with(|| self.record(now));
            if r.incarnation != self.incarnation {
                *r = self.record(now);
            }
            r.owner.clone_from(&self.shared.me);
            r.reports += 1;
            r.total = r.total.wrapping_add(sum);
            r.last_report_us = now;
            r.clone()
        };
        self.shared.reports.fetch_add(1, Ordering::Relaxed);
        self.req += 1;
        let _ = self.reply_to.send(DeviceMsg::Request { owner: self.shared.me.clone(), req: self.req });
        self.asked_at = Instant::now();
        if !self.first_done {
            self.first_done = true;
            let others = self.shared.others();
            self.replication =
                Some(Replication { record: first, asked: others.len(), tries: 1, round: others.len(), acked: 0 });
            self.replicate(others, ctx);
        }
    }

    fn record(&self, now: i64) -> DeviceRecord {
        DeviceRecord {
            device: self.device.clone(),
            incarnation: self.incarnation,
            started_us: self.started_us,
            owner: self.shared.me.clone(),
            reports: 0,
            total: 0,
            last_report_us: now,
        }
    }

    /// Rule 8: the first report's record to the servers `to`, acknowledged; the tracker hears
    /// back which did not acknowledge in time.
    fn replicate(&self, to: Vec<String>, ctx: &mut Ctx<Self>) {
        let Some(record) = self.replication.as_ref().map(|r| r.record.clone()) else { return };
        let (node, me) = (self.shared.node.clone(), self.shared.me.clone());
        let limit = Duration::from_millis(self.shared.cfg.replicate_timeout_ms);
        let asks = async move {
            let mut pending = Vec::with_capacity(to.len());
            for addr in to {
                let desk = node.remote_ref::<DeskMsg>(&addr, DESK);
                let (rec, from) = (vec![record.clone()], me.clone());
                pending.push(tokio::spawn(async move {
                    let ok =
                        desk.ask(|ack| DeskMsg::Status { from, records: rec, ack: Some(ack) }, limit).await.is_ok();
                    (addr, ok)
                }));
            }
            let mut missing = Vec::new();
            for p in pending {
                match p.await {
                    Ok((_, true)) => {}
                    Ok((addr, false)) => missing.push(addr),
                    Err(_) => {}
                }
            }
            missing
        };
        let _ = ctx.pipe(asks, |missing| TrackerMsg::Replicated { missing });
    }

    /// Rule 8: the status is current once every server still live has acknowledged; the others
    /// are asked again, up to [`REPLICATE_TRIES`] rounds in all.
    fn replicated(&mut self, missing: Vec<String>, ctx: &mut Ctx<Self>) {
        let Some(rep) = self.replication.as_mut() else { return };
        rep.acked += rep.round.saturating_sub(missing.len());
        let live = self.shared.others();
        let still: Vec<String> = missing.into_iter().filter(|a| live.contains(a)).collect();
        if still.is_empty() {
            let (acked, asked) = (rep.acked, rep.asked);
            self.replication = None;
            let ms = (now_us() - self.started_us) as f64 / 1000.0;
            (self.shared.observer)(ServerEvent::StatusCurrent {
                device: self.device.clone(),
                incarnation: self.incarnation,
                ms,
                acked,
                asked,
            });
        } else if rep.tries < REPLICATE_TRIES {
            rep.tries += 1;
            rep.round = still.len();
            self.replicate(still, ctx);
        } else {
            let asked = rep.asked;
            self.replication = None;
            (self.shared.observer)(ServerEvent::StatusNotReplicated {
                device: self.device.clone(),
                incarnation: self.incarnation,
                missing: still,
                asked,
            });
        }
    }
}

impl Actor for Tracker {
    type Msg = TrackerMsg;

    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), ActorError> {
        // A re-homed device keeps its incarnation's count; its first report was announced.
        {
            let s = self.shared.state.lock();
            if let Some(r) = s.records.get(&self.device) {
                self.first_done |= r.incarnation == self.incarnation && r.reports > 0;
            }
        }
        self.phi.heartbeat(self.ms());
        self.welcome(ctx);
        super::proto::every(ctx.myself(), self.shared.cfg.tick(), || TrackerMsg::Tick);
        Ok(())
    }

    async fn handle(&mut self, msg: TrackerMsg, ctx: &mut Ctx<Self>) {
        match msg {
            TrackerMsg::Beat => {
                let now = self.ms();
                self.phi.heartbeat(now);
            }
            TrackerMsg::Report { req, values } => self.report(req, &values, ctx),
            TrackerMsg::Tick => self.tick(ctx),
            TrackerMsg::StandDown { reason, rehome } => {
                if let Some(owner) = rehome {
                    let _ = self.reply_to.send(DeviceMsg::Rehome { owner });
                }
                self.shared.stood_down.fetch_add(1, Ordering::Relaxed);
                (self.shared.observer)(ServerEvent::StoodDown { device: self.device.clone(), reason });
                ctx.stop(ExitReason::Normal);
            }
            TrackerMsg::Replicated { missing } => self.replicated(missing, ctx),
            TrackerMsg::Rewelcome(reply_to) => {
                self.reply_to = reply_to;
                self.phi.heartbeat(self.ms());
                self.welcome(ctx);
            }
        }
    }

    async fn stopped(&mut self, _: &ExitReason, _: &mut Ctx<Self>) {
        let _ = self.desk.send(DeskMsg::TrackerEnded { device: self.device.clone(), serial: self.serial });
    }
}
