//! The activation model (`cell.rs`, rules 1-4): an actor that never had a message has no
//! task; one that worked keeps its task while busy and gives it up after a sweep period idle;
//! a parked actor wakes on the next message with its state intact.

mod common;

use std::time::Duration;

use troupe::{Actor, Ctx, ReplyTo};

struct Counter(u64);

impl Actor for Counter {
    type Msg = ReplyTo<u64>;
    async fn handle(&mut self, r: ReplyTo<u64>, _: &mut Ctx<Self>) {
        self.0 += 1;
        r.send(self.0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_actors_give_up_their_task_and_keep_their_state() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let base = metrics.num_alive_tasks();
    let actors: Vec<_> = (0..50).map(|_| troupe::spawn(Counter(0))).collect();
    assert_eq!(metrics.num_alive_tasks(), base, "a never-messaged actor has no task");
    for a in &actors {
        assert_eq!(a.ask(|r| r, common::T).await.unwrap(), 1);
    }
    // After answering they wait on their mailbox; within a couple of sweeps they park.
    common::wait_until("idle actors to park", Duration::from_secs(15), || metrics.num_alive_tasks() == base).await;
    for a in &actors {
        assert_eq!(a.ask(|r| r, common::T).await.unwrap(), 2, "state survives parking");
    }
}
