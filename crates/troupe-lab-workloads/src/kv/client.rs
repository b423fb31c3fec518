//! The kv clients (in the orchestrator process): each runs one operation at a time, back to back,
//! coordinating its own quorum ([`super::quorum`]) over the key's replicas.
//!
//! Rules:
//! 1. Each client draws its operations from its own PRNG seeded by (seed, client): the key
//!    uniformly from `keys`, get with probability `read_pct`% else put (service `kv`), or echo.
//! 2. A put takes the next version from a counter all clients share, sends the object to the N
//!    replicas and completes on W acks; a get asks the N replicas and completes on R replies,
//!    the newest version winning; an echo goes to the key's first replica and completes on its
//!    answer. Latency is the time from before the first send to completion.
//! 3. An operation not complete within [`op_limit`] fails (`ok = false`); replies to earlier
//!    operations are recognised by their request number and dropped. A replica's `Refused`
//!    (it is recovering, actors.rs rule 5) counts as that replica failing.
//! 4. Each operation is also a history operation (`troupe_lab::history`): a put is `ok` once W
//!    acked, `fail` when every replica refused it or could not be sent it, `info` otherwise
//!    (it may be stored on fewer than W); a get is `ok` with the newest version counter read
//!    (null: not found), or `fail`; the value of a put is its version counter, unique per put.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::mpsc;
use troupe::ActorRef;
use troupe_remote::{send_with, SharedBlob};

use super::actors::{Lanes, Reply, ReplySink, VnodeMsg};
use super::config::KvConfig;
use super::quorum::{GetQuorum, Outcome as QState, PutQuorum, Ring, Version};
use troupe_lab::events::writer::now_us;
use troupe_lab::history::Outcome;

/// One operation's record: a row of `kv.csv` and an operation of the history (rule 4).
#[derive(Debug, Clone)]
pub(crate) struct OpRow {
    pub(crate) client: u64,
    pub(crate) seq: u64,
    pub(crate) op: &'static str,
    pub(crate) latency_us: u64,
    pub(crate) ok: bool,
    /// The key (echo: its replica's key).
    pub(crate) key: String,
    /// A put's version counter; a get's newest counter read (`None`: not found or failed).
    pub(crate) value: Option<u64>,
    /// How it ended (rule 4).
    pub(crate) outcome: Outcome,
    /// Invocation and completion, wall-clock µs.
    pub(crate) invoke_us: i64,
    pub(crate) complete_us: i64,
}

/// How long one operation may take: generous on a loaded machine, and bounded (rule 3); under
/// a nemesis 3 s plus the transfer time, so a client gives up on a cut replica set and goes on.
pub fn op_limit(c: &KvConfig) -> Duration {
    let in_flight = (c.concurrency * c.object_bytes * c.n) as f64;
    let base = if c.nemesis.is_some() { 3 } else { 10 };
    Duration::from_secs(base) + Duration::from_secs_f64(in_flight / 20e6)
}

/// Where waiting for a request's replies stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Still waiting (or timed out, when returned).
    Pending,
    /// The quorum was reached.
    Done,
    /// Too many replicas refused for it to be reached.
    Failed,
}

/// Runs the clients (rules 1-4); every operation's row and the window.
pub(crate) async fn run_clients(
    cfg: &KvConfig,
    ring: &Ring,
    replicas: &[Vec<ActorRef<VnodeMsg>>],
) -> (Vec<OpRow>, Duration) {
    let counter = Arc::new(AtomicU64::new(1));
    // Contract rule 6: one buffer, shared by every put and echo (cloning it copies nothing).
    let payload = SharedBlob::from(vec![0xa5_u8; cfg.object_bytes as usize]);
    let replicas = Arc::new(replicas.to_vec());
    let window = Duration::from_secs(cfg.duration_s);
    let start = Instant::now();
    let tasks: Vec<_> = (0..cfg.concurrency)
        .map(|client| {
            let (cfg, ring, replicas, counter, payload) =
                (cfg.clone(), ring.clone(), Arc::clone(&replicas), Arc::clone(&counter), payload.clone());
            tokio::spawn(async move {
                let (tx, mut rx) = mpsc::unbounded_channel();
                let sink = troupe::spawn(ReplySink { tx });
                let lanes = Lanes { channels: cfg.transport == "channels" };
                let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed.wrapping_mul(1_000_003).wrapping_add(client));
                let limit = op_limit(&cfg);
                let mut rows = Vec::new();
                let mut seq = 0u64;
                // Bounded by the window: every operation ends within `limit`.
                while start.elapsed() < window {
                    let key = format!("k{}", rng.gen_range(0..cfg.keys));
                    let reps = &replicas[ring.vnode_of(key.as_bytes()) as usize];
                    let op = if cfg.service == "echo" {
                        "echo"
                    } else if rng.gen_range(0..100) < cfg.read_pct {
                        "get"
                    } else {
                        "put"
                    };
                    let req = client << 40 | seq;
                    let opts = lanes.requests(client);
                    let (t0, invoke_us) = (Instant::now(), now_us());
                    let (outcome, value) = match op {
                        "echo" => {
                            let m = VnodeMsg::Echo { req, payload: payload.clone(), reply: sink.clone() };
                            let sent = reps.first().is_some_and(|r| send_with(r, m, &opts).is_ok());
                            let done = sent && wait(&mut rx, req, limit, |_| Wait::Done).await == Wait::Done;
                            (if done { Outcome::Ok } else { Outcome::Fail }, None)
                        }
                        "put" => {
                            let version = Version { counter: counter.fetch_add(1, Ordering::AcqRel), writer: client };
                            let (mut q, mut failures) = (PutQuorum::new(cfg.n, cfg.w), 0u64);
                            for r in reps {
                                let m = VnodeMsg::Put {
                                    req,
                                    key: key.clone(),
                                    version,
                                    value: payload.clone(),
                                    reply: sink.clone(),
                                };
                                if send_with(r, m, &opts).is_err() {
                                    q.failed();
                                    failures += 1;
                                }
                            }
                            let got = match q.state() {
                                QState::Failed => Wait::Failed,
                                _ => {
                                    wait(&mut rx, req, limit, |rep| match rep {
                                        Reply::Ack { .. } => settle(q.ack()),
                                        Reply::Refused { .. } => {
                                            failures += 1;
                                            settle(q.failed())
                                        }
                                        _ => Wait::Pending,
                                    })
                                    .await
                                }
                            };
                            // Rule 4: certainly not applied only when every replica refused it
                            // or could not be sent it; otherwise a put that did not reach W is
                            // indeterminate.
                            let outcome = match got {
                                Wait::Done => Outcome::Ok,
                                _ if failures >= reps.len() as u64 => Outcome::Fail,
                                _ => Outcome::Info,
                            };
                            (outcome, Some(version.counter))
                        }
                        _ => {
                            let mut q = GetQuorum::new(cfg.n, cfg.r);
                            for r in reps {
                                let m = VnodeMsg::Get { req, key: key.clone(), reply: sink.clone() };
                                if send_with(r, m, &opts).is_err() {
                                    q.failed();
                                }
                            }
                            let mut read = None;
                            let got = match q.state() {
                                QState::Failed => Wait::Failed,
                                _ => {
                                    wait(&mut rx, req, limit, |rep| match rep {
                                        Reply::Value { obj, .. } => match q.reply(obj) {
                                            QState::Done(newest) => {
                                                read = newest.map(|(v, _)| v.counter);
                                                Wait::Done
                                            }
                                            other => settle(other),
                                        },
                                        Reply::Refused { .. } => settle(q.failed()),
                                        _ => Wait::Pending,
                                    })
                                    .await
                                }
                            };
                            if got == Wait::Done {
                                (Outcome::Ok, read)
                            } else {
                                (Outcome::Fail, None)
                            }
                        }
                    };
                    let ok = outcome == Outcome::Ok;
                    rows.push(OpRow {
                        client,
                        seq,
                        op,
                        latency_us: t0.elapsed().as_micros() as u64,
                        ok,
                        key,
                        value,
                        outcome,
                        invoke_us,
                        complete_us: now_us(),
                    });
                    seq += 1;
                }
                sink.stop();
                rows
            })
        })
        .collect();
    let mut rows = Vec::new();
    for t in tasks {
        if let Ok(r) = t.await {
            rows.extend(r);
        }
    }
    let elapsed = start.elapsed();
    rows.sort_by_key(|r| (r.client, r.seq));
    (rows, elapsed)
}

/// A quorum's state as a wait's.
fn settle<T>(o: QState<T>) -> Wait {
    match o {
        QState::Pending => Wait::Pending,
        QState::Done(_) => Wait::Done,
        QState::Failed => Wait::Failed,
    }
}

/// Waits for the replies of `req`, each handed to `step`, until it says done or failed, or
/// `limit` passes (then `Pending`).
async fn wait(
    rx: &mut mpsc::UnboundedReceiver<Reply>,
    req: u64,
    limit: Duration,
    mut step: impl FnMut(Reply) -> Wait,
) -> Wait {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(r)) if r.req() == req => match step(r) {
                Wait::Pending => {}
                end => return end,
            },
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return Wait::Pending,
        }
    }
}
