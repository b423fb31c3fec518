//! The micro-benchmarks on kameo 0.22, written the way kameo's docs write actors:
//! `#[derive(Actor)]`, one `impl Message<M>` per message, `Spawn::spawn` with the default
//! bounded mailbox (capacity 64) and `tell(..).await`, on a multi-thread tokio runtime with
//! tokio's defaults. The one departure is `big`, whose actors message each other in cycles:
//! with bounded mailboxes two actors awaiting room in each other's full mailbox deadlock, so it
//! uses `mailbox::unbounded()`, which kameo documents for exactly such high-rate traffic.

use ::kameo::message::{Context, Message};
use ::kameo::Actor;
use tokio::sync::oneshot;

mod fj;
mod flow;
pub(crate) mod memory;
mod pairs;
mod tree;

/// The runtime's name in result lines.
pub(crate) const NAME: &str = "kameo";

tokio_iterations!();

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
