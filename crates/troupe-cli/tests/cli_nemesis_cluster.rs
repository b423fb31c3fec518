//! `troupe lab run cluster` through the real binary (troupe-cluster node processes, status
//! polled in rounds, the nemesis; docs/nemesis-cluster.md): a short run under kills and pauses
//! converges and passes the checker; a planted bug (a node reporting itself as the leader,
//! switched on by an environment variable only tests set) fails it with two leaders in one
//! view.

mod support;
use support::lab::{ctx, json, read, run_with_env, TempLab};

/// Runs `cluster` with `kv` and `env`; the output, the run folder's summary and the folder.
fn run(name: &str, kv: &[&str], env: &[(&str, &str)]) -> (std::process::Output, serde_json::Value, TempLab) {
    run_with_env("cluster", name, kv, env)
}

#[test]
fn a_short_run_under_kills_and_pauses_converges_and_passes_the_checker() {
    let (o, s, lab) = run("clean", &["duration_s=7", "nemesis=kill,pause", "nemesis_interval_ms=2000"], &[]);
    let err = std::fs::read_to_string(lab.out.join("stderr.txt")).unwrap_or_default();
    let c = format!("{}\n{s}\n{err}", ctx(&o));
    assert_eq!(o.status.code(), Some(0), "{c}");
    assert_eq!(json(&lab.out.join("manifest.json"))["status"], "ok", "{c}");
    assert_eq!(s["checker"], "pass", "{c}");
    assert_eq!(s["faults_injected"], 2, "{c}");
    assert!(s["converged_ms"].as_f64().is_some(), "{c}");
    assert!(
        s["anomalies"]["new_incarnation"].as_u64().unwrap_or(0) >= 1,
        "the killed node came back as a new incarnation: {c}"
    );
    let history = read(&lab.out.join("history.jsonl"));
    assert!(history.lines().any(|l| l.contains(r#""f":"status""#)), "status polls in the history");
}

#[test]
fn a_planted_wrong_leader_fails_the_checker_with_two_leaders_in_one_view() {
    let (o, s, lab) = run("planted", &["duration_s=2", "nodes=3"], &[("TROUPE_CLUSTER_PLANTED_BUG", "wrong_leader")]);
    let c = format!("{}\n{s}", ctx(&o));
    assert_eq!(json(&lab.out.join("manifest.json"))["status"], "failed", "{c}");
    assert_eq!(s["checker"], "fail", "{c}");
    assert!(s["counterexample"].as_str().unwrap().starts_with("two_leaders"), "{c}");
}
