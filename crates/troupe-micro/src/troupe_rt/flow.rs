//! Troupe: `pingpong`, `count` and `threadring`, the benchmarks where one message is in flight
//! at a time (or one producer streams to one consumer).

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx, ExitReason, ReplyTo};

use super::{Sink, NAME};
use crate::bench::{check, Bench, Params};
use crate::util::{failed, wait, ITERATION_DEADLINE};
use crate::Error;

struct Pinger {
    pong: ActorRef<PongMsg>,
    left: u64,
    pongs: u64,
    done: Option<oneshot::Sender<u64>>,
}

enum PingMsg {
    Start,
    Pong,
}

struct Ponger {
    pings: u64,
}

enum PongMsg {
    Ping(ActorRef<PingMsg>),
    Seen(ReplyTo<u64>),
}

impl Actor for Pinger {
    type Msg = PingMsg;

    async fn handle(&mut self, msg: PingMsg, ctx: &mut Ctx<Self>) {
        if let PingMsg::Pong = msg {
            self.pongs += 1;
            if self.left == 0 {
                if let Some(tx) = self.done.take() {
                    let _ = tx.send(self.pongs);
                }
                ctx.stop(ExitReason::Normal);
                return;
            }
        }
        self.left -= 1;
        self.pong.send(PongMsg::Ping(ctx.myself())).expect("pong stopped");
    }
}

impl Actor for Ponger {
    type Msg = PongMsg;

    async fn handle(&mut self, msg: PongMsg, _: &mut Ctx<Self>) {
        match msg {
            PongMsg::Ping(from) => {
                self.pings += 1;
                from.send(PingMsg::Pong).expect("ping stopped");
            }
            PongMsg::Seen(reply) => reply.send(self.pings),
        }
    }
}

pub(super) async fn pingpong(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let pong = troupe::spawn(Ponger { pings: 0 });
    let (tx, rx) = oneshot::channel();
    let ping = troupe::spawn(Pinger { pong: pong.clone(), left: n, pongs: 0, done: Some(tx) });
    ping.send(PingMsg::Start).map_err(|e| failed("troupe pingpong", e))?;
    let pongs = wait(rx, "troupe pingpong").await?;
    let elapsed = t0.elapsed();
    let pings = pong.ask(PongMsg::Seen, ITERATION_DEADLINE).await.map_err(|e| failed("troupe pingpong", e))?;
    pong.stop();
    pong.terminated().await;
    check(Bench::PingPong, NAME, "pongs received", pongs, n)?;
    check(Bench::PingPong, NAME, "pings answered", pings, n)?;
    Ok(elapsed)
}

struct Counter {
    total: u64,
}

enum CounterMsg {
    Increment,
    Total(ReplyTo<u64>),
}

impl Actor for Counter {
    type Msg = CounterMsg;

    async fn handle(&mut self, msg: CounterMsg, ctx: &mut Ctx<Self>) {
        match msg {
            CounterMsg::Increment => self.total += 1,
            CounterMsg::Total(reply) => {
                reply.send(self.total);
                ctx.stop(ExitReason::Normal);
            }
        }
    }
}

pub(super) async fn count(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let counter = troupe::spawn(Counter { total: 0 });
    for _ in 0..n {
        counter.send(CounterMsg::Increment).map_err(|e| failed("troupe count", e))?;
    }
    let total = counter.ask(CounterMsg::Total, ITERATION_DEADLINE).await.map_err(|e| failed("troupe count", e))?;
    let elapsed = t0.elapsed();
    counter.terminated().await;
    check(Bench::Count, NAME, "total", total, n)?;
    Ok(elapsed)
}

struct RingNode {
    next: Option<ActorRef<RingMsg>>,
    sink: ActorRef<u64>,
}

enum RingMsg {
    SetNext(ActorRef<RingMsg>),
    /// Hops still to make, hops made so far.
    Token(u64, u64),
}

impl Actor for RingNode {
    type Msg = RingMsg;

    async fn handle(&mut self, msg: RingMsg, _: &mut Ctx<Self>) {
        match msg {
            RingMsg::SetNext(next) => self.next = Some(next),
            RingMsg::Token(0, hops) => {
                let _ = self.sink.send(hops);
            }
            RingMsg::Token(left, hops) => {
                if let Some(next) = &self.next {
                    next.send(RingMsg::Token(left - 1, hops + 1)).expect("ring broken");
                }
            }
        }
    }
}

pub(super) async fn threadring(p: &Params) -> Result<Duration, Error> {
    let (actors, n) = (p.count("actors"), p.get("n"));
    let t0 = Instant::now();
    let (sink, rx) = Sink::spawn(1);
    let ring: Vec<ActorRef<RingMsg>> =
        (0..actors).map(|_| troupe::spawn(RingNode { next: None, sink: sink.clone() })).collect();
    for (i, node) in ring.iter().enumerate() {
        let next = ring[(i + 1) % actors].clone();
        node.send(RingMsg::SetNext(next)).map_err(|e| failed("troupe threadring", e))?;
    }
    ring[0].send(RingMsg::Token(n, 0)).map_err(|e| failed("troupe threadring", e))?;
    let hops = wait(rx, "troupe threadring").await?;
    let elapsed = t0.elapsed();
    for node in &ring {
        node.stop();
    }
    for node in &ring {
        node.terminated().await;
    }
    check(Bench::ThreadRing, NAME, "hops", hops, n)?;
    Ok(elapsed)
}
