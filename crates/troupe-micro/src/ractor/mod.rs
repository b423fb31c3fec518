//! The micro-benchmarks on ractor 0.16, written the way ractor's docs write actors: a
//! stateless handler type implementing `ractor::Actor` with its `State` built in `pre_start`,
//! one message enum per actor, `Actor::spawn(None, ..).await`, `cast` to tell and `call!` to
//! ask, on a multi-thread tokio runtime with tokio's defaults. ractor's mailboxes are unbounded
//! by default, which is what these use.

use ::ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use crate::util::failed;
use crate::Error;

mod fj;
mod flow;
pub(crate) mod memory;
mod pairs;
mod tree;

/// The runtime's name in result lines.
pub(crate) const NAME: &str = "ractor";

tokio_iterations!();

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
