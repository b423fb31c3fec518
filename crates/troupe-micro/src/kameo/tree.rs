//! kameo: `fib` and `skynet`, the benchmarks where actors spawn children and sum their
//! replies, so spawning dominates.

use std::time::{Duration, Instant};

use ::kameo::actor::{ActorRef, Spawn};
use ::kameo::message::{Context, Message};
use ::kameo::Actor;
use tokio::sync::oneshot;

use super::NAME;
use crate::bench::{check, fib_value, skynet_value, Bench, Params};
use crate::util::wait;
use crate::Error;

/// Where a computation's result goes: the parent actor, or the benchmark (for the root).
enum Parent<A: Actor> {
    Actor(ActorRef<A>),
    Root(Option<oneshot::Sender<u64>>),
}

/// A partial result from a child.
struct Partial(u64);

#[derive(Actor)]
struct Fib {
    parent: Parent<Fib>,
    pending: u8,
    sum: u64,
}

struct Compute(u64);

impl Fib {
    async fn report(&mut self, ctx: &mut Context<Self, ()>) {
        match &mut self.parent {
            Parent::Actor(p) => {
                let _ = p.tell(Partial(self.sum)).await;
            }
            Parent::Root(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(self.sum);
                }
            }
        }
        ctx.stop();
    }
}

impl Message<Compute> for Fib {
    type Reply = ();
    async fn handle(&mut self, Compute(k): Compute, ctx: &mut Context<Self, ()>) {
        for child in [k - 1, k - 2] {
            if child <= 1 {
                self.sum += child;
            } else {
                let c = Fib::spawn(Fib { parent: Parent::Actor(ctx.actor_ref().clone()), pending: 0, sum: 0 });
                self.pending += 1;
                let _ = c.tell(Compute(child)).await;
            }
        }
        if self.pending == 0 {
            self.report(ctx).await;
        }
    }
}

impl Message<Partial> for Fib {
    type Reply = ();
    async fn handle(&mut self, Partial(v): Partial, ctx: &mut Context<Self, ()>) {
        self.sum += v;
        self.pending -= 1;
        if self.pending == 0 {
            self.report(ctx).await;
        }
    }
}

pub(super) async fn fib(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let root = Fib::spawn(Fib { parent: Parent::Root(Some(tx)), pending: 0, sum: 0 });
    let _ = root.tell(Compute(n)).await;
    drop(root);
    let v = wait(rx, "kameo fib").await?;
    let elapsed = t0.elapsed();
    check(Bench::Fib, NAME, "fib", v, fib_value(n))?;
    Ok(elapsed)
}

#[derive(Actor)]
struct Node {
    parent: Parent<Node>,
    pending: u64,
    sum: u64,
}

/// Compute the subtree of `size` leaves numbered from `num`, `width` children per node.
struct Sky {
    num: u64,
    size: u64,
    width: u64,
}

impl Node {
    async fn report(&mut self, ctx: &mut Context<Self, ()>) {
        match &mut self.parent {
            Parent::Actor(p) => {
                let _ = p.tell(Partial(self.sum)).await;
            }
            Parent::Root(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(self.sum);
                }
            }
        }
        ctx.stop();
    }
}

impl Message<Sky> for Node {
    type Reply = ();
    async fn handle(&mut self, s: Sky, ctx: &mut Context<Self, ()>) {
        if s.size == 1 {
            self.sum = s.num;
            self.report(ctx).await;
            return;
        }
        let step = s.size / s.width;
        self.pending = s.width;
        for i in 0..s.width {
            let c = Node::spawn(Node { parent: Parent::Actor(ctx.actor_ref().clone()), pending: 0, sum: 0 });
            let _ = c.tell(Sky { num: s.num + i * step, size: step, width: s.width }).await;
        }
    }
}

impl Message<Partial> for Node {
    type Reply = ();
    async fn handle(&mut self, Partial(v): Partial, ctx: &mut Context<Self, ()>) {
        self.sum += v;
        self.pending -= 1;
        if self.pending == 0 {
            self.report(ctx).await;
        }
    }
}

pub(super) async fn skynet(p: &Params) -> Result<Duration, Error> {
    let (depth, width) = (p.get("depth"), p.get("width"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let root = Node::spawn(Node { parent: Parent::Root(Some(tx)), pending: 0, sum: 0 });
    let _ = root.tell(Sky { num: 0, size: width.pow(depth as u32), width }).await;
    drop(root);
    let v = wait(rx, "kameo skynet").await?;
    let elapsed = t0.elapsed();
    check(Bench::Skynet, NAME, "sum", v, skynet_value(depth, width))?;
    Ok(elapsed)
}
