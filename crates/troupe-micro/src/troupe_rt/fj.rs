//! Troupe: `fjthrput` (many messages to a fixed set of actors) and `fjcreate` (one message to
//! each of many short-lived actors).

use std::time::{Duration, Instant};

use troupe::{Actor, ActorRef, Ctx, ExitReason};

use super::{Sink, NAME};
use crate::bench::{check, fj_compute, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

struct Worker {
    expected: u64,
    processed: u64,
    sink: ActorRef<u64>,
}

/// The one message a worker gets, `n` times.
struct Work;

impl Actor for Worker {
    type Msg = Work;

    async fn handle(&mut self, _: Work, ctx: &mut Ctx<Self>) {
        self.processed += fj_compute(37.2);
        if self.processed == self.expected {
            let _ = self.sink.send(self.processed);
            ctx.stop(ExitReason::Normal);
        }
    }
}

pub(super) async fn fjthrput(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.get("actors"));
    let t0 = Instant::now();
    let (sink, rx) = Sink::spawn(actors);
    let workers: Vec<ActorRef<Work>> =
        (0..actors).map(|_| troupe::spawn(Worker { expected: n, processed: 0, sink: sink.clone() })).collect();
    for _ in 0..n {
        for w in &workers {
            w.send(Work).map_err(|e| failed("troupe fjthrput", e))?;
        }
    }
    let total = wait(rx, "troupe fjthrput").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjThrput, NAME, "messages processed", total, n * actors)?;
    Ok(elapsed)
}

struct Ephemeral {
    sink: ActorRef<u64>,
}

/// The one message a short-lived actor gets.
struct Hello;

impl Actor for Ephemeral {
    type Msg = Hello;

    async fn handle(&mut self, _: Hello, ctx: &mut Ctx<Self>) {
        let _ = self.sink.send(fj_compute(37.2));
        ctx.stop(ExitReason::Normal);
    }
}

pub(super) async fn fjcreate(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (sink, rx) = Sink::spawn(n);
    for _ in 0..n {
        let a = troupe::spawn(Ephemeral { sink: sink.clone() });
        a.send(Hello).map_err(|e| failed("troupe fjcreate", e))?;
    }
    let total = wait(rx, "troupe fjcreate").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjCreate, NAME, "actors processed", total, n)?;
    Ok(elapsed)
}
