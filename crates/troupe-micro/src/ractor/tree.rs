//! ractor: `fib` and `skynet`, the benchmarks where actors spawn children and sum their
//! replies, so spawning dominates.

use std::time::{Duration, Instant};

use ::ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use super::{spawn, NAME};
use crate::bench::{check, fib_value, skynet_value, Bench, Params};
use crate::util::{failed, wait};
use crate::Error;

/// Where a computation's result goes: the parent actor, or the benchmark (for the root).
enum Parent<M> {
    Actor(ActorRef<M>),
    Root(Option<oneshot::Sender<u64>>),
}

struct TreeState<M> {
    parent: Parent<M>,
    pending: u64,
    sum: u64,
}

impl<M: Send + 'static> TreeState<M> {
    fn report(&mut self, partial: fn(u64) -> M) -> Result<(), ActorProcessingErr> {
        match &mut self.parent {
            Parent::Actor(p) => p.cast(partial(self.sum))?,
            Parent::Root(tx) => {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(self.sum);
                }
            }
        }
        Ok(())
    }
}

struct Fib;

enum FibMsg {
    Compute(u64),
    Partial(u64),
}

impl Actor for Fib {
    type Msg = FibMsg;
    type State = TreeState<FibMsg>;
    type Arguments = Parent<FibMsg>;

    async fn pre_start(&self, _: ActorRef<FibMsg>, parent: Parent<FibMsg>) -> Result<Self::State, ActorProcessingErr> {
        Ok(TreeState { parent, pending: 0, sum: 0 })
    }

    async fn handle(
        &self,
        myself: ActorRef<FibMsg>,
        msg: FibMsg,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            FibMsg::Compute(k) => {
                for child in [k - 1, k - 2] {
                    if child <= 1 {
                        st.sum += child;
                    } else {
                        let (c, _) = Actor::spawn(None, Fib, Parent::Actor(myself.clone())).await?;
                        st.pending += 1;
                        c.cast(FibMsg::Compute(child))?;
                    }
                }
            }
            FibMsg::Partial(v) => {
                st.sum += v;
                st.pending -= 1;
            }
        }
        if st.pending == 0 {
            st.report(FibMsg::Partial)?;
            myself.stop(None);
        }
        Ok(())
    }
}

pub(super) async fn fib(p: &Params) -> Result<Duration, Error> {
    let n = p.get("n");
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let (root, _) = spawn(Fib, Parent::Root(Some(tx))).await?;
    root.cast(FibMsg::Compute(n)).map_err(|e| failed("ractor fib", e))?;
    let v = wait(rx, "ractor fib").await?;
    let elapsed = t0.elapsed();
    check(Bench::Fib, NAME, "fib", v, fib_value(n))?;
    Ok(elapsed)
}

struct Node;

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
    type State = TreeState<SkyMsg>;
    type Arguments = Parent<SkyMsg>;

    async fn pre_start(&self, _: ActorRef<SkyMsg>, parent: Parent<SkyMsg>) -> Result<Self::State, ActorProcessingErr> {
        Ok(TreeState { parent, pending: 0, sum: 0 })
    }

    async fn handle(
        &self,
        myself: ActorRef<SkyMsg>,
        msg: SkyMsg,
        st: &mut Self::State,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SkyMsg::Sky { num, size: 1, .. } => st.sum = num,
            SkyMsg::Sky { num, size, width } => {
                let step = size / width;
                st.pending = width;
                for i in 0..width {
                    let (c, _) = Actor::spawn(None, Node, Parent::Actor(myself.clone())).await?;
                    c.cast(SkyMsg::Sky { num: num + i * step, size: step, width })?;
                }
                return Ok(());
            }
            SkyMsg::Partial(v) => {
                st.sum += v;
                st.pending -= 1;
            }
        }
        if st.pending == 0 {
            st.report(SkyMsg::Partial)?;
            myself.stop(None);
        }
        Ok(())
    }
}

pub(super) async fn skynet(p: &Params) -> Result<Duration, Error> {
    let (depth, width) = (p.get("depth"), p.get("width"));
    let t0 = Instant::now();
    let (tx, rx) = oneshot::channel();
    let (root, _) = spawn(Node, Parent::Root(Some(tx))).await?;
    let size = width.pow(depth as u32);
    root.cast(SkyMsg::Sky { num: 0, size, width }).map_err(|e| failed("ractor skynet", e))?;
    let v = wait(rx, "ractor skynet").await?;
    let elapsed = t0.elapsed();
    check(Bench::Skynet, NAME, "sum", v, skynet_value(depth, width))?;
    Ok(elapsed)
}
