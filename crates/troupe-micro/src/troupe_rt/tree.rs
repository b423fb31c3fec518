//! Troupe: `fib` and `skynet`, the benchmarks where actors spawn children and sum their
//! replies, so spawning dominates.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx, ExitReason};

use super::NAME;
use crate::bench::{check, fib_value, skynet_value, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

/// Where a computation's result goes: the parent actor, or the benchmark (for the root).
enum Parent<M> {
    Actor(ActorRef<M>),
    Root(Option<oneshot::Sender<u64>>),
}

impl<M: Send + 'static> Parent<M> {
    fn report(&mut self, sum: u64, partial: fn(u64) -> M) {
        match self {
            Parent::Actor(p) => {
                let _ = p.send(partial(sum));
            }
            Parent::Root(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(sum);
                }
            }
        }
    }
}

struct Fib {
    parent: Parent<FibMsg>,
    pending: u8,
    sum: u64,
}

enum FibMsg {
    Compute(u64),
    Partial(u64),
}

impl Actor for Fib {
    type Msg = FibMsg;

    async fn handle(&mut self, msg: FibMsg, ctx: &mut Ctx<Self>) {
        match msg {
            FibMsg::Compute(k) => {
                for child in [k - 1, k - 2] {
                    if child <= 1 {
                        self.sum += child;
                    } else {
                        let parent = Parent::Actor(ctx.myself());
                        let c = troupe::spawn(Fib { parent, pending: 0, sum: 0 });
                        self.pending += 1;
                        let _ = c.send(FibMsg::Compute(child));
                    }
                }
            }
            FibMsg::Partial(v) => {
                self.sum += v;
                self.pending -= 1;
            }
        }
        if self.pending == 0 {
            self.parent.report(self.sum, FibMsg::Partial);
            ctx.stop(ExitReason::Normal);
        }
    }
}

pub(super) async fn fib(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let root = troupe::spawn(Fib { parent: Parent::Root(Some(tx)), pending: 0, sum: 0 });
    root.send(FibMsg::Compute(n)).map_err(|e| failed("troupe fib", e))?;
    drop(root);
    let v = wait(rx, "troupe fib").await?;
    let elapsed = t0.elapsed();
    check(Bench::Fib, NAME, "fib", v, fib_value(n))?;
    Ok(elapsed)
}

struct Node {
    parent: Parent<SkyMsg>,
    pending: u64,
    sum: u64,
}

enum SkyMsg {
    /// Compute the subtree of `size` leaves numbered from `num`, `width` children per node.
    Sky {
        num: u64,
        size: u64,
        width: u64,
    },
    Partial(u64),
}

impl Actor for Node {
    type Msg = SkyMsg;

    async fn handle(&mut self, msg: SkyMsg, ctx: &mut Ctx<Self>) {
        match msg {
            SkyMsg::Sky { num, size: 1, .. } => self.sum = num,
            SkyMsg::Sky { num, size, width } => {
                let step = size / width;
                self.pending = width;
                for i in 0..width {
                    let parent = Parent::Actor(ctx.myself());
                    let c = troupe::spawn(Node { parent, pending: 0, sum: 0 });
                    let _ = c.send(SkyMsg::Sky { num: num + i * step, size: step, width });
                }
                return;
            }
            SkyMsg::Partial(v) => {
                self.sum += v;
                self.pending -= 1;
            }
        }
        if self.pending == 0 {
            self.parent.report(self.sum, SkyMsg::Partial);
            ctx.stop(ExitReason::Normal);
        }
    }
}

pub(super) async fn skynet(p: &Params) -> Result<Duration, Error> {
    let (depth, width) = (p.get("depth"), p.get("width"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let root = troupe::spawn(Node { parent: Parent::Root(Some(tx)), pending: 0, sum: 0 });
    let size = width.pow(depth as u32);
    root.send(SkyMsg::Sky { num: 0, size, width }).map_err(|e| failed("troupe skynet", e))?;
    drop(root);
    let v = wait(rx, "troupe skynet").await?;
    let elapsed = t0.elapsed();
    check(Bench::Skynet, NAME, "sum", v, skynet_value(depth, width))?;
    Ok(elapsed)
}
