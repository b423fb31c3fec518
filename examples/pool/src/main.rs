//! Two worker pools: a session store sharded by user id (consistent hashing: a user's visits
//! always reach the same shard), and image resizers fed least-loaded. A shard crashes on request
//! and the pool restarts it; its users start counting again on the new incarnation.
//!
//! Run with `cargo run -p example-pool`.

use std::time::Duration;

use example_pool::{resizers, sessions, Resize, SessionMsg};

const T: Duration = Duration::from_secs(5);

#[tokio::main]
async fn main() {
    let store = troupe::pool::start(sessions(4)).await.expect("the session store starts");
    for round in 1..=3 {
        for user in [7, 42, 1001] {
            let n = store.ask(|reply| SessionMsg::Hit { user, reply }, T).await.expect("a shard answers");
            assert_eq!(n, round);
        }
    }
    println!("3 visits counted for users 7, 42 and 1001, each on its own shard");

    store.send(SessionMsg::Crash { user: 42 }).expect("the shard takes the message");
    // A visit queued behind the crash dies with that incarnation (`Gone`); asked again, it waits
    // for the shard's next incarnation, where the user's count starts again.
    let n = loop {
        match store.ask(|reply| SessionMsg::Hit { user: 42, reply }, T).await {
            Ok(n) => break n,
            Err(troupe::AskError::Gone) => continue,
            Err(e) => panic!("the session store failed: {e}"),
        }
    };
    println!("user 42's shard crashed and was restarted: visits start again at {n}");
    let n = store.ask(|reply| SessionMsg::Hit { user: 7, reply }, T).await.expect("another shard answers");
    println!("user 7 (on another shard, or the same one) is at {n}");

    let pool = troupe::pool::start(resizers(3)).await.expect("the resizers start");
    let mut jobs = Vec::new();
    for i in 0..12u64 {
        let pool = pool.clone();
        jobs.push(tokio::spawn(async move {
            let (width, height) = (200 + 100 * (i % 4), 150);
            pool.ask(|reply| Resize { width, height, reply }, T).await.expect("a resizer answers")
        }));
    }
    let mut per_worker = [0; 3];
    for j in jobs {
        let (_, worker) = j.await.expect("the job task ends");
        per_worker[worker] += 1;
    }
    println!("12 resize jobs, least-loaded, per worker: {per_worker:?}");

    store.stop().await;
    pool.stop().await;
}
