//! The network layer's namespaces and hub rules (crate::netlayer rules 3 and 6), against real
//! namespaces, real nftables rules and real TCP connections between processes in them. Needs
//! root, `ip` and `nft`; without them each test says so plainly and passes without running,
//! unless TROUPE_TEST_REQUIRE_NETNS=1 (set by scripts/test.sh when it runs as root), which makes
//! a missing tool a failure.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use troupe_lab::netlayer::{self, nft, ns::Topology};

/// Whether the host carries the layer; otherwise a loud SKIPPED line, or a failure when required.
fn host_ok(test: &str) -> bool {
    match netlayer::check_host() {
        Ok(()) => true,
        Err(why) => {
            assert!(std::env::var("TROUPE_TEST_REQUIRE_NETNS").as_deref() != Ok("1"), "{test}: {why}");
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "\n*** SKIPPED {test}: {why} ***\n");
            false
        }
    }
}

/// A TCP listener on `addr:7000` inside namespace `ns` (python3's socket module), killed on drop.
struct Listener(Child);

impl Listener {
    fn start(ns: &str, addr: &str) -> Listener {
        let code = format!(
            "import socket,time\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
             s.bind(('{addr}',7000));s.listen(64);print('up',flush=True)\nend=time.time()+120\n\
             while time.time()<end:\n  c,_=s.accept();c.close()\n"
        );
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "python3", "-c", &code])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 in a namespace");
        let mut line = String::new();
        use std::io::BufRead as _;
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(line.trim(), "up", "the listener in {ns} did not start");
        Listener(child)
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether a connection from namespace `ns` to `addr:7000` is accepted within 1 s.
fn reaches(ns: &str, addr: &str) -> bool {
    let code = format!(
        "import socket\ns=socket.socket();s.settimeout(1.0)\n\
         try:\n  s.connect(('{addr}',7000));print('yes')\nexcept Exception:\n  print('no')\n"
    );
    let out = Command::new("ip").args(["netns", "exec", ns, "python3", "-c", &code]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "yes"
}

#[test]
fn rule_3_namespaces_reach_each_other_through_the_hub_and_are_removed_on_drop() {
    if !host_ok("rule_3") {
        return;
    }
    let names: Vec<String> = ["server-0", "clients-0"].iter().map(|s| s.to_string()).collect();
    let t = Topology::create(&names, None).unwrap();
    let f = t.file().clone();
    assert_eq!(f.coordinator.addr, "10.232.0.2");
    assert_eq!((f.nodes[0].name.as_str(), f.nodes[0].addr.as_str()), ("server-0", "10.232.1.2"));
    assert_eq!(f.nodes[1].addr, "10.232.2.2");
    let _l = Listener::start(&f.nodes[0].netns, &f.nodes[0].addr);
    assert!(reaches(&f.nodes[1].netns, "10.232.1.2"), "node 1 cannot reach node 0 through the hub");
    assert!(reaches(&f.coordinator.netns, "10.232.1.2"), "the coordinator cannot reach node 0");
    // The host's own namespace has no route into the run's addresses.
    let host = Command::new("ip").args(["route", "get", "10.232.1.2"]).output().unwrap();
    let route = String::from_utf8_lossy(&host.stdout);
    assert!(!route.contains("tlab-"), "the host got a route into the run: {route}");
    let all: Vec<String> =
        std::iter::once(f.coordinator.netns.clone()).chain(f.nodes.iter().map(|n| n.netns.clone())).collect();
    drop(_l);
    drop(t);
    let list =
        String::from_utf8_lossy(&Command::new("ip").args(["netns", "list"]).output().unwrap().stdout).to_string();
    for ns in all {
        assert!(!list.lines().any(|l| l.split_whitespace().next() == Some(ns.as_str())), "{ns} is still there");
    }
}

#[test]
fn rule_6_a_partition_cuts_both_ways_spares_the_coordinator_heals_and_is_counted() {
    if !host_ok("rule_6_partition") {
        return;
    }
    let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let t = Topology::create(&names, None).unwrap();
    let f = t.file().clone();
    let hub = t.hub();
    let (a, b, c) = (&f.nodes[0], &f.nodes[1], &f.nodes[2]);
    let _la = Listener::start(&a.netns, &a.addr);
    let _lb = Listener::start(&b.netns, &b.addr);
    let _lc = Listener::start(&c.netns, &c.addr);
    assert!(reaches(&b.netns, &a.addr) && reaches(&a.netns, &b.addr));
    // Cut node a off from b and c.
    let handles = nft::add_cut(&hub, &[&a.addr], &[&b.addr, &c.addr], false).unwrap();
    assert!(!reaches(&b.netns, &a.addr), "b still reaches a during the partition");
    assert!(!reaches(&a.netns, &b.addr), "a still reaches b during the partition");
    assert!(!reaches(&a.netns, &c.addr), "a still reaches c during the partition");
    assert!(reaches(&b.netns, &c.addr), "b and c are on the same side: they must still reach each other");
    assert!(reaches(&f.coordinator.netns, &a.addr), "the coordinator is never cut");
    let during = nft::counters(&hub).unwrap();
    assert!(during.packets_cut > 0, "the cut counted nothing: {during:?}");
    nft::remove(&hub, &handles).unwrap();
    assert!(reaches(&b.netns, &a.addr) && reaches(&a.netns, &b.addr), "the partition did not heal");
    let after = nft::counters(&hub).unwrap();
    assert!(after.packets_seen > after.packets_cut, "{after:?}");
}

#[test]
fn rule_6_loss_drops_the_given_share_of_packets_at_the_hub() {
    if !host_ok("rule_6_loss") {
        return;
    }
    let names: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
    let t = Topology::create(&names, None).unwrap();
    let f = t.file().clone();
    let hub = t.hub();
    let _la = Listener::start(&f.nodes[0].netns, &f.nodes[0].addr);
    nft::reset_seen(&hub).unwrap();
    // All of them: no connection gets through, and every packet is counted lost.
    nft::add_loss(&hub, 100.0, false).unwrap();
    assert!(!reaches(&f.nodes[1].netns, &f.nodes[0].addr), "a connection got through 100% loss");
    let c = nft::counters(&hub).unwrap();
    assert!(c.packets_lost > 0 && c.packets_lost == c.packets_seen, "{c:?}");
    // 30%: the share measured over many packets is near it (bounded: 400 connection attempts
    // at most, 30 s at most).
    let t2 = Topology::create(&names, None).unwrap();
    let f2 = t2.file().clone();
    let hub2 = t2.hub();
    let _l2 = Listener::start(&f2.nodes[0].netns, &f2.nodes[0].addr);
    nft::add_loss(&hub2, 30.0, false).unwrap();
    let code = format!(
        "import socket,time\nend=time.time()+30\nfor i in range(400):\n  if time.time()>end: break\n  \
         s=socket.socket();s.settimeout(0.05)\n  try:\n    s.connect(('{}',7000))\n  except Exception:\n    pass\n  s.close()\n",
        f2.nodes[0].addr
    );
    let started = Instant::now();
    Command::new("ip").args(["netns", "exec", &f2.nodes[1].netns, "python3", "-c", &code]).output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(60));
    let c = nft::counters(&hub2).unwrap();
    let share = c.packets_lost as f64 / c.packets_seen as f64;
    assert!(c.packets_seen >= 200, "{c:?}");
    assert!((0.15..=0.45).contains(&share), "measured loss {share:.3} is far from 30%: {c:?}");
}

/// An echo server on `addr:7000` inside namespace `ns` (python3), killed on drop.
fn echo_server(ns: &str, addr: &str) -> Listener {
    let code = format!(
        "import socket,threading,time\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1)\n\
         s.bind(('{addr}',7000));s.listen(16);print('up',flush=True)\n\
         def serve(c):\n  while True:\n    b=c.recv(4096)\n    if not b: return\n    c.sendall(b)\n\
         end=time.time()+120\nwhile time.time()<end:\n  c,_=s.accept();threading.Thread(target=serve,args=(c,),daemon=True).start()\n"
    );
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "python3", "-c", &code])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 in a namespace");
    let mut line = String::new();
    use std::io::BufRead as _;
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "up");
    Listener(child)
}

/// The median round trip (ms) of 5 one-byte echoes from namespace `ns` to `addr:7000`, over one
/// connection made before `before` is run (so the delay applies to an established connection).
fn echo_rtts(ns: &str, addr: &str) -> Vec<f64> {
    let code = format!(
        "import socket,time,sys\ns=socket.create_connection(('{addr}',7000),timeout=5)\nout=[]\n\
         for phase in range(2):\n  if phase==1: print('go',flush=True); sys.stdin.readline()\n  ts=[]\n  \
         for i in range(5):\n    t=time.time();s.sendall(b'x');s.recv(1);ts.append((time.time()-t)*1000)\n  \
         ts.sort();out.append(ts[2])\nprint(' '.join('%.1f'%x for x in out),flush=True)\n"
    );
    let mut child = Command::new("ip")
        .args(["netns", "exec", ns, "python3", "-c", &code])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::{BufRead as _, Write as _};
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "go");
    ECHO_GATE.with(|g| (g.borrow_mut())());
    child.stdin.take().unwrap().write_all(b"\n").unwrap();
    line.clear();
    out.read_line(&mut line).unwrap();
    let _ = child.wait();
    line.split_whitespace().map(|x| x.parse().unwrap()).collect()
}

thread_local! {
    static ECHO_GATE: std::cell::RefCell<Box<dyn FnMut()>> = std::cell::RefCell::new(Box::new(|| {}));
}

#[test]
fn rule_9_the_relay_delays_established_connections_once_the_delay_is_due_and_partitions_still_cut() {
    if !host_ok("rule_9") {
        return;
    }
    let names: Vec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
    let t = std::sync::Arc::new(Topology::create(&names, Some(([40, 40], 7))).unwrap());
    let f = t.file().clone();
    let _echo = echo_server(&f.nodes[0].netns, &f.nodes[0].addr);
    let t2 = std::sync::Arc::clone(&t);
    ECHO_GATE.with(|g| *g.borrow_mut() = Box::new(move || assert!(t2.delay_now())));
    let rtts = echo_rtts(&f.nodes[1].netns, &f.nodes[0].addr);
    // Before the delay is due the relay only copies; after, each direction holds 40 ms.
    assert!(rtts[0] < 40.0, "delayed before the delay was due: {rtts:?}");
    assert!(rtts[1] >= 79.0, "a round trip through two 40 ms holds took {rtts:?}");
    let (conns, delayed, failed) = t.relay_counts().unwrap();
    assert!(conns >= 1 && delayed >= 10 && failed == 0, "{conns} {delayed} {failed}");
    // A partition still cuts the relayed traffic (on the client-side leg, both ways).
    let hub = t.hub();
    let h = nft::add_cut(&hub, &[&f.nodes[0].addr], &[&f.nodes[1].addr], true).unwrap();
    assert!(!reaches(&f.nodes[1].netns, &f.nodes[0].addr), "the cut did not hold through the relay");
    nft::remove(&hub, &h).unwrap();
    assert!(reaches(&f.nodes[1].netns, &f.nodes[0].addr), "the cut did not heal");
    assert!(nft::counters(&hub).unwrap().packets_cut > 0);
}
