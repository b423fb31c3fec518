//! `troupe node` with a `[cluster]` section and `troupe cluster status|members`, as a user
//! runs them: real processes on loopback, the printed table, the exit codes.

use std::process::{Child, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

mod support;
use support::lab::{text, troupe};
use support::node::wait;

const SECRET: &str = "cli-cluster-secret";

struct NodeProc {
    child: Child,
    lines: Receiver<String>,
    addr: String,
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn node(dir: &std::path::Path, name: &str, cluster: &str) -> NodeProc {
    let path = dir.join(format!("{name}.toml"));
    let text = format!("name = \"{name}\"\nsecret = \"{SECRET}\"\nlisten = \"127.0.0.1:0\"\n[cluster]\n{cluster}\n");
    std::fs::write(&path, text).unwrap();
    let (child, rx) = support::node::spawn(&path);
    let first = wait(&rx, |l| l.starts_with("listening on "), "listening");
    NodeProc { addr: first["listening on ".len()..].to_owned(), child, lines: rx }
}

#[test]
fn two_nodes_form_a_cluster_and_status_prints_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let profile = "heartbeat_interval_ms = 100\nacceptable_pause_ms = 1000\ngossip_interval_ms = 200\n";
    let a = node(dir.path(), "a", profile);
    let b = node(dir.path(), "b", &format!("{profile}seeds = [\"{}\"]\n", a.addr));
    for n in [&a, &b] {
        wait(&n.lines, |l| l.starts_with("event ") && l.contains("\"member_up\"") && l.contains(&b.addr), "b up");
    }
    // Both up everywhere and converged: ask until the table says so (each answer is fresh).
    let end = Instant::now() + Duration::from_secs(60);
    let table = loop {
        let out = troupe().args(["cluster", "status", "--node", &a.addr, "--secret", SECRET]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        if text.contains("converged: yes") && text.matches(" up ").count() == 2 {
            break text;
        }
        assert!(Instant::now() < end, "never converged: {text}");
        let _ = a.lines.recv_timeout(Duration::from_millis(300));
    };
    assert!(table.contains(&a.addr) && table.contains(&b.addr), "{table}");
    let out = troupe()
        .args(["cluster", "members", "--node", &b.addr, "--json"])
        .env("TROUPE_SECRET", SECRET)
        .output()
        .unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
}

#[test]
fn cluster_status_without_a_secret_or_with_a_bad_cluster_section_is_a_usage_error() {
    let out =
        troupe().args(["cluster", "status", "--node", "127.0.0.1:9"]).env_remove("TROUPE_SECRET").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--secret"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(&path, "name = \"x\"\nsecret = \"s\"\n[cluster]\nphi_treshold = 8.0\n").unwrap();
    let out = troupe().args(["node", "--config"]).arg(&path).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("phi_treshold"), "the message names the key");
}

#[test]
fn cluster_status_of_a_node_that_does_not_answer_fails_with_exit_1() {
    let out = troupe()
        .args(["cluster", "status", "--node", "127.0.0.1:9", "--secret", "x", "--timeout", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("127.0.0.1:9"));
}
