//! `troupe lab run crdt` through the real binary (node processes with a replicator, the
//! orchestrator's clients, the nemesis; docs/nemesis-crdt.md): a short run under kills and
//! pauses passes the checker and writes the history; a planted bug (a node that acknowledges
//! increments without applying them, switched on by an environment variable only tests set)
//! fails it with lost acknowledged increments; a short run under partitions and loss at the
//! network layer (root needed) passes too; a clock fault is refused naming the key.

mod support;
use support::lab::{assert_usage_error, ctx, json, read, run_with_env, TempLab};

/// Runs `crdt` with `kv` and `env`; the output, the run folder's summary and the folder.
fn run(name: &str, kv: &[&str], env: &[(&str, &str)]) -> (std::process::Output, serde_json::Value, TempLab) {
    run_with_env("crdt", name, kv, env)
}

#[test]
fn a_short_run_under_kills_and_pauses_passes_the_checker_and_writes_the_history() {
    let (o, s, lab) = run("clean", &["duration_s=7", "nemesis=kill,pause", "nemesis_interval_ms=2000"], &[]);
    let err = std::fs::read_to_string(lab.out.join("stderr.txt")).unwrap_or_default();
    let c = format!("{}\n{s}\n{err}", ctx(&o));
    assert_eq!(o.status.code(), Some(0), "{c}");
    assert_eq!(json(&lab.out.join("manifest.json"))["status"], "ok", "{c}");
    assert_eq!(s["checker"], "pass", "{c}");
    assert_eq!(s["lost_acknowledged"], 0, "{c}");
    assert_eq!(s["faults_injected"], 2, "a kill and a pause: {c}");
    assert!(s["converged_ms"].as_f64().is_some(), "{c}");
    let ops = s["ops"].as_u64().unwrap();
    assert!(ops > 10 && s["ok"].as_u64().unwrap() > 0, "{c}");
    for k in ["failed", "indeterminate", "anomalies", "final_counter", "final_set_size"] {
        assert!(!s[k].is_null(), "summary.json has no {k}: {c}");
    }
    let history = read(&lab.out.join("history.jsonl"));
    assert_eq!(history.lines().count() as u64, 2 * ops, "two lines per operation");
    let first: serde_json::Value = serde_json::from_str(history.lines().next().unwrap()).unwrap();
    assert_eq!(first["type"], "invoke", "{first}");
}

#[test]
fn a_planted_ack_without_apply_fails_the_checker_with_lost_acknowledged_increments() {
    let env = [("TROUPE_CRDT_PLANTED_BUG", "ack_without_apply")];
    let (o, s, lab) = run("planted", &["duration_s=2", "add_pct=20"], &env);
    let c = format!("{}\n{s}", ctx(&o));
    assert_eq!(json(&lab.out.join("manifest.json"))["status"], "failed", "{c}");
    assert_eq!(s["checker"], "fail", "{c}");
    assert!(s["lost_acknowledged"].as_u64().unwrap() > 0, "{c}");
    assert!(s["counterexample"].as_str().unwrap().starts_with("lost_acknowledged"), "{c}");
}

#[test]
fn a_short_run_under_partitions_and_loss_at_the_network_layer_passes_the_checker() {
    if let Err(why) = troupe_lab::netlayer::check_host() {
        assert!(std::env::var("TROUPE_TEST_REQUIRE_NETNS").as_deref() != Ok("1"), "{why}");
        eprintln!("\n*** SKIPPED crdt under partitions: {why} ***\n");
        return;
    }
    let (o, s, lab) = run("partition", &["duration_s=7", "nemesis=partition,loss", "nemesis_interval_ms=2000"], &[]);
    let c = format!("{}\n{s}", ctx(&o));
    assert_eq!(json(&lab.out.join("manifest.json"))["status"], "ok", "{c}");
    assert_eq!(s["checker"], "pass", "{c}");
    assert_eq!(s["faults_injected"], 2, "a partition of one node and a loss: {c}");
}

#[test]
fn a_clock_nemesis_is_refused_naming_the_key() {
    let lab = TempLab::new("clock");
    let o = lab.run(&["lab", "run", "crdt"], &[&["--set", "nemesis=clock"]]);
    assert_usage_error(&o, &["nemesis", "clock"]);
}
