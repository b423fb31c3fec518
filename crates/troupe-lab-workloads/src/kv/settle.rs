//! The kv run's last phase under a history check (docs/kv.md "Nemesis runs"): after the window
//! and the final heal, the orchestrator reads every key that was written from every replica
//! until the replicas agree, so the checker can tell what the store holds in the end.
//!
//! Rules:
//! 1. A round sends a `Version` read (actors.rs rule 7: the version, not the object) for each
//!    written key to each of its N replicas and collects the
//!    answers for at most [`ROUND_LIMIT`]; a replica that refuses (recovering) or does not
//!    answer leaves its key unsettled.
//! 2. The replicas have converged when, in one round, every key has N answers with one version
//!    (or N not-found). Rounds repeat every [`PAUSE`] until they converge or [`BOUND`] has passed
//!    since the phase began; `converged_ms` is the time from the phase's start to the end of
//!    the round that converged (none when the bound passed).
//! 3. The final value of a key is the newest version among the last round's answers: what a
//!    quorum read returns once the replicas agree.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;
use troupe::ActorRef;
use troupe_remote::send_with;

use super::actors::{Lanes, Reply, ReplySink, VnodeMsg};
use super::quorum::Ring;

/// How long one round waits for its answers (rule 1).
pub(crate) const ROUND_LIMIT: Duration = Duration::from_secs(3);
/// The pause between rounds (rule 2).
pub(crate) const PAUSE: Duration = Duration::from_millis(100);
/// How long the replicas have to converge (rule 2).
pub(crate) const BOUND: Duration = Duration::from_secs(30);

/// What the last round read of one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FinalRead {
    pub(crate) key: String,
    /// Each replica's version counter (`None`: not found; missing: no answer).
    pub(crate) versions: Vec<Option<u64>>,
    /// The newest among them (rule 3).
    pub(crate) value: Option<u64>,
}

/// Rules 1-3: the last round's reads and `converged_ms`.
pub(crate) async fn final_reads(
    keys: &[String],
    ring: &Ring,
    replicas: &[Vec<ActorRef<VnodeMsg>>],
    lanes: &Lanes,
) -> (Vec<FinalRead>, Option<u64>, u32) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let sink = troupe::spawn(ReplySink { tx });
    let start = Instant::now();
    let mut rounds = 0u32;
    let mut last = Vec::new();
    let mut converged = None;
    // Bounded by BOUND: each round takes at most ROUND_LIMIT + PAUSE.
    while start.elapsed() < BOUND {
        rounds += 1;
        let base = u64::from(rounds) << 32;
        let mut wanted = 0usize;
        for (i, k) in keys.iter().enumerate() {
            for r in &replicas[ring.vnode_of(k.as_bytes()) as usize] {
                let m = VnodeMsg::Version { req: base | i as u64, key: k.clone(), reply: sink.clone() };
                if send_with(r, m, &lanes.requests(i as u64)).is_ok() {
                    wanted += 1;
                }
            }
        }
        let mut got: BTreeMap<usize, Vec<Option<u64>>> = BTreeMap::new();
        let mut answered = 0usize;
        let deadline = tokio::time::Instant::now() + ROUND_LIMIT;
        while answered < wanted {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(Reply::Version { req, version })) if req >> 32 == u64::from(rounds) => {
                    answered += 1;
                    got.entry((req & 0xffff_ffff) as usize).or_default().push(version.map(|v| v.counter));
                }
                Ok(Some(Reply::Refused { req })) if req >> 32 == u64::from(rounds) => answered += 1,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        last = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let versions = got.remove(&i).unwrap_or_default();
                let value = versions.iter().flatten().max().copied();
                FinalRead { key: k.clone(), versions, value }
            })
            .collect();
        let agree = last.iter().all(|f| {
            let n = replicas[ring.vnode_of(f.key.as_bytes()) as usize].len();
            f.versions.len() == n && f.versions.iter().all(|v| *v == f.versions[0])
        });
        if agree {
            converged = Some(start.elapsed().as_millis() as u64);
            break;
        }
        tokio::time::sleep(PAUSE).await;
    }
    sink.stop();
    (last, converged, rounds)
}
