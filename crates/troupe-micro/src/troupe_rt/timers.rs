//! Troupe: the `timers` benchmark's actors (the rules are in `crate::timers`). Each `Sleeper`
//! arms one timer when it gets `Arm` and writes its lateness into its own slot of a shared
//! board when the timer's message arrives; the board counts arms and firings and signals the
//! last of each, so nothing but the timers themselves is a shared point.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use troupe::{Actor, ActorRef, Ctx};

use crate::timers::{due_after, Outcome, Variant, GRACE};
use crate::{Error, ErrorKind};

/// A slot no firing has written yet.
const NOT_FIRED: i64 = i64::MIN;

/// What every actor of one measurement shares.
struct Board {
    n: u64,
    armed: AtomicU64,
    all_armed: Mutex<Option<oneshot::Sender<Instant>>>,
    late_ns: Vec<AtomicI64>,
    fired: AtomicU64,
    /// Firings of a timer that had already fired, or of one never armed (rule 5).
    extra: AtomicU64,
    all_fired: Mutex<Option<oneshot::Sender<()>>>,
}

impl Board {
    fn signal<T>(slot: &Mutex<Option<oneshot::Sender<T>>>, v: T) {
        if let Some(tx) = slot.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take() {
            let _ = tx.send(v);
        }
    }
}

enum Msg {
    /// Arm the timer; the instant the first `Arm` was sent (rule 2).
    Arm(Instant),
    Fired,
}

struct Sleeper {
    idx: usize,
    /// When the timer is due, after the first `Arm` was sent.
    due: Duration,
    variant: Variant,
    deadline: Option<Instant>,
    board: Arc<Board>,
}

impl Actor for Sleeper {
    type Msg = Msg;

    async fn handle(&mut self, m: Msg, ctx: &mut Ctx<Self>) {
        let b = &self.board;
        match m {
            Msg::Arm(t0) => {
                // Read before arming, so an on-time timer is never seen early (rule 4); one
                // armed after its deadline is armed with no delay (rule 2).
                let now = Instant::now();
                let deadline = (t0 + self.due).max(now);
                let delay = deadline - now;
                self.deadline = Some(deadline);
                match self.variant {
                    Variant::SendAfter => {
                        let _timer = ctx.send_after(delay, Msg::Fired);
                    }
                    Variant::Sleep => {
                        let me = ctx.myself();
                        let at = tokio::time::Instant::from_std(deadline);
                        tokio::spawn(async move {
                            tokio::time::sleep_until(at).await;
                            let _ = me.send(Msg::Fired);
                        });
                    }
                }
                if b.armed.fetch_add(1, Ordering::AcqRel) + 1 == b.n {
                    Board::signal(&b.all_armed, Instant::now());
                }
            }
            Msg::Fired => {
                let now = Instant::now();
                let Some(deadline) = self.deadline else {
                    b.extra.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let late = if now >= deadline {
                    i64::try_from((now - deadline).as_nanos()).unwrap_or(i64::MAX)
                } else {
                    -i64::try_from((deadline - now).as_nanos()).unwrap_or(i64::MAX)
                };
                if b.late_ns[self.idx].compare_exchange(NOT_FIRED, late, Ordering::AcqRel, Ordering::Acquire).is_err() {
                    b.extra.fetch_add(1, Ordering::Relaxed);
                } else if b.fired.fetch_add(1, Ordering::AcqRel) + 1 == b.n {
                    Board::signal(&b.all_fired, ());
                }
            }
        }
    }
}

fn failed(variant: Variant, msg: String) -> Error {
    let what = match variant {
        Variant::SendAfter => "send_after",
        Variant::Sleep => "sleep reference",
    };
    Error::new(ErrorKind::Failed, format!("troupe timers ({what}): {msg}"))
}

/// Measures one variant with `n` timers on a fresh multi-thread runtime (the worker count
/// `--threads` chose): spawns the actors, arms them from one task per worker (rule 1), waits
/// for every firing (bounded, rule 5), stops the actors. Errors name the variant.
pub(crate) fn measure(n: u64, variant: Variant) -> Result<Outcome, Error> {
    let rt = crate::util::tokio_runtime()?;
    let workers = crate::threads(super::NAME).map_or(1, |t| t.0.max(1)) as usize;
    let count = usize::try_from(n).map_err(|_| failed(variant, format!("n = {n} does not fit this machine")))?;
    rt.block_on(async move {
        let (armed_tx, armed_rx) = oneshot::channel();
        let (fired_tx, fired_rx) = oneshot::channel();
        let board = Arc::new(Board {
            n,
            armed: AtomicU64::new(0),
            all_armed: Mutex::new(Some(armed_tx)),
            late_ns: (0..count).map(|_| AtomicI64::new(NOT_FIRED)).collect(),
            fired: AtomicU64::new(0),
            extra: AtomicU64::new(0),
            all_fired: Mutex::new(Some(fired_tx)),
        });
        let actors: Arc<Vec<ActorRef<Msg>>> = Arc::new(
            (0..count)
                .map(|idx| {
                    let due = due_after(idx as u64, n);
                    troupe::spawn(Sleeper { idx, due, variant, deadline: None, board: board.clone() })
                })
                .collect(),
        );
        let lost_arms = Arc::new(AtomicU64::new(0));
        let t0 = Instant::now();
        for k in 0..workers {
            let (actors, lost) = (actors.clone(), lost_arms.clone());
            tokio::spawn(async move {
                for a in actors.iter().skip(k).step_by(workers) {
                    if a.send(Msg::Arm(t0)).is_err() {
                        lost.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        // Arming is bounded like the rest: a run that cannot arm in this long is hung.
        let arm_limit = crate::util::ITERATION_DEADLINE;
        let outcome = match tokio::time::timeout(arm_limit, armed_rx).await {
            Ok(Ok(armed_at)) => {
                let arm = armed_at.saturating_duration_since(t0);
                // The last deadline is `due_after(n, n)` after t0, or the last arm if later.
                let last = (t0 + due_after(n, n)).max(armed_at);
                let limit = last.saturating_duration_since(Instant::now()) + GRACE;
                match tokio::time::timeout(limit, fired_rx).await {
                    Ok(Ok(())) => collect(&board, variant, arm),
                    _ => Err(failed(
                        variant,
                        format!(
                            "only {} of {n} timers fired within {} s of the last deadline",
                            board.fired.load(Ordering::Acquire),
                            GRACE.as_secs()
                        ),
                    )),
                }
            }
            _ => Err(failed(
                variant,
                format!(
                    "only {} of {n} timers armed within {} s ({} Arm messages could not be sent)",
                    board.armed.load(Ordering::Acquire),
                    arm_limit.as_secs(),
                    lost_arms.load(Ordering::Relaxed)
                ),
            )),
        };
        for a in actors.iter() {
            a.stop();
        }
        for a in actors.iter() {
            a.terminated().await;
        }
        outcome
    })
}

/// The lateness of every timer, once all fired: none twice, none early (rule 5).
fn collect(board: &Board, variant: Variant, arm: Duration) -> Result<Outcome, Error> {
    let extra = board.extra.load(Ordering::Acquire);
    if extra > 0 {
        return Err(failed(variant, format!("{extra} timer message(s) arrived beyond one per timer")));
    }
    let late_ns: Vec<i64> = board.late_ns.iter().map(|s| s.load(Ordering::Acquire)).collect();
    if let Some(i) = late_ns.iter().position(|&l| l == NOT_FIRED) {
        return Err(failed(variant, format!("timer {i} never fired")));
    }
    let early = late_ns.iter().filter(|&&l| l < 0).count();
    if early > 0 {
        let most = late_ns.iter().copied().min().unwrap_or(0);
        return Err(failed(variant, format!("{early} timer(s) fired early (the earliest by {} us)", -most / 1000)));
    }
    Ok(Outcome { arm, late_ns })
}
