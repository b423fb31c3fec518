//! The node's table of cluster-wide (global) names, indexed by owning node as well as by name,
//! so that what a budget or a check asks of one node costs time in that node's names, not in
//! the whole table (issue 36: a peer could register 2 M names, and every ref check scanned
//! them all).
//!
//! Rules:
//! 1. Every entry is in `by_node` under its owner's address, exactly once, and nothing else
//!    is: [`Globals::insert`], [`Globals::remove`] and [`Globals::remove_node`] keep both
//!    maps in step. So [`Globals::count_of`] and [`Globals::holds_any`] are O(1), and
//!    dropping a node's names is O(its names).
//! 2. Budgets (enforced by `inbound.rs`, rule 7): names one peer holds (`max_globals_per_peer`)
//!    and names all peers hold together (`max_globals`); this node's own names count against
//!    neither.

use std::collections::{HashMap, HashSet};

use crate::proto::GlobalEntry;

/// Global names: name -> entry, and owner -> its names (rule 1).
#[derive(Default)]
pub(crate) struct Globals {
    names: HashMap<String, GlobalEntry>,
    by_node: HashMap<String, HashSet<String>>,
}

impl Globals {
    pub(crate) fn get(&self, name: &str) -> Option<&GlobalEntry> {
        self.names.get(name)
    }

    /// Inserts or replaces; the replaced entry is handed back.
    pub(crate) fn insert(&mut self, e: GlobalEntry) -> Option<GlobalEntry> {
        self.by_node.entry(e.node.clone()).or_default().insert(e.name.clone());
        let old = self.names.insert(e.name.clone(), e);
        if let Some(o) = &old {
            let new_node = &self.names[&o.name].node;
            if &o.node != new_node {
                self.unindex(&o.node, &o.name);
            }
        }
        old
    }

    fn unindex(&mut self, node: &str, name: &str) {
        if let Some(set) = self.by_node.get_mut(node) {
            set.remove(name);
            if set.is_empty() {
                self.by_node.remove(node);
            }
        }
    }

    pub(crate) fn remove(&mut self, name: &str) -> Option<GlobalEntry> {
        let e = self.names.remove(name)?;
        self.unindex(&e.node, name);
        Some(e)
    }

    /// Drops every name `node` holds, in time linear in their number.
    pub(crate) fn remove_node(&mut self, node: &str) {
        for name in self.by_node.remove(node).unwrap_or_default() {
            self.names.remove(&name);
        }
    }

    /// Names `node` holds.
    pub(crate) fn count_of(&self, node: &str) -> usize {
        self.by_node.get(node).map_or(0, HashSet::len)
    }

    /// Whether `node` holds any name (`node/mod.rs`, rule 7).
    pub(crate) fn holds_any(&self, node: &str) -> bool {
        self.by_node.contains_key(node)
    }

    /// Names `node` holds, as entries.
    pub(crate) fn of_node(&self, node: &str) -> Vec<GlobalEntry> {
        self.by_node.get(node).map_or_else(Vec::new, |set| set.iter().map(|n| self.names[n].clone()).collect())
    }

    /// All names.
    pub(crate) fn len(&self) -> usize {
        self.names.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, node: &str) -> GlobalEntry {
        GlobalEntry { name: name.into(), node: node.into(), id: 1, tag: 2, tag_name: "t".into() }
    }

    #[test]
    fn rule_1_the_owner_index_follows_every_change() {
        let mut g = Globals::default();
        g.insert(e("a", "n1:1"));
        g.insert(e("b", "n1:1"));
        g.insert(e("a", "n2:1")); // a moves to n2
        assert_eq!((g.count_of("n1:1"), g.count_of("n2:1")), (1, 1));
        g.insert(e("a", "n2:1")); // the same again
        assert_eq!(g.count_of("n2:1"), 1);
        g.remove("b");
        assert!(!g.holds_any("n1:1"));
        g.insert(e("c", "n2:1"));
        g.remove_node("n2:1");
        assert_eq!((g.len(), g.holds_any("n2:1")), (0, false));
        assert!(g.by_node.is_empty());
    }
}
