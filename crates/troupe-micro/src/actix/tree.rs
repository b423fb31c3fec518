//! actix: `fib` and `skynet`, the benchmarks where actors spawn children and sum their
//! replies, so spawning dominates.

use std::time::{Duration, Instant};

use ::actix::prelude::*;
use tokio::sync::oneshot;

use super::NAME;
use crate::bench::{check, fib_value, skynet_value, Bench, Params};
use crate::util::wait;
use crate::Error;

/// Where a computation's result goes: the parent actor, or the benchmark (for the root).
enum Parent<A: Actor> {
    Actor(Addr<A>),
    Root(Option<oneshot::Sender<u64>>),
}

/// A partial result from a child.
#[derive(Message)]
#[rtype(result = "()")]
struct Partial(u64);

impl<A> Parent<A>
where
    A: Actor<Context = Context<A>> + Handler<Partial>,
{
    fn report(&mut self, sum: u64) {
        match self {
            Parent::Actor(p) => p.do_send(Partial(sum)),
            Parent::Root(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(sum);
                }
            }
        }
    }
}

struct Fib {
    parent: Parent<Fib>,
    pending: u8,
    sum: u64,
}

impl Actor for Fib {
    type Context = Context<Self>;
}

#[derive(Message)]
#[rtype(result = "()")]
struct Compute(u64);

impl Handler<Compute> for Fib {
    type Result = ();
    fn handle(&mut self, Compute(k): Compute, ctx: &mut Context<Self>) {
        for child in [k - 1, k - 2] {
            if child <= 1 {
                self.sum += child;
            } else {
                let parent = Parent::Actor(ctx.address());
                Fib { parent, pending: 0, sum: 0 }.start().do_send(Compute(child));
                self.pending += 1;
            }
        }
        if self.pending == 0 {
            self.parent.report(self.sum);
            ctx.stop();
        }
    }
}

impl Handler<Partial> for Fib {
    type Result = ();
    fn handle(&mut self, Partial(v): Partial, ctx: &mut Context<Self>) {
        self.sum += v;
        self.pending -= 1;
        if self.pending == 0 {
            self.parent.report(self.sum);
            ctx.stop();
        }
    }
}

pub(super) async fn fib(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    Fib { parent: Parent::Root(Some(tx)), pending: 0, sum: 0 }.start().do_send(Compute(n));
    let v = wait(rx, "actix fib").await?;
    let elapsed = t0.elapsed();
    check(Bench::Fib, NAME, "fib", v, fib_value(n))?;
    Ok(elapsed)
}

struct Node {
    parent: Parent<Node>,
    pending: u64,
    sum: u64,
}

impl Actor for Node {
    type Context = Context<Self>;
}

/// Compute the subtree of `size` leaves numbered from `num`, `width` children per node.
#[derive(Message)]
#[rtype(result = "()")]
struct Sky {
    num: u64,
    size: u64,
    width: u64,
}

impl Handler<Sky> for Node {
    type Result = ();
    fn handle(&mut self, s: Sky, ctx: &mut Context<Self>) {
        if s.size == 1 {
            self.parent.report(s.num);
            ctx.stop();
            return;
        }
        let step = s.size / s.width;
        self.pending = s.width;
        for i in 0..s.width {
            let parent = Parent::Actor(ctx.address());
            Node { parent, pending: 0, sum: 0 }.start().do_send(Sky {
                num: s.num + i * step,
                size: step,
                width: s.width,
            });
        }
    }
}

impl Handler<Partial> for Node {
    type Result = ();
    fn handle(&mut self, Partial(v): Partial, ctx: &mut Context<Self>) {
        self.sum += v;
        self.pending -= 1;
        if self.pending == 0 {
            self.parent.report(self.sum);
            ctx.stop();
        }
    }
}

pub(super) async fn skynet(p: &Params) -> Result<Duration, Error> {
    let (depth, width) = (p.get("depth"), p.get("width"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let size = width.pow(depth as u32);
    Node { parent: Parent::Root(Some(tx)), pending: 0, sum: 0 }.start().do_send(Sky { num: 0, size, width });
    let v = wait(rx, "actix skynet").await?;
    let elapsed = t0.elapsed();
    check(Bench::Skynet, NAME, "sum", v, skynet_value(depth, width))?;
    Ok(elapsed)
}
