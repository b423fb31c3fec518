//! kameo: `pingpong`, `count` and `threadring`, the benchmarks where one message is in flight
//! at a time (or one producer streams to one consumer).

use std::time::{Duration, Instant};

use ::kameo::actor::{ActorRef, Spawn};
use ::kameo::message::{Context, Message};
use ::kameo::Actor;
use tokio::sync::oneshot;

use super::{Done, Sink, NAME};
use crate::bench::{check, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

#[derive(Actor)]
struct Pinger {
    pong: ActorRef<Ponger>,
    left: u64,
    pongs: u64,
    done: Option<oneshot::Sender<u64>>,
}

#[derive(Actor)]
struct Ponger {
    pings: u64,
}

struct Start;
struct Ping {
    reply_to: ActorRef<Pinger>,
}
struct Pong;
struct PingsSeen;

impl Pinger {
    async fn send_ping(&mut self, me: &ActorRef<Pinger>) {
        self.left -= 1;
        let sent = self.pong.tell(Ping { reply_to: me.clone() }).await;
        assert!(sent.is_ok(), "pong stopped");
    }
}

impl Message<Start> for Pinger {
    type Reply = ();
    async fn handle(&mut self, _: Start, ctx: &mut Context<Self, ()>) {
        self.send_ping(ctx.actor_ref()).await;
    }
}

impl Message<Pong> for Pinger {
    type Reply = ();
    async fn handle(&mut self, _: Pong, ctx: &mut Context<Self, ()>) {
        self.pongs += 1;
        if self.left == 0 {
            if let Some(tx) = self.done.take() {
                let _ = tx.send(self.pongs);
            }
            ctx.stop();
        } else {
            self.send_ping(ctx.actor_ref()).await;
        }
    }
}

impl Message<Ping> for Ponger {
    type Reply = ();
    async fn handle(&mut self, ping: Ping, _: &mut Context<Self, ()>) {
        self.pings += 1;
        let sent = ping.reply_to.tell(Pong).await;
        assert!(sent.is_ok(), "ping stopped");
    }
}

impl Message<PingsSeen> for Ponger {
    type Reply = u64;
    async fn handle(&mut self, _: PingsSeen, _: &mut Context<Self, u64>) -> u64 {
        self.pings
    }
}

pub(super) async fn pingpong(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let pong = Ponger::spawn(Ponger { pings: 0 });
    let (tx, rx) = oneshot::channel();
    let ping = Pinger::spawn(Pinger { pong: pong.clone(), left: n, pongs: 0, done: Some(tx) });
    ping.tell(Start).await.map_err(|e| failed("kameo pingpong start", e))?;
    let pongs = wait(rx, "kameo pingpong").await?;
    let elapsed = t0.elapsed();
    let pings = pong.ask(PingsSeen).await.map_err(|e| failed("kameo pingpong", e))?;
    let _ = pong.stop_gracefully().await;
    pong.wait_for_shutdown().await;
    check(Bench::PingPong, NAME, "pongs received", pongs, n)?;
    check(Bench::PingPong, NAME, "pings answered", pings, n)?;
    Ok(elapsed)
}

#[derive(Actor)]
struct Counter {
    total: u64,
}

struct Increment;
struct Total;

impl Message<Increment> for Counter {
    type Reply = ();
    async fn handle(&mut self, _: Increment, _: &mut Context<Self, ()>) {
        self.total += 1;
    }
}

impl Message<Total> for Counter {
    type Reply = u64;
    async fn handle(&mut self, _: Total, ctx: &mut Context<Self, u64>) -> u64 {
        ctx.stop();
        self.total
    }
}

pub(super) async fn count(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let counter = Counter::spawn(Counter { total: 0 });
    for _ in 0..n {
        counter.tell(Increment).await.map_err(|e| failed("kameo count", e))?;
    }
    let total = counter.ask(Total).await.map_err(|e| failed("kameo count", e))?;
    let elapsed = t0.elapsed();
    counter.wait_for_shutdown().await;
    check(Bench::Count, NAME, "total", total, n)?;
    Ok(elapsed)
}

#[derive(Actor)]
struct RingNode {
    next: Option<ActorRef<RingNode>>,
    sink: ActorRef<Sink>,
}

struct SetNext(ActorRef<RingNode>);
/// The token: hops still to make, hops made so far.
struct Token(u64, u64);
struct Leave;

impl Message<SetNext> for RingNode {
    type Reply = ();
    async fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self, ()>) {
        self.next = Some(next);
    }
}

impl Message<Token> for RingNode {
    type Reply = ();
    async fn handle(&mut self, Token(left, hops): Token, _: &mut Context<Self, ()>) {
        if left == 0 {
            let _ = self.sink.tell(Done(hops)).await;
        } else if let Some(next) = &self.next {
            let sent = next.tell(Token(left - 1, hops + 1)).await;
            assert!(sent.is_ok(), "ring broken");
        }
    }
}

impl Message<Leave> for RingNode {
    type Reply = ();
    async fn handle(&mut self, _: Leave, ctx: &mut Context<Self, ()>) {
        self.next = None;
        ctx.stop();
    }
}

pub(super) async fn threadring(p: &Params) -> Result<Duration, Error> {
    let (actors, n) = (p.count("actors"), p.get("n"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let sink = Sink::spawn(Sink::new(1, tx));
    let ring: Vec<ActorRef<RingNode>> =
        (0..actors).map(|_| RingNode::spawn(RingNode { next: None, sink: sink.clone() })).collect();
    for (i, node) in ring.iter().enumerate() {
        let next = ring[(i + 1) % actors].clone();
        node.tell(SetNext(next)).await.map_err(|e| failed("kameo threadring", e))?;
    }
    ring[0].tell(Token(n, 0)).await.map_err(|e| failed("kameo threadring", e))?;
    let hops = wait(rx, "kameo threadring").await?;
    let elapsed = t0.elapsed();
    for node in &ring {
        let _ = node.tell(Leave).await;
    }
    for node in &ring {
        node.wait_for_shutdown().await;
    }
    check(Bench::ThreadRing, NAME, "hops", hops, n)?;
    Ok(elapsed)
}
