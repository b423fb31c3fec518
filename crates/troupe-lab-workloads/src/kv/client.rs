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
//!    operations are recognised by their request number and dropped.

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
use super::quorum::{GetQuorum, Outcome, PutQuorum, Ring, Version};

/// One operation's record.
#[derive(Debug, Clone)]
pub(crate) struct OpRow {
    pub(crate) client: u64,
    pub(crate) seq: u64,
    pub(crate) op: &'static str,
    pub(crate) latency_us: u64,
    pub(crate) ok: bool,
}

/// How long one operation may take: generous on a loaded machine, and bounded (rule 3).
pub fn op_limit(c: &KvConfig) -> Duration {
    let in_flight = (c.concurrency * c.object_bytes * c.n) as f64;
    Duration::from_secs(10) + Duration::from_secs_f64(in_flight / 20e6)
}

/// Runs the clients (rules 1-3); every operation's row and the window.
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
                    let t0 = Instant::now();
                    let ok = match op {
                        "echo" => {
                            let m = VnodeMsg::Echo { req, payload: payload.clone(), reply: sink.clone() };
                            let sent = reps.first().is_some_and(|r| send_with(r, m, &opts).is_ok());
                            sent && wait(&mut rx, req, limit, 1, |_| true).await
                        }
                        "put" => {
                            let version = Version { counter: counter.fetch_add(1, Ordering::AcqRel), writer: client };
                            let mut q = PutQuorum::new(cfg.n, cfg.w);
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
                                }
                            }
                            let st = q.state();
                            quorum(&mut rx, req, limit, |_| q.ack() == Outcome::Done(()), st).await
                        }
                        _ => {
                            let mut q = GetQuorum::new(cfg.n, cfg.r);
                            for r in reps {
                                let m = VnodeMsg::Get { req, key: key.clone(), reply: sink.clone() };
                                if send_with(r, m, &opts).is_err() {
                                    q.failed();
                                }
                            }
                            let start_state = q.state();
                            quorum(
                                &mut rx,
                                req,
                                limit,
                                |rep| match rep {
                                    Reply::Value { obj, .. } => {
                                        matches!(q.reply(obj), Outcome::Done(_))
                                    }
                                    _ => false,
                                },
                                start_state,
                            )
                            .await
                        }
                    };
                    rows.push(OpRow { client, seq, op, latency_us: t0.elapsed().as_micros() as u64, ok });
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

/// Waits for the replies of request `req` until `done` says the quorum is reached (rule 3).
async fn quorum<S>(
    rx: &mut mpsc::UnboundedReceiver<Reply>,
    req: u64,
    limit: Duration,
    done: impl FnMut(Reply) -> bool,
    start: Outcome<S>,
) -> bool {
    match start {
        Outcome::Failed => false,
        _ => wait(rx, req, limit, u64::MAX, done).await,
    }
}

/// Waits for up to `most` replies of `req`, each handed to `done`, until it returns true.
async fn wait(
    rx: &mut mpsc::UnboundedReceiver<Reply>,
    req: u64,
    limit: Duration,
    most: u64,
    mut done: impl FnMut(Reply) -> bool,
) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    let mut seen = 0;
    while seen < most {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(r)) if r.req() == req => {
                seen += 1;
                if done(r) {
                    return true;
                }
            }
            Ok(Some(_)) => {}
            Ok(None) | Err(_) => return false,
        }
    }
    false
}
