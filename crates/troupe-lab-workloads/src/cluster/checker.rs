//! The cluster checker (docs/nemesis-cluster.md): what troupe-cluster's membership promises,
//! read from every node's membership table (`status`), polled in rounds during the window and
//! after the final heal.
//!
//! A round reads the nodes one after another within a few milliseconds: it is not an atomic
//! snapshot of the cluster, so the checks compare only what one table can show by itself, or
//! tables that are identical.
//!
//! Rules (each a guarantee; a broken one fails the checker with its evidence):
//! 1. Convergence (`not_converged`): in the final round, read after the final heal within the
//!    bound, every node answered with a converged table of exactly `nodes` members, every one
//!    `up` and reachable, and every node's table lists the same members (address and
//!    incarnation): one cluster, no live node left down, removed or unreachable in anyone's
//!    view, no side of a split brain surviving. A node killed and started again (or downed
//!    and rejoined) is in it as its newest incarnation.
//! 2. One leader per view (`two_leaders`): in every round, two nodes whose tables are
//!    converged and identical (address, incarnation, status and reachability of every member)
//!    report the same leader. The leader is a function of the table, so two answers that
//!    differ here mean one node reports a leader its own state does not give.
//! 3. A leader of the table (`leader_not_member`): a leader a node reports with a converged
//!    table is a reachable member of that table whose status is joining, up or leaving.
//! 4. Expected, counted and not failing: `concurrent_leaders`, rounds in which nodes with
//!    different converged tables reported different leaders (each side of a partition has
//!    one, as in Akka, until downing resolves it); `new_incarnation`, members that appear
//!    with a later incarnation than first seen (a restart or a rejoin); `no_member`, rounds in
//!    which some node answered and none was a member (phase `member`): the cluster was gone
//!    for the time of that round (every node downed or rejoining), which the final round alone
//!    would not show.
//!
//! Not checkable from what troupe-cluster exposes: which leader *acted* (moved a member to up
//! or removed it) — the table reports who the leader is, not what it did — so "two leaders
//! acting at once" is checked as rule 2 states it, not as actions.

use std::collections::{BTreeMap, BTreeSet};

use troupe_cluster::{MemberStatus, Status};
use troupe_lab::history::{Op, Verdict};

/// One round: each node's table (`None`: no answer), by node index.
pub type Round = Vec<Option<Status>>;

/// The identity of a converged table (rule 2): every member's address, incarnation, status
/// and reachability.
type View = Vec<(String, u64, MemberStatus, bool)>;

fn view(s: &Status) -> View {
    s.members.iter().map(|m| (m.addr.clone(), m.uid, m.status, m.reachable)).collect()
}

/// Rules 2-3 for one round.
fn check_round(v: &mut Verdict, r: usize, round: &Round) {
    let converged: Vec<(usize, &Status)> =
        round.iter().enumerate().filter_map(|(i, s)| s.as_ref().filter(|s| s.converged).map(|s| (i, s))).collect();
    let mut by_view: BTreeMap<View, Vec<(usize, &Status)>> = BTreeMap::new();
    for &(i, s) in &converged {
        by_view.entry(view(s)).or_default().push((i, s));
        if let Some(l) = &s.leader {
            let ok = s.members.iter().any(|m| {
                &m.addr == l
                    && m.reachable
                    && matches!(m.status, MemberStatus::Joining | MemberStatus::Up | MemberStatus::Leaving)
            });
            if !ok {
                v.broken("leader_not_member", || {
                    format!(
                        "round {r}: node-{i} ({}) reports leader {l}, not a reachable live member of its table",
                        s.node
                    )
                });
            }
        }
    }
    for group in by_view.values() {
        let leaders: BTreeSet<&Option<String>> = group.iter().map(|(_, s)| &s.leader).collect();
        if leaders.len() > 1 {
            v.broken("two_leaders", || {
                let each: Vec<String> = group.iter().map(|(i, s)| format!("node-{i} says {:?}", s.leader)).collect();
                format!("round {r}: nodes with the same converged table report different leaders: {}", each.join(", "))
            });
        }
    }
    if round.iter().any(Option::is_some) && round.iter().flatten().all(|s| s.phase != "member") {
        v.count("no_member");
    }
    let leaders: BTreeSet<&String> = converged.iter().filter_map(|(_, s)| s.leader.as_ref()).collect();
    if by_view.len() > 1 && leaders.len() > 1 {
        v.count("concurrent_leaders");
    }
}

/// Rule 1 over the final round.
fn check_final(v: &mut Verdict, last: &Round, nodes: u32) {
    let n = nodes as usize;
    let mut problems = Vec::new();
    if last.len() != n {
        problems.push(format!("{} of {n} nodes in the final round", last.len()));
    }
    let mut views = BTreeSet::new();
    for (i, s) in last.iter().enumerate() {
        let Some(s) = s else {
            problems.push(format!("node-{i} did not answer"));
            continue;
        };
        if !crate::nodeset::all_up(s, n) {
            let rows: Vec<String> = s
                .members
                .iter()
                .map(|m| format!("{} {}{}", m.addr, m.status.as_str(), if m.reachable { "" } else { " unreachable" }))
                .collect();
            problems.push(format!(
                "node-{i} ({}, {}) sees [{}], converged {}",
                s.node,
                s.phase,
                rows.join(", "),
                s.converged
            ));
        }
        views.insert(s.members.iter().map(|m| (m.addr.clone(), m.uid)).collect::<Vec<_>>());
    }
    if views.len() > 1 {
        problems.push(format!("{} different member lists", views.len()));
    }
    if !problems.is_empty() {
        v.converged_ms = None;
        v.broken("not_converged", || format!("after the final heal: {}", problems.join("; ")));
    }
}

/// Rule 4's `new_incarnation`: members seen with a later incarnation than first seen.
fn count_incarnations(v: &mut Verdict, rounds: &[Round]) {
    let mut seen: BTreeMap<&str, BTreeSet<u64>> = BTreeMap::new();
    for s in rounds.iter().flatten().flatten() {
        for m in &s.members {
            seen.entry(&m.addr).or_default().insert(m.uid);
        }
    }
    for uids in seen.values() {
        for _ in 1..uids.len() {
            v.count("new_incarnation");
        }
    }
}

/// Rules 1-4: `ops` is the history (status polls and events), `rounds` the polled tables in
/// time order, the last one read after the final heal.
pub fn check(ops: &[Op], rounds: &[Round], nodes: u32, converged_ms: Option<f64>) -> Verdict {
    let mut v = Verdict::of(ops);
    v.converged_ms = converged_ms;
    for (r, round) in rounds.iter().enumerate() {
        check_round(&mut v, r, round);
    }
    count_incarnations(&mut v, rounds);
    match rounds.last() {
        Some(last) if converged_ms.is_some() => check_final(&mut v, last, nodes),
        Some(last) => {
            check_final(&mut v, last, nodes);
            if v.pass() {
                v.broken("not_converged", || "membership did not converge within the bound".into());
            }
        }
        None => v.broken("not_converged", || "no round was read".into()),
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_cluster::MemberRow;

    fn row(i: u32, uid: u64, status: MemberStatus, reachable: bool) -> MemberRow {
        MemberRow { addr: format!("10.0.0.{i}:1"), name: format!("node-{i}"), uid, status, up_number: 0, reachable }
    }

    fn status(me: u32, leader: u32, members: Vec<MemberRow>, converged: bool) -> Status {
        Status {
            node: format!("10.0.0.{me}:1"),
            cluster: "c".into(),
            phase: "member".into(),
            leader: Some(format!("10.0.0.{leader}:1")),
            converged,
            members,
        }
    }

    fn healthy(n: u32) -> Round {
        let members: Vec<MemberRow> = (0..n).map(|i| row(i, 1, MemberStatus::Up, true)).collect();
        (0..n).map(|i| Some(status(i, 0, members.clone(), true))).collect()
    }

    #[test]
    fn rule1_a_healthy_final_round_passes_and_one_left_out_fails() {
        assert!(check(&[], &[healthy(3)], 3, Some(10.0)).pass());
        let mut last = healthy(3);
        if let Some(s) = last[2].as_mut() {
            s.members[1].status = MemberStatus::Down;
        }
        let v = check(&[], &[healthy(3), last], 3, Some(10.0));
        assert!(v.counterexample.as_deref().unwrap().starts_with("not_converged"), "{v:?}");
        assert_eq!(v.converged_ms, None);
    }

    #[test]
    fn rule1_two_clusters_after_the_heal_fail() {
        let a: Vec<MemberRow> = (0..2).map(|i| row(i, 1, MemberStatus::Up, true)).collect();
        let b = vec![row(2, 1, MemberStatus::Up, true)];
        let split = vec![Some(status(0, 0, a.clone(), true)), Some(status(1, 0, a, true)), Some(status(2, 2, b, true))];
        assert!(!check(&[], &[split], 3, Some(10.0)).pass());
        assert!(!check(&[], &[healthy(3)], 3, None).pass(), "not within the bound");
    }

    #[test]
    fn rule1_a_new_incarnation_everywhere_passes_and_is_counted() {
        let mut last = healthy(3);
        for s in last.iter_mut().flatten() {
            s.members[1].uid = 2;
        }
        let v = check(&[], &[healthy(3), last], 3, Some(10.0));
        assert!(v.pass(), "{v:?}");
        assert_eq!(v.anomalies.get("new_incarnation"), Some(&1));
        let mut stale = healthy(3);
        if let Some(s) = stale[0].as_mut() {
            s.members[1].uid = 2;
        }
        assert!(!check(&[], &[stale], 3, Some(10.0)).pass(), "node-0 sees another incarnation than the others");
    }

    #[test]
    fn rule2_nodes_with_the_same_table_and_different_leaders_fail() {
        let mut r = healthy(3);
        if let Some(s) = r[1].as_mut() {
            s.leader = Some(s.node.clone());
        }
        let v = check(&[], &[r, healthy(3)], 3, Some(1.0));
        assert!(v.counterexample.as_deref().unwrap().starts_with("two_leaders"), "{v:?}");
    }

    #[test]
    fn rule2_unconverged_tables_are_not_compared() {
        let mut r = healthy(3);
        if let Some(s) = r[1].as_mut() {
            s.leader = Some(s.node.clone());
            s.converged = false;
        }
        assert!(check(&[], &[r, healthy(3)], 3, Some(1.0)).pass());
    }

    #[test]
    fn rule3_a_leader_outside_its_table_fails() {
        let mut r = healthy(3);
        for s in r.iter_mut().flatten() {
            s.leader = Some("10.0.0.9:1".into());
        }
        let v = check(&[], &[r, healthy(3)], 3, Some(1.0));
        assert!(v.counterexample.as_deref().unwrap().starts_with("leader_not_member"), "{v:?}");
    }

    #[test]
    fn rule4_a_round_in_which_no_node_is_a_member_is_counted() {
        let mut gone = healthy(3);
        for s in gone.iter_mut().flatten() {
            s.phase = "joining".into();
            s.converged = false;
        }
        gone[1] = None;
        let v = check(&[], &[healthy(3), gone, healthy(3)], 3, Some(1.0));
        assert!(v.pass(), "{v:?}");
        assert_eq!(v.anomalies.get("no_member"), Some(&1));
    }

    #[test]
    fn rule4_each_side_of_a_partition_with_its_leader_is_counted_not_failed() {
        let side_a: Vec<MemberRow> = vec![
            row(0, 1, MemberStatus::Up, true),
            row(1, 1, MemberStatus::Up, true),
            row(2, 1, MemberStatus::Up, false),
        ];
        let side_b: Vec<MemberRow> = vec![
            row(0, 1, MemberStatus::Up, false),
            row(1, 1, MemberStatus::Up, false),
            row(2, 1, MemberStatus::Up, true),
        ];
        let r = vec![
            Some(status(0, 0, side_a.clone(), true)),
            Some(status(1, 0, side_a, true)),
            Some(status(2, 2, side_b, true)),
        ];
        let v = check(&[], &[r, healthy(3)], 3, Some(1.0));
        assert!(v.pass(), "{v:?}");
        assert_eq!(v.anomalies.get("concurrent_leaders"), Some(&1));
    }
}
