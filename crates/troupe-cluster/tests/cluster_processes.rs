//! The cluster with real `troupe-cluster-node` processes on loopback: formation from one seed,
//! SIGKILL detection and keep-majority downing (with the dead node's remote monitors firing),
//! SIGSTOP/SIGCONT without a strategy, a 3+2 partition, and refused joins.
//!
//! Partitions use the node layer's built-in partition fault (`partition ADDR` on each side),
//! not network namespaces: these tests run unprivileged.

mod support;

use std::time::Duration;

use support::{all_up, cluster, cluster_lines, count, is_event, start, SECRET};
use troupe::{Actor, Ctx, Down};

const LONG: Duration = Duration::from_secs(60);

struct Watcher(troupe::AnyRef, std::sync::mpsc::Sender<String>);

impl Actor for Watcher {
    type Msg = ();
    async fn started(&mut self, ctx: &mut Ctx<Self>) -> Result<(), troupe::ActorError> {
        ctx.monitor(&self.0);
        Ok(())
    }
    async fn handle(&mut self, (): (), _: &mut Ctx<Self>) {}
    async fn on_down(&mut self, down: Down, _: &mut Ctx<Self>) {
        let _ = self.1.send(format!("{:?}", down.reason));
    }
}

#[test]
fn five_processes_form_a_cluster_and_a_sigkilled_one_is_downed_under_keep_majority() {
    let _serial = support::serial();
    let mut nodes = cluster(5, "downing = \"keep-majority\"\n", "services = [\"echo\"]");
    // A remote monitor on an actor of the node about to die, from a sixth (non-member) node.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let victim = nodes[4].addr.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let watcher_node = rt.block_on(async {
        let n = troupe_remote::Node::start(troupe_remote::NodeConfig::new("watcher", SECRET)).await.unwrap();
        let echo = n.lookup::<troupe_remote::services::Echo>(&victim, "echo").await.unwrap();
        troupe::spawn(Watcher(echo.any(), tx));
        n
    });
    nodes[4].signal(libc::SIGKILL);
    for p in nodes.iter_mut().take(4) {
        p.wait_event("unreachable", &victim, LONG);
        p.wait_event("member_downed", &victim, LONG);
        p.wait_event("member_removed", &victim, LONG);
    }
    for p in nodes.iter_mut().take(4) {
        let s = p.wait_status("four members up", |s| all_up(s, 4), LONG);
        assert_eq!(count(&s, "up"), 4);
        let downed: Vec<&String> = p.seen.iter().filter(|l| is_event(l, "member_downed", "")).collect();
        assert!(downed.iter().all(|l| l.contains(&victim)), "only the killed node is downed: {downed:?}");
    }
    let reason = rx.recv_timeout(LONG).expect("the remote monitor fired");
    assert!(reason.contains("NoConnection"), "the dead node's actor is reported unreachable: {reason}");
    watcher_node.shutdown();
}

#[test]
fn a_sigstopped_member_is_unreachable_then_reachable_and_nothing_is_downed_without_a_strategy() {
    let _serial = support::serial();
    let mut nodes = cluster(3, "", "");
    let frozen = nodes[2].addr.clone();
    nodes[2].signal(libc::SIGSTOP);
    for p in nodes.iter_mut().take(2) {
        p.wait_event("unreachable", &frozen, LONG);
    }
    nodes[2].signal(libc::SIGCONT);
    for p in nodes.iter_mut().take(2) {
        p.wait_event("reachable", &frozen, LONG);
        p.wait_status("all up again", |s| all_up(s, 3), LONG);
        assert!(!p.seen.iter().any(|l| is_event(l, "member_downed", "")), "no downing strategy: nothing downed");
    }
}

#[test]
fn a_three_two_partition_downs_the_two_under_keep_majority_and_they_rejoin_after_the_heal() {
    let _serial = support::serial();
    let mut nodes = cluster(5, "downing = \"keep-majority\"\nrejoin_when_downed = true\n", "");
    let addrs: Vec<String> = nodes.iter().map(|p| p.addr.clone()).collect();
    let (major, minor) = ([0usize, 1, 2], [3usize, 4]);
    for &a in &major {
        for &b in &minor {
            let (x, y) = (addrs[a].clone(), addrs[b].clone());
            nodes[a].ask(&format!("partition {y}"), "partitioned");
            nodes[b].ask(&format!("partition {x}"), "partitioned");
        }
    }
    for &a in &major {
        for &b in &minor {
            nodes[a].wait_event("member_downed", &addrs[b], LONG);
        }
    }
    for &b in &minor {
        nodes[b].wait_event("member_downed", &addrs[b].clone(), LONG);
    }
    for &a in &major {
        let s = nodes[a].wait_status("the majority converged", |s| count(s, "up") == 3 && s["converged"] == true, LONG);
        assert_eq!(count(&s, "up"), 3, "the majority stays up");
        for &m in &major {
            assert!(!nodes[a].saw("member_downed", &addrs[m]), "nothing of the majority is downed");
        }
    }
    for &a in &major {
        for &b in &minor {
            let (x, y) = (addrs[a].clone(), addrs[b].clone());
            nodes[a].ask(&format!("heal {y}"), "healed");
            nodes[b].ask(&format!("heal {x}"), "healed");
        }
    }
    for p in &mut nodes {
        p.wait_status("all five up after the heal", |s| all_up(s, 5), LONG);
    }
}

#[test]
fn joins_with_another_cluster_name_or_a_wrong_secret_are_refused_and_never_listed() {
    let _serial = support::serial();
    let mut first = start("seed", "", &cluster_lines(None, ""), SECRET);
    let seed = first.addr.clone();
    first.wait_status("the seed is up", |s| all_up(s, 1), LONG);
    let mut other = start("other", "", &cluster_lines(Some(&seed), "name = \"another\"\n"), SECRET);
    other.wait_line(|l| is_event(l, "join_refused", "") && l.contains("another"), LONG);
    first.wait_line(|l| is_event(l, "refused", "") && l.contains("another"), LONG);
    let mut intruder = start("intruder", "", &cluster_lines(Some(&seed), ""), "not-the-secret");
    intruder.wait_line(|l| is_event(l, "join_retry", ""), LONG);
    let s = first.status();
    assert_eq!(s["members"].as_array().unwrap().len(), 1, "neither appears in the table: {s:#}");
    let stats = {
        first.cmd("stats");
        let l = first.wait_line(|l| l.starts_with("stats "), LONG);
        serde_json::from_str::<serde_json::Value>(&l[6..]).unwrap()
    };
    assert!(stats["auth_failures"].as_u64().unwrap() > 0, "the wrong secret failed the handshake: {stats}");
}

#[test]
fn a_node_whose_seeds_do_not_answer_retries_with_backoff_and_says_so() {
    let _serial = support::serial();
    // Port 9 (discard) on loopback: nothing listens there in a test machine.
    let mut lonely = start("lonely", "", &cluster_lines(Some("127.0.0.1:9"), ""), SECRET);
    let waits: Vec<u64> = (0..3)
        .map(|_| {
            let l = lonely.wait_line(|l| is_event(l, "join_retry", ""), LONG);
            let v: serde_json::Value = serde_json::from_str(&l[6..]).unwrap();
            v["next_in_ms"].as_u64().unwrap()
        })
        .collect();
    assert!(waits.windows(2).all(|w| w[1] >= w[0]) && waits[2] > waits[0], "backoff grows: {waits:?}");
    assert!(lonely.status()["phase"] == "joining");
}

#[test]
fn status_from_outside_and_the_receptionist_and_names_across_processes() {
    let _serial = support::serial();
    let mut nodes = cluster(3, "", "");
    let s = troupe_cluster::cli::status_main(&nodes[0].addr, SECRET, Duration::from_secs(20)).expect("status");
    assert_eq!(s.count(troupe_cluster::MemberStatus::Up), 3);
    assert!(s.report().contains(&nodes[2].addr));
    let e = troupe_cluster::cli::status_main(&nodes[0].addr, "wrong", Duration::from_secs(5)).unwrap_err().to_string();
    assert!(e.contains("secret") || e.contains("answer"), "{e}");
    nodes[1].ask("register jobs", "registered jobs");
    nodes[2].ask("register jobs", "registered jobs");
    let want = {
        let mut v = [nodes[1].addr.clone(), nodes[2].addr.clone()];
        v.sort();
        v.join(" ")
    };
    let end = std::time::Instant::now() + LONG;
    loop {
        let l = nodes[0].ask("find jobs", "found jobs");
        if l == format!("found jobs 2 {want}") {
            break;
        }
        assert!(std::time::Instant::now() < end, "registrations never arrived: {l}");
        nodes[0].try_wait_line(|l| l.starts_with("event "), Duration::from_millis(200));
    }
    nodes[1].ask("register-name boss", "registered-name boss");
    let l = nodes[2].ask("register-name boss", "");
    assert!(l.contains("error") || l.contains("registered-name"), "{l}");
    let end = std::time::Instant::now() + LONG;
    loop {
        let a = nodes[0].ask("whereis boss", "whereis boss");
        let b = nodes[2].ask("whereis boss", "whereis boss");
        if a == b && !a.ends_with("none") {
            break;
        }
        assert!(std::time::Instant::now() < end, "the name never resolved to one holder: {a} / {b}");
        nodes[0].try_wait_line(|l| l.starts_with("event "), Duration::from_millis(200));
    }
}

#[test]
fn a_member_told_to_stop_with_sigterm_leaves_instead_of_failing() {
    let _serial = support::serial();
    let mut nodes = cluster(3, "downing = \"keep-majority\"\n", "");
    let leaver = nodes[2].addr.clone();
    nodes[2].signal(libc::SIGTERM);
    for p in nodes.iter_mut().take(2) {
        p.wait_event("member_removed", &leaver, LONG);
        assert!(p.saw("member_left", &leaver), "it left: {:?}", p.seen);
        assert!(!p.saw("unreachable", &leaver) && !p.saw("member_downed", &leaver), "it did not fail");
    }
    let st = nodes[2].child.wait().expect("the node exits");
    assert!(st.success(), "{st:?}");
}
