//! Live overlays with real `troupe-cluster-node` processes on loopback: the same commands
//! (`overlay-send`, `overlay-broadcast`, ...) under client-server, static and HyParView,
//! only the `[overlay]` section changing; connection restriction checked against each node's
//! own list of connections; a SIGKILLed HyParView node healed around. Rule numbers are those
//! of `overlay/live/driver/mod.rs` (D), `overlay/live/route.rs` (R) and `overlay/hyparview.rs` (H).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;
use troupe_cluster::testproc::NodeProc as Proc;

const SECRET: &str = "overlay-test-secret";
const LONG: Duration = Duration::from_secs(60);

static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The tests of this file run one at a time (a loaded 2-core machine runs 8 processes, not 20).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn start(name: &str, overlay: &str) -> Proc {
    let text = format!(
        "name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\n\
         heartbeat_interval_ms = 200\nheartbeat_timeout_ms = 3000\n[overlay]\ntick_ms = 50\n{overlay}\n"
    );
    Proc::start(env!("CARGO_BIN_EXE_troupe-cluster-node"), &[], &text)
}

fn status(p: &mut Proc) -> Value {
    let l = p.ask("overlay-status", "overlay-status ");
    serde_json::from_str(&l["overlay-status ".len()..]).expect("overlay-status answers JSON")
}

fn list(s: &Value, key: &str) -> BTreeSet<String> {
    s[key].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()).unwrap_or_default()
}

/// Asks for the overlay status until `pred` holds (bounded; panics naming `what`).
fn wait_status(p: &mut Proc, what: &str, pred: impl Fn(&Value) -> bool, limit: Duration) -> Value {
    let end = Instant::now() + limit;
    loop {
        let s = status(p);
        if pred(&s) {
            return s;
        }
        assert!(Instant::now() < end, "node {}: {what} not reached within {limit:?}; last status: {s:#}", p.name);
        p.try_wait_line(|l| l.starts_with("event "), Duration::from_millis(200));
    }
}

fn is_delivery(line: &str, text: &str) -> Option<Value> {
    let v: Value = serde_json::from_str(line.strip_prefix("event ")?).ok()?;
    (v["ev"] == "overlay_delivery" && v["text"] == text).then_some(v)
}

/// Waits (bounded) for the delivery of the message `text`, and returns its event.
fn wait_delivery(p: &mut Proc, text: &str) -> Value {
    if let Some(v) = p.seen.iter().find_map(|l| is_delivery(l, text)) {
        return v;
    }
    let t = text.to_owned();
    let line = p.wait_line(move |l| is_delivery(l, &t).is_some(), LONG);
    is_delivery(&line, text).expect("matched")
}

/// Waits (bounded) until every node delivered `text`; on timeout panics with every node's
/// overlay status (views, eager peers, connections) and whether it delivered, so a missed
/// delivery can be traced to the link that lost it.
fn wait_delivery_everywhere(nodes: &mut [Proc], text: &str) {
    let end = Instant::now() + LONG;
    let has = |p: &Proc| p.seen.iter().any(|l| is_delivery(l, text).is_some());
    while Instant::now() < end && !nodes.iter().all(has) {
        for p in nodes.iter_mut().filter(|p| !has(p)) {
            let t = text.to_owned();
            p.try_wait_line(move |l| is_delivery(l, &t).is_some(), Duration::from_millis(100));
        }
    }
    if nodes.iter().all(has) {
        return;
    }
    let report: Vec<String> = nodes
        .iter_mut()
        .map(|p| {
            let delivered = has(p);
            let st = status(p);
            format!("{} {} delivered={delivered}: {st}", p.name, p.addr)
        })
        .collect();
    panic!("{text:?} not delivered everywhere within {LONG:?}:\n{}", report.join("\n"));
}

fn subscribe_all(nodes: &mut [Proc], topic: &str) {
    for p in nodes.iter_mut() {
        p.ask(&format!("overlay-subscribe {topic}"), "overlay-subscribed");
    }
}

#[test]
fn client_server_clients_hold_no_link_to_each_other_and_reach_each_other_through_the_server() {
    let _serial = serial();
    let mut s = start("s1", "kind = \"client_server\"\nrole = \"server\"");
    let servers = format!("kind = \"client_server\"\nrole = \"client\"\nservers = [\"s1@{}\"]", s.addr);
    let mut clients: Vec<Proc> = (1..=3).map(|i| start(&format!("c{i}"), &servers)).collect();
    let addrs: BTreeSet<String> = clients.iter().map(|c| c.addr.clone()).collect();
    // D rule 2: the server counts every client that said Hello as a neighbour.
    wait_status(&mut s, "three clients", |st| list(st, "neighbours") == addrs, LONG);
    let mut all: Vec<Proc> = vec![s];
    all.append(&mut clients);
    subscribe_all(&mut all, "news");
    let (c2, c3) = (all[2].addr.clone(), all[3].addr.clone());
    // R rules 3 and 4: client to client goes through the server (two hops).
    all[1].ask(&format!("overlay-send {c2} inbox hello-c2"), "overlay-sent");
    let d = wait_delivery(&mut all[2], "hello-c2");
    assert_eq!(d["origin"], all[1].addr.as_str());
    assert_eq!(d["hops"], 2, "client -> server -> client: {d}");
    all[3].ask(&format!("overlay-send {c2} inbox from-c3"), "overlay-sent");
    wait_delivery(&mut all[2], "from-c3");
    // A broadcast from a client reaches the server and every client (itself included).
    all[1].ask("overlay-broadcast news b-from-c1", "overlay-broadcast");
    for p in &mut all {
        wait_delivery(p, "b-from-c1");
    }
    assert!(!all[3].seen.iter().any(|l| is_delivery(l, "hello-c2").is_some()), "a unicast reaches only its target");
    // D rule 2 and service rule 3: a client is connected to the server only.
    let server = all[0].addr.clone();
    for c in all.iter_mut().skip(1) {
        let st = status(c);
        assert_eq!(list(&st, "connected"), BTreeSet::from([server.clone()]), "{}: {st:#}", c.name);
        assert_eq!(list(&st, "neighbours"), BTreeSet::from([server.clone()]));
    }
    let st = status(&mut all[0]);
    assert!(list(&st, "connected").iter().all(|a| addrs.contains(a)), "{st:#}");
    let _ = c3;
}

#[test]
fn full_mesh_is_the_default_and_every_member_learns_every_other_and_sends_straight() {
    let _serial = serial();
    let first = start("m1", "");
    let contact = format!("contacts = [\"m1@{}\"]", first.addr);
    let mut nodes = vec![first];
    for i in 2..=4 {
        nodes.push(start(&format!("m{i}"), &contact));
    }
    let all: BTreeSet<String> = nodes.iter().map(|p| p.addr.clone()).collect();
    // D rule 7: Hello spreads the member list; everyone ends up with everyone.
    for p in &mut nodes {
        let mut others = all.clone();
        others.remove(&p.addr);
        let st = wait_status(p, "every other member", move |s| list(s, "neighbours") == others, LONG);
        assert_eq!(st["kind"], "full_mesh");
    }
    subscribe_all(&mut nodes, "t");
    let m4 = nodes[3].addr.clone();
    // R rule 1: straight to the destination, one hop.
    nodes[1].ask(&format!("overlay-send {m4} inbox direct"), "overlay-sent");
    assert_eq!(wait_delivery(&mut nodes[3], "direct")["hops"], 1);
    nodes[2].ask("overlay-broadcast t to-everyone", "overlay-broadcast");
    for p in &mut nodes {
        let d = wait_delivery(p, "to-everyone");
        assert!(d["hops"] == 0 || d["hops"] == 1, "{d}");
    }
    // D rule 6: a killed member is forgotten by every other (and anti-entropy does not bring
    // it back: a Hello to it fails its probe).
    nodes[3].signal(libc::SIGKILL);
    let _ = nodes[3].child.wait();
    nodes.truncate(3);
    let live: BTreeSet<String> = nodes.iter().map(|p| p.addr.clone()).collect();
    for p in &mut nodes {
        let mut others = live.clone();
        others.remove(&p.addr);
        wait_status(p, "the killed member forgotten", move |s| list(s, "neighbours") == others, LONG);
    }
    nodes[0].ask("overlay-broadcast t after-a-death", "overlay-broadcast");
    for p in &mut nodes {
        wait_delivery(p, "after-a-death");
    }
}

#[test]
fn client_server_with_two_servers_forwards_between_servers() {
    let _serial = serial();
    let s1 = start("s1", "kind = \"client_server\"\nrole = \"server\"");
    let s2 = start("s2", &format!("kind = \"client_server\"\nrole = \"server\"\nservers = [\"s1@{}\"]", s1.addr));
    let ca = start("ca", &format!("kind = \"client_server\"\nservers = [\"s1@{}\"]", s1.addr));
    let cb = start("cb", &format!("kind = \"client_server\"\nservers = [\"s2@{}\"]", s2.addr));
    let mut nodes = vec![s1, s2, ca, cb];
    let a: Vec<String> = nodes.iter().map(|p| p.addr.clone()).collect();
    let (w0, w1) = (BTreeSet::from([a[1].clone(), a[2].clone()]), BTreeSet::from([a[0].clone(), a[3].clone()]));
    wait_status(&mut nodes[0], "s2 and ca", move |s| list(s, "neighbours") == w0, LONG);
    wait_status(&mut nodes[1], "s1 and cb", move |s| list(s, "neighbours") == w1, LONG);
    subscribe_all(&mut nodes, "t");
    // R rule 4: ca -> s1 -> s2 -> cb.
    nodes[2].ask(&format!("overlay-send {} inbox over-two-servers", a[3]), "overlay-sent");
    assert_eq!(wait_delivery(&mut nodes[3], "over-two-servers")["hops"], 3);
    nodes[3].ask("overlay-broadcast t from-cb", "overlay-broadcast");
    for p in &mut nodes {
        wait_delivery(p, "from-cb");
    }
    for i in [2, 3] {
        let server = a[i - 2].clone();
        let st = status(&mut nodes[i]);
        assert_eq!(list(&st, "connected"), BTreeSet::from([server]), "{st:#}");
    }
}

#[test]
fn static_nodes_connect_only_to_listed_peers_and_messages_cross_the_line() {
    let _serial = serial();
    // A line n1 - n2 - n3 - n4: each node lists the next one towards n3, n3 lists nobody.
    let n3 = start("n3", "kind = \"static\"");
    let n2 = start("n2", &format!("kind = \"static\"\npeers = [\"n3@{}\"]", n3.addr));
    let n1 = start("n1", &format!("kind = \"static\"\npeers = [\"n2@{}\"]", n2.addr));
    let n4 = start("n4", &format!("kind = \"static\"\npeers = [\"n3@{}\"]", n3.addr));
    let mut nodes = vec![n1, n2, n3, n4];
    let a: Vec<String> = nodes.iter().map(|p| p.addr.clone()).collect();
    let expect = [vec![1], vec![0, 2], vec![1, 3], vec![2]];
    for (i, want) in expect.iter().enumerate() {
        let want: BTreeSet<String> = want.iter().map(|j| a[*j].clone()).collect();
        let w = want.clone();
        wait_status(&mut nodes[i], "its static links", move |s| list(s, "neighbours") == w, LONG);
    }
    subscribe_all(&mut nodes, "t");
    // R rule 2: n1 to n4 floods over the links, three hops.
    nodes[0].ask(&format!("overlay-send n4@{} inbox across", a[3]), "overlay-sent");
    let d = wait_delivery(&mut nodes[3], "across");
    assert_eq!(d["hops"], 3, "{d}");
    nodes[3].ask("overlay-broadcast t bcast-from-n4", "overlay-broadcast");
    for p in &mut nodes {
        wait_delivery(p, "bcast-from-n4");
    }
    // Each node is connected to exactly its links (n1 only to n2, n4 only to n3).
    for (i, want) in expect.iter().enumerate() {
        let want: BTreeSet<String> = want.iter().map(|j| a[*j].clone()).collect();
        let st = status(&mut nodes[i]);
        assert_eq!(list(&st, "connected"), want, "{}: {st:#}", nodes[i].name);
    }
}

/// Whether the neighbour graph of `views` (node -> neighbours) is connected and symmetric.
fn connected_graph(views: &BTreeMap<String, BTreeSet<String>>) -> bool {
    let symmetric = views.iter().all(|(n, ns)| ns.iter().all(|m| views.get(m).is_some_and(|v| v.contains(n))));
    let Some(first) = views.keys().next() else { return false };
    let mut seen = BTreeSet::from([first.clone()]);
    let mut todo = vec![first.clone()];
    while let Some(n) = todo.pop() {
        for m in &views[&n] {
            if views.contains_key(m) && seen.insert(m.clone()) {
                todo.push(m.clone());
            }
        }
    }
    symmetric && seen.len() == views.len()
}

/// Polls every node's active view until the graph is connected and symmetric (bounded).
fn wait_overlay(nodes: &mut [&mut Proc], what: &str) -> BTreeMap<String, BTreeSet<String>> {
    let end = Instant::now() + LONG;
    loop {
        let views: BTreeMap<String, BTreeSet<String>> =
            nodes.iter_mut().map(|p| (p.addr.clone(), list(&status(p), "neighbours"))).collect();
        if connected_graph(&views) {
            return views;
        }
        assert!(Instant::now() < end, "{what}: the active views never formed one connected graph: {views:#?}");
        nodes[0].try_wait_line(|l| l.starts_with("event "), Duration::from_millis(300));
    }
}

#[test]
fn hyparview_delivers_every_broadcast_transitively_and_heals_around_a_killed_node() {
    let _serial = serial();
    let params = "kind = \"hyparview\"\nactive_size = 3\npassive_size = 6\nshuffle_interval_ms = 2000";
    let first = start("p0", params);
    let contact = format!("{params}\ncontacts = [\"p0@{}\"]", first.addr);
    let mut nodes = vec![first];
    for i in 1..7 {
        nodes.push(start(&format!("p{i}"), &contact));
    }
    let views = wait_overlay(&mut nodes.iter_mut().collect::<Vec<_>>(), "formation");
    eprintln!("active views after formation: {views:#?}");
    // H rule 1: no active view exceeds its size, so with 7 nodes some pairs are not linked.
    assert!(views.values().all(|v| v.len() <= 3), "{views:#?}");
    let origin = nodes[0].addr.clone();
    let far: Vec<String> = views.keys().filter(|n| **n != origin && !views[&origin].contains(*n)).cloned().collect();
    assert!(!far.is_empty(), "some node is not a neighbour of the origin: {views:#?}");
    // Service rule 3: each node ends up connected to its active view only (temporary
    // connections of shuffles and neighbour requests are closed after a grace period).
    let mut swept = 0;
    for p in &mut nodes {
        let s = wait_status(
            p,
            "connections only to the active view",
            |s| list(s, "connected") == list(s, "neighbours"),
            LONG,
        );
        swept += s["swept"].as_u64().unwrap_or(0);
    }
    // D rule 4 did the closing: p0 was connected to all six joiners (a join needs a
    // connection) and keeps at most three neighbours, so some connections were swept.
    assert!(swept >= 1, "connections to former neighbours are closed by the sweep");
    subscribe_all(&mut nodes, "t");
    nodes[0].ask("overlay-broadcast t first-broadcast", "overlay-broadcast");
    wait_delivery_everywhere(&mut nodes, "first-broadcast");
    // D rule 8: a unicast to a node outside the active view rides the tree.
    let target = far[0].clone();
    nodes[0].ask(&format!("overlay-send {target} inbox to-a-far-node"), "overlay-sent");
    let t = nodes.iter().position(|p| p.addr == target).expect("a node");
    wait_delivery(&mut nodes[t], "to-a-far-node");
    // H rule 5 and D rule 6: kill the best-connected node other than the origin; the others
    // heal their views around it and later broadcasts still reach every live node.
    let victim = (1..nodes.len()).max_by_key(|i| views[&nodes[*i].addr].len()).expect("nodes");
    let dead = nodes[victim].addr.clone();
    nodes[victim].signal(libc::SIGKILL);
    let _ = nodes[victim].child.wait();
    let mut live: Vec<Proc> = nodes.into_iter().enumerate().filter(|(i, _)| *i != victim).map(|(_, p)| p).collect();
    let healed = wait_overlay(&mut live.iter_mut().collect::<Vec<_>>(), "healing");
    eprintln!("killed {dead}; active views after healing: {healed:#?}");
    assert!(healed.values().all(|v| !v.contains(&dead)), "the dead node left every active view: {healed:#?}");
    live[1].ask("overlay-broadcast t after-the-kill", "overlay-broadcast");
    wait_delivery_everywhere(&mut live, "after-the-kill");
    // D rule 11: a node that quits tells its neighbours; they drop it and heal again.
    let leaver = live.len() - 1;
    let gone = live[leaver].addr.clone();
    live[leaver].cmd("quit");
    let _ = live[leaver].child.wait();
    live.truncate(leaver);
    let healed = wait_overlay(&mut live.iter_mut().collect::<Vec<_>>(), "after a leave");
    assert!(healed.values().all(|v| !v.contains(&gone)), "{healed:#?}");
    live[0].ask("overlay-broadcast t after-the-leave", "overlay-broadcast");
    wait_delivery_everywhere(&mut live, "after-the-leave");
}

#[test]
fn bad_overlay_configurations_are_refused_at_start_naming_the_key() {
    let cases = [
        ("kind = \"ring\"", "kind"),
        ("kind = \"hyparview\"\nactive_size = 0", "active_size"),
        ("kind = \"static\"\npeers = [\"n9\"]", "peers"),
        ("kind = \"client_server\"\nrole = \"client\"", "servers"),
    ];
    for (overlay, key) in cases {
        let path = std::env::temp_dir().join(format!("troupe-overlay-bad-{}-{key}.toml", std::process::id()));
        let text = format!("name = \"x\"\nsecret = \"s\"\nlisten = \"127.0.0.1:0\"\n[overlay]\n{overlay}\n");
        std::fs::write(&path, text).expect("write the config");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_troupe-cluster-node"))
            .arg("--config")
            .arg(&path)
            .output()
            .expect("run the node");
        let _ = std::fs::remove_file(&path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{overlay}: exit 2 on a bad configuration; stderr: {err}");
        assert!(err.contains(key) && err.contains("[overlay]"), "{overlay}: the error names {key}: {err}");
    }
}

/// Breadth-first hop counts from `from` over the neighbour graph `views`.
fn hops_from(views: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeMap<String, usize> {
    let mut dist = BTreeMap::from([(from.to_owned(), 0)]);
    let mut todo = std::collections::VecDeque::from([from.to_owned()]);
    while let Some(n) = todo.pop_front() {
        let d = dist[&n];
        for m in views.get(&n).into_iter().flatten() {
            if !dist.contains_key(m) {
                dist.insert(m.clone(), d + 1);
                todo.push_back(m.clone());
            }
        }
    }
    dist
}

/// The runtime's own traffic over the overlay (live/mod.rs rule 6, `links.rs`, troupe-remote's
/// `node/relay.rs`) and the cluster on it (the engine's rule 9): 7 real node processes under
/// HyParView (active view 3) form one cluster and see every member up, answer typed asks
/// between every pair while each holds connections to its active view only, the rest going
/// through neighbours, find a service every node registered with the receptionist; a monitor on
/// an actor two hops away sees `Down` after a SIGKILL, and the cluster there learns the kill
/// through gossip.
#[test]
fn hyparview_carries_typed_asks_between_every_pair_and_a_monitor_two_hops_away() {
    let _serial = serial();
    // Shuffles every minute: the overlay's own traffic stays on the active view during the test.
    let params = "kind = \"hyparview\"\nactive_size = 3\npassive_size = 6\nshuffle_interval_ms = 60000";
    let svc = |name: &str, overlay: &str, cluster: &str| {
        let text = format!(
            "name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\nservices = [\"echo\"]\n\
             heartbeat_interval_ms = 200\nheartbeat_timeout_ms = 3000\n[overlay]\ntick_ms = 50\n{overlay}\n\
             [cluster]\ngossip_interval_ms = 200\nheartbeat_interval_ms = 200\n{cluster}\n"
        );
        Proc::start(env!("CARGO_BIN_EXE_troupe-cluster-node"), &[], &text)
    };
    let first = svc("r0", params, "");
    let contact = format!("{params}\ncontacts = [\"r0@{}\"]", first.addr);
    let seeds = format!("seeds = [\"{}\"]", first.addr);
    let mut nodes = vec![first];
    for i in 1..7 {
        nodes.push(svc(&format!("r{i}"), &contact, &seeds));
    }
    // Engine rule 9: the membership runs on the overlay; every node sees all seven up.
    for p in &mut nodes {
        p.wait_status(
            "seven members up",
            |s| s["members"].as_array().is_some_and(|m| m.len() == 7 && m.iter().all(|r| r["status"] == "up")),
            LONG,
        );
    }
    let views = wait_overlay(&mut nodes.iter_mut().collect::<Vec<_>>(), "formation");
    // links.rs rules 1 and 2: every node learns every node's neighbours and has a path to
    // every other before it routes to them; and the joins' temporary connections are closed
    // (their protocol window is over).
    for p in &mut nodes {
        wait_status(
            p,
            "every node's links known, connections to the active view only",
            |s| {
                s["link_states"].as_u64() == Some(7)
                    && s["reachable"].as_u64() == Some(6)
                    && list(s, "connected") == list(s, "neighbours")
            },
            LONG,
        );
    }
    let views_now: BTreeMap<String, BTreeSet<String>> =
        nodes.iter_mut().map(|p| (p.addr.clone(), list(&status(p), "neighbours"))).collect();
    eprintln!("active views: {views_now:#?}");
    let addrs: Vec<String> = nodes.iter().map(|p| p.addr.clone()).collect();
    let started = Instant::now();
    for i in 0..nodes.len() {
        for a in addrs.iter().filter(|a| **a != addrs[i]) {
            let text = format!("from-{i}-to-{a}");
            let l = nodes[i].ask(&format!("echo-ask {a} {text}"), "echo-");
            assert!(l == format!("echo-answer {a} {text}"), "node {i} asked {a}: {l}");
        }
    }
    eprintln!("42 typed asks answered in {:?}", started.elapsed());
    // Rule 3 of the service: connections to the active view only; the other pairs' sessions
    // are routed through neighbours.
    let mut routed = 0;
    for p in &mut nodes {
        let s = wait_status(
            p,
            "connections only to the active view",
            |s| list(s, "connected") == list(s, "neighbours"),
            LONG,
        );
        routed += list(&s, "routed").len();
        assert_eq!(s["unroutable"].as_u64(), Some(0), "{s:#}");
    }
    assert!(routed > 0, "some pairs are not neighbours, and talked through others");
    // The receptionist on the overlay: a service every node registers is found from one.
    for p in &mut nodes {
        p.ask("register shop", "registered shop");
    }
    let end = Instant::now() + LONG;
    loop {
        let l = nodes[0].ask("find shop", "found shop");
        if l.starts_with("found shop 7 ") {
            break;
        }
        assert!(Instant::now() < end, "the receptionist never listed all seven: {l}");
        nodes[0].try_wait_line(|l| l.starts_with("event "), Duration::from_millis(200));
    }
    // A monitor on an actor two hops away fires `Down` after its node is SIGKILLed.
    let (o, t) = (0..nodes.len())
        .flat_map(|o| (0..nodes.len()).map(move |t| (o, t)))
        .find(|(o, t)| hops_from(&views_now, &addrs[*o]).get(&addrs[*t]) == Some(&2))
        .unwrap_or_else(|| panic!("some pair is two hops apart in {views_now:#?} (formed as {views:#?})"));
    let target = addrs[t].clone();
    nodes[o].ask(&format!("monitor {target} echo"), "monitoring");
    let killed = Instant::now();
    nodes[t].signal(libc::SIGKILL);
    let down =
        nodes[o].wait_line(|l| l.starts_with("event ") && l.contains("\"ev\":\"down\"") && l.contains(&target), LONG);
    eprintln!("SIGKILL -> Down two hops away: {:?} ({down})", killed.elapsed());
    assert!(down.contains("NoConnection"), "{down}");
    // Failure detection of a non-neighbour through gossip: the victim's neighbours find it
    // unreachable and the origin, two hops away, hears it.
    nodes[o].wait_status(
        "the killed member unreachable",
        |s| s["members"].as_array().is_some_and(|m| m.iter().any(|r| r["addr"] == target && r["reachable"] == false)),
        LONG,
    );
    eprintln!("SIGKILL -> unreachable in the cluster two hops away: {:?}", killed.elapsed());
}
