//! The micro-benchmarks on Troupe itself (crate `troupe`), written the way Troupe's docs write
//! actors: a struct implementing `troupe::Actor` with one message enum, `troupe::spawn` with
//! the default (unbounded) mailbox, `ActorRef::send` to tell and `ask` to ask, on a
//! multi-thread tokio runtime with tokio's defaults (the same runtime ractor and kameo get).
//! The shapes mirror the actix, ractor and kameo versions message for message.

use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx, ExitReason};

mod fj;
mod flow;
pub(crate) mod memory;
mod pairs;
pub(crate) mod timers;
mod tree;

/// The runtime's name in result lines.
pub(crate) const NAME: &str = "troupe";

tokio_iterations!();

/// Counts reports from `expected` actors, sums them, and sends the sum on the completion
/// signal when the last one arrives; then stops. Its message is the reported count.
pub(crate) struct Sink {
    expected: u64,
    seen: u64,
    sum: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Sink {
    /// Spawns a sink expecting `expected` reports.
    pub(crate) fn spawn(expected: u64) -> (ActorRef<u64>, oneshot::Receiver<u64>) {
        let (tx, rx) = oneshot::channel();
        (troupe::spawn(Sink { expected, seen: 0, sum: 0, done: Some(tx) }), rx)
    }
}

impl Actor for Sink {
    type Msg = u64;

    async fn handle(&mut self, v: u64, ctx: &mut Ctx<Self>) {
        self.seen += 1;
        self.sum += v;
        if self.seen == self.expected {
            if let Some(tx) = self.done.take() {
                let _ = tx.send(self.sum);
            }
            ctx.stop(ExitReason::Normal);
        }
    }
}
