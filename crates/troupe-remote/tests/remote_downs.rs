//! Batched `Down`s (`node/downs.rs`): the monitors one node holds on a remote actor all fire
//! with the actor's real reason when it dies, and they cross the wire as one frame per chunk
//! the dying actor signals (`cell.rs` rule 13), not one frame per monitor.

mod common;

use std::time::Duration;

use common::{cfg, DownWatcher};
use troupe::ExitReason;
use troupe_remote::services::Echo;
use troupe_remote::Node;

const T: Duration = Duration::from_secs(20);

/// `watchers` actors on node a each monitor an actor on node b, which is then killed. Every
/// watcher gets `Killed`; returns the `Down`s and the `Down` frames b sent for that death.
async fn one_death(watchers: u64) -> (u64, u64) {
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    troupe_remote::services::start(&b, &["echo".into()]).unwrap();
    let echo = a.lookup::<Echo>(&b.addr(), "echo").await.unwrap();
    // The answer comes over b's session to a, so b knows what a's Welcome advertised.
    let _ = echo.ask(|r| Echo(troupe_remote::Blob(vec![]), r), T).await.unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..watchers {
        // `started` runs inside `spawn`, so each `Monitor` is queued on a's control connection
        // before the next watcher starts.
        troupe::spawn(DownWatcher { target: echo.any(), out: tx.clone() });
    }
    // A lookup travels the same control connection after every `Monitor`, and b answers it
    // after handling them: once it is answered, b holds them all.
    a.lookup::<Echo>(&b.addr(), "echo").await.unwrap();
    assert_eq!(b.stats().monitors_in, watchers, "every monitor held on b");
    let before = b.stats();

    echo.kill();
    for i in 0..watchers {
        let reason = tokio::time::timeout(T, rx.recv()).await.unwrap_or_else(|_| panic!("{i} of {watchers} Downs"));
        assert_eq!(reason, Some(ExitReason::Killed));
    }
    let after = b.stats();
    assert_eq!(after.monitors_in, 0, "every monitor released on b");
    a.shutdown();
    b.shutdown();
    (after.downs_out - before.downs_out, after.down_frames_out - before.down_frames_out)
}

/// Up to `cell.rs`' `DOWN_CHUNK` (1,024) monitors are signalled in one go, so their `Down`s
/// to one peer leave in one frame (under `downs.rs`' `MAX_MIDS`, 4,096).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_downs_of_one_death_reach_every_remote_watcher_in_one_frame() {
    let (downs, frames) = one_death(1000).await;
    assert_eq!(downs, 1000, "one Down per monitor");
    assert_eq!(frames, 1, "all in one frame");
}

/// More monitors than `DOWN_CHUNK` are signalled 1,024 at a time (`cell.rs` rule 13), and each
/// chunk's `Down`s to a peer leave as one frame: 3,000 monitors, 3 frames.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_death_with_more_monitors_than_a_chunk_sends_one_frame_per_chunk() {
    let (downs, frames) = one_death(3000).await;
    assert_eq!(downs, 3000, "one Down per monitor");
    assert_eq!(frames, 3, "one frame per chunk of 1,024");
}
