//! The micro-benchmarks on actix 0.13, written the way actix's docs write actors: structs
//! implementing `Actor` with `Context<Self>`, `#[derive(Message)]` messages with one `Handler`
//! each, `Actor::start()` on the current arbiter, `do_send` to tell and `send(..).await` to
//! ask. Each benchmark runs inside its own `actix::System` (actix-rt's single-threaded
//! arbiter, actix's default: every actor started from it runs on that one thread), created on
//! a fresh OS thread so that systems never share thread-local state.

use std::time::Duration;

use ::actix::prelude::*;
use tokio::sync::oneshot;

use crate::bench::{Bench, Params};
use crate::{Error, ErrorKind};

mod fj;
mod flow;
pub(crate) mod memory;
mod pairs;
mod tree;

/// The runtime's name in result lines.
pub(crate) const NAME: &str = "actix";

/// Runs `f` inside a new actix `System` on a new thread and returns its result.
pub(crate) fn in_system<T, F, Fut>(f: F) -> Result<T, Error>
where
    T: Send + 'static,
    F: FnOnce() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<T, Error>>,
{
    let worker = std::thread::Builder::new().name("actix-bench".into()).spawn(move || {
        let system = System::new();
        let out = system.block_on(f());
        System::current().stop();
        out
    });
    let worker = worker.map_err(|e| Error::new(ErrorKind::Failed, format!("actix: cannot start a thread: {e}")))?;
    worker.join().map_err(|_| Error::new(ErrorKind::Failed, "actix: the benchmark thread panicked"))?
}

/// Runs `count` iterations of `bench` in one actix System and returns their times.
pub(crate) fn iterations(bench: Bench, p: &Params, count: usize) -> Result<Vec<Duration>, Error> {
    let p = p.clone();
    in_system(move || async move {
        let mut times = Vec::with_capacity(count);
        for _ in 0..count {
            let t = match bench {
                Bench::PingPong => flow::pingpong(&p).await?,
                Bench::Count => flow::count(&p).await?,
                Bench::ThreadRing => flow::threadring(&p).await?,
                Bench::FjThrput => fj::fjthrput(&p).await?,
                Bench::FjCreate => fj::fjcreate(&p).await?,
                Bench::Chameneos => pairs::chameneos(&p).await?,
                Bench::Big => pairs::big(&p).await?,
                Bench::Fib => tree::fib(&p).await?,
                Bench::Skynet => tree::skynet(&p).await?,
                Bench::Memory => unreachable!("memory is measured by memory::measure"),
                Bench::Timers => unreachable!("timers runs on troupe only (Bench::runs_on)"),
            };
            times.push(t);
        }
        Ok(times)
    })
}

/// Counts [`Done`] reports from `expected` actors, sums them, and sends the sum on the
/// completion signal when the last one arrives; then stops.
pub(crate) struct Sink {
    expected: u64,
    seen: u64,
    sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Sink {
    pub(crate) fn start_new(expected: u64) -> (Addr<Sink>, oneshot::Receiver<u64>) {
        let (tx, rx) = oneshot::channel();
        (Sink { expected, seen: 0, sum: 0, done: Some(tx) }.start(), rx)
    }
}

impl Actor for Sink {
    type Context = Context<Self>;
}

/// One actor finished, with its count.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Done(pub(crate) u64);

impl Handler<Done> for Sink {
    type Result = ();

    fn handle(&mut self, Done(v): Done, ctx: &mut Context<Self>) {
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

/// Asks an actor to stop.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Stop;
