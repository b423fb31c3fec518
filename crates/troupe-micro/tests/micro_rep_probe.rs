//! `MicroOptions::rep_probe`: called just before every repetition of every runtime, in the
//! order they run, and each line keeps what it returned beside its samples (`core_rtt_ns`); a
//! run without a probe writes no such key.

use std::sync::atomic::{AtomicU32, Ordering};

use troupe_micro::MicroOptions;

static CALLS: AtomicU32 = AtomicU32::new(0);

/// Returns 41, 42, ... in call order, except for the fourth call, which "could not time".
fn probe() -> Option<u32> {
    let n = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    (n != 4).then_some(40 + n)
}

fn lines(opts: &MicroOptions) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    troupe_micro::run(opts, &mut out).expect("fib runs on troupe and kameo");
    String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn every_repetition_carries_the_probe_taken_just_before_it() {
    let opts = MicroOptions {
        only: Some(vec!["fib".into()]),
        runtimes: ["troupe", "kameo"].map(String::from).to_vec(),
        json: true,
        reps: Some(3),
        params: [("n".to_string(), 10)].into_iter().collect(),
        child_args: None,
        rep_probe: Some(probe),
    };
    let got = lines(&opts);
    assert_eq!(CALLS.load(Ordering::SeqCst), 6, "one call per repetition per runtime: {got:?}");
    let rtt =
        |rt: &str| got.iter().find(|v| v["runtime"] == rt && v["metric"] == "time_ms").unwrap()["core_rtt_ns"].clone();
    // The runtimes take turns: troupe rep 1, kameo rep 1, troupe rep 2, ...
    assert_eq!(rtt("troupe"), serde_json::json!([41, 43, 45]));
    assert_eq!(rtt("kameo"), serde_json::json!([42, null, 46]), "an untimed probe is null, in its place");

    let plain = lines(&MicroOptions { rep_probe: None, ..opts });
    assert!(plain.iter().all(|v| v.get("core_rtt_ns").is_none()), "{plain:?}");
    assert_eq!(CALLS.load(Ordering::SeqCst), 6);
}
