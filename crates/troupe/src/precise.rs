//! The precise end of actor timers. tokio's timer works in whole milliseconds: a deadline is
//! rounded up to the next millisecond tick and the worker's sleep is rounded up again, so a
//! 200 ms `send_after` fires after ~201.3 ms. Over a benchmark made of 200 ms waits (SCP) that is
//! 0.6% of the throughput. Actor timers therefore sleep on tokio until `COARSE` before their
//! deadline (so tokio's paused clock and cancellation keep working) and hand the last stretch to
//! one thread that sleeps with the OS's fine-grained timeout (`thread::park_timeout`, tens of
//! microseconds of slack on Linux) and runs the timer's action at the deadline.
//!
//! Rules:
//! 1. An action whose deadline has passed runs at once, on the caller.
//! 2. The thread keeps a heap of (deadline, sequence); it runs every due action outside its
//!    lock, in deadline order (sequence breaks ties: first armed, first run).
//! 3. Arming an action that becomes the earliest unparks the thread, which re-computes its sleep.
//! 4. Actions must be short and must not block: they send a message. One that panics is
//!    logged and the thread goes on.
//! 5. A timer's deadline moves from tokio's clock to the real one by reading the time left on
//!    tokio's clock before reading the real clock: a thread descheduled between the two reads
//!    errs late, never early.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long before its deadline a timer leaves tokio's timer for the precise thread.
pub(crate) const COARSE: Duration = Duration::from_millis(2);

type Action = Box<dyn FnOnce() + Send>;

struct Entry {
    at: Instant,
    seq: u64,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

struct Wheel {
    heap: Mutex<(BinaryHeap<Reverse<Entry>>, u64)>,
    thread: Thread,
}

fn wheel() -> &'static Wheel {
    static W: OnceLock<Wheel> = OnceLock::new();
    W.get_or_init(|| {
        let t = std::thread::Builder::new()
            .name("troupe-timer".into())
            .spawn(run)
            .expect("cannot start the troupe-timer thread");
        Wheel { heap: Mutex::new((BinaryHeap::new(), 0)), thread: t.thread().clone() }
    })
}

/// Runs `action` at `at` (rules 1 and 3).
pub(crate) fn fire_at(at: Instant, action: impl FnOnce() + Send + 'static) {
    if at <= Instant::now() {
        action();
        return;
    }
    let w = wheel();
    let earliest = {
        let mut g = w.heap.lock();
        g.1 += 1;
        let seq = g.1;
        let earliest = g.0.peek().is_none_or(|Reverse(e)| at < e.at);
        g.0.push(Reverse(Entry { at, seq, action: Box::new(action) }));
        earliest
    };
    if earliest {
        w.thread.unpark();
    }
}

/// The thread (rule 2).
fn run() {
    let w = wheel();
    let mut due = Vec::new();
    loop {
        let now = Instant::now();
        let next = {
            let mut g = w.heap.lock();
            while g.0.peek().is_some_and(|Reverse(e)| e.at <= now) {
                if let Some(Reverse(e)) = g.0.pop() {
                    due.push(e.action);
                }
            }
            g.0.peek().map(|Reverse(e)| e.at)
        };
        for a in due.drain(..) {
            // A panicking action must not stop every other timer of the process.
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(a)).is_err() {
                tracing::error!("a timer action panicked; the timer thread goes on");
            }
        }
        match next {
            Some(at) => std::thread::park_timeout(at.saturating_duration_since(Instant::now())),
            None => std::thread::park(),
        }
    }
}

/// Waits on tokio's clock until `COARSE` before `deadline` (a tokio instant, so a paused test
/// clock is honoured), then returns the precise instant of the deadline on the real clock
/// (rule 5).
pub(crate) async fn approach(deadline: tokio::time::Instant) -> Instant {
    if let Some(early) = deadline.checked_sub(COARSE).filter(|e| *e > tokio::time::Instant::now()) {
        tokio::time::sleep_until(early).await;
    }
    on_real_clock(deadline, tokio::time::Instant::now, Instant::now)
}

/// `deadline` on the real clock (rule 5): the time left is read on tokio's clock first and the
/// real clock second, so a thread descheduled between the two reads makes the instant late by
/// that long, never early. (Read the other way round, a worker preempted for 30 us between the
/// reads, common with more workers than cores, made its timer fire 30 us early.)
fn on_real_clock(
    deadline: tokio::time::Instant,
    tokio_now: impl FnOnce() -> tokio::time::Instant,
    real_now: impl FnOnce() -> Instant,
) -> Instant {
    let left = deadline.saturating_duration_since(tokio_now());
    real_now() + left
}

#[cfg(test)]
mod tests {
    use super::fire_at;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    #[test]
    fn actions_run_at_their_deadline_in_order() {
        let (tx, rx) = mpsc::channel();
        let t0 = Instant::now();
        for (i, ms) in [(0u32, 30u64), (1, 10), (2, 20), (3, 10)] {
            let tx = tx.clone();
            fire_at(t0 + Duration::from_millis(ms), move || {
                let _ = tx.send((i, Instant::now()));
            });
        }
        let got: Vec<(u32, Instant)> = (0..4).map(|_| rx.recv_timeout(Duration::from_secs(10)).unwrap()).collect();
        let order: Vec<u32> = got.iter().map(|g| g.0).collect();
        assert_eq!(order, vec![1, 3, 2, 0], "deadline order, first armed first among equals");
        for (i, at) in got {
            let want = [30, 10, 20, 10][i as usize];
            assert!(at >= t0 + Duration::from_millis(want), "action {i} ran early");
        }
    }

    #[test]
    fn rule_5_a_thread_descheduled_between_the_clock_reads_errs_late_never_early() {
        // Each read is followed by a 5 ms stall, as if the thread were preempted right after it.
        let stall = || std::thread::sleep(Duration::from_millis(5));
        let deadline = tokio::time::Instant::now() + Duration::from_millis(2);
        let at = super::on_real_clock(
            deadline,
            || {
                let t = tokio::time::Instant::now();
                stall();
                t
            },
            || {
                let t = Instant::now();
                stall();
                t
            },
        );
        assert!(at >= deadline.into_std(), "the real-clock instant is {:?} early", deadline.into_std() - at);
    }

    #[test]
    fn a_passed_deadline_runs_at_once_on_the_caller() {
        let here = std::thread::current().id();
        let (tx, rx) = mpsc::channel();
        fire_at(Instant::now(), move || tx.send(std::thread::current().id()).unwrap());
        assert_eq!(rx.try_recv().unwrap(), here);
    }
}
