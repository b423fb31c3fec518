//! A 3+2 partition of a 5-node cluster made in the network, not in the nodes: each node runs
//! in a network namespace this test creates (10.232.N.i on one bridge, in a namespace of its
//! own), and the partition is a set of blackhole routes on each side. keep-majority downs the
//! two, the three stay up, nothing else is downed; removing the routes heals it and the two
//! rejoin. Needs root and iproute2. Without them the test says so and passes without running,
//! unless TROUPE_TEST_REQUIRE_NETNS=1 (set by scripts/test.sh when it runs as root), which
//! makes a missing capability a failure.

mod support;

use std::process::Command;
use std::time::Duration;

use support::{all_up, cluster_lines, count, start_in, Proc, SECRET};

const LONG: Duration = Duration::from_secs(90);

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip {args:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {args:?}: {}", String::from_utf8_lossy(&out.stderr).trim()))
    }
}

struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for ns in &self.0 {
            let _ = ip(&["netns", "del", ns]);
        }
    }
}

fn skip_or_fail(why: &str) {
    if std::env::var("TROUPE_TEST_REQUIRE_NETNS").is_ok_and(|v| v == "1") {
        panic!("network namespaces required (TROUPE_TEST_REQUIRE_NETNS=1) but unavailable: {why}");
    }
    eprintln!("SKIPPED a_partition_in_the_network...: {why}; run as root with iproute2");
}

#[test]
fn a_partition_in_the_network_downs_the_minority_under_keep_majority_and_heals() {
    let _serial = support::serial();
    let id = std::process::id() % 100_000;
    let switch = format!("tcs-{id}");
    if let Err(e) = ip(&["netns", "add", &switch]) {
        return skip_or_fail(&format!("cannot create a network namespace ({e})"));
    }
    let mut guard = Namespaces(vec![switch.clone()]);
    let net = 1 + id % 250;
    let addr = |i: usize| format!("10.232.{net}.{i}");
    let ns_of = |i: usize| format!("tcn{i}-{id}");
    let setup = |guard: &mut Namespaces| -> Result<(), String> {
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &switch, "link", "set", "br0", "up"])?;
        for i in 1..=5 {
            let ns = ns_of(i);
            ip(&["netns", "add", &ns])?;
            guard.0.push(ns.clone());
            let (inner, outer) = (format!("tcv{i}{id}"), format!("tcp{i}{id}"));
            ip(&["-n", &ns, "link", "add", &inner, "type", "veth", "peer", "name", &outer, "netns", &switch])?;
            ip(&["-n", &switch, "link", "set", &outer, "master", "br0"])?;
            ip(&["-n", &switch, "link", "set", &outer, "up"])?;
            ip(&["-n", &ns, "addr", "add", &format!("{}/24", addr(i)), "dev", &inner])?;
            ip(&["-n", &ns, "link", "set", &inner, "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(())
    };
    if let Err(e) = setup(&mut guard) {
        return skip_or_fail(&format!("bridge/veth setup failed ({e})"));
    }
    let more = "downing = \"keep-majority\"\nrejoin_when_downed = true\n";
    let listen = |i: usize| format!("{}:7300", addr(i));
    let mut nodes: Vec<Proc> = Vec::new();
    for i in 1..=5 {
        let seed = (i > 1).then(|| listen(1));
        let lines = cluster_lines(seed.as_deref(), more);
        nodes.push(start_in(Some(&ns_of(i)), &format!("n{i}"), &listen(i), "", &lines, SECRET));
    }
    for p in &mut nodes {
        p.wait_status("all five up", |s| all_up(s, 5), LONG);
    }
    let (major, minor) = ([1usize, 2, 3], [4usize, 5]);
    let routes = |verb: &str| -> Result<(), String> {
        for &a in &major {
            for &b in &minor {
                ip(&["-n", &ns_of(a), "route", verb, "blackhole", &format!("{}/32", addr(b))])?;
                ip(&["-n", &ns_of(b), "route", verb, "blackhole", &format!("{}/32", addr(a))])?;
            }
        }
        Ok(())
    };
    routes("add").expect("blackhole routes");
    for &a in &major {
        for &b in &minor {
            nodes[a - 1].wait_event("member_downed", &listen(b), LONG);
        }
    }
    for &b in &minor {
        nodes[b - 1].wait_event("member_downed", &listen(b), LONG);
    }
    for &a in &major {
        let s =
            nodes[a - 1].wait_status("the three converged", |s| count(s, "up") == 3 && s["converged"] == true, LONG);
        assert_eq!(count(&s, "up"), 3);
        for &m in &major {
            assert!(!nodes[a - 1].saw("member_downed", &listen(m)), "nothing of the majority is downed");
        }
    }
    routes("del").expect("routes removed");
    for p in &mut nodes {
        p.wait_status("all five up after the heal", |s| all_up(s, 5), LONG);
    }
}
