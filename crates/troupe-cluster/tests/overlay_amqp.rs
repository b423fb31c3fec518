//! The AMQP publish-subscribe overlay with real `troupe-cluster-node` processes and a real
//! RabbitMQ (a private node started with `scripts/rabbitmq.sh` into a temp dir, stopped by a
//! guard): the same commands as the other overlays; nodes hold no connection to each other;
//! an unreachable broker refuses the start with the URL. Rule numbers are those of
//! `overlay/live/amqp.rs`.
//!
//! Without RabbitMQ installed the broker test prints a SKIPPED line and passes, unless
//! `TROUPE_TEST_REQUIRE_RABBITMQ=1`, when it fails (the lab's broker tests do the same).

#[path = "../../troupe-lab/tests/support/broker.rs"]
#[allow(dead_code, unreachable_pub)]
mod broker;

use std::time::Duration;

use serde_json::Value;
use troupe_cluster::testproc::NodeProc as Proc;

fn start(name: &str, url: &str) -> Proc {
    let text = format!(
        "name = \"{name}\"\nsecret = \"amqp-overlay\"\nlisten = \"127.0.0.1:0\"\n[overlay]\nkind = \"amqp\"\namqp_url = \"{url}\"\n"
    );
    Proc::start(env!("CARGO_BIN_EXE_troupe-cluster-node"), &[], &text)
}

fn delivery(p: &mut Proc, text: &str) -> Value {
    let t = text.to_owned();
    let matches = move |l: &str| {
        l.strip_prefix("event ")
            .and_then(|j| serde_json::from_str::<Value>(j).ok())
            .filter(|v| v["ev"] == "overlay_delivery" && v["text"] == t.as_str())
    };
    if let Some(v) = p.seen.iter().find_map(|l| matches(l)) {
        return v;
    }
    let m2 = matches.clone();
    let line = p.wait_line(move |l| m2(l).is_some(), Duration::from_secs(60));
    matches(&line).expect("matched")
}

#[test]
fn nodes_talk_through_the_broker_only() {
    let Some(b) = broker::Broker::start() else { return };
    let mut nodes: Vec<Proc> = (1..=3).map(|i| start(&format!("q{i}"), &b.url)).collect();
    for p in &mut nodes {
        p.ask("overlay-subscribe news", "overlay-subscribed");
    }
    // Rule 3: a unicast goes to the destination's own queue only.
    let to = nodes[2].addr.clone();
    nodes[0].ask(&format!("overlay-send {to} inbox via-broker"), "overlay-sent");
    let d = delivery(&mut nodes[2], "via-broker");
    assert_eq!(d["origin"], nodes[0].addr.as_str());
    assert_eq!(d["hops"], 1);
    // A broadcast reaches every subscriber, the sender included.
    nodes[1].ask("overlay-broadcast news to-all", "overlay-broadcast");
    for p in &mut nodes {
        delivery(p, "to-all");
    }
    assert!(!nodes[1].seen.iter().any(|l| l.contains("via-broker")), "a unicast reaches only its target");
    // No node holds a connection to another node: the broker routes everything.
    for p in &mut nodes {
        let l = p.ask("overlay-status", "overlay-status ");
        let s: Value = serde_json::from_str(&l["overlay-status ".len()..]).unwrap();
        assert_eq!(s["kind"], "amqp");
        assert_eq!(s["connected"], serde_json::json!([]), "{s}");
    }
}

#[test]
fn rule_1_an_unreachable_broker_refuses_the_start_naming_the_url() {
    // A port nobody listens on: bind one, note it, free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("amqp://guest:hidden@127.0.0.1:{port}/%2f");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("node.toml");
    let text = format!(
        "name = \"x\"\nsecret = \"s\"\nlisten = \"127.0.0.1:0\"\n[overlay]\nkind = \"amqp\"\namqp_url = \"{url}\"\n"
    );
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_troupe-cluster-node"))
        .arg("--config")
        .arg(&path)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the node does not run without its broker");
    assert!(err.contains("amqp_url") && err.contains(&port.to_string()), "{err}");
    assert!(!err.contains("hidden"), "the password is not printed: {err}");
}
