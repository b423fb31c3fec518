//! The micro-benchmarks on ractor 0.16, written the way ractor's docs write actors: a
//! stateless handler type implementing `ractor::Actor` with its `State` built in `pre_start`,
//! one message enum per actor, `Actor::spawn(None, ..).await`, `cast` to tell and `call!` to
//! ask, on a multi-thread tokio runtime with tokio's defaults. ractor's mailboxes are unbounded
//! by default, which is what these use.

use std::time::Duration;

use ::ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use crate::bench::{Bench, Params};
use crate::util::failed;
use crate::Error;

mod fj;
mod flow;
pub(crate) mod memory;
mod pairs;
mod tree;

/// The runtime's name in result lines.
pub(crate) const NAME: &str = "ractor";

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

/// Counts reports from `expected` actors, sums them, and sends the sum on the completion
/// signal when the last one arrives; then stops. Its message is the reported count.
pub(crate) struct Sink;

pub(crate) struct SinkState {
    expected: u64,
    seen: u64,
    sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for Sink {
    type Msg = u64;
    type State = SinkState;
    type Arguments = (u64, oneshot::Sender<u64>);

    async fn pre_start(
        &self,
        _: ActorRef<u64>,
        (expected, done): Self::Arguments,
    ) -> Result<SinkState, ActorProcessingErr> {
        Ok(SinkState { expected, seen: 0, sum: 0, done: Some(done) })
    }

    async fn handle(&self, myself: ActorRef<u64>, v: u64, st: &mut SinkState) -> Result<(), ActorProcessingErr> {
        st.seen += 1;
        st.sum += v;
        if st.seen == st.expected {
            if let Some(tx) = st.done.take() {
                let _ = tx.send(st.sum);
            }
            myself.stop(None);
        }
        Ok(())
    }
}

/// Spawns a [`Sink`] expecting `expected` reports.
pub(crate) async fn sink(expected: u64) -> Result<(ActorRef<u64>, oneshot::Receiver<u64>), Error> {
    let (tx, rx) = oneshot::channel();
    let (r, _) =
        Actor::spawn(None, Sink, (expected, tx)).await.map_err(|e| failed("ractor: cannot spawn the sink", e))?;
    Ok((r, rx))
}

/// Spawns an unnamed actor, mapping the spawn error.
pub(crate) async fn spawn<A: Actor>(
    handler: A,
    args: A::Arguments,
) -> Result<(ActorRef<A::Msg>, ::ractor::concurrency::JoinHandle<()>), Error> {
    Actor::spawn(None, handler, args).await.map_err(|e| failed("ractor: spawn failed", e))
}
