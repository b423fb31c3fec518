//! The Troupe latency program's messages and actors, on both nodes.
//!
//! Rules:
//! 1. A partner (node B) answers every `Data` with `Ack {seq}` to the ref the message carries,
//!    sent with the run's send options (the same channel and lane choice as the data: by the
//!    pair's partition key for the affinitised transports, at random for `parallel_random`).
//! 2. An ack sink (node A) hands each ack to the waiting sender task of its pair.
//! 3. The control actor of node B builds the partners of a run (`Setup`, answered with their
//!    refs and, for `channels_gossip`, B's gossip sink) and ends the node process (`Quit`).
//! 4. A gossip sink counts the gossip messages and bytes it received.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use tokio::sync::{mpsc, Notify};
use troupe::{Actor, ActorRef, Ctx, ReplyTo};
use troupe_remote::{send_with, Blob, Nested, RemoteMessage, SendOptions, SharedBlob};

use super::config::LatencyConfig;

/// The data channel's name for `channels_gossip`.
pub(crate) const DATA_CHANNEL: &str = "data";
/// The gossip channel's name for `channels_gossip`.
pub(crate) const GOSSIP_CHANNEL: &str = "gossip";

/// One message of a pair (rule 1).
#[derive(Serialize, Deserialize)]
pub(crate) struct Data {
    /// The pair.
    pub(crate) pair: u64,
    /// The pair's sequence number.
    pub(crate) seq: u64,
    /// The payload: one buffer shared by every message, as Erlang's peer shares one binary
    /// (sending it copies nothing; the far node keeps it as a slice of the frame it came in).
    pub(crate) payload: SharedBlob,
    /// Where the ack goes.
    pub(crate) ack: ActorRef<Ack>,
}

/// A partner's answer (rule 1).
#[derive(Clone, Serialize, Deserialize)]
pub(crate) struct Ack {
    /// The acknowledged sequence number.
    pub(crate) seq: u64,
}

/// Background gossip (rule 4).
#[derive(Serialize, Deserialize)]
pub(crate) struct Gossip(pub(crate) Blob);

/// What node B's control actor understands (rule 3).
#[derive(Serialize, Deserialize)]
pub(crate) enum ControlMsg {
    /// Build `pairs` partners; A's gossip sink when the transport gossips.
    Setup(u64, Option<ActorRef<Gossip>>, ReplyTo<Partners>),
    /// End the node process.
    Quit,
}

/// The partners of a run and B's gossip sink.
#[derive(Serialize, Deserialize)]
pub(crate) struct Partners {
    /// Partner `i` of pair `i`.
    pub(crate) partners: Vec<ActorRef<Data>>,
    /// B's gossip sink (`channels_gossip`).
    pub(crate) gossip: Option<ActorRef<Gossip>>,
}

impl RemoteMessage for Data {
    const TAG: &'static str = "troupe.lab.latency.data.v1";
    fn nested(n: &mut Nested) {
        n.add::<Ack>();
    }
}

impl RemoteMessage for Ack {
    const TAG: &'static str = "troupe.lab.latency.ack.v1";
}

impl RemoteMessage for Gossip {
    const TAG: &'static str = "troupe.lab.latency.gossip.v1";
}

impl RemoteMessage for ControlMsg {
    const TAG: &'static str = "troupe.lab.latency.control.v1";
    fn nested(n: &mut Nested) {
        n.add::<Gossip>();
        n.add::<Partners>();
    }
}

impl RemoteMessage for Partners {
    const TAG: &'static str = "troupe.lab.latency.partners.v1";
    fn nested(n: &mut Nested) {
        n.add::<Data>();
        n.add::<Gossip>();
    }
}

/// The send options of a pair's data and acks for a transport (rule 1).
pub(crate) fn pair_options(c: &LatencyConfig, pair: u64) -> SendOptions {
    match c.transport.as_str() {
        "parallel_random" => SendOptions::new(),
        "channels_gossip" => SendOptions::new().channel(DATA_CHANNEL).partition_key(pair),
        _ => SendOptions::new().partition_key(pair),
    }
}

/// A partner on node B (rule 1).
pub(crate) struct Partner {
    pub(crate) opts: SendOptions,
}

impl Actor for Partner {
    type Msg = Data;

    async fn handle(&mut self, msg: Data, _: &mut Ctx<Self>) {
        let _ = send_with(&msg.ack, Ack { seq: msg.seq }, &self.opts);
    }
}

/// An ack sink on node A (rule 2).
pub(crate) struct AckSink {
    pub(crate) tx: mpsc::UnboundedSender<u64>,
}

impl Actor for AckSink {
    type Msg = Ack;

    async fn handle(&mut self, msg: Ack, _: &mut Ctx<Self>) {
        let _ = self.tx.send(msg.seq);
    }
}

/// Gossip received (rule 4).
#[derive(Default)]
pub(crate) struct GossipCount {
    pub(crate) messages: AtomicU64,
    pub(crate) bytes: AtomicU64,
}

/// A gossip sink (rule 4).
pub(crate) struct GossipSink {
    pub(crate) count: Arc<GossipCount>,
}

impl Actor for GossipSink {
    type Msg = Gossip;

    async fn handle(&mut self, msg: Gossip, _: &mut Ctx<Self>) {
        self.count.messages.fetch_add(1, Ordering::AcqRel);
        self.count.bytes.fetch_add(msg.0 .0.len() as u64, Ordering::AcqRel);
    }
}

/// Node B's control actor (rule 3).
pub(crate) struct Control {
    pub(crate) cfg: LatencyConfig,
    pub(crate) partners: Vec<ActorRef<Data>>,
    pub(crate) gossip: Option<tokio::task::JoinHandle<()>>,
    pub(crate) quit: Arc<Notify>,
}

impl Actor for Control {
    type Msg = ControlMsg;

    async fn handle(&mut self, msg: ControlMsg, _: &mut Ctx<Self>) {
        match msg {
            ControlMsg::Setup(pairs, a_gossip, reply) => {
                self.partners =
                    (0..pairs).map(|i| troupe::spawn(Partner { opts: pair_options(&self.cfg, i) })).collect();
                let sink =
                    a_gossip.as_ref().map(|_| troupe::spawn(GossipSink { count: Arc::new(GossipCount::default()) }));
                if let Some(to) = a_gossip {
                    self.gossip = Some(tokio::spawn(gossip_loop(to)));
                }
                reply.send(Partners { partners: self.partners.clone(), gossip: sink });
            }
            ControlMsg::Quit => {
                if let Some(g) = self.gossip.take() {
                    g.abort();
                }
                for p in &self.partners {
                    p.stop();
                }
                self.quit.notify_one();
            }
        }
    }
}

/// Sends one gossip message every [`super::config::GOSSIP_EVERY_MS`] on the gossip channel
/// until aborted.
pub(crate) async fn gossip_loop(to: ActorRef<Gossip>) {
    let opts = SendOptions::new().channel(GOSSIP_CHANNEL);
    let body = vec![0x5a_u8; super::config::GOSSIP_BYTES];
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(super::config::GOSSIP_EVERY_MS));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let _ = send_with(&to, Gossip(Blob(body.clone())), &opts);
    }
}
