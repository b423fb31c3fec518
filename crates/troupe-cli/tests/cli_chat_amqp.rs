//! The chat benchmark with its events through a real RabbitMQ (`events = "amqp://..."`): a
//! private broker started by `scripts/rabbitmq.sh` into a temp dir (stopped by a guard, also
//! on failure), a distributed run whose every node publishes to the exchange and whose lines
//! the lab collects, checked against the same run through the file transport; and an
//! unreachable broker refused within 5 s with a clear message.
//!
//! Without RabbitMQ installed the broker test prints a SKIPPED line and passes, unless
//! `TROUPE_TEST_REQUIRE_RABBITMQ=1` (the test command sets it), when it fails.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "../../troupe-lab/tests/support/broker.rs"]
mod broker;
use broker::Broker;

mod support;
use support::chat::SMALL;
use support::lab::{json_lines, manifest, read, summary, text, troupe, TempLab};

/// What does not depend on timing: events per (node, kind) for the set-up and end events, the
/// injected fault ids, the throughput rows per node.
fn shape(dir: &Path) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for e in json_lines(&dir.join("events.jsonl")) {
        let key = match e["ev"].as_str().unwrap() {
            ev @ ("run_started" | "run_finished" | "throughput") => format!("{} {ev}", e["node"]),
            "ready" => format!("{} ready {}", e["node"], e["what"]),
            "fault_injected" => format!("fault {}", e["id"]),
            _ => continue,
        };
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

#[test]
fn chat_events_through_rabbitmq_match_the_file_transport() {
    let Some(broker) = Broker::start() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let mut shapes = Vec::new();
    for (name, events) in [("file", "file".to_string()), ("amqp", broker.url.clone())] {
        let out = tmp.path().join(name);
        let o = troupe()
            .args(["lab", "run", "chat", "--out", out.to_str().unwrap(), "--set", &format!("events={events}")])
            .args(SMALL)
            .output()
            .unwrap();
        let m = manifest(&out);
        assert_eq!(m["status"], "ok", "{name}: {m}\n{}", text(&o.stderr));
        let summary = summary(&out);
        assert!(summary["detection_ms"]["n"].as_u64().unwrap() > 0, "{name}: {summary}");
        assert_eq!(summary["dropped_events"], 0);
        // The broker's password is not written into the run folder.
        if name == "amqp" {
            let config = read(&out.join("config.json"));
            assert!(config.contains("amqp://guest:***@127.0.0.1:"), "{config}");
            assert!(!read(&out.join("manifest.json")).contains("guest:guest"));
        }
        shapes.push(shape(&out));
    }
    assert!(shapes[0].keys().any(|k| k.contains("clients-1")), "{:?}", shapes[0]);
    assert_eq!(shapes[0], shapes[1], "the same run through RabbitMQ records the same events");
}

#[test]
fn an_unreachable_broker_is_a_clear_error_within_5_seconds() {
    // A loopback port nobody listens on: bind one, note it, close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let lab = TempLab::new("run");
    let t0 = Instant::now();
    let o = lab.run(
        &["lab", "run", "chat"],
        &[&["--set", &format!("events=amqp://guest:secret@127.0.0.1:{port}/%2f")], SMALL],
    );
    assert!(t0.elapsed() < Duration::from_secs(5) + Duration::from_secs(2), "took {:?}", t0.elapsed());
    assert_ne!(o.status.code(), Some(0));
    let err = text(&o.stderr);
    assert!(err.contains("RabbitMQ") && err.contains(&port.to_string()), "{err}");
    assert!(!err.contains("secret"), "the password must not be printed: {err}");
    assert_eq!(manifest(&lab.out)["status"], "failed");
}
