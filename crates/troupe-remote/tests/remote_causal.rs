//! Causal delivery's ordering (`troupe_remote::causal`, rules 1-6) under random sends,
//! delays, reordering and repeated frames: no message is delivered before one it causally
//! depends on, none is delivered twice, and with nothing lost every message is delivered in the
//! end. The ground truth is independent of vector clocks: each node keeps the set of messages
//! in its causal past (its own sends and, on delivery, the sender's past at the send).

use std::collections::BTreeSet;

use proptest::prelude::*;
use troupe_remote::causal::{CausalOrder, Stamp};

#[derive(Clone, Debug)]
struct InFlight {
    id: usize,
    to: usize,
    stamp: Stamp,
}

/// One step: node `a % n` sends to another node, in-flight message `b % len` arrives, or
/// the network repeats in-flight message `b % len` (a second copy is in flight).
#[derive(Clone, Debug)]
enum Step {
    Send(usize, usize),
    Arrive(usize),
    Repeat(usize),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Send(a, b)),
            any::<usize>().prop_map(Step::Arrive),
            any::<usize>().prop_map(Step::Repeat),
        ],
        1..400,
    )
}

/// Runs `steps` over `n` nodes, then lets every message still in flight arrive (in the order
/// `drain` picks); checks causality at every delivery and that nothing stays held.
fn run(n: usize, steps: &[Step], drain: &[usize]) -> Result<(), TestCaseError> {
    let mut nodes: Vec<CausalOrder<usize>> = (0..n).map(|i| CausalOrder::new(100 + i as u64, 10_000)).collect();
    // past[i]: ids in node i's causal past; sent_past[id]: the sender's past at the send; to[id].
    let mut past: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    let mut sent_past: Vec<BTreeSet<usize>> = Vec::new();
    let mut dest: Vec<usize> = Vec::new();
    let mut delivered: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    let mut flight: Vec<InFlight> = Vec::new();
    let mut copies = 0u64;
    let arrive = |k: usize,
                  flight: &mut Vec<InFlight>,
                  nodes: &mut Vec<CausalOrder<usize>>,
                  past: &mut Vec<BTreeSet<usize>>,
                  delivered: &mut Vec<BTreeSet<usize>>,
                  sent_past: &Vec<BTreeSet<usize>>,
                  dest: &Vec<usize>|
     -> Result<(), TestCaseError> {
        let m = flight.remove(k);
        let out = nodes[m.to].receive(m.stamp, m.id).expect("the hold is large enough");
        for id in out {
            // Everything in its past that was sent to this node was delivered here first.
            for dep in &sent_past[id] {
                if dest[*dep] == m.to {
                    prop_assert!(
                        delivered[m.to].contains(dep),
                        "node {} delivered message {id} before message {dep}, which it causally depends on",
                        m.to
                    );
                }
            }
            prop_assert!(delivered[m.to].insert(id), "message {id} delivered twice");
            let p = sent_past[id].clone();
            past[m.to].extend(p);
            past[m.to].insert(id);
        }
        Ok(())
    };
    for s in steps {
        match *s {
            Step::Send(a, b) => {
                let from = a % n;
                let to = (from + 1 + b % (n - 1)) % n;
                let id = dest.len();
                sent_past.push(past[from].clone());
                dest.push(to);
                past[from].insert(id);
                let stamp = nodes[from].stamp(100 + to as u64);
                flight.push(InFlight { id, to, stamp });
            }
            Step::Arrive(b) if !flight.is_empty() => {
                let k = b % flight.len();
                arrive(k, &mut flight, &mut nodes, &mut past, &mut delivered, &sent_past, &dest)?;
            }
            Step::Arrive(_) => {}
            Step::Repeat(b) if !flight.is_empty() => {
                let copy = flight[b % flight.len()].clone();
                copies += 1;
                flight.push(copy);
            }
            Step::Repeat(_) => {}
        }
    }
    let mut i = 0;
    while !flight.is_empty() {
        let k = drain.get(i).copied().unwrap_or(0) % flight.len();
        i += 1;
        arrive(k, &mut flight, &mut nodes, &mut past, &mut delivered, &sent_past, &dest)?;
    }
    for (i, node) in nodes.iter().enumerate() {
        prop_assert_eq!(node.held(), 0, "node {} still holds messages with nothing in flight", i);
    }
    let total: usize = delivered.iter().map(BTreeSet::len).sum();
    prop_assert_eq!(total, dest.len(), "every message delivered once");
    let dups: u64 = nodes.iter().map(|n| n.stats().duplicates).sum();
    prop_assert_eq!(dups, copies, "every repeated copy dropped and counted");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn no_message_is_delivered_before_one_it_depends_on(
        n in 2usize..6,
        steps in steps(),
        drain in prop::collection::vec(any::<usize>(), 0..400),
    ) {
        run(n, &steps, &drain)?;
    }
}

#[test]
fn a_chain_through_a_third_node_waits_for_its_cause() {
    // a -> c (m1), a -> b (m2), b -> c (m3, caused by m2): c gets m3 first and must hold it.
    let (mut a, mut b, mut c) = (CausalOrder::<usize>::new(1, 8), CausalOrder::new(2, 8), CausalOrder::new(3, 8));
    let m1 = a.stamp(3);
    let m2 = a.stamp(2);
    assert_eq!(b.receive(m2, 2).unwrap(), vec![2]);
    let m3 = b.stamp(3);
    assert!(c.receive(m3, 3).unwrap().is_empty());
    assert_eq!(c.held(), 1);
    assert_eq!(c.receive(m1, 1).unwrap(), vec![1, 3], "m1 releases m3");
    assert_eq!(c.stats().waited, 1);
}

#[test]
fn messages_from_one_sender_to_one_receiver_keep_their_order() {
    let (mut a, mut b) = (CausalOrder::<usize>::new(1, 8), CausalOrder::new(2, 8));
    let stamps: Vec<Stamp> = (0..4).map(|_| a.stamp(2)).collect();
    let mut got = Vec::new();
    for (i, s) in stamps.into_iter().enumerate().rev() {
        got.extend(b.receive(s, i).unwrap());
    }
    assert_eq!(got, vec![0, 1, 2, 3]);
}

#[test]
fn a_full_hold_refuses_and_counts() {
    let (mut a, mut b) = (CausalOrder::<usize>::new(1, 1), CausalOrder::new(2, 1));
    let stamps: Vec<Stamp> = (0..3).map(|_| a.stamp(2)).collect();
    let mut it = stamps.into_iter();
    let (s0, s1, s2) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    assert!(b.receive(s2, 2).unwrap().is_empty());
    let refused = b.receive(s1, 1).unwrap_err();
    assert_eq!(refused.held, 1);
    assert_eq!(b.stats().refused, 1);
    // The refused message is gone, so the one after it stays held: the caller reports both.
    assert_eq!(b.receive(s0, 0).unwrap(), vec![0]);
    assert_eq!(b.held(), 1);
}

#[test]
fn a_send_that_fails_leaves_no_trace() {
    let (mut a, mut b) = (CausalOrder::<usize>::new(1, 8), CausalOrder::<usize>::new(2, 8));
    let failed: Result<(), &str> = a.stamp_with(2, |_| Err("buffer full"));
    assert!(failed.is_err());
    assert_eq!(a.stats().stamped, 0);
    // Had the failed send counted, this message would wait for it for ever.
    let s = a.stamp(2);
    assert_eq!(b.receive(s, 7).unwrap(), vec![7]);
}
