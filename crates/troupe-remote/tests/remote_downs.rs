//! Batched `Down`s (`node/downs.rs`): the monitors one node holds on a remote actor all fire
//! with the actor's real reason when it dies, and they cross the wire as one frame, not one
//! frame per monitor.

mod common;

use std::time::Duration;

use common::{cfg, DownWatcher};
use troupe::ExitReason;
use troupe_remote::services::Echo;
use troupe_remote::Node;

const T: Duration = Duration::from_secs(20);
/// Watchers on node a; under `downs.rs`' `MAX_MIDS` (4096), so one frame carries them all.
const WATCHERS: u64 = 2000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_downs_of_one_death_reach_every_remote_watcher_in_one_frame() {
    let a = Node::start(cfg("a")).await.unwrap();
    let b = Node::start(cfg("b")).await.unwrap();
    troupe_remote::services::start(&b, &["echo".into()]).unwrap();
    let echo = a.lookup::<Echo>(&b.addr(), "echo").await.unwrap();
    // The answer comes over b's session to a, so b knows what a's Welcome advertised.
    let _ = echo.ask(|r| Echo(troupe_remote::Blob(vec![]), r), T).await.unwrap();

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..WATCHERS {
        // `started` runs inside `spawn`, so each `Monitor` is queued on a's control connection
        // before the next watcher starts.
        troupe::spawn(DownWatcher { target: echo.any(), out: tx.clone() });
    }
    // A lookup travels the same control connection after every `Monitor`, and b answers it
    // after handling them: once it is answered, b holds them all.
    a.lookup::<Echo>(&b.addr(), "echo").await.unwrap();
    assert_eq!(b.stats().monitors_in, WATCHERS, "every monitor held on b");
    let before = b.stats();

    echo.kill();
    for i in 0..WATCHERS {
        let reason = tokio::time::timeout(T, rx.recv()).await.unwrap_or_else(|_| panic!("{i} of {WATCHERS} Downs"));
        assert_eq!(reason, Some(ExitReason::Killed));
    }
    let after = b.stats();
    assert_eq!(after.downs_out - before.downs_out, WATCHERS, "one Down per monitor");
    assert_eq!(after.down_frames_out - before.down_frames_out, 1, "all in one frame");
    assert_eq!(after.monitors_in, 0, "every monitor released on b");
    a.shutdown();
    b.shutdown();
}
