//! The micro-benchmarks on kameo 0.22, written the way kameo's docs write actors:
//! `#[derive(Actor)]`, one `impl Message<M>` per message, `Spawn::spawn` with the default
//! bounded mailbox (capacity 64) and `tell(..).await`, on a multi-thread tokio runtime with
//! tokio's defaults. The one departure is `big`, whose actors message each other in cycles:
//! with bounded mailboxes two actors awaiting room in each other's full mailbox deadlock, so it
//! uses `mailbox::unbounded()`, which kameo documents for exactly such high-rate traffic.

use std::time::Duration;

use ::kameo::message::{Context, Message};
use ::kameo::Actor;
use tokio::sync::oneshot;

use crate::bench::{Bench, Params};
use crate::Error;

mod fj;
mod flow;
pub(crate) mod memory;
mod pairs;
mod tree;

/// The runtime's name in result lines.
pub(crate) const NAME: &str = "kameo";

/// Runs `count` iterations of `bench` in one tokio runtime and returns their times.
pub(crate) fn iterations(bench: Bench, p: &Params, count: usize) -> Result<Vec<Duration>, Error> {
    let rt = crate::util::tokio_runtime()?;
    rt.block_on(async {
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            let t = match bench {
                Bench::PingPong => flow::pingpong(p).await?,
                Bench::Count => flow::count(p).await?,
                Bench::ThreadRing => flow::threadring(p).await?,
                Bench::FjThrput => fj::fjthrput(p).await?,
                Bench::FjCreate => fj::fjcreate(p).await?,
                Bench::Chameneos => pairs::chameneos(p).await?,
                Bench::Big => pairs::big(p).await?,
                Bench::Fib => tree::fib(p).await?,
                Bench::Skynet => tree::skynet(p).await?,
                Bench::Memory => unreachable!("memory is measured by memory::measure"),
            };
            times.push(t);
        }
        Ok(times)
    })
}

/// Counts `Done` reports from `expected` actors, sums their values, and sends the sum on the
/// completion signal when the last one arrives; then stops.
#[derive(Actor)]
pub(crate) struct Sink {
    expected: u64,
    seen: u64,
    sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Sink {
    pub(crate) fn new(expected: u64, done: oneshot::Sender<u64>) -> Self {
        Sink { expected, seen: 0, sum: 0, done: Some(done) }
    }
}

/// One actor finished, with its count.
pub(crate) struct Done(pub(crate) u64);

impl Message<Done> for Sink {
    type Reply = ();

    async fn handle(&mut self, Done(v): Done, ctx: &mut Context<Self, ()>) {
        self.seen += 1;
        self.sum += v;
        if self.seen == self.expected {
            if let Some(tx) = self.done.take() {
                let _ = tx.send(self.sum);
            }
            ctx.stop();
        }
    }
}
