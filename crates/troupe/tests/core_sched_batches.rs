//! Scheduling, rule 9 (`sched.rs`): activations woken outside any carrier (a plain task, a
//! thread, a runtime's `block_on`) share carriers in batches of up to [`BATCH`] instead of
//! getting one tokio task each; a batch runs its actors in the order they were woken, and what
//! is left of it when one of them waits on something else goes on in a carrier of its own (one
//! that waits on its mailbox parks in its cell instead).
//!
//! Each test builds its own runtime, so what it checks does not depend on the test harness.

use std::sync::Arc;
use std::time::Duration;

use tokio::runtime::Builder;
use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx};

const T: Duration = Duration::from_secs(20);

/// `sched::BATCH`: the most activations one batch holds.
const BATCH: usize = 16;

/// What an actor saw when it handled its message: its index and the tokio task it ran in.
type Seen = Arc<parking_lot::Mutex<Vec<(usize, Option<tokio::task::Id>)>>>;

/// Records its index and its task, says so when it is the last one expected, and stops: a
/// short-lived actor, as a batch is made for (one that waits on its mailbox afterwards sends
/// the rest of its batch on, see the last tests).
struct Recorder {
    index: usize,
    seen: Seen,
    last: Option<oneshot::Sender<()>>,
}

impl Actor for Recorder {
    type Msg = ();

    async fn handle(&mut self, _: (), ctx: &mut Ctx<Self>) {
        self.seen.lock().push((self.index, tokio::task::try_id()));
        if let Some(last) = self.last.take() {
            let _ = last.send(());
        }
        ctx.stop(troupe::ExitReason::Normal);
    }
}

/// Wakes `n` idle recorders from the caller (outside any actor), then calls `after_sends`, and
/// returns what they saw.
async fn wake_from_outside(n: usize, after_sends: impl FnOnce()) -> Vec<(usize, Option<tokio::task::Id>)> {
    let seen = Seen::default();
    let (tx, rx) = oneshot::channel();
    let mut last = Some(tx);
    let actors: Vec<ActorRef<()>> = (0..n)
        .map(|index| {
            let last = if index + 1 == n { last.take() } else { None };
            troupe::spawn(Recorder { index, seen: seen.clone(), last })
        })
        .collect();
    for a in &actors {
        a.send(()).unwrap();
    }
    after_sends();
    tokio::time::timeout(T, rx).await.expect("the last actor ran").unwrap();
    // Each actor stops right after recording, so once every one has ended every one ran (the
    // last one may run before the others when batches run on two workers).
    for a in &actors {
        tokio::time::timeout(T, a.terminated()).await.expect("every actor ran and stopped");
    }
    let v = seen.lock().clone();
    v
}

/// Without rule 9 each of these actors got a tokio task of its own (a carrier each).
#[test]
fn rule_9_actors_woken_from_outside_any_actor_share_a_carrier_in_wake_order() {
    let rt = Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // From a task on the runtime's worker (as a benchmark driver or a transport reader runs).
    let seen = rt.block_on(async { tokio::spawn(wake_from_outside(BATCH, || ())).await.unwrap() });
    let order: Vec<usize> = seen.iter().map(|s| s.0).collect();
    assert_eq!(order, (0..BATCH).collect::<Vec<_>>(), "a batch runs its actors in wake order");
    let first = seen[0].1;
    assert!(first.is_some(), "an actor runs inside a tokio task");
    assert!(seen.iter().all(|s| s.1 == first), "one carrier ran the whole batch: {seen:?}");
}

/// A batch holds at most `BATCH`; the next wake starts another one. From the runtime's
/// `block_on` thread, which is no worker: the batch goes to the runtime like any task spawn.
/// The one worker is held busy until every send is made, so no batch starts running early
/// (a batch takes no more once its carrier runs).
#[test]
fn rule_9_a_batch_holds_at_most_sixteen_and_works_from_any_thread() {
    let rt = Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let (hold, held) = std::sync::mpsc::channel::<()>();
    let (busy_tx, busy_rx) = std::sync::mpsc::channel::<()>();
    rt.spawn(async move {
        busy_tx.send(()).unwrap();
        // Blocks the only worker on purpose, for as long as the sends below take.
        let _ = held.recv_timeout(T);
    });
    busy_rx.recv_timeout(T).expect("the worker is held");
    let seen = rt.block_on(wake_from_outside(BATCH + 1, move || drop(hold)));
    let task_of = |i: usize| seen.iter().find(|s| s.0 == i).expect("every actor ran").1;
    for i in 1..BATCH {
        assert_eq!(task_of(i), task_of(0), "actor {i} ran in the first batch: {seen:?}");
    }
    assert_ne!(task_of(BATCH), task_of(0), "the seventeenth starts a second batch: {seen:?}");
}

/// Says it handled a message and stays alive, waiting on its mailbox.
struct Stayer(tokio::sync::mpsc::UnboundedSender<()>);

impl Actor for Stayer {
    type Msg = ();

    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {
        let _ = self.0.send(());
    }
}

/// A batch's actors that find their mailbox empty while some of the batch is left hand off
/// (their activations park in their cells) instead of each moving to a carrier of its own to
/// wait there: once a burst of 16 has been handled, only the batch's carrier is left (its last
/// actor waits in it), besides the task that sent the burst. Without it each of the first 15
/// kept a tokio task of its own (17 tasks alive, about 130 bytes more per actor).
#[test]
fn rule_9_actors_of_a_batch_that_wait_on_their_mailbox_keep_no_task_each() {
    let rt = Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(async {
        tokio::spawn(async {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
            let actors: Vec<ActorRef<()>> = (0..BATCH).map(|_| troupe::spawn(Stayer(tx.clone()))).collect();
            let metrics = tokio::runtime::Handle::current().metrics();
            assert_eq!(metrics.num_alive_tasks(), 1, "never-messaged actors have no task");
            for a in &actors {
                a.send(()).unwrap();
            }
            for _ in 0..BATCH {
                tokio::time::timeout(T, rx.recv()).await.expect("every actor handled its message");
            }
            // On one worker this task runs again only once the batch's carrier has returned.
            let alive = metrics.num_alive_tasks();
            assert_eq!(alive, 2, "this task and the batch's carrier, no task per actor ({alive} alive)");
            // Parked, they still take what comes: a second burst reaches every one.
            for a in &actors {
                a.send(()).unwrap();
            }
            for _ in 0..BATCH {
                tokio::time::timeout(T, rx.recv()).await.expect("every actor handled its second message");
            }
            for a in &actors {
                a.stop();
                tokio::time::timeout(T, a.terminated()).await.expect("stopped");
            }
        })
        .await
        .unwrap();
    });
}

/// Waits, inside its handler, for a signal that a later actor of the same batch gives.
struct Waiter {
    signal: Option<oneshot::Receiver<()>>,
    done: Option<oneshot::Sender<()>>,
}

impl Actor for Waiter {
    type Msg = ();

    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {
        if let Some(signal) = self.signal.take() {
            let _ = signal.await;
        }
        if let Some(done) = self.done.take() {
            let _ = done.send(());
        }
    }
}

struct Signaller(Option<oneshot::Sender<()>>);

impl Actor for Signaller {
    type Msg = ();

    async fn handle(&mut self, _: (), _: &mut Ctx<Self>) {
        if let Some(s) = self.0.take() {
            let _ = s.send(());
        }
    }
}

/// The first actor of a batch awaits what the third does: the rest of the batch must not wait
/// behind it (on one worker it would wait for ever).
#[test]
fn rule_9_the_rest_of_a_batch_goes_on_when_one_of_it_waits() {
    let rt = Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(async {
        tokio::spawn(async {
            let (signal_tx, signal_rx) = oneshot::channel();
            let (done_tx, done_rx) = oneshot::channel();
            let waiter = troupe::spawn(Waiter { signal: Some(signal_rx), done: Some(done_tx) });
            let idle = troupe::spawn(Signaller(None));
            let signaller = troupe::spawn(Signaller(Some(signal_tx)));
            for a in [&waiter, &idle, &signaller] {
                a.send(()).unwrap();
            }
            tokio::time::timeout(T, done_rx).await.expect("the waiter was signalled").unwrap();
            for a in [&waiter, &idle, &signaller] {
                a.stop();
                a.terminated().await;
            }
        })
        .await
        .unwrap();
    });
}

/// Records its task for each of `messages` messages, then stops.
struct Long {
    left: usize,
    seen: Seen,
}

impl Actor for Long {
    type Msg = ();

    async fn handle(&mut self, _: (), ctx: &mut Ctx<Self>) {
        self.seen.lock().push((usize::MAX, tokio::task::try_id()));
        self.left -= 1;
        if self.left == 0 {
            ctx.stop(troupe::ExitReason::Normal);
        }
    }
}

/// An actor of a batch that spends a whole budget (256 messages) sends the rest of its batch
/// on, to a carrier of its own, where another worker could take it: without that, the rest ran
/// in the long actor's carrier after it (its poll never ended: it stopped, never waited).
#[test]
fn rule_9_a_long_running_actor_sends_the_rest_of_its_batch_on() {
    let rt = Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    rt.block_on(async {
        tokio::spawn(async {
            let seen = Seen::default();
            let messages = 300;
            let long = troupe::spawn(Long { left: messages, seen: seen.clone() });
            let (tx, rx) = oneshot::channel();
            let b = troupe::spawn(Recorder { index: 1, seen: seen.clone(), last: None });
            let c = troupe::spawn(Recorder { index: 2, seen: seen.clone(), last: Some(tx) });
            for _ in 0..messages {
                long.send(()).unwrap();
            }
            b.send(()).unwrap();
            c.send(()).unwrap();
            tokio::time::timeout(T, rx).await.expect("the last actor ran").unwrap();
            for a in [&b, &c] {
                a.terminated().await;
            }
            long.terminated().await;
            let seen = seen.lock().clone();
            let task_of = |i: usize| seen.iter().find(|s| s.0 == i).expect("ran").1;
            assert!(task_of(1).is_some());
            assert_ne!(task_of(1), task_of(usize::MAX), "the rest went on in a carrier of its own");
            assert_eq!(task_of(1), task_of(2), "the rest stays one batch");
        })
        .await
        .unwrap();
    });
}
