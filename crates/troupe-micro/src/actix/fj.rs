//! actix: `fjthrput` (many messages to a fixed set of actors) and `fjcreate` (one message to
//! each of many short-lived actors).

use std::time::{Duration, Instant};

use ::actix::prelude::*;

use super::{Done, Sink, NAME};
use crate::bench::{check, fj_compute, Bench, Params};
use crate::util::wait;
use crate::Error;

struct Worker {
    expected: u64,
    processed: u64,
    sink: Addr<Sink>,
}

impl Actor for Worker {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Work;

impl Handler<Work> for Worker {
    type Result = ();
    fn handle(&mut self, _: Work, ctx: &mut Context<Self>) {
        self.processed += fj_compute(37.2);
        if self.processed == self.expected {
            self.sink.do_send(Done(self.processed));
            ctx.stop();
        }
    }
}

pub(super) async fn fjthrput(p: &Params) -> Result<Duration, Error> {
    let (n, actors) = (p.get("n"), p.get("actors"));
    let t0 = Instant::now();
    let (sink, rx) = Sink::start_new(actors);
    let workers: Vec<Addr<Worker>> =
        (0..actors).map(|_| Worker { expected: n, processed: 0, sink: sink.clone() }.start()).collect();
    for _ in 0..n {
        for w in &workers {
            w.do_send(Work);
        }
    }
    drop(workers);
    let total = wait(rx, "actix fjthrput").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjThrput, NAME, "messages processed", total, n * actors)?;
    Ok(elapsed)
}

struct Ephemeral {
    sink: Addr<Sink>,
}

impl Actor for Ephemeral {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Hello;

impl Handler<Hello> for Ephemeral {
    type Result = ();
    fn handle(&mut self, _: Hello, ctx: &mut Context<Self>) {
        self.sink.do_send(Done(fj_compute(37.2)));
        ctx.stop();
    }
}

pub(super) async fn fjcreate(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (sink, rx) = Sink::start_new(n);
    for _ in 0..n {
        Ephemeral { sink: sink.clone() }.start().do_send(Hello);
    }
    let total = wait(rx, "actix fjcreate").await?;
    let elapsed = t0.elapsed();
    check(Bench::FjCreate, NAME, "actors processed", total, n)?;
    Ok(elapsed)
}
