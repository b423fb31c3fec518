//! Property tests of every CRDT type (the rules of `DeltaCrdt`): merge is commutative,
//! associative and idempotent; the deltas a replica recorded, merged in any order, equal its
//! full state; replicas exchanging deltas in a random order with drops and duplicates
//! converge once a full-state round runs (with no drops, deltas alone suffice).

use proptest::prelude::*;
use troupe_crdt::{DeltaCrdt, Flag, GCounter, GSet, LWWRegister, ORMap, ORSet, PNCounter};

const REPLICAS: [&str; 3] = ["a", "b", "c"];

/// An operation of a random history: a mutation by a replica, or a state sync between two.
#[derive(Clone, Debug)]
enum Step {
    Op(usize, u32),
    Sync(usize, usize),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0..3usize, any::<u32>()).prop_map(|(r, c)| Step::Op(r, c)),
            1 => (0..3usize, 0..3usize).prop_map(|(a, b)| Step::Sync(a, b)),
        ],
        0..40,
    )
}

/// Runs a history: the three replicas' states, and every delta each produced, in order.
fn run<T: DeltaCrdt>(steps: &[Step], apply: fn(&mut T, &str, u32)) -> (Vec<T>, Vec<Vec<T::Delta>>) {
    let mut s: Vec<T> = vec![T::default(); 3];
    let mut deltas = vec![Vec::new(), Vec::new(), Vec::new()];
    for st in steps {
        match *st {
            Step::Op(r, c) => {
                apply(&mut s[r], REPLICAS[r], c);
                if let Some(d) = s[r].take_delta() {
                    deltas[r].push(d);
                }
            }
            Step::Sync(a, b) => {
                let from = s[a].clone();
                s[b].merge(&from);
            }
        }
    }
    (s, deltas)
}

fn merged<T: DeltaCrdt>(a: &T, b: &T) -> T {
    let mut x = a.clone();
    x.merge(b);
    x
}

/// Checks every law on one history; `order` and `faults` drive the delivery of deltas.
fn laws<T: DeltaCrdt>(steps: &[Step], order: &[u32], apply: fn(&mut T, &str, u32)) {
    let (s, deltas) = run::<T>(steps, apply);
    let (a, b, c) = (&s[0], &s[1], &s[2]);
    // Commutative, associative, idempotent.
    assert_eq!(merged(a, b), merged(b, a));
    assert_eq!(merged(&merged(a, b), c), merged(a, &merged(b, c)));
    assert_eq!(merged(a, a), *a);
    assert_eq!(merged(&merged(a, b), b), merged(a, b));
    // Deltas merged in any order (here reversed, and joined first) equal the full state of a
    // replica that only ever mutated itself: replay replica 0's ops alone.
    let own: Vec<Step> = steps.iter().filter(|s| matches!(s, Step::Op(0, _))).cloned().collect();
    let (alone, ds) = run::<T>(&own, apply);
    let mut rev = T::default();
    ds[0].iter().rev().for_each(|d| rev.merge_delta(d));
    assert_eq!(rev, alone[0], "deltas in reverse order equal the full state");
    if let Some(first) = ds[0].first() {
        let mut joined = first.clone();
        ds[0].iter().skip(1).for_each(|d| T::join_delta(&mut joined, d));
        let mut j = T::default();
        j.merge_delta(&joined);
        assert_eq!(j, alone[0], "a joined delta is worth its parts");
    }
    // Convergence: every delta goes to the two other replicas in a shuffled order, each copy
    // dropped (code % 5 == 0), duplicated (code % 5 == 1) or delivered once.
    let mut msgs: Vec<(usize, T::Delta)> = Vec::new();
    for (from, list) in deltas.iter().enumerate() {
        for d in list {
            for to in 0..3 {
                if to != from {
                    msgs.push((to, d.clone()));
                }
            }
        }
    }
    let mut r: Vec<T> = s.clone();
    let mut lossless: Vec<T> = vec![T::default(); 3];
    // Lossless replicas start from their own deltas only.
    for (i, list) in deltas.iter().enumerate() {
        list.iter().for_each(|d| lossless[i].merge_delta(d));
    }
    let n = msgs.len();
    for k in 0..n {
        let pick = order.get(k).copied().unwrap_or(0) as usize % msgs.len();
        let (to, d) = msgs.swap_remove(pick);
        let code = order.get(n + k).copied().unwrap_or(2);
        lossless[to].merge_delta(&d);
        if code % 4 == 1 {
            lossless[to].merge_delta(&d);
        }
        match code % 5 {
            0 => {}
            1 => {
                r[to].merge_delta(&d);
                r[to].merge_delta(&d);
            }
            _ => r[to].merge_delta(&d),
        }
    }
    let all = merged(&merged(a, b), c);
    // Deltas only, no drops: converged already (to the join of what the ops made).
    let mut ops_only = T::default();
    deltas.iter().flatten().for_each(|d| ops_only.merge_delta(d));
    for x in &lossless {
        assert_eq!(*x, ops_only, "lossless delta delivery converges");
    }
    // With drops: one full-state round (the replicator's gossip) converges.
    let snapshot = r.clone();
    for x in &mut r {
        snapshot.iter().for_each(|o| x.merge(o));
    }
    for x in &r {
        assert_eq!(*x, all, "a full-state round after lossy delta delivery converges");
    }
}

fn gcounter(c: &mut GCounter, me: &str, code: u32) {
    c.increment(me, u64::from(code % 7));
}
fn pncounter(c: &mut PNCounter, me: &str, code: u32) {
    c.add(me, i64::from(code % 11) - 5);
}
fn gset(s: &mut GSet<u8>, _: &str, code: u32) {
    s.insert((code % 8) as u8);
}
fn orset(s: &mut ORSet<u8>, me: &str, code: u32) {
    let e = ((code >> 2) % 6) as u8;
    if code % 3 == 0 {
        s.remove(&e);
    } else {
        s.add(me, e);
    }
}
fn lww(r: &mut LWWRegister<u32>, me: &str, code: u32) {
    r.set_at(me, code % 100, u64::from((code >> 8) % 16));
}
fn ormap(m: &mut ORMap<u8, GCounter>, me: &str, code: u32) {
    let k = ((code >> 2) % 4) as u8;
    if code % 4 == 0 {
        m.remove(&k);
    } else {
        m.update(me, k, |c| c.increment(me, u64::from(code % 3)));
    }
}
fn flag(f: &mut Flag, me: &str, code: u32) {
    if code % 2 == 0 {
        f.enable(me);
    } else {
        f.disable();
    }
}

fn order() -> impl Strategy<Value = Vec<u32>> {
    prop::collection::vec(any::<u32>(), 0..400)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]
    #[test]
    fn gcounter_laws(s in steps(), o in order()) { laws::<GCounter>(&s, &o, gcounter); }
    #[test]
    fn pncounter_laws(s in steps(), o in order()) { laws::<PNCounter>(&s, &o, pncounter); }
    #[test]
    fn gset_laws(s in steps(), o in order()) { laws::<GSet<u8>>(&s, &o, gset); }
    #[test]
    fn orset_laws(s in steps(), o in order()) { laws::<ORSet<u8>>(&s, &o, orset); }
    #[test]
    fn lww_register_laws(s in steps(), o in order()) { laws::<LWWRegister<u32>>(&s, &o, lww); }
    #[test]
    fn ormap_laws(s in steps(), o in order()) { laws::<ORMap<u8, GCounter>>(&s, &o, ormap); }
    #[test]
    fn flag_laws(s in steps(), o in order()) { laws::<Flag>(&s, &o, flag); }
}

#[test]
fn orset_add_wins_over_a_concurrent_remove_and_a_remove_drops_what_it_saw() {
    let mut a = ORSet::default();
    a.add("a", 1u8);
    let mut b = a.clone();
    b.remove(&1);
    let mut a2 = a.clone();
    a2.merge(&b);
    assert!(!a2.contains(&1), "a remove of an observed add removes it");
    a.add("a", 1);
    a.merge(&b);
    assert!(a.contains(&1), "a concurrent add wins");
}

#[test]
fn flag_enable_wins_and_ormap_keeps_a_concurrently_updated_key() {
    let mut f = Flag::default();
    f.enable("a");
    let mut g = f.clone();
    g.disable();
    f.enable("a");
    f.merge(&g);
    assert!(f.value());
    let mut m: ORMap<u8, GCounter> = ORMap::default();
    m.update("a", 1, |c| c.increment("a", 1));
    let mut n = m.clone();
    n.remove(&1);
    m.update("a", 1, |c| c.increment("a", 1));
    m.merge(&n);
    assert_eq!(m.get(&1).map(GCounter::value), Some(2));
}

#[test]
fn lww_register_later_write_wins_and_replica_id_breaks_ties() {
    let mut a = LWWRegister::default();
    a.set_at("a", 1u32, 5);
    let mut b = LWWRegister::default();
    b.set_at("b", 2u32, 5);
    let ab = merged(&a, &b);
    assert_eq!(ab.get(), Some(&2));
    assert_eq!(ab, merged(&b, &a));
    a.set("a", 3);
    assert_eq!(merged(&a, &b).get(), Some(&3));
}
