//! kameo: `fjthrput` (many messages to a fixed set of actors) and `fjcreate` (one message to
//! each of many short-lived actors).

use std::time::{Duration, Instant};

use ::kameo::actor::{ActorRef, Spawn};
use ::kameo::message::{Context, Message};
use ::kameo::Actor;
use tokio::sync::oneshot;

use super::{Done, Sink, NAME};
use crate::bench::{check, fj_compute, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

#[derive(Actor)]
struct Worker {
    expected: u64,
    processed: u64,
    sink: ActorRef<Sink>,
}

struct Work;

impl Message<Work> for Worker {
    type Reply = ();
    async fn handle(&mut self, _: Work, ctx: &mut Context<Self, ()>) {
        self.processed += fj_compute(37.2);
        if self.processed == self.expected {
            let _ = self.sink.tell(Done(self.processed)).await;
            ctx.stop();
        }
    }
}

pub(super) async fn fjthrput(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.get("actors"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let sink = Sink::spawn(Sink::new(actors, tx));
    let workers: Vec<ActorRef<Worker>> =
        (0..actors).map(|_| Worker::spawn(Worker { expected: n, processed: 0, sink: sink.clone() })).collect();
    for _ in 0..n {
        for w in &workers {
            w.tell(Work).await.map_err(|e| failed("kameo fjthrput", e))?;
        }
    }
    let total = wait(rx, "kameo fjthrput").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjThrput, NAME, "messages processed", total, n * actors)?;
    Ok(elapsed)
}

#[derive(Actor)]
struct Ephemeral {
    sink: ActorRef<Sink>,
}

struct Hello;

impl Message<Hello> for Ephemeral {
    type Reply = ();
    async fn handle(&mut self, _: Hello, ctx: &mut Context<Self, ()>) {
        let _ = self.sink.tell(Done(fj_compute(37.2))).await;
        ctx.stop();
    }
}

pub(super) async fn fjcreate(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let sink = Sink::spawn(Sink::new(n, tx));
    for _ in 0..n {
        let a = Ephemeral::spawn(Ephemeral { sink: sink.clone() });
        a.tell(Hello).await.map_err(|e| failed("kameo fjcreate", e))?;
    }
    let total = wait(rx, "kameo fjcreate").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjCreate, NAME, "actors processed", total, n)?;
    Ok(elapsed)
}
