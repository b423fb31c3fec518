//! actix: `pingpong`, `count` and `threadring`, the benchmarks where one message is in flight
//! at a time (or one producer streams to one consumer).

use std::time::{Duration, Instant};

use ::actix::prelude::*;
use tokio::sync::oneshot;

use super::{Done, Sink, Stop, NAME};
use crate::bench::{check, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

struct Pinger {
    pong: Addr<Ponger>,
    left: u64,
    pongs: u64,
    done: Option<oneshot::Sender<u64>>,
}

struct Ponger {
    pings: u64,
}

impl Actor for Pinger {
    type Context = Context<Self>;
}

impl Actor for Ponger {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Start;

#[derive(Message)]
#[rtype(result = "()")]
struct Ping(Addr<Pinger>);

#[derive(Message)]
#[rtype(result = "()")]
struct Pong;

#[derive(Message)]
#[rtype(result = "u64")]
struct PingsSeen;

impl Handler<Start> for Pinger {
    type Result = ();
    fn handle(&mut self, _: Start, ctx: &mut Context<Self>) {
        self.left -= 1;
        self.pong.do_send(Ping(ctx.address()));
    }
}

impl Handler<Pong> for Pinger {
    type Result = ();
    fn handle(&mut self, _: Pong, ctx: &mut Context<Self>) {
        self.pongs += 1;
        if self.left == 0 {
            if let Some(tx) = self.done.take() {
                let _ = tx.send(self.pongs);
            }
            ctx.stop();
        } else {
            self.left -= 1;
            self.pong.do_send(Ping(ctx.address()));
        }
    }
}

impl Handler<Ping> for Ponger {
    type Result = ();
    fn handle(&mut self, Ping(from): Ping, _: &mut Context<Self>) {
        self.pings += 1;
        from.do_send(Pong);
    }
}

impl Handler<PingsSeen> for Ponger {
    type Result = u64;
    fn handle(&mut self, _: PingsSeen, ctx: &mut Context<Self>) -> u64 {
        ctx.stop();
        self.pings
    }
}

pub(super) async fn pingpong(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let pong = Ponger { pings: 0 }.start();
    let (tx, rx) = oneshot::channel();
    let ping = Pinger { pong: pong.clone(), left: n, pongs: 0, done: Some(tx) }.start();
    ping.do_send(Start);
    drop(ping);
    let pongs = wait(rx, "actix pingpong").await?;
    let elapsed = t0.elapsed();
    let pings = pong.send(PingsSeen).await.map_err(|e| failed("actix pingpong", e))?;
    check(Bench::PingPong, NAME, "pongs received", pongs, n)?;
    check(Bench::PingPong, NAME, "pings answered", pings, n)?;
    Ok(elapsed)
}

struct Counter {
    total: u64,
}

impl Actor for Counter {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Increment;

#[derive(Message)]
#[rtype(result = "u64")]
struct Total;

impl Handler<Increment> for Counter {
    type Result = ();
    fn handle(&mut self, _: Increment, _: &mut Context<Self>) {
        self.total += 1;
    }
}

impl Handler<Total> for Counter {
    type Result = u64;
    fn handle(&mut self, _: Total, ctx: &mut Context<Self>) -> u64 {
        ctx.stop();
        self.total
    }
}

pub(super) async fn count(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let counter = Counter { total: 0 }.start();
    for _ in 0..n {
        counter.do_send(Increment);
    }
    let total = counter.send(Total).await.map_err(|e| failed("actix count", e))?;
    let elapsed = t0.elapsed();
    check(Bench::Count, NAME, "total", total, n)?;
    Ok(elapsed)
}

struct RingNode {
    next: Option<Addr<RingNode>>,
    sink: Addr<Sink>,
}

impl Actor for RingNode {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct SetNext(Addr<RingNode>);

/// The token: hops still to make, hops made so far.
#[derive(Message)]
#[rtype(result = "()")]
struct Token(u64, u64);

impl Handler<SetNext> for RingNode {
    type Result = ();
    fn handle(&mut self, SetNext(next): SetNext, _: &mut Context<Self>) {
        self.next = Some(next);
    }
}

impl Handler<Token> for RingNode {
    type Result = ();
    fn handle(&mut self, Token(left, hops): Token, _: &mut Context<Self>) {
        if left == 0 {
            self.sink.do_send(Done(hops));
        } else if let Some(next) = &self.next {
            next.do_send(Token(left - 1, hops + 1));
        }
    }
}

impl Handler<Stop> for RingNode {
    type Result = ();
    fn handle(&mut self, _: Stop, ctx: &mut Context<Self>) {
        self.next = None;
        ctx.stop();
    }
}

pub(super) async fn threadring(p: &Params) -> Result<Duration, Error> {
    let (actors, n) = (p.count("actors"), p.get("n"));
    let t0 = Instant::now();
    let (sink, rx) = Sink::start_new(1);
    let ring: Vec<Addr<RingNode>> = (0..actors).map(|_| RingNode { next: None, sink: sink.clone() }.start()).collect();
    for (i, node) in ring.iter().enumerate() {
        node.do_send(SetNext(ring[(i + 1) % actors].clone()));
    }
    ring[0].do_send(Token(n, 0));
    let hops = wait(rx, "actix threadring").await?;
    let elapsed = t0.elapsed();
    for node in &ring {
        node.do_send(Stop);
    }
    check(Bench::ThreadRing, NAME, "hops", hops, n)?;
    Ok(elapsed)
}
