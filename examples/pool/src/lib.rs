//! The actors of the pool example: a session store sharded over a pool by user id (consistent
//! hashing keeps each user's counter in one worker), and resizers that take image jobs
//! least-loaded. `main.rs` runs them; `tests/` checks them with `troupe::testkit`.

use std::collections::HashMap;
use std::time::Duration;

use troupe::pool::{PoolSpec, Routing};
use troupe::{Actor, Ctx, ReplyTo};

/// A message to the session store.
pub enum SessionMsg {
    /// Counts a visit of `user` and answers with that user's visits so far.
    Hit {
        /// Who visited.
        user: u64,
        /// The count, this visit included.
        reply: ReplyTo<u64>,
    },
    /// Makes the worker holding `user` crash (to watch the pool recover).
    Crash {
        /// Any user of the worker to crash.
        user: u64,
    },
}

impl SessionMsg {
    /// The key the pool routes by.
    #[must_use]
    pub fn user(&self) -> u64 {
        match self {
            SessionMsg::Hit { user, .. } | SessionMsg::Crash { user } => *user,
        }
    }
}

/// One shard of the session store: visit counts of the users hashed to it.
#[derive(Default)]
pub struct Sessions {
    visits: HashMap<u64, u64>,
}

impl Actor for Sessions {
    type Msg = SessionMsg;
    async fn handle(&mut self, msg: SessionMsg, _: &mut Ctx<Self>) {
        match msg {
            SessionMsg::Hit { user, reply } => {
                let n = self.visits.entry(user).or_default();
                *n += 1;
                reply.send(*n);
            }
            SessionMsg::Crash { user } => panic!("session shard of user {user} asked to crash"),
        }
    }
}

/// The session store: `shards` workers, each user always on the same one.
pub fn sessions(shards: usize) -> PoolSpec<Sessions> {
    PoolSpec::new(shards, |_| Sessions::default()).routing(Routing::consistent_hash(SessionMsg::user))
}

/// An image job: "resize" to `width` x `height`, answering with the pixel count and the worker.
pub struct Resize {
    /// Target width.
    pub width: u64,
    /// Target height.
    pub height: u64,
    /// The pixel count and the index of the worker that did it.
    pub reply: ReplyTo<(u64, usize)>,
}

/// A resizer; the work takes time proportional to the image.
pub struct Resizer(pub usize);

impl Actor for Resizer {
    type Msg = Resize;
    async fn handle(&mut self, job: Resize, _: &mut Ctx<Self>) {
        let pixels = job.width * job.height;
        tokio::time::sleep(Duration::from_micros(pixels / 1000)).await;
        job.reply.send((pixels, self.0));
    }
}

/// `n` resizers; each job goes to the one with the shortest queue.
pub fn resizers(n: usize) -> PoolSpec<Resizer> {
    PoolSpec::new(n, Resizer).routing(Routing::LeastLoaded)
}
