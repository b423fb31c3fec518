//! A consistent-hash ring with virtual nodes, public so applications and the lab shard with
//! the same ring the cluster uses to pick failure-detector neighbours.
//!
//! Rules:
//! 1. Each node owns `vnodes` points, at `hash(node, i)` for `i` in `0..vnodes`; a key belongs
//!    to the first point at or after `hash(key)`, wrapping around.
//! 2. The hash is stable across processes, builds and platforms (FNV-1a with a 64-bit
//!    finaliser), so every node computes the same owner for a key.
//! 3. Adding or removing one of N nodes moves only the keys of the points it gains or loses
//!    (about 1/N of them); other keys keep their owner.

use std::collections::BTreeMap;

/// A stable 64-bit hash of bytes (rule 2).
#[must_use]
pub fn stable_hash(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    // A murmur3-style finaliser spreads FNV's weak low bits over the whole word.
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// A consistent-hash ring of node names (any string: the cluster uses addresses).
///
/// ```
/// use troupe_cluster::HashRing;
/// let mut ring = HashRing::new(128);
/// for n in ["a:1", "b:1", "c:1"] { ring.add(n); }
/// let owner = ring.node_for(b"user-42").unwrap().to_owned();
/// assert_eq!(ring.nodes_for(b"user-42", 2).len(), 2);
/// ring.remove("zzz:1"); // not a member: nothing moves
/// assert_eq!(ring.node_for(b"user-42"), Some(owner.as_str()));
/// ```
#[derive(Clone, Debug, Default)]
pub struct HashRing {
    vnodes: usize,
    points: BTreeMap<u64, String>,
    nodes: BTreeMap<String, ()>,
}

impl HashRing {
    /// An empty ring placing `vnodes` points per node (at least 1).
    #[must_use]
    pub fn new(vnodes: usize) -> Self {
        Self { vnodes: vnodes.max(1), points: BTreeMap::new(), nodes: BTreeMap::new() }
    }

    /// A ring of these nodes.
    #[must_use]
    pub fn with_nodes<'a>(vnodes: usize, nodes: impl IntoIterator<Item = &'a str>) -> Self {
        let mut r = Self::new(vnodes);
        for n in nodes {
            r.add(n);
        }
        r
    }

    fn point(node: &str, i: usize) -> u64 {
        let mut key = node.as_bytes().to_vec();
        key.push(0);
        key.extend_from_slice(&(i as u64).to_le_bytes());
        stable_hash(&key)
    }

    /// Adds a node (no effect when present).
    pub fn add(&mut self, node: &str) {
        if self.nodes.insert(node.to_owned(), ()).is_some() {
            return;
        }
        for i in 0..self.vnodes {
            // A collision between two nodes' points (odds 2^-64 a pair) goes to the smaller
            // name, so every process builds the same ring whatever the order of adds.
            let p = Self::point(node, i);
            match self.points.get(&p) {
                Some(other) if other.as_str() <= node => {}
                _ => {
                    self.points.insert(p, node.to_owned());
                }
            }
        }
    }

    /// Removes a node (no effect when absent).
    pub fn remove(&mut self, node: &str) {
        if self.nodes.remove(node).is_none() {
            return;
        }
        self.points.retain(|_, n| n != node);
        // Re-add the others' points a collision may have hidden.
        let others: Vec<String> = self.nodes.keys().cloned().collect();
        for n in others {
            for i in 0..self.vnodes {
                let p = Self::point(&n, i);
                self.points.entry(p).or_insert_with(|| n.clone());
            }
        }
    }

    /// Whether the node is on the ring.
    #[must_use]
    pub fn contains(&self, node: &str) -> bool {
        self.nodes.contains_key(node)
    }

    /// Nodes on the ring, sorted.
    pub fn nodes(&self) -> impl Iterator<Item = &str> {
        self.nodes.keys().map(String::as_str)
    }

    /// How many nodes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the ring has no node.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The owner of `key` (rule 1); `None` on an empty ring.
    #[must_use]
    pub fn node_for(&self, key: &[u8]) -> Option<&str> {
        let h = stable_hash(key);
        self.points.range(h..).next().or_else(|| self.points.iter().next()).map(|(_, n)| n.as_str())
    }

    /// The first `n` distinct nodes clockwise from `key` (replicas, or the neighbours that
    /// monitor a node).
    #[must_use]
    pub fn nodes_for(&self, key: &[u8], n: usize) -> Vec<&str> {
        let want = n.min(self.nodes.len());
        let mut out: Vec<&str> = Vec::with_capacity(want);
        let h = stable_hash(key);
        for (_, node) in self.points.range(h..).chain(self.points.range(..h)) {
            if out.len() == want {
                break;
            }
            if !out.contains(&node.as_str()) {
                out.push(node);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owners(r: &HashRing, keys: usize) -> Vec<String> {
        (0..keys).map(|k| r.node_for(format!("key-{k}").as_bytes()).unwrap().to_owned()).collect()
    }

    #[test]
    fn adding_one_of_n_moves_about_one_nth_of_the_keys() {
        let names: Vec<String> = (0..10).map(|i| format!("10.0.0.{i}:7000")).collect();
        let mut r = HashRing::with_nodes(128, names.iter().map(String::as_str));
        let before = owners(&r, 20_000);
        r.add("10.0.0.99:7000");
        let after = owners(&r, 20_000);
        let moved: Vec<usize> = (0..before.len()).filter(|&i| before[i] != after[i]).collect();
        let frac = moved.len() as f64 / 20_000.0;
        assert!((0.5 / 11.0..1.6 / 11.0).contains(&frac), "moved fraction {frac}");
        assert!(moved.iter().all(|&i| after[i] == "10.0.0.99:7000"), "keys only move to the new node (rule 3)");
        r.remove("10.0.0.99:7000");
        assert_eq!(owners(&r, 20_000), before, "removing it restores every owner");
    }

    #[test]
    fn load_is_balanced_with_virtual_nodes() {
        let names: Vec<String> = (0..8).map(|i| format!("node-{i}")).collect();
        let r = HashRing::with_nodes(128, names.iter().map(String::as_str));
        let o = owners(&r, 40_000);
        for n in &names {
            let c = o.iter().filter(|x| *x == n).count() as f64 / 40_000.0;
            assert!((0.6 / 8.0..1.4 / 8.0).contains(&c), "{n} owns {c}");
        }
    }

    #[test]
    fn the_ring_is_the_same_whatever_the_order_of_adds() {
        let a = HashRing::with_nodes(64, ["x", "y", "z"]);
        let b = HashRing::with_nodes(64, ["z", "x", "y"]);
        assert_eq!(owners(&a, 1000), owners(&b, 1000));
        assert_eq!(a.nodes_for(b"k", 3), b.nodes_for(b"k", 3));
        assert_eq!(
            stable_hash(b"troupe"),
            3_476_801_529_826_751_261,
            "the hash is pinned: every build computes the same ring"
        );
    }

    #[test]
    fn nodes_for_returns_distinct_nodes() {
        let r = HashRing::with_nodes(16, ["a", "b", "c"]);
        let v = r.nodes_for(b"q", 5);
        assert_eq!(v.len(), 3);
        let mut s = v.clone();
        s.sort_unstable();
        s.dedup();
        assert_eq!(s.len(), 3);
        assert!(HashRing::new(4).node_for(b"q").is_none());
    }
}
