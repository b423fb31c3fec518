//! `troupe node` with an `[observe]` section (docs/operating.md), as an operator meets it: real
//! node processes in a cluster on loopback, `/metrics` scraped over HTTP after traffic and a
//! kill, `/health/ready` turning ready only once the node is an `up` member, bad sections
//! refused naming the key.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

mod support;
use support::lab::{text, troupe};
use support::node::wait;

const SECRET: &str = "cli-observe-secret";
const T: Duration = Duration::from_secs(60);
const PROFILE: &str = "heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\ngossip_interval_ms = 200\n";

struct NodeProc {
    child: Child,
    lines: Receiver<String>,
    addr: String,
    observe: String,
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn node(dir: &std::path::Path, name: &str, extra: &str) -> NodeProc {
    let path = dir.join(format!("{name}.toml"));
    let text = format!(
        "name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\nservices = [\"echo\"]\n{extra}\n\
         [observe]\nlisten = \"127.0.0.1:0\"\n"
    );
    std::fs::write(&path, text).unwrap();
    let (child, rx) = support::node::spawn(&path);
    let addr = wait(&rx, |l| l.starts_with("listening on "), "listening")["listening on ".len()..].to_owned();
    let observe =
        wait(&rx, |l| l.starts_with("observe listening on "), "observe")["observe listening on ".len()..].to_owned();
    NodeProc { child, lines: rx, addr, observe }
}

fn signal(n: &NodeProc, sig: i32) {
    // SAFETY: kill(2) on our own child's pid, which we have not reaped.
    assert_eq!(unsafe { libc::kill(n.child.id() as i32, sig) }, 0);
}

/// One GET; (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: test\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

/// Polls `path` until `pred` holds for an answer (bounded); the last answer.
fn poll(addr: &str, path: &str, pred: impl Fn(u16, &str) -> bool, what: &str) -> String {
    let end = Instant::now() + T;
    loop {
        let (code, body) = get(addr, path);
        if pred(code, &body) {
            return body;
        }
        assert!(Instant::now() < end, "{what}: last answer {code} {body}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The value of the series `name{labels}` (the exact label text) in a Prometheus text body.
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

/// The values of every series of family `name` whose labels contain `has`.
fn values(body: &str, name: &str, has: &str) -> Vec<f64> {
    body.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) && l.contains(has))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse().ok())
        .collect()
}

#[test]
fn metrics_of_every_layer_after_traffic_and_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let a = node(dir.path(), "a", &format!("[cluster]\n{PROFILE}"));
    let seeds = format!("[cluster]\n{PROFILE}seeds = [\"{}\"]\n", a.addr);
    let b = node(dir.path(), "b", &seeds);
    let c = node(dir.path(), "c", &seeds);
    // Both, in whichever order a logs them (waiting for b's line first skipped a c line that
    // came before it, and then waited for c in vain).
    let up = std::cell::Cell::new([false, false]);
    wait(
        &a.lines,
        |l| {
            let mut seen = up.get();
            for (i, n) in [&b, &c].into_iter().enumerate() {
                seen[i] |= l.contains("\"member_up\"") && l.contains(&n.addr);
            }
            up.set(seen);
            seen == [true, true]
        },
        "b and c up on a",
    );
    // Traffic beyond the cluster's own gossip and heartbeats: a status ask over the wire.
    let out = troupe().args(["cluster", "status", "--node", &b.addr, "--secret", SECRET]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut c = c;
    let _ = c.child.kill();
    let _ = c.child.wait();
    // a sees c fail: unreachable, then downed and removed by keep-majority.
    let gone = |_: u16, body: &str| {
        value(body, "troupe_cluster_unreachable").unwrap_or(0.0) >= 1.0
            || value(body, "troupe_cluster_members{status=\"down\"}").unwrap_or(0.0) >= 1.0
            || value(body, "troupe_cluster_members{status=\"removed\"}").unwrap_or(0.0) >= 1.0
    };
    poll(&a.observe, "/metrics", gone, "c's failure in a's metrics");
    for n in [&a, &b] {
        let (code, body) = get(&n.observe, "/metrics");
        assert_eq!(code, 200);
        let v = |s: &str| value(&body, s).unwrap_or_else(|| panic!("no {s} in\n{body}"));
        // The node.
        assert!(v("troupe_node_frames_total{direction=\"in\"}") > 0.0);
        assert!(v("troupe_node_frames_total{direction=\"out\"}") > 0.0);
        assert!(v("troupe_node_bytes_total{direction=\"in\"}") > v("troupe_node_frames_total{direction=\"in\"}"));
        assert!(v("troupe_node_connections_accepted_total") >= 1.0);
        assert_eq!(v("troupe_node_refusals_total{reason=\"auth\"}"), 0.0);
        // The cluster.
        assert_eq!(v("troupe_cluster_self_up"), 1.0);
        assert!(v("troupe_cluster_members{status=\"up\"}") >= 2.0);
        assert!(v("troupe_cluster_gossip_rounds_total") > 0.0);
        assert!(!values(&body, "troupe_cluster_phi", "member=").is_empty(), "phi of monitored members:\n{body}");
        // The actors: the echo service at least, spawned and still running.
        assert!(values(&body, "troupe_actors_spawned_total", "supervisor=").iter().sum::<f64>() >= 1.0, "{body}");
    }
    drop(c);
}

#[test]
fn ready_turns_ready_only_once_the_node_is_an_up_member() {
    let dir = tempfile::tempdir().unwrap();
    let a = node(dir.path(), "a", &format!("[cluster]\n{PROFILE}"));
    // b's seed is stopped: b listens (live) but cannot join (not ready).
    signal(&a, libc::SIGSTOP);
    let b = node(dir.path(), "b", &format!("[cluster]\n{PROFILE}seeds = [\"{}\"]\n", a.addr));
    assert_eq!(get(&b.observe, "/health/live"), (200, "live\n".to_owned()));
    let (code, body) = get(&b.observe, "/health/ready");
    assert_eq!(code, 503, "{body}");
    assert!(body.contains("not a cluster member yet"), "{body}");
    signal(&a, libc::SIGCONT);
    poll(&b.observe, "/health/ready", |c, _| c == 200, "b ready");
    // Ready means up: b's own table says so by now.
    let up = wait(&b.lines, |l| l.contains("\"member_up\"") && l.contains(&b.addr), "b up");
    assert!(up.starts_with("event "), "{up}");
}

#[test]
fn a_bad_observe_section_is_a_usage_error_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (section, says) in [
        ("[observe]\nlisten = \"9464\"\n", "[observe] listen = \"9464\" is not host:port"),
        ("[observe]\nport = 9464\n", "unknown key \"port\""),
    ] {
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, format!("name = \"x\"\nsecret = \"s\"\n{section}")).unwrap();
        let out = troupe().args(["node", "--config"]).arg(&path).stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert!(text(&out.stderr).contains(says), "{}", text(&out.stderr));
    }
}
