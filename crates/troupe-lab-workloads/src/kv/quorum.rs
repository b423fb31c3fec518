//! The quorum store's logic as pure state machines, shared by the Troupe nodes and clients and
//! tested without processes (`tests/lab_kv_quorum.rs`); the Erlang peer implements the same
//! rules (`peers/erlang/kv`).
//!
//! Rules:
//! 1. Placement: a key belongs to vnode `stable_hash(key) % vnodes`; vnode v's N replicas are
//!    nodes `v % nodes`, `(v + 1) % nodes`, ... (the first preferred), so every node is the
//!    preferred replica of an equal share of the vnodes (as the Erlang peer's `V rem 3`).
//! 2. A version is (counter, writer), ordered by counter then writer; a replica applies a put
//!    only if its version is newer than the one it holds (so replays and repairs are idempotent).
//! 3. A put is sent to all N replicas and succeeds once W have acked; it fails once so many
//!    replicas have failed (refused, timed out, down) that W acks can no longer come.
//! 4. A get is sent to all N replicas and completes once R have replied; the newest version among
//!    the replies wins (not-found is older than any version); it fails like a put with R.
//! 5. Anti-entropy: a replica sends its vnode's digest (key -> version) to a peer replica; the
//!    peer answers with the entries it holds newer (or the sender lacks), and asks for the keys
//!    where the sender is newer (or it lacks); both sides then apply by rule 2.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use troupe_cluster::stable_hash;
use troupe_remote::SharedBlob;

/// A version (rule 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Version {
    /// A counter the writers draw from (the clients share one).
    pub counter: u64,
    /// The writer, to break ties.
    pub writer: u64,
}

/// A stored object: its bytes are shared (reference-counted), so storing, answering a get and
/// repairing copy nothing.
pub type Object = (Version, SharedBlob);

/// The ring: vnodes and their replica nodes (rule 1).
#[derive(Debug, Clone)]
pub struct Ring {
    vnodes: u64,
    replicas: Vec<Vec<usize>>,
}

impl Ring {
    /// The ring of `nodes` node indices, `vnodes` partitions, `n` replicas each.
    ///
    /// ```
    /// use troupe_lab_workloads::kv::quorum::Ring;
    /// let ring = Ring::new(3, 64, 3);
    /// assert_eq!(ring.replicas(ring.vnode_of(b"k7")).len(), 3);
    /// ```
    pub fn new(nodes: usize, vnodes: u64, n: usize) -> Ring {
        let replicas = (0..vnodes.max(1))
            .map(|v| match nodes {
                0 => Vec::new(),
                _ => (0..n.min(nodes)).map(|j| (v as usize + j) % nodes).collect(),
            })
            .collect();
        Ring { vnodes: vnodes.max(1), replicas }
    }

    /// The vnode of a key.
    pub fn vnode_of(&self, key: &[u8]) -> u64 {
        stable_hash(key) % self.vnodes
    }

    /// The replica nodes of a vnode, preferred first.
    pub fn replicas(&self, vnode: u64) -> &[usize] {
        &self.replicas[(vnode % self.vnodes) as usize]
    }

    /// The vnodes node `node` holds a replica of.
    pub fn vnodes_of(&self, node: usize) -> Vec<u64> {
        (0..self.vnodes).filter(|v| self.replicas(*v).contains(&node)).collect()
    }
}

/// One vnode replica's objects (rules 2 and 5).
#[derive(Debug, Default, Clone)]
pub struct Store {
    objects: BTreeMap<String, Object>,
}

/// What a digest comparison asks for (rule 5).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Diff {
    /// Keys this replica holds newer than (or the digest lacks): push these.
    pub push: Vec<String>,
    /// Keys the digest holds newer than this replica (or this replica lacks): pull these.
    pub pull: Vec<String>,
}

impl Store {
    /// Applies a put if it is newer (rule 2); whether it was applied.
    pub fn put(&mut self, key: &str, version: Version, value: SharedBlob) -> bool {
        match self.objects.get(key) {
            Some((have, _)) if *have >= version => false,
            _ => {
                self.objects.insert(key.to_string(), (version, value));
                true
            }
        }
    }

    /// The object held for `key`.
    pub fn get(&self, key: &str) -> Option<&Object> {
        self.objects.get(key)
    }

    /// The digest: every key with its version (rule 5).
    pub fn digest(&self) -> Vec<(String, Version)> {
        self.objects.iter().map(|(k, (v, _))| (k.clone(), *v)).collect()
    }

    /// Compares a peer's digest with this replica (rule 5).
    pub fn compare(&self, digest: &[(String, Version)]) -> Diff {
        let theirs: BTreeMap<&str, Version> = digest.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        let mut d = Diff::default();
        for (k, (v, _)) in &self.objects {
            match theirs.get(k.as_str()) {
                Some(t) if t >= v => {}
                _ => d.push.push(k.clone()),
            }
        }
        for (k, t) in &theirs {
            match self.objects.get(*k) {
                Some((v, _)) if v >= t => {}
                _ => d.pull.push((*k).to_string()),
            }
        }
        d
    }

    /// Keys held.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// Where a quorum stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome<T> {
    /// Still waiting.
    Pending,
    /// The quorum was reached.
    Done(T),
    /// Too many replicas failed for the quorum to be reached.
    Failed,
}

/// A put waiting for W acks of N (rule 3).
#[derive(Debug, Clone)]
pub struct PutQuorum {
    n: u64,
    w: u64,
    acks: u64,
    failures: u64,
}

impl PutQuorum {
    /// A put to `n` replicas needing `w` acks.
    ///
    /// ```
    /// use troupe_lab_workloads::kv::quorum::{Outcome, PutQuorum};
    /// let mut q = PutQuorum::new(3, 2);
    /// assert_eq!(q.failed(), Outcome::Pending); // one replica down
    /// assert_eq!(q.ack(), Outcome::Pending);
    /// assert_eq!(q.ack(), Outcome::Done(()));
    /// ```
    pub fn new(n: u64, w: u64) -> PutQuorum {
        PutQuorum { n, w, acks: 0, failures: 0 }
    }

    /// A replica acked.
    pub fn ack(&mut self) -> Outcome<()> {
        self.acks += 1;
        self.state()
    }

    /// A replica failed.
    pub fn failed(&mut self) -> Outcome<()> {
        self.failures += 1;
        self.state()
    }

    /// Where it stands.
    pub fn state(&self) -> Outcome<()> {
        if self.acks >= self.w {
            Outcome::Done(())
        } else if self.n.saturating_sub(self.failures) < self.w {
            Outcome::Failed
        } else {
            Outcome::Pending
        }
    }
}

/// A get waiting for R replies of N (rule 4).
#[derive(Debug, Clone)]
pub struct GetQuorum {
    n: u64,
    r: u64,
    replies: u64,
    failures: u64,
    newest: Option<Object>,
}

impl GetQuorum {
    /// A get from `n` replicas needing `r` replies.
    pub fn new(n: u64, r: u64) -> GetQuorum {
        GetQuorum { n, r, replies: 0, failures: 0, newest: None }
    }

    /// A replica replied with what it holds (`None`: not found).
    pub fn reply(&mut self, obj: Option<Object>) -> Outcome<Option<Object>> {
        self.replies += 1;
        if let Some(o) = obj {
            if self.newest.as_ref().is_none_or(|(v, _)| o.0 > *v) {
                self.newest = Some(o);
            }
        }
        self.state()
    }

    /// A replica failed.
    pub fn failed(&mut self) -> Outcome<Option<Object>> {
        self.failures += 1;
        self.state()
    }

    /// Where it stands; when done, the newest object seen (rule 4).
    pub fn state(&self) -> Outcome<Option<Object>> {
        if self.replies >= self.r {
            Outcome::Done(self.newest.clone())
        } else if self.n.saturating_sub(self.failures) < self.r {
            Outcome::Failed
        } else {
            Outcome::Pending
        }
    }
}
